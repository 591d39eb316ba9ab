"""The Spark jobs: a SparkSession with Spark's Kafka connector, the streaming job and the batch job.

Streaming: Kafka source (``format("kafka")``, ``subscribe``, ``startingOffsets``) -> parse the
JSON value -> count and sum per key over tumbling event-time windows with a watermark (append
mode: one final row per window) -> Kafka sink (key = event key, value = JSON aggregate) with a
checkpoint directory. The parse/aggregate steps take any DataFrame with a binary ``value``
column, so they also run (and are tested) on sources that need no connector.

Batch: ``spark.read.format("kafka")`` between starting/ending offsets given as Spark's JSON
(``{"topic": {"0": 12}}``, -2 = earliest, -1 = latest) or between timestamps
(``startingOffsetsByTimestamp`` / ``endingOffsetsByTimestamp``), aggregated per key.

Option names are exactly those of Spark's Structured Streaming + Kafka Integration Guide, so the
jobs run unchanged against Apache Kafka.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

EVENT_SCHEMA_DDL = "key STRING, event_time BIGINT, amount BIGINT"


def spark_versions() -> tuple[str, str]:
    """(Spark version, Scala binary version) of the installed pyspark, without starting a JVM."""
    import pyspark
    jars = Path(pyspark.__file__).parent / "jars"
    scala = "2.13"
    for jar in jars.glob("scala-library-*.jar"):
        m = re.match(r"scala-library-(\d+\.\d+)", jar.name)
        if m:
            scala = m.group(1)
    return pyspark.__version__, scala


def connector_coordinates() -> str:
    """Maven coordinates of Spark's Kafka connector matching the installed pyspark."""
    spark, scala = spark_versions()
    return f"org.apache.spark:spark-sql-kafka-0-10_{scala}:{spark}"


def pyspark_jars() -> Path:
    """The installed pyspark's own jars (Spark, Scala, Hadoop client and their dependencies)."""
    import pyspark
    return Path(pyspark.__file__).parent / "jars"


def connector_jars() -> list[Path]:
    """Spark's Kafka connector for the installed pyspark, from Maven Central (resolved once into realkafka's
    cache): the connector and those of its runtime dependencies pyspark does not ship (kafka-clients,
    spark-token-provider-kafka, commons-pool2), never a second version of a jar Spark has.

    Raises realkafka.jars.JarsUnavailable with Maven's reason when it cannot be resolved (no `mvn`, no
    network, no connector of that version on Maven Central)."""
    from realkafka import jars
    spark, _scala = spark_versions()
    return jars.missing_from(jars.spark_kafka(spark), pyspark_jars())


def connector_override(env: Mapping[str, str] | None = None) -> dict[str, str]:
    """spark.jars / spark.jars.packages from SPARK_KAFKA_JARS / SPARK_KAFKA_PACKAGES ({} if neither)."""
    env = os.environ if env is None else env
    conf: dict[str, str] = {}
    jar_list = [j for j in re.split(r"[,:;]", env.get("SPARK_KAFKA_JARS", "")) if j.strip()]
    if jar_list:
        conf["spark.jars"] = ",".join(jar_list)
    packages = env.get("SPARK_KAFKA_PACKAGES", "").strip()
    if packages:
        conf["spark.jars.packages"] = packages
    return conf


def connector_config(env: Mapping[str, str] | None = None) -> dict[str, str]:
    """The SparkSession settings that give it Spark's Kafka connector: SPARK_KAFKA_JARS / SPARK_KAFKA_PACKAGES
    when set, else `spark.jars` of `connector_jars()` (which resolves them with Maven the first time)."""
    return connector_override(env) or {"spark.jars": ",".join(str(p) for p in connector_jars())}


# For sessions that outlive the brokers they write to (the tests, the compat harness): Spark keeps an idle Kafka
# producer for 10 minutes, and one whose broker has stopped reconnects and logs a WARN about every second until
# then; these let it go after 5 s idle.
SHORT_LIVED_BROKERS = {"spark.kafka.producer.cache.timeout": "5s",
                       "spark.kafka.producer.cache.evictorThreadRunInterval": "1s"}


def build_spark(app_name: str = "kafka-pipeline", *, master: str = "local[2]", with_connector: bool = True,
                extra: Mapping[str, str] | None = None) -> Any:
    from pyspark.sql import SparkSession
    builder = (SparkSession.builder.appName(app_name).master(master)
               .config("spark.sql.shuffle.partitions", "2")
               .config("spark.ui.enabled", "false")
               .config("spark.sql.session.timeZone", "UTC"))
    if with_connector:
        for k, v in connector_config().items():
            builder = builder.config(k, v)
    for k, v in (extra or {}).items():
        builder = builder.config(k, v)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("WARN")
    return spark


# -- the transformation (connector-free) --------------------------------------------------------

def parse_events(raw: Any) -> Any:
    """Kafka-shaped rows (binary ``value``) -> key, event_time (timestamp), amount. Bad JSON rows drop."""
    from pyspark.sql import functions as F
    parsed = raw.select(F.from_json(F.col("value").cast("string"), EVENT_SCHEMA_DDL).alias("e")).select("e.*")
    return (parsed.where(F.col("key").isNotNull() & F.col("event_time").isNotNull())
            .select("key", F.timestamp_millis("event_time").alias("event_time"), "amount"))


def windowed_aggregates(events: Any, *, window: str = "10 seconds", watermark: str = "5 seconds") -> Any:
    """Count and sum of amount per key and tumbling event-time window, with a watermark."""
    from pyspark.sql import functions as F
    agg = (events.withWatermark("event_time", watermark)
           .groupBy(F.window("event_time", window), F.col("key"))
           .agg(F.count(F.lit(1)).alias("count"), F.sum("amount").alias("sum")))
    return agg.select("key", F.unix_millis(F.col("window.start")).alias("window_start"),
                      F.unix_millis(F.col("window.end")).alias("window_end"), "count", "sum")


def as_kafka_records(aggregates: Any) -> Any:
    """Rows for Spark's Kafka sink: key = event key, value = the aggregate as JSON."""
    from pyspark.sql import functions as F
    return aggregates.select(
        F.col("key").cast("binary").alias("key"),
        F.to_json(F.struct("key", "window_start", "window_end", "count", "sum")).cast("binary").alias("value"))


# -- Kafka source and sink ----------------------------------------------------------------------

def kafka_stream(spark: Any, bootstrap: str, topic: str, *, starting_offsets: str = "earliest",
                 max_offsets_per_trigger: int | None = None) -> Any:
    reader = (spark.readStream.format("kafka")
              .option("kafka.bootstrap.servers", bootstrap)
              .option("subscribe", topic)
              .option("startingOffsets", starting_offsets)
              .option("failOnDataLoss", "true"))
    if max_offsets_per_trigger:
        reader = reader.option("maxOffsetsPerTrigger", str(max_offsets_per_trigger))
    return reader.load()


def start_streaming_job(spark: Any, bootstrap: str, source_topic: str, sink_topic: str, checkpoint_dir: str, *,
                        window: str = "10 seconds", watermark: str = "5 seconds",
                        starting_offsets: str = "earliest", available_now: bool = True,
                        processing_time: str = "5 seconds", max_offsets_per_trigger: int | None = None) -> Any:
    """Start the streaming job; returns the StreamingQuery (availableNow stops by itself)."""
    raw = kafka_stream(spark, bootstrap, source_topic, starting_offsets=starting_offsets,
                       max_offsets_per_trigger=max_offsets_per_trigger)
    out = as_kafka_records(windowed_aggregates(parse_events(raw), window=window, watermark=watermark))
    writer = (out.writeStream.format("kafka")
              .option("kafka.bootstrap.servers", bootstrap)
              .option("topic", sink_topic)
              .option("checkpointLocation", checkpoint_dir)
              .outputMode("append"))
    writer = writer.trigger(availableNow=True) if available_now else writer.trigger(processingTime=processing_time)
    return writer.start()


def offsets_json(topic: str, offsets: Mapping[int, int]) -> str:
    """Spark's per-partition offsets JSON: {"topic": {"0": 12}} (-2 earliest, -1 latest)."""
    return json.dumps({topic: {str(p): int(o) for p, o in offsets.items()}})


def kafka_batch(spark: Any, bootstrap: str, topic: str, *, starting_offsets: str = "earliest",
                ending_offsets: str = "latest", isolation_level: str | None = None) -> Any:
    """Records between two offsets; ``isolation_level="read_committed"`` leaves out aborted transactions' records
    and ends "latest" at the last stable offset (Kafka's consumer default is read_uncommitted)."""
    reader = spark.read.format("kafka")
    if isolation_level is not None:
        reader = reader.option("kafka.isolation.level", isolation_level)
    return (reader
            .option("kafka.bootstrap.servers", bootstrap)
            .option("subscribe", topic)
            .option("startingOffsets", starting_offsets)
            .option("endingOffsets", ending_offsets)
            .load())


def kafka_batch_by_timestamp(spark: Any, bootstrap: str, topic: str, partitions: int, *,
                             start_ms: int, end_ms: int) -> Any:
    """Records with start_ms <= record timestamp < end_ms (Kafka's ListOffsets by timestamp)."""
    def by_ts(ts: int) -> str:
        return json.dumps({topic: {str(p): ts for p in range(partitions)}})
    return (spark.read.format("kafka")
            .option("kafka.bootstrap.servers", bootstrap)
            .option("subscribe", topic)
            .option("startingOffsetsByTimestamp", by_ts(start_ms))
            # a partition with no record at or after start_ms contributes nothing (default: error)
            .option("startingOffsetsByTimestampStrategy", "latest")
            .option("endingOffsetsByTimestamp", by_ts(end_ms))
            .load())


def batch_totals(raw: Any) -> dict[str, tuple[int, int]]:
    """key -> (count, sum of amount) over Kafka-shaped rows."""
    from pyspark.sql import functions as F
    rows = parse_events(raw).groupBy("key").agg(F.count(F.lit(1)).alias("n"), F.sum("amount").alias("s")).collect()
    return {r["key"]: (int(r["n"]), int(r["s"])) for r in rows}

"""Spark's Kafka sink and source as a client: produce with ``df.write.format("kafka")`` and read
assigned partitions with ``spark.read.format("kafka")`` (assign, startingOffsets/endingOffsets,
includeHeaders), in one local SparkSession shared by the whole run.

The connector is the one matching the installed pyspark, resolved from Maven Central by realkafka
(``spark_pipeline.jobs.connector_jars``); ``--spark-jars`` / SPARK_KAFKA_JARS or SPARK_KAFKA_PACKAGES
give other jars instead. A connector that cannot be resolved fails the scenarios with Maven's reason
(it is not a skip). The streaming pipeline itself is spark_pipeline (tests/spark).
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Sequence
from typing import Any

from compat.clients.base import (
    ClientAdapter,
    ConsumerHandle,
    PositionedConsumer,
    ProducerHandle,
    TransactionalProducerHandle,
)
from compat.model import Message, NotSupported, ProduceFailed, Record
from storage.values import TopicPartition

_session: Any = None
_failure: Exception | None = None  # why the session could not start (a connector Maven cannot resolve)
_lock = threading.Lock()


def set_jars(jars: str) -> None:
    if jars:
        os.environ["SPARK_KAFKA_JARS"] = jars


def _spark() -> Any:
    """The run's one SparkSession; a failure to start it is raised again to every later scenario (each fails
    with the reason instead of running Maven again)."""
    global _session, _failure
    with _lock:
        if _failure is not None:
            raise _failure
        if _session is None:
            from spark_pipeline.jobs import SHORT_LIVED_BROKERS, build_spark
            try:
                _session = build_spark("compat-spark-client", extra=SHORT_LIVED_BROKERS)
            except Exception as e:
                _failure = e
                raise
        return _session


class SparkProducer(ProducerHandle):
    def __init__(self, options: dict[str, str]) -> None:
        self._options = options

    def send(self, topic: str, records: Sequence[Record]) -> list[tuple[int, int]]:
        if any(r.timestamp_ms is not None for r in records):
            raise NotSupported("Spark's Kafka sink has no timestamp column")
        spark = _spark()
        rows = [(r.key, r.value, r.partition, [(k, v) for k, v in r.headers]) for r in records]
        schema = "key BINARY, value BINARY, partition INT, headers ARRAY<STRUCT<key: STRING, value: BINARY>>"
        # One writing task: the rows of a local list are split over the session's partitions, and Spark's tasks
        # send through their producers concurrently, so two tasks' records interleave in a partition in no set
        # order. coalesce(1) keeps the list's order, as the scenarios' single producer expects.
        df = spark.createDataFrame(rows, schema).coalesce(1)
        if all(r.partition is None for r in records):
            df = df.drop("partition")
        writer = df.write.format("kafka").option("topic", topic)
        for k, v in self._options.items():
            writer = writer.option(k, v)
        try:
            writer.save()
        except Exception as e:
            text = str(e)
            if "RecordTooLarge" in text or "MESSAGE_TOO_LARGE" in text:
                raise ProduceFailed("MESSAGE_TOO_LARGE", text.splitlines()[0]) from e
            if "org.apache.kafka.common.errors.TimeoutException" in text:
                raise TimeoutError(next(line for line in text.splitlines() if "TimeoutException" in line)) from e
            raise
        return [(r.partition if r.partition is not None else -1, -1) for r in records]


class SparkAssignedConsumer(PositionedConsumer):
    name = "Spark's Kafka source"

    def __init__(self, bootstrap: str, assign: Sequence[TopicPartition], isolation_level: str | None) -> None:
        self._bootstrap = bootstrap
        self._isolation_level = isolation_level
        super().__init__(assign, -2)  # -2: Kafka's "earliest"

    def poll(self, max_records: int, timeout_s: float) -> list[Message]:
        spark = _spark()
        got: list[Message] = []
        for tp, pos in self._positions.items():
            reader = spark.read.format("kafka")
            if self._isolation_level is not None:
                reader = reader.option("kafka.isolation.level", self._isolation_level)
            df = (reader
                  .option("kafka.bootstrap.servers", self._bootstrap)
                  .option("assign", json.dumps({tp.topic: [tp.partition]}))
                  .option("startingOffsets", json.dumps({tp.topic: {str(tp.partition): pos}}))
                  .option("endingOffsets", "latest")
                  .option("includeHeaders", "true")
                  .load().orderBy("offset").limit(max(1, max_records - len(got))))
            for r in df.collect():
                headers = tuple((h["key"], bytes(h["value"]) if h["value"] is not None else b"")
                                for h in (r["headers"] or []))
                got.append(Message(r["topic"], r["partition"], r["offset"],
                                   bytes(r["key"]) if r["key"] is not None else None,
                                   bytes(r["value"]) if r["value"] is not None else None,
                                   headers, int(r["timestamp"].timestamp() * 1000)))
                self._positions[tp] = r["offset"] + 1
            if len(got) >= max_records:
                break
        return got


class SparkAdapter(ClientAdapter):
    supports_security = False  # its secured settings are not wired yet: a secured target reports it skipped
    name = "spark"
    reports_produce_offsets = False

    @classmethod
    def prepare(cls) -> None:
        """Resolve the connector (Maven, the first time) and start the run's SparkSession, outside any
        scenario's time limit."""
        _spark()

    @classmethod
    def unavailable_reason(cls) -> str | None:
        try:
            import pyspark  # noqa: F401
        except ImportError as e:
            return f"pyspark not importable ({e})"
        return None

    def producer(self, *, acks: int = -1, compression: str = "none", idempotent: bool = False,
                 max_request_size: int | None = None, timeout_s: float | None = None) -> ProducerHandle:
        timeout_ms = int((timeout_s or self.timeout_s) * 1000)
        options = {"kafka.bootstrap.servers": self.bootstrap, "kafka.acks": "all" if acks == -1 else str(acks),
                   "kafka.compression.type": compression, "kafka.enable.idempotence": str(idempotent).lower(),
                   "kafka.delivery.timeout.ms": str(timeout_ms + 1000), "kafka.request.timeout.ms": str(timeout_ms),
                   # the wait for a missing topic's metadata (Kafka's default: 60 s)
                   "kafka.max.block.ms": str(timeout_ms)}
        if max_request_size:
            options["kafka.max.request.size"] = str(max_request_size)
        return SparkProducer(options)

    def transactional_producer(self, transactional_id: str, *, timeout_s: float | None = None
                               ) -> TransactionalProducerHandle:
        raise NotSupported("Spark's Kafka sink writes without transactions (at-least-once): no transactional.id, "
                           "commit or abort")

    def consumer(self, *, group_id: str | None = None, subscribe: Sequence[str] = (),
                 assign: Sequence[TopicPartition] = (), group_instance_id: str | None = None,
                 auto_offset_reset: str = "earliest", allow_auto_create_topics: bool = False,
                 isolation_level: str | None = None, group_protocol: str = "classic") -> ConsumerHandle:
        if group_id is not None or subscribe:
            raise NotSupported("Spark's Kafka source manages its own offsets (no consumer group API)")
        return SparkAssignedConsumer(self.bootstrap, assign, isolation_level)

"""The PySpark data jobs users run on a Kafka(-compatible) cluster.

- spark_pipeline.events: the event format (JSON), a deterministic event generator, and the exact
  aggregates a correct pipeline must produce (pure Python, no Spark).
- spark_pipeline.jobs: the Spark side: a SparkSession with Spark's Kafka connector, the
  structured-streaming job (Kafka source -> parse -> windowed count/sum with a watermark -> Kafka
  sink, checkpointed) and the batch job (Kafka source between offsets given as JSON or timestamps).
- ``python -m spark_pipeline``: the command line (generate / stream / batch / check).

Spark's Kafka connector (spark-sql-kafka-0-10 and its dependencies) is taken from SPARK_KAFKA_JARS
(jar paths) or SPARK_KAFKA_PACKAGES (Maven coordinates for spark.jars.packages); see README.md.
The Kafka options are written as Spark's documentation writes them, so the jobs run unchanged
against Apache Kafka.
"""

"""Adapters for the stock clients, by the name used in reports and on the command line."""

from __future__ import annotations

from compat.clients.aiokafka_client import AiokafkaAdapter
from compat.clients.base import ClientAdapter
from compat.clients.confluent import ConfluentAdapter
from compat.clients.java import OLDER_RELEASES, JavaAdapter, set_classpath
from compat.clients.kafka_python import KafkaPythonAdapter
from compat.clients.kcat import KcatAdapter
from compat.clients.spark import SparkAdapter, set_jars

ADAPTERS: dict[str, type[ClientAdapter]] = {
    cls.name: cls for cls in (KafkaPythonAdapter, ConfluentAdapter, AiokafkaAdapter, KcatAdapter, JavaAdapter,
                              *OLDER_RELEASES, SparkAdapter)
}


def configure(*, java_classpath: str = "", spark_jars: str = "") -> None:
    """Hand the Java client its classpath (it reports itself unavailable without) and the Spark client
    connector jars other than its default (the connector for the installed pyspark, from Maven Central)."""
    set_classpath(java_classpath)
    set_jars(spark_jars)

"""Kafka 4.4's kafka-client-metrics.sh (from Maven Central's jars) against our broker: a subscription altered,
described and deleted as an operator does it."""

from __future__ import annotations

from pathlib import Path

from broker.testing import EmbeddedBroker
from realkafka import KRAFT_KAFKA_LATEST, tools

from .test_prometheus_endpoint import subscriptions


def test_kafka_client_metrics_tool(tmp_path: Path) -> None:
    with EmbeddedBroker(data_dir=tmp_path) as broker:
        def run(*args: str) -> str:
            return tools.run(KRAFT_KAFKA_LATEST, "kafka-client-metrics", ["--bootstrap-server", broker.bootstrap,
                                                                         *args]).stdout

        assert "Altered client metrics config for java." in run(
            "--alter", "--name", "java", "--metrics", "org.apache.kafka.producer.", "--interval", "1000",
            "--match", "client_software_name=apache-kafka-java")
        assert run("--describe", "--name", "java").split() == [
            "Client", "metrics", "configs", "for", "java", "are:", "interval.ms=1000",
            "match=client_software_name=apache-kafka-java", "metrics=org.apache.kafka.producer."]
        assert subscriptions(broker) == ["java"]
        assert "Deleted client metrics config for java." in run("--delete", "--name", "java")
        assert subscriptions(broker) == []

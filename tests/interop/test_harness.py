"""The real-Kafka harness itself: a Kafka node from Maven Central's jars starts, serves a stock client, is read by
Kafka's own tools from the same jars, and stops on SIGTERM."""

from __future__ import annotations

from confluent_kafka import Consumer, Producer

from realkafka import KRAFT_KAFKA_LATEST, tools
from tests.interop.support import Nodes


def test_a_kafka_controller_and_broker_from_maven_central_serve_a_client(nodes: Nodes) -> None:
    quorum = nodes.kraft_quorum(KRAFT_KAFKA_LATEST)
    broker = nodes.kafka_kraft_broker(quorum, 2)
    tools.run(KRAFT_KAFKA_LATEST, "kafka-topics", ["--bootstrap-server", broker.bootstrap, "--create",
                                                   "--topic", "harness", "--partitions", "2"])
    listed = tools.run(KRAFT_KAFKA_LATEST, "kafka-topics", ["--bootstrap-server", broker.bootstrap, "--list"])
    assert "harness" in listed.stdout.split()
    producer = Producer({"bootstrap.servers": broker.bootstrap, "acks": "all"})
    for i in range(10):
        producer.produce("harness", value=b"v%d" % i, partition=i % 2)
    assert producer.flush(30) == 0
    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "harness",
                         "auto.offset.reset": "earliest"})
    consumer.subscribe(["harness"])
    seen: set[bytes] = set()
    for _ in range(60):
        msg = consumer.poll(1)
        if msg is not None and msg.error() is None:
            seen.add(msg.value())
        if len(seen) == 10:
            break
    consumer.close()
    assert seen == {b"v%d" % i for i in range(10)}
    # The quorum as Kafka's tool sees it: one voter (the controller), the broker an observer.
    status = tools.run(KRAFT_KAFKA_LATEST, "kafka-metadata-quorum",
                       ["--bootstrap-server", broker.bootstrap, "describe", "--status"]).stdout
    assert f"ClusterId:              {quorum.cluster_id}" in status
    # The JVM ends on SIGTERM with 143 (128 + SIGTERM) once its shutdown hook has run.
    assert broker.stop() == 143 and "shut down completed" in broker.log_text()

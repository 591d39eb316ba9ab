"""Group and transaction coordinators moving between a real Kafka 4.4 broker and ours, in one KRaft cluster with
a Kafka 4.4 controller: what one implementation wrote to `__consumer_offsets` and `__transaction_state`, the other
loads and goes on from (issue 29: a mixed cluster is one cluster).

With both internal topics at replication factor 2:
- groups whose coordinator is Kafka's broker (a classic group and a KIP-848 `group.protocol=consumer` group) and a
  transactional id it coordinates commit offsets and a transaction; Kafka's broker is killed (-9); ours takes the
  coordinators over from the records Kafka wrote: the committed offsets are there, the consumer group takes new
  members, and the transactional id's next producer fences the old epoch and commits;
- the same the other way round: what our coordinators wrote, Kafka's broker loads once ours is killed.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer
from confluent_kafka import TopicPartition as KafkaTopicPartition

from broker.testing import BrokerProcess
from realkafka import KRAFT_KAFKA_LATEST
from realkafka.node import KafkaNode
from tests.cluster.support import group_coordinator, txn_coordinator, wait_until
from tests.interop.conftest import open_nodes
from tests.interop.kraft_checks import create_topic, in_every_isr

V = KRAFT_KAFKA_LATEST
PARTITIONS = 4
RECORDS = 200
INTERNAL_RF2 = {"offsets.topic.replication.factor": "2", "transaction.state.log.replication.factor": "2",
                "transaction.state.log.min.isr": "1"}


@dataclass
class Cluster:
    kafka: KafkaNode  # node 2
    ours: BrokerProcess  # node 3
    topic: str

    @property
    def both(self) -> str:
        return f"{self.kafka.bootstrap},{self.ours.bootstrap}"

    def broker(self, node_id: int) -> Any:
        return self.kafka if node_id == 2 else self.ours

    def other(self, node_id: int) -> Any:
        return self.ours if node_id == 2 else self.kafka


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    nodes_gen = open_nodes(tmp_path_factory.mktemp("coordinators"))
    nodes = next(nodes_gen)
    try:
        quorum = nodes.kraft_quorum(V)
        kafka = nodes.kafka_kraft_broker(quorum, 2, overrides=INTERNAL_RF2)
        ours = nodes.our_kraft_broker(quorum, 3, overrides=INTERNAL_RF2)
        topic = f"coord-{uuid.uuid4().hex[:6]}"
        create_topic(ours, topic, PARTITIONS, 2)
        producer = Producer({"bootstrap.servers": f"{kafka.bootstrap},{ours.bootstrap}", "acks": "all"})
        for i in range(RECORDS):
            producer.produce(topic, value=b"r%d" % i, partition=i % PARTITIONS)
        assert producer.flush(60) == 0
        yield Cluster(kafka, ours, topic)
    finally:
        nodes_gen.close()


def keyed_to(cluster: Cluster, node_id: int, find: Any, prefix: str) -> str:
    """A group or transactional id whose coordinator is `node_id` (both replicas of its partition in sync)."""
    for _ in range(200):
        key = f"{prefix}-{uuid.uuid4().hex[:8]}"
        if wait_until(lambda k=key: find(cluster.ours.port, k) >= 0 and find(cluster.ours.port, k), 30,
                      "a coordinator") == node_id:
            return key
    raise AssertionError(f"no {prefix} id coordinated by {node_id}")


def consume_and_commit(cluster: Cluster, group: str, protocol: str) -> None:
    config = {"bootstrap.servers": cluster.both, "group.id": group, "auto.offset.reset": "earliest",
              "enable.auto.commit": False}
    if protocol == "consumer":
        config["group.protocol"] = "consumer"
    consumer = Consumer(config)
    consumer.subscribe([cluster.topic])
    end = log_end(cluster)

    def read_to_the_end() -> bool:
        consumer.consume(500, 0.5)
        return sum(max(p.offset, 0) for p in consumer.position(consumer.assignment())) >= end

    try:
        wait_until(read_to_the_end, 60, f"{group} reading every record")
        consumer.commit(asynchronous=False)
    finally:
        consumer.close()


def log_end(cluster: Cluster) -> int:
    """The sum of the topic's high watermarks (transaction markers take offsets too)."""
    consumer = Consumer({"bootstrap.servers": cluster.both, "group.id": "unused"})
    try:
        return sum(consumer.get_watermark_offsets(KafkaTopicPartition(cluster.topic, p), timeout=10)[1]
                   for p in range(PARTITIONS))
    finally:
        consumer.close()


def committed(cluster: Cluster, group: str) -> int:
    """The group's committed offsets (summed), asked again while its coordinator moves (NOT_COORDINATOR,
    COORDINATOR_LOAD_IN_PROGRESS), as a client's next call would."""
    consumer = Consumer({"bootstrap.servers": cluster.both, "group.id": group})

    def ask() -> int | None:
        try:
            parts = consumer.committed([KafkaTopicPartition(cluster.topic, p) for p in range(PARTITIONS)],
                                       timeout=10)
        except KafkaException as e:
            if e.args[0].code() in (KafkaError.NOT_COORDINATOR, KafkaError.COORDINATOR_LOAD_IN_PROGRESS,
                                    KafkaError.COORDINATOR_NOT_AVAILABLE, KafkaError._TIMED_OUT):
                return None
            raise
        return sum(max(p.offset, 0) for p in parts) + 1  # +1: 0 committed is an answer too

    try:
        return int(wait_until(ask, 60, f"{group}'s committed offsets")) - 1
    finally:
        consumer.close()


def transaction(cluster: Cluster, transactional_id: str, marker: bytes) -> None:
    producer = Producer({"bootstrap.servers": cluster.both, "transactional.id": transactional_id,
                         "transaction.timeout.ms": 60000})
    producer.init_transactions(60)
    producer.begin_transaction()
    for p in range(PARTITIONS):
        producer.produce(cluster.topic, value=marker, partition=p)
    producer.commit_transaction(60)


def committed_markers(cluster: Cluster, marker: bytes) -> int:
    """How many records carrying `marker` a read_committed consumer reads (to the end of every partition: the last
    offset may be a transaction marker, which no record shows)."""
    consumer = Consumer({"bootstrap.servers": cluster.both, "group.id": "unused", "enable.partition.eof": True,
                         "isolation.level": "read_committed", "enable.auto.commit": False})
    consumer.assign([KafkaTopicPartition(cluster.topic, p, 0) for p in range(PARTITIONS)])
    found, at_end = 0, set()
    try:
        def done() -> bool:
            nonlocal found
            for m in consumer.consume(1000, 0.5):
                if m.error() is not None:
                    at_end.add(m.partition())
                elif m.value() == marker:
                    found += 1
            return len(at_end) == PARTITIONS
        wait_until(done, 60, "every partition read to its end")
    finally:
        consumer.close()
    return found


@pytest.mark.parametrize("dies", [2, 3], ids=["kafka-dies", "ours-dies"])
def test_coordinators_move_to_the_other_implementation(cluster: Cluster, dies: int) -> None:
    for node_id in (2, 3):
        wait_until(lambda n=node_id: in_every_isr(V, cluster.other(n), cluster.topic, PARTITIONS, n), 60,
                   f"broker {node_id} in every ISR")
    classic = keyed_to(cluster, dies, group_coordinator, "classic")
    kip848 = keyed_to(cluster, dies, group_coordinator, "kip848")
    txn_id = keyed_to(cluster, dies, txn_coordinator, "txn")
    consume_and_commit(cluster, classic, "classic")
    consume_and_commit(cluster, kip848, "consumer")
    before = log_end(cluster)
    assert committed(cluster, classic) == committed(cluster, kip848) == before
    transaction(cluster, txn_id, b"first-" + txn_id.encode())

    victim, survivor = cluster.broker(dies), cluster.other(dies)
    victim.kill()
    try:
        for key, find in ((classic, group_coordinator), (kip848, group_coordinator), (txn_id, txn_coordinator)):
            wait_until(lambda k=key, f=find: f(survivor.port, k) == 5 - dies, 60, f"{key} coordinated by the survivor")
        # The survivor loaded what the dead broker's coordinators wrote.
        assert committed(cluster, classic) == before
        assert committed(cluster, kip848) == before
        consume_and_commit(cluster, kip848, "consumer")  # the loaded group takes a new member and reads on
        assert committed(cluster, kip848) == log_end(cluster)
        transaction(cluster, txn_id, b"second-" + txn_id.encode())  # a new epoch on the loaded transactional state
    finally:
        victim.start(120)
    assert committed_markers(cluster, b"first-" + txn_id.encode()) == PARTITIONS
    assert committed_markers(cluster, b"second-" + txn_id.encode()) == PARTITIONS

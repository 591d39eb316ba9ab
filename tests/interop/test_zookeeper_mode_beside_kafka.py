"""Our broker and a real Kafka 3.7 broker (Maven Central's jars) in one ZooKeeper-mode cluster, on Debian's
ZooKeeper: Kafka's controller first, then ours (issue 28).

In order, on one cluster:
1. Kafka's broker (started first) is the controller; a 4-partition RF=2 topic created through ours has leaders on
   both brokers and both in every ISR;
2. 20,000 records from an idempotent acks=all producer are read back once each, and the replicas hold the same bytes;
3. kill -9 of ours, then of Kafka's broker (the controller, which moves to ours), under load: nothing acknowledged is
   lost and each restarted broker is back in every ISR;
4. with our controller: a topic created through Kafka's broker is led by both, and SIGTERM of Kafka's broker moves
   its leaderships to ours (our controller's controlled shutdown) before it exits;
5. Kafka's tools read ours: `kafka-topics.sh --describe`, `kafka-consumer-groups.sh`, `kafka-configs.sh`, and
   `kafka-dump-log.sh` on our segment files.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from confluent_kafka import Consumer
from confluent_kafka import TopicPartition as KafkaTopicPartition
from kazoo.client import KazooClient

from broker.testing import BrokerProcess
from realkafka import ZOOKEEPER_KAFKA, tools
from realkafka.node import KafkaNode
from tests.cluster.support import wait_until
from tests.interop.conftest import open_nodes
from tests.interop.kraft_checks import (
    Load,
    create_topic,
    describe,
    in_every_isr,
    isr,
    leader,
    read_back_once,
    same_bytes,
)
from tests.zookeeper import start_zookeeper

PARTITIONS = 4
V = ZOOKEEPER_KAFKA


@dataclass
class ZkCluster:
    zookeeper_connect: str
    kafka: KafkaNode  # broker 1
    ours: BrokerProcess  # broker 2
    topic: str = ""

    @property
    def both(self) -> str:
        return f"{self.kafka.bootstrap},{self.ours.bootstrap}"

    def controller(self) -> int | None:
        zk = KazooClient(hosts=self.zookeeper_connect, timeout=10)
        zk.start(timeout=10)
        try:
            if not zk.exists("/controller"):
                return None
            return int(json.loads(zk.get("/controller")[0])["brokerid"])
        finally:
            zk.stop()
            zk.close()


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ZkCluster]:
    directory = tmp_path_factory.mktemp("zk-mixed")
    zookeeper = start_zookeeper(directory)
    nodes_gen = open_nodes(directory)
    nodes = next(nodes_gen)
    try:
        # Kafka's session timeout in the tests' range, so a killed broker's ephemeral nodes go within seconds.
        fast = {"zookeeper.session.timeout.ms": "4000", "replica.lag.time.max.ms": "5000"}
        kafka = nodes.kafka_zk_broker(V, 1, zookeeper.connect_string, overrides=fast)
        wait_until(lambda: ZkCluster(zookeeper.connect_string, kafka, None).controller() == 1,  # type: ignore
                   30, "Kafka's broker elected controller")
        ours = nodes.our_zk_broker(2, zookeeper.connect_string, overrides=fast)
        yield ZkCluster(zookeeper.connect_string, kafka, ours)
    finally:
        nodes_gen.close()
        zookeeper.stop()


def test_1_a_topic_created_through_ours_is_led_by_both_under_kafkas_controller(cluster: ZkCluster) -> None:
    assert cluster.controller() == 1
    cluster.topic = f"zkmixed-{uuid.uuid4().hex[:6]}"
    create_topic(cluster.ours, cluster.topic, PARTITIONS, 2)
    rows = wait_until(lambda: (r := describe(V, cluster.kafka, cluster.topic)) and len(r) == PARTITIONS
                      and all(isr(row) == {1, 2} for row in r.values()) and r, 30, "both in every ISR")
    assert {leader(row) for row in rows.values()} == {1, 2}, rows


def test_2_records_are_read_back_once_from_byte_identical_replicas(cluster: ZkCluster) -> None:
    load = Load(cluster.both, cluster.topic).start()
    wait_until(lambda: len(load.acked) >= 20000, 120, "20,000 acknowledged records")
    load.stop()
    assert not load.errors, load.errors[:3]
    read_back_once(load, cluster.ours, PARTITIONS)
    consumer = Consumer({"bootstrap.servers": cluster.both, "group.id": "unused"})
    try:
        high = {p: consumer.get_watermark_offsets(KafkaTopicPartition(cluster.topic, p), timeout=10)[1]
                for p in range(PARTITIONS)}
    finally:
        consumer.close()
    for p, hw in high.items():
        wait_until(lambda p=p, hw=hw: _same(cluster, p, hw), 30, f"{cluster.topic}-{p} identical")


def _same(cluster: ZkCluster, partition: int, high_watermark: int) -> bool:
    try:
        return same_bytes(cluster.kafka.log_dirs[0], cluster.ours.log_dirs[0], cluster.topic, partition,
                          high_watermark) > 0
    except AssertionError:
        return False


def test_3_kill_9_of_either_side_under_load_loses_nothing(cluster: ZkCluster) -> None:
    topic = f"zkload-{uuid.uuid4().hex[:6]}"
    create_topic(cluster.kafka, topic, PARTITIONS, 2)
    wait_until(lambda: in_every_isr(V, cluster.kafka, topic, PARTITIONS, 2), 30, "ours in every ISR")
    load = Load(cluster.both, topic).start()
    rejoin: dict[str, float] = {}
    try:
        for victim, survivor, victim_id in ((cluster.ours, cluster.kafka, 2), (cluster.kafka, cluster.ours, 1)):
            wait_until(lambda: len(load.acked) > 2000, 60, "the load running")
            victim.kill()
            acked_at_kill = len(load.acked)
            wait_until(lambda n=acked_at_kill: len(load.acked) > n + 1000, 90,
                       "writes acknowledged by the surviving broker alone")
            started = time.monotonic()
            victim.start(120)
            wait_until(lambda s=survivor, v=victim_id: in_every_isr(V, s, topic, PARTITIONS, v), 120,
                       f"broker {victim_id} back in every ISR")
            rejoin[f"broker {victim_id}"] = round(time.monotonic() - started, 1)
    finally:
        load.stop()
    print(f"{len(load.acked)} acknowledged; seconds from restart to every ISR: {rejoin}")
    read_back_once(load, cluster.kafka, PARTITIONS)
    assert cluster.controller() == 2, "the controller moved to ours when Kafka's broker died"


def test_4_our_controller_moves_a_kafka_brokers_leaderships_on_sigterm(cluster: ZkCluster) -> None:
    assert cluster.controller() == 2
    topic = f"zkctl-{uuid.uuid4().hex[:6]}"
    create_topic(cluster.kafka, topic, PARTITIONS, 2)
    rows = wait_until(lambda: (r := describe(V, cluster.ours, topic)) and len(r) == PARTITIONS
                      and all(isr(row) == {1, 2} for row in r.values()) and r, 30, "both in every ISR")
    assert {leader(row) for row in rows.values()} == {1, 2}, rows
    assert cluster.kafka.stop(60) in (0, 143)
    rows = describe(V, cluster.ours, topic)
    assert all(leader(row) == 2 and isr(row) == {2} for row in rows.values()), rows
    cluster.kafka.start(120)
    wait_until(lambda: in_every_isr(V, cluster.ours, topic, PARTITIONS, 1), 120, "Kafka's broker back in every ISR")


def test_5_kafkas_tools_read_ours(cluster: ZkCluster) -> None:
    rows = describe(V, cluster.ours, cluster.topic)
    assert len(rows) == PARTITIONS and all(isr(row) == {1, 2} for row in rows.values()), rows
    group = f"g-{uuid.uuid4().hex[:6]}"
    consumer = Consumer({"bootstrap.servers": cluster.ours.bootstrap, "group.id": group,
                         "auto.offset.reset": "earliest", "enable.auto.commit": False})
    consumer.subscribe([cluster.topic])
    wait_until(lambda: consumer.poll(0.5) is not None, 60, "a record consumed by the group")
    consumer.commit(asynchronous=False)
    consumer.close()
    described = tools.run(V, "kafka-consumer-groups", ["--bootstrap-server", cluster.ours.bootstrap, "--describe",
                                                       "--group", group]).stdout
    assert cluster.topic in described and group in described, described
    tools.run(V, "kafka-configs", ["--bootstrap-server", cluster.ours.bootstrap, "--alter", "--entity-type", "topics",
                                   "--entity-name", cluster.topic, "--add-config", "retention.ms=86400000"])
    configs = tools.run(V, "kafka-configs", ["--bootstrap-server", cluster.kafka.bootstrap, "--describe",
                                             "--entity-type", "topics", "--entity-name", cluster.topic]).stdout
    assert "retention.ms=86400000" in configs, configs
    segment = sorted((Path(cluster.ours.log_dirs[0]) / f"{cluster.topic}-0").glob("*.log"))[0]
    dumped = tools.run(V, "kafka-dump-log", ["--files", str(segment), "--print-data-log"]).stdout
    assert "baseOffset: 0" in dumped and "isvalid: true" in dumped.lower(), dumped[:2000]

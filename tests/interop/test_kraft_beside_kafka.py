"""Our KRaft broker in a real Kafka cluster (issue 29): a Kafka controller (node 1) and a Kafka broker (node 2) from
Maven Central's jars, formatted by Kafka's own storage tool with the release's defaults, and ours as node 3 with the
`server.properties` a Kafka broker takes, for Kafka 4.4 (metadata.version 4.4-IV2, ELR, share.version 2,
streams.version 1 finalized), Kafka 4.1 (4.1-IV1, ELR) and Kafka 3.7 (3.7-IV4); and ours as both brokers beside a
Kafka 4.4 controller.

The checks, in order, on one cluster per Kafka version:
1. ours registers and follows the metadata log as an observer with no lag (`kafka-metadata-quorum.sh`);
2. a 4-partition RF=2 topic created through ours has leaders on both brokers;
3. 20,000 records from an idempotent acks=all producer are read back once each;
4. the two replicas of each partition hold the same bytes;
5. kill -9 of either broker under load loses nothing acknowledged, and the restarted broker is back in every ISR;
6. SIGTERM of ours moves its leaderships to the Kafka broker before it exits (a controlled shutdown);
7. Kafka's tools read ours: `kafka-topics.sh --describe` (with the ELR columns, DescribeTopicPartitions),
   `kafka-features.sh`, `kafka-metadata-quorum.sh` (DescribeQuorum sent on to the controller),
   `kafka-consumer-groups.sh`, and `kafka-dump-log.sh` on our partition and `__cluster_metadata` segments;
8. under min.insync.replicas (a topic led by ours, its follower shut down): acks=all is refused, an acks=1 write
   stays invisible (the high watermark waits, KAFKA-15583: what the controller's ELR elections rest on), the
   follower is listed as an eligible leader replica where Kafka 4.x finalizes ELR, and all becomes visible once the
   follower is back in the ISR.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka import TopicPartition as KafkaTopicPartition

from broker.testing import BrokerProcess
from realkafka import KRAFT_KAFKA_41, KRAFT_KAFKA_LATEST, ZOOKEEPER_KAFKA, jars, tools
from realkafka.node import KafkaNode
from tests.cluster.support import consume_all, wait_until
from tests.cluster.support import create_topic as cluster_create_topic
from tests.interop.conftest import open_nodes
from tests.interop.kraft_checks import (
    Load,
    create_topic,
    describe,
    in_every_isr,
    leader,
    quorum_replication,
    read_back_once,
    same_bytes,
)
from tests.interop.support import KRaftQuorum

PARTITIONS = 4


@dataclass
class Mixed:
    version: str
    quorum: KRaftQuorum
    kafka: KafkaNode | BrokerProcess  # node 2: a Kafka broker, or another of ours
    ours: BrokerProcess  # node 3
    topic: str = ""

    @property
    def both(self) -> str:
        return f"{self.kafka.bootstrap},{self.ours.bootstrap}"

    @property
    def ours_log_dir(self) -> Path:
        return Path(self.ours.props["log.dirs"])


@pytest.fixture(scope="module", params=[(KRAFT_KAFKA_LATEST, "kafka"), (KRAFT_KAFKA_41, "kafka"),
                                        (ZOOKEEPER_KAFKA, "kafka"), (KRAFT_KAFKA_LATEST, "ours")],
                ids=lambda p: f"kafka-{p[0]}" if p[1] == "kafka" else f"ours-both-kafka-{p[0]}-controller")
def mixed(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Mixed]:
    version, node_2 = request.param
    nodes_gen = open_nodes(tmp_path_factory.mktemp(f"kraft-{version}-{node_2}"))
    nodes = next(nodes_gen)
    try:
        quorum = nodes.kraft_quorum(version)
        kafka = nodes.kafka_kraft_broker(quorum, 2) if node_2 == "kafka" else nodes.our_kraft_broker(quorum, 2)
        ours = nodes.our_kraft_broker(quorum, 3)
        yield Mixed(version, quorum, kafka, ours)
    finally:
        nodes_gen.close()


def test_1_ours_registers_and_follows_the_metadata_log_as_an_observer(mixed: Mixed) -> None:
    def observer_without_lag() -> bool:
        row = quorum_replication(mixed.version, mixed.kafka).get(3)
        return row is not None and row["Status"] == "Observer" and row["Lag"] == "0"

    wait_until(observer_without_lag, 30, "ours (3) listed as an observer with lag 0")


def test_2_a_topic_created_through_ours_has_leaders_on_both_brokers(mixed: Mixed) -> None:
    mixed.topic = f"mixed-{uuid.uuid4().hex[:6]}"
    create_topic(mixed.ours, mixed.topic, PARTITIONS, 2)

    def placed() -> dict[int, dict[str, str]] | None:
        rows = describe(mixed.version, mixed.kafka, mixed.topic)
        done = len(rows) == PARTITIONS and all(row["Isr"].count(",") == 1 for row in rows.values())
        return rows if done else None

    rows = wait_until(placed, 30, "every partition with two in-sync replicas")
    assert {leader(row) for row in rows.values()} == {2, 3}, rows
    assert all(row["Replicas"] in ("2,3", "3,2") for row in rows.values()), rows


def test_3_idempotent_acks_all_records_are_read_back_once(mixed: Mixed) -> None:
    load = Load(mixed.both, mixed.topic).start()
    wait_until(lambda: len(load.acked) >= 20000, 120, "20,000 acknowledged records")
    load.stop()
    assert not load.errors, load.errors[:3]
    read_back_once(load, mixed.ours, PARTITIONS)


def test_4_both_replicas_hold_the_same_bytes(mixed: Mixed) -> None:
    consumer = Consumer({"bootstrap.servers": mixed.both, "group.id": "unused"})
    try:
        high = {p: consumer.get_watermark_offsets(KafkaTopicPartition(mixed.topic, p), timeout=10)[1]
                for p in range(PARTITIONS)}
    finally:
        consumer.close()
    total = 0
    for p, hw in high.items():
        # Both replicas are in the ISR, so each holds everything below the high watermark once it has flushed.
        total += wait_until(lambda p=p, hw=hw: _same(mixed, p, hw), 30, f"{mixed.topic}-{p} identical")
    assert total > 0


def _same(mixed: Mixed, partition: int, high_watermark: int) -> int | None:
    try:
        return same_bytes(mixed.kafka.log_dirs[0], mixed.ours_log_dir, mixed.topic, partition, high_watermark) or None
    except AssertionError:
        return None


def test_5_kill_9_of_either_broker_under_load_loses_nothing(mixed: Mixed) -> None:
    topic = f"load-{uuid.uuid4().hex[:6]}"
    create_topic(mixed.kafka, topic, PARTITIONS, 2)
    wait_until(lambda: in_every_isr(mixed.version, mixed.kafka, topic, PARTITIONS, 3), 30, "ours in every ISR")
    load = Load(mixed.both, topic).start()
    rejoin: dict[str, float] = {}
    try:
        for victim, survivor, victim_id in ((mixed.ours, mixed.kafka, 3), (mixed.kafka, mixed.ours, 2)):
            wait_until(lambda: len(load.acked) > 2000, 60, "the load running")
            victim.kill()
            acked_at_kill = len(load.acked)
            wait_until(lambda n=acked_at_kill: len(load.acked) > n + 1000, 90,
                       "writes acknowledged by the surviving broker alone")
            started = time.monotonic()
            victim.start(120)
            wait_until(lambda s=survivor, v=victim_id: in_every_isr(mixed.version, s, topic, PARTITIONS, v), 120,
                       f"broker {victim_id} back in every ISR")
            rejoin[f"node {victim_id}"] = round(time.monotonic() - started, 1)
    finally:
        load.stop()
    print(f"Kafka {mixed.version}: {len(load.acked)} acknowledged; seconds from restart to every ISR: {rejoin}")
    read_back_once(load, mixed.kafka, PARTITIONS)


def test_6_sigterm_of_ours_moves_its_leaderships_away(mixed: Mixed) -> None:
    led_by_ours = [p for p, row in describe(mixed.version, mixed.kafka, mixed.topic).items() if leader(row) == 3]
    if not led_by_ours:  # test 5's kills may have left every leadership on node 2: move some back
        tools.run(mixed.version, "kafka-leader-election", ["--bootstrap-server", mixed.kafka.bootstrap,
                                                           "--election-type", "preferred", "--all-topic-partitions"],
                  check=False)  # exits 1 when some partition needs no election
        led_by_ours = wait_until(lambda: [p for p, row in describe(mixed.version, mixed.kafka, mixed.topic).items()
                                          if leader(row) == 3], 30, "ours leading its preferred partitions")
    started = time.monotonic()
    assert mixed.ours.stop(60) == 0
    stopped = time.monotonic() - started
    rows = describe(mixed.version, mixed.kafka, mixed.topic)
    assert all(leader(row) == 2 and isr(row) == {2} for row in rows.values()), rows
    print(f"Kafka {mixed.version}: ours stopped in {stopped:.1f} s, its {len(led_by_ours)} leaderships moved")
    mixed.ours.start(120)
    wait_until(lambda: in_every_isr(mixed.version, mixed.kafka, mixed.topic, PARTITIONS, 3), 120,
               "ours back in every ISR")


def isr(row: dict[str, str]) -> set[int]:
    return {int(b) for b in row["Isr"].split(",") if b}


def test_7_kafkas_tools_read_ours(mixed: Mixed) -> None:
    v = mixed.version
    rows = describe(v, mixed.ours, mixed.topic)
    assert len(rows) == PARTITIONS and all(isr(row) == {2, 3} for row in rows.values()), rows
    if jars.major(v) >= 4:  # Kafka 3.8's tool on: DescribeTopicPartitions, with the ELR columns
        assert all("Elr" in row and "LastKnownElr" in row for row in rows.values()), rows
    features = tools.run(v, "kafka-features", ["--bootstrap-server", mixed.ours.bootstrap, "describe"]).stdout
    assert "Feature: metadata.version" in features and "FinalizedVersionLevel" in features, features
    status = tools.run(v, "kafka-metadata-quorum", ["--bootstrap-server", mixed.ours.bootstrap, "describe",
                                                   "--status"]).stdout
    assert f"ClusterId:              {mixed.quorum.cluster_id}" in status and "LeaderId:               1" in status
    # A consumer group committed through ours, listed and described by Kafka's tool through ours.
    group = f"g-{uuid.uuid4().hex[:6]}"
    consumer = Consumer({"bootstrap.servers": mixed.ours.bootstrap, "group.id": group,
                         "auto.offset.reset": "earliest", "enable.auto.commit": False})
    consumer.subscribe([mixed.topic])
    wait_until(lambda: consumer.poll(0.5) is not None, 60, "a record consumed by the group")
    consumer.commit(asynchronous=False)
    consumer.close()
    described = tools.run(v, "kafka-consumer-groups", ["--bootstrap-server", mixed.ours.bootstrap, "--describe",
                                                       "--group", group]).stdout
    assert mixed.topic in described and group in described, described
    # Our segment files and metadata log, read by Kafka's dump tool.
    segment = sorted((mixed.ours_log_dir / f"{mixed.topic}-0").glob("*.log"))[0]
    dumped = tools.run(v, "kafka-dump-log", ["--files", str(segment), "--print-data-log"]).stdout
    assert "baseOffset: 0" in dumped and "isvalid: true" in dumped.lower(), dumped[:2000]
    metadata = sorted((mixed.ours_log_dir / "__cluster_metadata-0").glob("*.log"))[0]
    decoded = tools.run(v, "kafka-dump-log", ["--cluster-metadata-decoder", "--files", str(metadata)]).stdout
    assert "TOPIC_RECORD" in decoded and mixed.topic in decoded, decoded[:2000]
    assert consume_all(mixed.ours.bootstrap, mixed.topic, PARTITIONS)


def test_8_under_min_insync_replicas_the_high_watermark_waits(mixed: Mixed) -> None:
    topic = f"minisr-{uuid.uuid4().hex[:6]}"
    cluster_create_topic(mixed.ours.bootstrap, topic, 1, 2, configs={"min.insync.replicas": "2"},
                         assignment=[[3, 2]])
    wait_until(lambda: isr(describe(mixed.version, mixed.ours, topic)[0]) == {2, 3}, 30, "both in the ISR")
    tp = KafkaTopicPartition(topic, 0)
    assert produce(mixed.ours, topic, "all", 10) == [None] * 10
    assert high_watermark(mixed.ours, tp) == 10
    assert mixed.kafka.stop(60) in (0, 143)  # a clean shutdown: the follower stays eligible
    try:
        row = wait_until(lambda: (r := describe(mixed.version, mixed.ours, topic)[0]) and isr(r) == {3} and r, 30,
                         "the ISR shrunk to ours alone")
        if jars.major(mixed.version) >= 4:  # ELR finalized by Kafka 4.x's default format
            assert row["Elr"] == "2", row
        else:
            assert "Elr" not in row or row["Elr"] in ("", "N/A"), row
        assert produce(mixed.ours, topic, "all", 1) == ["NOT_ENOUGH_REPLICAS"]
        assert produce(mixed.ours, topic, "1", 5) == [None] * 5  # acknowledged by the leader alone
        assert high_watermark(mixed.ours, tp) == 10  # ... and not visible while the ISR is below min.insync
    finally:
        mixed.kafka.start(120)
    row = wait_until(lambda: (r := describe(mixed.version, mixed.ours, topic)[0]) and isr(r) == {2, 3} and r, 60,
                     "the follower back in the ISR")
    assert row.get("Elr", "") in ("", "N/A"), row
    wait_until(lambda: high_watermark(mixed.ours, tp) == 15, 30, "the high watermark past the acks=1 writes")


def produce(via: BrokerProcess, topic: str, acks: str, n: int) -> list[str | None]:
    """Delivery results of `n` records sent to partition 0 (None: acknowledged, else the error's name)."""
    producer = Producer({"bootstrap.servers": via.bootstrap, "acks": acks, "enable.idempotence": False,
                         "retries": 0, "message.timeout.ms": 15000})
    results: list[str | None] = []
    for i in range(n):
        producer.produce(topic, value=b"m%d" % i, partition=0,
                         on_delivery=lambda err, _: results.append(None if err is None else err.name()))
    producer.flush(30)
    return results


def high_watermark(via: BrokerProcess, tp: KafkaTopicPartition) -> int:
    consumer = Consumer({"bootstrap.servers": via.bootstrap, "group.id": "unused"})
    try:
        return int(consumer.get_watermark_offsets(tp, timeout=10)[1])
    finally:
        consumer.close()

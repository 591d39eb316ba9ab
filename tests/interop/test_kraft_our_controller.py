"""Real Kafka brokers on a controller quorum of ours (issue 32): three controllers of ours (`process.roles=controller`,
broker/quorum/), formatted with `python -m broker format` at the newest metadata.version the Kafka broker supports
(4.4-IV2 for Kafka 4.4, whose broker then sends BrokerHeartbeat v2 with its cordoned log dirs, KIP-1066; 4.1-IV1 for
Kafka 4.1), a Kafka broker from Maven Central's jars (node 11, formatted by Kafka's storage tool) and a KRaft broker
of ours (node 12).

The checks, per Kafka version:
1. Kafka's broker registers, is unfenced and follows our metadata log as an observer (DescribeQuorum through
   Kafka's own `kafka-metadata-quorum.sh`, which Kafka's broker forwards to our active controller);
2. a topic of replication factor 2 created through Kafka's broker (CreateTopics forwarded in an Envelope to our
   controller) is placed on both brokers, and an idempotent acks=all producer's records are read back once each,
   through either broker;
3. kill -9 of our active controller: Kafka's broker finds the new one, a topic created through it afterwards works.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from broker.testing import BrokerProcess
from realkafka import KRAFT_KAFKA_41, KRAFT_KAFKA_LATEST, tools
from realkafka.node import KafkaNode, kraft_node
from tests.cluster.support import create_topic, metadata, wait_until
from tests.interop.kraft_checks import Load, read_back_once
from tests.our_quorum import OurQuorum

PARTITIONS = 4
# The newest metadata.version each Kafka release supports.
RELEASE = {KRAFT_KAFKA_LATEST: "4.4-IV2", KRAFT_KAFKA_41: "4.1-IV1"}


@dataclass
class Cluster:
    version: str
    quorum: OurQuorum
    kafka: KafkaNode
    ours: BrokerProcess

    @property
    def both(self) -> str:
        return f"{self.kafka.bootstrap},{self.ours.bootstrap}"


@pytest.fixture(scope="module", params=[KRAFT_KAFKA_LATEST, KRAFT_KAFKA_41], ids=lambda v: f"kafka-{v}")
def cluster(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    version = request.param
    directory = tmp_path_factory.mktemp(f"our-controllers-kafka-{version}")
    quorum = OurQuorum(directory, 3, release_version=RELEASE[version])
    kafka: KafkaNode | None = None
    ours: BrokerProcess | None = None
    try:
        quorum.start()
        kafka = kraft_node(version, 11, "broker", directory / "kafka-broker-11", voters=quorum.voters,
                           overrides={"controller.quorum.fetch.timeout.ms": "4000",
                                      "controller.quorum.request.timeout.ms": "4000"})
        kafka.format(quorum.cluster_id)
        kafka.start()
        ours = quorum.our_broker(12)
        ours.start(90)
        yield Cluster(version, quorum, kafka, ours)
    finally:
        if ours is not None:
            ours.stop(30)
        if kafka is not None:
            kafka.stop(60)
        quorum.close()


def _quorum_status(cluster: Cluster) -> str:
    return tools.run(cluster.version, "kafka-metadata-quorum", ["--bootstrap-server", cluster.kafka.bootstrap,
                                                                "describe", "--status"]).stdout


def test_1_kafkas_broker_registers_and_follows_our_metadata_log(cluster: Cluster) -> None:
    wait_until(lambda: {11, 12} <= {b.id for b in _brokers(cluster)}, 60, "both brokers registered and unfenced")
    leader = wait_until(cluster.quorum.active, 30, "an active controller of ours")
    status = _quorum_status(cluster)
    assert f"ClusterId:              {cluster.quorum.cluster_id}" in status, status
    assert f"LeaderId:               {leader}" in status, status
    replication = tools.run(cluster.version, "kafka-metadata-quorum", [
        "--bootstrap-server", cluster.kafka.bootstrap, "describe", "--replication"]).stdout
    assert "Observer" in replication and "Leader" in replication, replication
    if RELEASE[cluster.version] >= "4.3":
        # From 4.3-IV0 Kafka's broker heartbeats (v2) with its cordoned log dirs (KIP-1066; none here): our controller
        # recorded them as Kafka's does, a BrokerRegistrationChangeRecord v3, which Kafka's dump tool reads back.
        log_dir = cluster.quorum.controllers[leader].log_dirs[0] / "__cluster_metadata-0"
        decoded = "".join(tools.run(cluster.version, "kafka-dump-log", [
            "--cluster-metadata-decoder", "--files", str(segment)]).stdout for segment in sorted(log_dir.glob("*.log")))
        assert re.search(r'"type":"BROKER_REGISTRATION_CHANGE_RECORD","version":3,"data":\{"brokerId":11,'
                         r'"brokerEpoch":\d+,"cordonedLogDirs":\[\]', decoded), decoded[-3000:]


def _brokers(cluster: Cluster) -> list[object]:
    from tests.cluster.support import admin

    return list(admin(cluster.kafka.bootstrap).list_topics(timeout=10).brokers.values())


def _placed_on_both(cluster: Cluster, topic: str) -> bool:
    parts = metadata(cluster.both, topic)
    return len(parts) == PARTITIONS and all(sorted(p.isrs) == [11, 12] for p in parts.values())


def test_2_a_topic_created_through_kafkas_broker_serves_produce_and_consume(cluster: Cluster) -> None:
    topic = f"ours-ctl-{uuid.uuid4().hex[:6]}"
    create_topic(cluster.kafka.bootstrap, topic, PARTITIONS, 2)
    wait_until(lambda: _placed_on_both(cluster, topic), 60, f"{topic} with two in-sync replicas everywhere")
    assert {p.leader for p in metadata(cluster.both, topic).values()} == {11, 12}
    load = Load(cluster.both, topic).start()
    wait_until(lambda: len(load.acked) >= 5000, 120, "5,000 acknowledged records")
    load.stop()
    assert not load.errors, load.errors[:3]
    read_back_once(load, cluster.kafka, PARTITIONS)
    read_back_once(load, cluster.ours, PARTITIONS)


def test_3_kill_9_of_our_active_controller(cluster: Cluster) -> None:
    victim = wait_until(cluster.quorum.active, 30, "an active controller of ours")
    cluster.quorum.controllers[victim].kill()
    try:
        wait_until(lambda: (a := cluster.quorum.active()) not in (None, victim) and a, 60, "a new active controller")
        topic = f"after-{uuid.uuid4().hex[:6]}"
        create_topic(cluster.kafka.bootstrap, topic, PARTITIONS, 2)
        wait_until(lambda: _placed_on_both(cluster, topic), 60, f"{topic} with two in-sync replicas everywhere")
        load = Load(cluster.kafka.bootstrap, topic).start()
        wait_until(lambda: len(load.acked) >= 2000, 120, "2,000 acknowledged records")
        load.stop()
        assert not load.errors, load.errors[:3]
        read_back_once(load, cluster.ours, PARTITIONS)
    finally:
        cluster.quorum.controllers[victim].start(60)

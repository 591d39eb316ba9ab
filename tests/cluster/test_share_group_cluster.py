"""A share group over three brokers: the group coordinator on one broker, the share partitions led by all
three; three confluent-kafka ShareConsumers get every record exactly once. The group survives its coordinator's
death with its members and epochs. And a share group on a KRaft broker (process.roles=broker). Share groups
start at the latest offset (Kafka's default `share.auto.offset.reset`), so markers are produced until one from
each partition has arrived before the records that count."""

from __future__ import annotations

import os
import threading
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Producer, ShareConsumer
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, NewTopic, ResourceType

from broker.config.kafka_config import KafkaConfig
from broker.kraft.format import format_dirs
from broker.testing import EmbeddedBroker
from protocol import ApiKey, request_class
from tests.cluster.support import Zk, create_topic, metadata, raw_request, start_cluster, wait_isr, wait_until
from tests.kraft_controller import ControllerThread

TOPIC, GROUP, PARTITIONS = "share-cluster", "share-cluster-group", 3


def test_three_members_share_partitions_led_by_three_brokers(tmp_path: Path) -> None:
    cluster = start_cluster(tmp_path, {"group.share.heartbeat.interval.ms": "500",
                                       "group.share.min.heartbeat.interval.ms": "500"})
    try:
        create_topic(cluster.bootstrap, TOPIC, PARTITIONS, 1)
        leaders = {p.leader for p in metadata(cluster.bootstrap, TOPIC).values()}
        assert len(leaders) == 3, leaders
        producer = Producer({"bootstrap.servers": cluster.bootstrap})
        seen: Counter[bytes] = Counter()
        lock = threading.Lock()
        stop = threading.Event()

        def member() -> None:
            consumer = ShareConsumer({"bootstrap.servers": cluster.bootstrap, "group.id": GROUP})
            consumer.subscribe([TOPIC])
            try:
                while not stop.is_set():
                    for m in consumer.poll(0.2):
                        if m.error() is None:
                            with lock:
                                seen[m.value()] += 1
            finally:
                consumer.close()

        threads = [threading.Thread(target=member) for _ in range(3)]
        for t in threads:
            t.start()
        try:
            def markers() -> bool:
                for p in range(PARTITIONS):
                    producer.produce(TOPIC, f"marker-{p}".encode(), partition=p)
                producer.flush(10)
                time.sleep(0.3)
                with lock:
                    return all(seen[f"marker-{p}".encode()] for p in range(PARTITIONS))
            wait_until(markers, 60, "a marker from every partition")
            values = [f"v{i}".encode() for i in range(300)]
            for i, v in enumerate(values):
                producer.produce(TOPIC, v, partition=i % PARTITIONS)
            assert producer.flush(15) == 0
            wait_until(lambda: all(seen[v] for v in values), 60, "every record")
            time.sleep(1.0)
        finally:
            stop.set()
            for t in threads:
                t.join(30)
        assert {seen[v] for v in values} == {1}
    finally:
        cluster.stop()


def test_a_share_group_survives_its_coordinators_death(tmp_path: Path) -> None:
    """The share partitions on the two brokers that are not the group's coordinator; the coordinator killed
    -9: the broker that now leads the group's `__consumer_offsets` partition loads the group (Kafka's
    ShareGroup* records) with the same members and epochs, and the members consume on without rejoining."""
    cluster = start_cluster(tmp_path, {"zookeeper.session.timeout.ms": "3000", "replica.fetch.wait.max.ms": "100",
                                       "group.share.heartbeat.interval.ms": "500",
                                       "group.share.min.heartbeat.interval.ms": "500"})
    zk = Zk(cluster)
    try:
        group = "share-failover"
        find = request_class(ApiKey.FIND_COORDINATOR)[3](key=group, key_type=0)
        old = wait_until(lambda: (r := raw_request(cluster.ports[0], find)).error_code == 0 and r.node_id + 1, 30,
                         "the group coordinator") - 1
        wait_isr(zk, "__consumer_offsets", 4, {0, 1, 2}, 20)
        others = [b for b in range(3) if b != old]
        create_topic(cluster.bootstrap, "share-failover", 2, 1, assignment=[[b] for b in others])
        wait_until(lambda: len(metadata(cluster.bootstrap, "share-failover")) == 2, 30, "the topic")
        bootstrap = ",".join(f"127.0.0.1:{cluster.ports[b]}" for b in others)
        producer = Producer({"bootstrap.servers": bootstrap})
        consumer = ShareConsumer({"bootstrap.servers": cluster.bootstrap, "group.id": group})
        consumer.subscribe(["share-failover"])
        seen: Counter[bytes] = Counter()

        def produce_and_consume(tag: str, n: int) -> None:
            marker = f"{tag}-marker".encode()

            def markers() -> bool:
                for p in range(2):
                    producer.produce("share-failover", marker, partition=p)
                producer.flush(10)
                for m in consumer.poll(0.5):
                    if m.error() is None:
                        seen[m.value()] += 1
                return seen[marker] >= 2
            wait_until(markers, 60, f"{tag}: markers through both partitions")
            values = [f"{tag}-{i}".encode() for i in range(n)]
            for i, v in enumerate(values):
                producer.produce("share-failover", v, partition=i % 2)
            assert producer.flush(15) == 0

            def consumed() -> bool:
                for m in consumer.poll(0.3):
                    if m.error() is None:
                        seen[m.value()] += 1
                return all(seen[v] for v in values)
            wait_until(consumed, 60, f"{tag}: every record")
            assert {seen[v] for v in values} == {1}

        def describe(port: int) -> Any:
            return raw_request(port, request_class(ApiKey.SHARE_GROUP_DESCRIBE)[1](
                group_ids=[group], include_authorized_operations=False)).groups[0]

        try:
            produce_and_consume("before", 100)
            before = describe(cluster.ports[old])
            assert before.error_code == 0 and len(before.members) == 1
            cluster.brokers[old].kill()
            new = wait_until(lambda: (r := raw_request(cluster.ports[others[0]], find)).error_code == 0
                             and r.node_id != old and r.node_id + 1, 30, "a new group coordinator") - 1
            after = wait_until(lambda: (d := describe(cluster.ports[new])).error_code == 0 and d, 30, "the group")
            assert [(m.member_id, m.member_epoch) for m in after.members] == [
                (m.member_id, m.member_epoch) for m in before.members]
            assert after.group_epoch == before.group_epoch
            produce_and_consume("after", 100)
            assert [m.member_id for m in describe(cluster.ports[new]).members] == [before.members[0].member_id]
        finally:
            consumer.close()
    finally:
        zk.close()
        cluster.cleanup()


@pytest.fixture
def kraft_broker(tmp_path: Path) -> Iterator[EmbeddedBroker]:
    """One broker with process.roles=broker against the test controller (tests/kraft_controller.py)."""
    controller = ControllerThread(session_timeout_ms=1500, default_replication_factor=1).start()
    broker = EmbeddedBroker({"process.roles": "broker", "node.id": "0", "controller.quorum.voters": controller.voters,
                             "controller.listener.names": "CONTROLLER", "broker.heartbeat.interval.ms": "100",
                             "initial.broker.registration.timeout.ms": "20000",
                             "offsets.topic.replication.factor": "1"}, data_dir=tmp_path / "kraft0")
    with open(os.devnull, "w") as quiet:
        format_dirs(KafkaConfig(broker.props), controller.call(lambda c: c.cluster_id), out=quiet)
    broker.start()
    try:
        yield broker
    finally:
        broker.stop()
        controller.stop()


def test_a_share_group_on_a_kraft_broker(kraft_broker: EmbeddedBroker) -> None:
    """process.roles=broker: a group config set through the broker and a share consumer reading every record."""
    broker = kraft_broker
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.create_topics([NewTopic("kraft-share", 2, 1)])["kraft-share"].result(20)
    resource = ConfigResource(ResourceType.GROUP, "kraft-share-group", incremental_configs=[
        ConfigEntry("share.auto.offset.reset", "earliest", incremental_operation=AlterConfigOpType.SET)])
    admin.incremental_alter_configs([resource])[ConfigResource(ResourceType.GROUP, "kraft-share-group")].result(15)
    producer = Producer({"bootstrap.servers": broker.bootstrap})
    for i in range(10):
        producer.produce("kraft-share", f"v{i}".encode(), partition=i % 2)
    assert producer.flush(15) == 0
    consumer = ShareConsumer({"bootstrap.servers": broker.bootstrap, "group.id": "kraft-share-group"})
    consumer.subscribe(["kraft-share"])
    seen: list[bytes] = []
    try:
        deadline = time.monotonic() + 30
        while len(seen) < 10 and time.monotonic() < deadline:
            seen.extend(m.value() for m in consumer.poll(0.3) if m.error() is None)
    finally:
        consumer.close()
    assert sorted(seen) == sorted(f"v{i}".encode() for i in range(10))


def test_share_group_lag_is_described_by_a_coordinator_that_leads_nothing(tmp_path: Path) -> None:
    """DescribeShareGroupOffsets v1 (Kafka 4.2's lag) from the group coordinator, the partition led by another
    broker: the leader's high watermark (ListOffsets) less the start offset and the share coordinator's
    delivery-complete count (ReadShareGroupStateSummary v1). 10 records, 0-3 released and 4-9 accepted: start 0,
    lag 4."""
    import socket
    import uuid

    from tests.broker.wire import roundtrip

    cluster = start_cluster(tmp_path, {"group.share.heartbeat.interval.ms": "500",
                                       "group.share.min.heartbeat.interval.ms": "500"})
    try:
        group, topic = "share-lag", "share-lag"
        find = request_class(ApiKey.FIND_COORDINATOR)[3](key=group, key_type=0)
        coordinator = wait_until(lambda: (r := raw_request(cluster.ports[0], find)).error_code == 0 and r.node_id + 1,
                                 30, "the group coordinator") - 1
        leader = (coordinator + 1) % 3
        create_topic(cluster.bootstrap, topic, 1, 1, assignment=[[leader]])
        wait_until(lambda: len(metadata(cluster.bootstrap, topic)) == 1, 30, "the topic")
        admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
        resource = ConfigResource(ResourceType.GROUP, group, incremental_configs=[
            ConfigEntry("share.auto.offset.reset", "earliest", incremental_operation=AlterConfigOpType.SET)])
        admin.incremental_alter_configs([resource])[ConfigResource(ResourceType.GROUP, group)].result(15)
        producer = Producer({"bootstrap.servers": cluster.bootstrap, "linger.ms": 100})
        for i in range(10):
            producer.produce(topic, f"v{i}".encode(), partition=0)
        assert producer.flush(15) == 0
        Heartbeat = request_class(ApiKey.SHARE_GROUP_HEARTBEAT)
        epoch = [0]

        def assigned() -> bool:  # the group coordinator initializes the partition's state, then assigns it
            resp = raw_request(cluster.ports[coordinator], Heartbeat[1](
                group_id=group, member_id="m1", member_epoch=epoch[0],
                subscribed_topic_names=[topic] if epoch[0] == 0 else None))
            assert resp.error_code == 0, resp
            epoch[0] = resp.member_epoch
            return bool(resp.assignment and resp.assignment.topic_partitions)
        wait_until(assigned, 30, "the partition assigned")
        tid = next(iter(metadata_ids(cluster.ports[leader], topic)))
        Fetch, Ack = request_class(ApiKey.SHARE_FETCH), request_class(ApiKey.SHARE_ACKNOWLEDGE)
        with socket.create_connection(("127.0.0.1", cluster.ports[leader]), timeout=30) as s:
            T = Fetch.FetchTopic
            got = roundtrip(s, Fetch[1](group_id=group, member_id="m1", share_session_epoch=0, max_wait_ms=5000,
                                        min_bytes=1, max_bytes=1 << 20, max_records=100, batch_size=100,
                                        topics=[T(topic_id=tid, partitions=[T.FetchPartition(
                                            partition_index=0, acknowledgement_batches=[])])],
                                        forgotten_topics_data=[]), 1)
            ranges = [(r.first_offset, r.last_offset) for t in got.responses for p in t.partitions
                      for r in p.acquired_records]
            assert ranges and ranges[0][0] == 0 and ranges[-1][1] == 9, got
            A = Ack.AcknowledgeTopic
            B = A.AcknowledgePartition.AcknowledgementBatch
            acked = roundtrip(s, Ack[1](group_id=group, member_id="m1", share_session_epoch=1, topics=[A(
                topic_id=tid, partitions=[A.AcknowledgePartition(partition_index=0, acknowledgement_batches=[
                    B(first_offset=0, last_offset=3, acknowledge_types=[2]),
                    B(first_offset=4, last_offset=9, acknowledge_types=[1])])])]), 2)
            assert [p.error_code for t in acked.responses for p in t.partitions] == [0], acked
            Describe = request_class(ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS)
            G = Describe.DescribeShareGroupOffsetsRequestGroup
            described = raw_request(cluster.ports[coordinator], Describe[1](groups=[G(group_id=group, topics=None)]))
        assert [(p.partition_index, p.start_offset, p.lag, p.error_code) for t in described.groups[0].topics
                for p in t.partitions] == [(0, 0, 4, 0)], described
        # The member leaves; AlterShareGroupOffsets at the coordinator moves the start to 2. The leader dropped the
        # share partition when the group's last share session there ended, so a new session reads the new state.
        left = raw_request(cluster.ports[coordinator], Heartbeat[1](group_id=group, member_id="m1", member_epoch=-1))
        assert left.error_code == 0, left
        Alter = request_class(ApiKey.ALTER_SHARE_GROUP_OFFSETS)
        AT = Alter.AlterShareGroupOffsetsRequestTopic
        altered = raw_request(cluster.ports[coordinator], Alter[0](group_id=group, topics=[AT(
            topic_name=topic, partitions=[AT.AlterShareGroupOffsetsRequestPartition(partition_index=0,
                                                                                    start_offset=2)])]))
        assert altered.error_code == 0 and [p.error_code for t in altered.responses for p in t.partitions] == [0]
        with socket.create_connection(("127.0.0.1", cluster.ports[leader]), timeout=30) as s:
            again = roundtrip(s, Fetch[1](group_id=group, member_id="m2", share_session_epoch=0, max_wait_ms=5000,
                                          min_bytes=1, max_bytes=1 << 20, max_records=100, batch_size=100,
                                          topics=[T(topic_id=tid, partitions=[T.FetchPartition(
                                              partition_index=0, acknowledgement_batches=[])])],
                                          forgotten_topics_data=[]), 3)
        assert [(r.first_offset, r.last_offset) for t in again.responses for p in t.partitions
                for r in p.acquired_records] == [(2, 9)], again
        assert uuid.UUID(int=0) != tid
    finally:
        cluster.stop()


def metadata_ids(port: int, topic: str) -> list[Any]:
    import uuid

    Req = request_class(ApiKey.METADATA)
    resp = raw_request(port, Req[12](topics=[Req.MetadataRequestTopic(name=topic, topic_id=uuid.UUID(int=0))],
                                     allow_auto_topic_creation=False, include_topic_authorized_operations=False))
    return [t.topic_id for t in resp.topics]

"""Our brokers in KRaft mode (`process.roles=broker`) against the test controller (tests/kraft_controller.py),
over real sockets: registration and unfencing, topics created through our broker's CreateTopics (sent on to
the controller), produce/consume with confluent-kafka on RF=1 and RF=3 topics, ISR changes through
AlterPartition, fencing, controlled shutdown."""

from __future__ import annotations

import socket
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer
from confluent_kafka import TopicPartition as KafkaTopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from broker.config.kafka_config import KafkaConfig
from broker.kraft.format import format_dirs
from broker.kraft.zk_apis import ZK_BROKER_ONLY
from broker.testing import BrokerProcess, EmbeddedBroker
from protocol import ApiKey, request_class
from storage import TopicPartition
from tests.broker.wire import recv, roundtrip, send
from tests.kraft_controller import ControllerThread

FAST = {"broker.heartbeat.interval.ms": "100", "replica.lag.time.max.ms": "2000",
        "replica.fetch.wait.max.ms": "100", "initial.broker.registration.timeout.ms": "20000",
        "offsets.topic.replication.factor": "3"}  # capped at the live brokers when the topic is created


@pytest.fixture
def controller() -> Iterator[ControllerThread]:
    c = ControllerThread(session_timeout_ms=1500, default_replication_factor=1).start()
    yield c
    c.stop()


@pytest.fixture
def kraft_broker(tmp_path: Path, controller: ControllerThread) -> Iterator[Callable[..., EmbeddedBroker]]:
    started: list[EmbeddedBroker] = []

    def start(node_id: int, **extra: str) -> EmbeddedBroker:
        data = tmp_path / f"kraft{node_id}"
        props = {"process.roles": "broker", "node.id": str(node_id), "controller.quorum.voters": controller.voters,
                 "controller.listener.names": "CONTROLLER", **FAST, **extra}
        b = EmbeddedBroker(props, data_dir=data)
        if not (data / "meta.properties").exists():
            format_dirs(KafkaConfig(b.props), controller.call(lambda c: c.cluster_id), out=open("/dev/null", "w"))  # noqa: SIM115
        b.start()
        started.append(b)
        return b

    yield start
    for b in reversed(started):
        b.stop()


def wait_for(check: Callable[[], Any], timeout: float = 15.0, what: str = "condition") -> Any:
    deadline = time.monotonic() + timeout
    while True:
        result = check()
        if result:
            return result
        assert time.monotonic() < deadline, f"{what} not met within {timeout} s"
        time.sleep(0.05)


def broker_state(controller: ControllerThread, node_id: int) -> Any:
    return controller.call(lambda c: c.image.cluster.broker(node_id))


def partition(controller: ControllerThread, topic: str, p: int = 0) -> Any:
    return controller.call(lambda c: c.image.topics.get_partition(topic, p))


def produce_and_consume(bootstrap: str, topic: str, n: int = 20, first: int = 0) -> None:
    """Produce values v<first>..v<first+n-1> (acks=all, idempotent) and read them back from the start."""
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": True})
    delivered: list[Any] = []
    expected = {b"v%d" % i for i in range(first, first + n)}
    for value in sorted(expected):
        producer.produce(topic, value=value, on_delivery=lambda err, msg: delivered.append(err or msg.offset()))
    assert producer.flush(20) == 0
    assert all(isinstance(d, int) for d in delivered), delivered
    # Assigned, not subscribed: what is tested is replication, and a group would need its __consumer_offsets
    # partition (one replica in these tests) on a broker that is up.
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"g-{uuid.uuid4()}",
                         "auto.offset.reset": "earliest", "enable.auto.commit": False})
    partitions = consumer.list_topics(topic, timeout=10).topics[topic].partitions
    consumer.assign([KafkaTopicPartition(topic, p, OFFSET_BEGINNING) for p in partitions])
    seen: set[bytes] = set()
    deadline = time.monotonic() + 30
    while not expected <= seen and time.monotonic() < deadline:
        msg = consumer.poll(0.5)
        if msg is not None and msg.error() is None:
            seen.add(msg.value())
    consumer.close()
    assert expected <= seen, sorted(expected - seen)


def test_one_broker_registers_is_unfenced_and_serves_a_topic_created_through_it(
        controller: ControllerThread, kraft_broker: Callable[..., EmbeddedBroker]) -> None:
    b = kraft_broker(1)
    reg = broker_state(controller, 1)
    assert reg is not None and not reg.fenced
    assert reg.listeners["PLAINTEXT"].port == b.port and reg.supported_features["metadata.version"] == (7, 33)
    assert len(reg.directories) == 1
    # The broker published the image: Metadata lists it; ApiVersions leaves out the ZooKeeper-mode APIs.
    admin = AdminClient({"bootstrap.servers": b.bootstrap})
    md = admin.list_topics(timeout=10)
    assert list(md.brokers) == [1] and md.cluster_id == controller.call(lambda c: c.cluster_id)
    with socket.create_connection(("127.0.0.1", b.port), timeout=10) as sock:
        versions = roundtrip(sock, request_class(ApiKey.API_VERSIONS)[3](
            client_software_name="t", client_software_version="1"), 1)
        listed = {k.api_key for k in versions.api_keys}
        assert ApiKey.FETCH in listed and not listed & ZK_BROKER_ONLY
        # LeaderAndIsr is not enabled: the connection is closed without an answer, as by Kafka's KRaft broker.
        send(sock, request_class(ApiKey.LEADER_AND_ISR)[5](
            controller_id=3000, controller_epoch=1, broker_epoch=-1, topic_states=[], live_leaders=[]), 2)
        with pytest.raises(ConnectionError):
            recv(sock, ApiKey.LEADER_AND_ISR, 5)
    # CreateTopics to our broker goes on to the controller, which writes the topic's records.
    futures = admin.create_topics([NewTopic("rf1", num_partitions=2, replication_factor=1)])
    futures["rf1"].result(20)
    assert controller.call(lambda c: [k for k, _ in c.requests].count(ApiKey.CREATE_TOPICS)) >= 1
    p0 = partition(controller, "rf1", 0)
    assert p0.leader == 1 and p0.isr == (1,)
    produce_and_consume(b.bootstrap, "rf1")
    # auto.create.topics.enable: a producer's Metadata for an unknown topic creates it through the controller.
    produce_and_consume(b.bootstrap, "auto-made", 3)
    assert controller.call(lambda c: c.image.topics.get_topic("auto-made")) is not None


def test_three_brokers_replicate_an_rf3_topic_and_the_isr_moves_through_alter_partition(
        controller: ControllerThread, kraft_broker: Callable[..., EmbeddedBroker]) -> None:
    # No controlled shutdown: a stopped broker just goes silent, as after kill -9.
    brokers = [kraft_broker(i, **{"controlled.shutdown.enable": "false"}) for i in (1, 2, 3)]
    assert all(not broker_state(controller, i).fenced for i in (1, 2, 3))
    # Each knows its broker epoch (its follower fetches carry it, Fetch v15+ ReplicaState).
    assert [b.server.broker_epoch for b in brokers] == [broker_state(controller, i).epoch for i in (1, 2, 3)]
    bootstrap = ",".join(b.bootstrap for b in brokers)
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic("rf3", num_partitions=1, replication_factor=3)])["rf3"].result(20)
    p = wait_for(lambda: partition(controller, "rf3"), what="topic rf3")
    assert sorted(p.replicas) == [1, 2, 3] and sorted(p.isr) == [1, 2, 3]
    produce_and_consume(bootstrap, "rf3", 30)
    leader = p.leader
    leader_broker = brokers[leader - 1]
    # Every replica has the records (followers fetched from the leader our broker is).
    tp = TopicPartition("rf3", 0)
    for b in brokers:
        wait_for(lambda b=b: b.call(lambda: b.server.replica_manager.partitions[tp].log_end_offset) == 30,
                 what="replica caught up")
    # A follower stops (no controlled shutdown: its session expires), the controller fences it and takes it out
    # of the ISR; the leader takes the new ISR from the metadata log.
    follower_id = next(i for i in (1, 2, 3) if i != leader)
    brokers[follower_id - 1].stop()
    wait_for(lambda: broker_state(controller, follower_id).fenced, what="follower fenced")
    wait_for(lambda: follower_id not in partition(controller, "rf3").isr, what="ISR shrink")
    wait_for(lambda: follower_id not in leader_broker.call(
        lambda: leader_broker.server.replica_manager.partitions[tp].isr), what="leader's ISR shrink")
    produce_and_consume(",".join(b.bootstrap for i, b in enumerate(brokers, 1) if i != follower_id), "rf3", 10,
                        first=100)
    # It comes back with a new incarnation, registers again, catches up: the leader adds it back to the ISR
    # with an AlterPartition.
    kraft_broker(follower_id, **{"controlled.shutdown.enable": "false"})
    wait_for(lambda: follower_id in partition(controller, "rf3").isr, timeout=30, what="ISR expand")
    expands = controller.call(lambda c: [r for k, r in c.requests if k == ApiKey.ALTER_PARTITION])
    joined = [s for r in expands for s in r.topics[0].partitions[0].new_isr_with_epochs if s.broker_id == follower_id]
    assert joined and joined[-1].broker_epoch == broker_state(controller, follower_id).epoch  # its new epoch


def test_controlled_shutdown_moves_leadership_before_the_broker_stops(
        controller: ControllerThread, kraft_broker: Callable[..., EmbeddedBroker]) -> None:
    brokers = {i: kraft_broker(i) for i in (1, 2)}
    bootstrap = ",".join(b.bootstrap for b in brokers.values())
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic("cs", num_partitions=2, replication_factor=2)])["cs"].result(20)
    produce_and_consume(bootstrap, "cs", 20)
    leaders = {partition(controller, "cs", p).leader for p in (0, 1)}
    assert leaders == {1, 2}  # striped: each broker leads one partition
    brokers[1].stop()  # KafkaServer.shutdown: WantShutDown, then ShouldShutDown, then the rest
    # The controller moved leadership to 2 while 1 was in controlled shutdown, and fenced 1 only at the end.
    from protocol.metadata_records import BrokerRegistrationChangeRecord, PartitionChangeRecord
    records = controller.call(lambda c: [m for m in _log_records(c)])
    kinds = [(type(m).__name__, getattr(m, "in_controlled_shutdown", None), getattr(m, "fenced", None),
              getattr(m, "leader", None)) for m in records
             if isinstance(m, (BrokerRegistrationChangeRecord, PartitionChangeRecord))]
    shutdown_at = kinds.index(("BrokerRegistrationChangeRecord", 1, 0, None))
    fenced_at = max(i for i, k in enumerate(kinds) if k[0] == "BrokerRegistrationChangeRecord" and k[2] == 1)
    moved_at = [i for i, k in enumerate(kinds) if k[0] == "PartitionChangeRecord" and k[3] == 2]
    assert moved_at and shutdown_at < min(moved_at) < fenced_at
    assert {partition(controller, "cs", p).leader for p in (0, 1)} == {2}
    assert broker_state(controller, 1).fenced
    produce_and_consume(brokers[2].bootstrap, "cs", 10, first=100)


def _log_records(c: Any) -> list[Any]:
    from protocol.metadata_records import decode_metadata_batches
    out = []
    for _, _, data in c.batches:
        for batch in decode_metadata_batches(data):
            if not batch.is_control:
                out.extend(r.message for r in batch.records)
    return out


def test_leader_failover_keeps_every_acknowledged_write(
        controller: ControllerThread, kraft_broker: Callable[..., EmbeddedBroker]) -> None:
    brokers = {i: kraft_broker(i, **{"controlled.shutdown.enable": "false"}) for i in (1, 2, 3)}
    bootstrap = ",".join(b.bootstrap for b in brokers.values())
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic("fo", num_partitions=1, replication_factor=3,
                                  config={"min.insync.replicas": "2"})])["fo"].result(20)
    produce_and_consume(bootstrap, "fo", 20)
    old = partition(controller, "fo")
    assert controller.call(lambda c: c.image.configs.topic_config("fo")) == {"min.insync.replicas": "2"}
    brokers[old.leader].stop()  # silent: the session expires, the controller fences it and elects another leader
    new = wait_for(lambda: (p := partition(controller, "fo")).leader not in (-1, old.leader) and p, what="new leader")
    assert new.leader_epoch == old.leader_epoch + 1 and old.leader not in new.isr
    rest = ",".join(b.bootstrap for i, b in brokers.items() if i != old.leader)
    producer = Producer({"bootstrap.servers": rest, "acks": "all", "enable.idempotence": True})
    for i in range(20, 40):
        producer.produce("fo", value=b"v%d" % i)
    assert producer.flush(20) == 0
    consumer = Consumer({"bootstrap.servers": rest, "group.id": "fo-check", "auto.offset.reset": "earliest"})
    consumer.subscribe(["fo"])
    seen: set[bytes] = set()
    deadline = time.monotonic() + 30
    while len(seen) < 40 and time.monotonic() < deadline:
        msg = consumer.poll(0.5)
        if msg is not None and msg.error() is None:
            seen.add(msg.value())
    consumer.close()
    assert seen == {b"v%d" % i for i in range(40)}
    # The topic's config came from the metadata log; DescribeCluster lists only the unfenced brokers.
    survivor = next(b for i, b in brokers.items() if i != old.leader)
    assert survivor.call(lambda: dict(survivor.server.topic_configs.overrides("fo"))) == {"min.insync.replicas": "2"}
    survivor_admin = AdminClient({"bootstrap.servers": survivor.bootstrap})
    cluster = survivor_admin.describe_cluster().result(30)
    assert sorted(n.id for n in cluster.nodes) == sorted(i for i in brokers if i != old.leader)
    # Idempotent producers got their ids from blocks the controller handed out.
    assert controller.call(lambda c: [k for k, _ in c.requests].count(ApiKey.ALLOCATE_PRODUCER_IDS)) >= 1


def test_the_first_metadata_after_the_start_lists_the_broker(controller: ControllerThread,
                                                             kraft_broker: Callable[..., EmbeddedBroker]) -> None:
    """The heartbeat unfences the broker before its metadata fetch brings the record saying so (here held back
    0.3 s): the start waits for that record, so a client's first Metadata names the broker and a controller
    (without it, librdkafka's admin client waited out its request timeout for a controller)."""
    controller.call(lambda c: setattr(c, "fetch_delay_s", 0.3))
    b = kraft_broker(1)
    Req = request_class(ApiKey.METADATA)
    with socket.create_connection(("127.0.0.1", b.port), timeout=10) as sock:
        resp = roundtrip(sock, Req[12](topics=[], allow_auto_topic_creation=False,
                                       include_topic_authorized_operations=False), 1)
    assert ([x.node_id for x in resp.brokers], resp.controller_id) == ([1], 1)


def test_start_refused_unformatted_or_of_another_cluster(tmp_path: Path, controller: ControllerThread) -> None:
    props = {"process.roles": "broker", "node.id": "1", "controller.quorum.voters": controller.voters,
             "controller.listener.names": "CONTROLLER", **FAST, "initial.broker.registration.timeout.ms": "3000"}
    unformatted = EmbeddedBroker(props, data_dir=tmp_path / "u")
    with pytest.raises(RuntimeError, match="No `meta.properties` found in .* format"):
        unformatted.start()
    other = EmbeddedBroker(props, data_dir=tmp_path / "o")
    format_dirs(KafkaConfig(other.props), "AAAAAAAAAAAAAAAAAAAAAA", out=open("/dev/null", "w"))  # noqa: SIM115
    with pytest.raises(RuntimeError, match="refused this broker's metadata fetch: INCONSISTENT_CLUSTER_ID"):
        other.start()


def test_sigterm_and_kill_of_a_broker_process(tmp_path: Path, controller: ControllerThread,
                                             kraft_broker: Callable[..., EmbeddedBroker]) -> None:
    """`python -m broker` as a KRaft broker: SIGTERM is a controlled shutdown (exit 0 after ShouldShutDown);
    after kill -9 the controller fences it; restarted, it registers with a new incarnation and rejoins the ISR."""
    other = kraft_broker(2)
    props = {"process.roles": "broker", "node.id": "1", "controller.quorum.voters": controller.voters,
             "controller.listener.names": "CONTROLLER", **FAST}
    proc = BrokerProcess(props, data_dir=tmp_path / "p1")
    format_dirs(KafkaConfig(proc.props), controller.call(lambda c: c.cluster_id), out=open("/dev/null", "w"))  # noqa: SIM115
    try:
        proc.start()
        first = broker_state(controller, 1)
        assert not first.fenced
        admin = AdminClient({"bootstrap.servers": other.bootstrap})
        admin.create_topics([NewTopic("p", num_partitions=2, replication_factor=2)])["p"].result(20)
        produce_and_consume(other.bootstrap, "p", 10)
        assert 1 in {partition(controller, "p", i).leader for i in (0, 1)}
        assert proc.stop() == 0
        assert "controlled shutdown complete" in proc.log_path.read_text()
        assert {partition(controller, "p", i).leader for i in (0, 1)} == {2}
        assert broker_state(controller, 1).in_controlled_shutdown and broker_state(controller, 1).fenced
        proc.start()  # a new incarnation registers again and is unfenced
        second = broker_state(controller, 1)
        assert second.incarnation_id != first.incarnation_id and second.epoch > first.epoch and not second.fenced
        wait_for(lambda: all(1 in partition(controller, "p", i).isr for i in (0, 1)), timeout=30, what="rejoin ISR")
        proc.kill()  # silent: fenced when its session expires, out of every ISR
        wait_for(lambda: broker_state(controller, 1).fenced, what="fenced after kill -9")
        assert all(1 not in partition(controller, "p", i).isr for i in (0, 1))
        produce_and_consume(other.bootstrap, "p", 10, first=100)
    finally:
        proc.kill()


def test_start_refused_on_a_metadata_version_we_do_not_support(tmp_path: Path) -> None:
    old = ControllerThread(metadata_version=6).start()  # 3.3-IV2: below the lowest Kafka 4.x accepts
    try:
        props = {"process.roles": "broker", "node.id": "1", "controller.quorum.voters": old.voters,
                 "controller.listener.names": "CONTROLLER", **FAST}
        b = EmbeddedBroker(props, data_dir=tmp_path / "b")
        format_dirs(KafkaConfig(b.props), old.call(lambda c: c.cluster_id), out=open("/dev/null", "w"))  # noqa: SIM115
        with pytest.raises(RuntimeError) as e:
            b.start()
        assert ("the controller refused this broker's registration: UNSUPPORTED_VERSION: the cluster's finalized "
                "metadata.version is 6 (3.3-IV2); this broker supports 7 (3.3-IV3) to 33 (4.4-IV2): change it with "
                "`kafka-features.sh upgrade --metadata 4.4-IV2`") in str(e.value)
    finally:
        old.stop()


def test_a_topic_removed_in_the_metadata_log_is_deleted_from_the_broker(
        controller: ControllerThread, kraft_broker: Callable[..., EmbeddedBroker]) -> None:
    b = kraft_broker(1, **{"log.segment.delete.delay.ms": "0"})
    admin = AdminClient({"bootstrap.servers": b.bootstrap})
    admin.create_topics([NewTopic("gone", num_partitions=1, replication_factor=1)])["gone"].result(20)
    produce_and_consume(b.bootstrap, "gone", 5)
    tp = TopicPartition("gone", 0)
    assert b.call(lambda: tp in b.server.replica_manager.partitions)
    controller.call(lambda c: c.delete_topic("gone"))
    wait_for(lambda: b.call(lambda: tp not in b.server.replica_manager.partitions
                            and "gone" not in b.server.metadata_cache.topics), what="partition removed")
    wait_for(lambda: not any(p.name.startswith("gone-0") for p in b.data_dir.iterdir()), what="log dir removed")


def test_a_topic_deleted_and_created_again_while_the_broker_was_down_starts_empty(
        controller: ControllerThread, kraft_broker: Callable[..., EmbeddedBroker]) -> None:
    """The broker misses a topic's deletion and its re-creation under the same name (a new topic id): back, it
    must not serve the old topic's records as the new one's; the new partition starts empty at offset 0."""
    from protocol.metadata_records import TopicRecord

    b = kraft_broker(1, **{"log.segment.delete.delay.ms": "0", "file.delete.delay.ms": "0"})
    admin = AdminClient({"bootstrap.servers": b.bootstrap})
    admin.create_topics([NewTopic("again", num_partitions=1, replication_factor=1)])["again"].result(20)
    produce_and_consume(b.bootstrap, "again", 5)
    old_id = controller.call(lambda c: c.image.topics.get_topic("again").topic_id)
    b.stop()
    new_id = uuid.uuid4()
    controller.call(lambda c: c.delete_topic("again"))
    controller.call(lambda c: c.append([TopicRecord(name="again", topic_id=new_id, version=0),
                                        *c._partition_records(new_id, {0: [1]})]))
    b.start()
    wait_for(lambda: partition(controller, "again").leader == 1, what="broker 1 leading the new topic")
    tp = TopicPartition("again", 0)
    wait_for(lambda: b.call(lambda: (p := b.server.replica_manager.partitions.get(tp)) is not None
                            and p.log is not None and p.is_leader), what="the new partition hosted")
    assert b.call(lambda: b.server.replica_manager.partitions[tp].log.topic_id) == new_id != old_id
    assert b.call(lambda: b.server.replica_manager.partitions[tp].log_end_offset) == 0
    produce_and_consume(b.bootstrap, "again", 3, first=100)
    consumer = Consumer({"bootstrap.servers": b.bootstrap, "group.id": f"g-{uuid.uuid4()}",
                         "auto.offset.reset": "earliest", "enable.auto.commit": False})
    consumer.assign([KafkaTopicPartition("again", 0, OFFSET_BEGINNING)])
    seen = []
    deadline = time.monotonic() + 10
    while len(seen) < 3 and time.monotonic() < deadline:
        msg = consumer.poll(0.5)
        if msg is not None and msg.error() is None:
            seen.append((msg.offset(), msg.value()))
    consumer.close()
    assert seen == [(0, b"v100"), (1, b"v101"), (2, b"v102")]
    # The old log is kept aside, as Kafka keeps stray logs, and stays aside across a restart.
    strays = [p.name for p in b.data_dir.iterdir() if p.name.startswith("again-0.") and p.name.endswith("-stray")]
    assert len(strays) == 1, sorted(p.name for p in b.data_dir.iterdir())
    b.stop()
    b.start()
    produce_and_consume(b.bootstrap, "again", 2, first=200)
    assert b.call(lambda: b.server.replica_manager.partitions[tp].log_end_offset) == 5


def test_a_restart_from_an_older_snapshot_keeps_the_topic_created_again_since(
        controller: ControllerThread, kraft_broker: Callable[..., EmbeddedBroker]) -> None:
    """The broker's own metadata snapshot predates a topic's deletion and re-creation, which it applied before
    stopping: at the next start the snapshot says the old topic, the batches after it delete it and bring the
    new one. The partition's log (the new topic's records) must come through: Kafka applies nothing to its
    logs before the metadata has caught up, and neither may we (the deletion would cut the new topic's log)."""
    from protocol.metadata_records import TopicRecord

    first = kraft_broker(1, **{"metadata.log.max.record.bytes.between.snapshots": "1"})
    admin = AdminClient({"bootstrap.servers": first.bootstrap})
    admin.create_topics([NewTopic("renewed", num_partitions=1, replication_factor=1)])["renewed"].result(20)
    produce_and_consume(first.bootstrap, "renewed", 3)
    first.stop()
    # The same broker and data, now without snapshots: the one on disk stays the last.
    b = kraft_broker(1, **{"metadata.log.max.record.bytes.between.snapshots": "1000000000",
                           "file.delete.delay.ms": "0"})
    snapshots = sorted(p.name for p in (b.data_dir / "__cluster_metadata-0").glob("*.checkpoint"))
    new_id = uuid.uuid4()
    controller.call(lambda c: c.delete_topic("renewed"))
    controller.call(lambda c: c.append([TopicRecord(name="renewed", topic_id=new_id, version=0),
                                        *c._partition_records(new_id, {0: [1]})]))
    tp = TopicPartition("renewed", 0)
    wait_for(lambda: b.call(lambda: (p := b.server.replica_manager.partitions.get(tp)) is not None
                            and p.log is not None and p.log.topic_id == new_id and p.is_leader),
             what="the new topic led here")
    produce_and_consume(b.bootstrap, "renewed", 4, first=100)
    b.stop()
    assert sorted(p.name for p in (b.data_dir / "__cluster_metadata-0").glob("*.checkpoint")) == snapshots
    b.start()
    wait_for(lambda: b.call(lambda: (p := b.server.replica_manager.partitions.get(tp)) is not None
                            and p.log is not None and p.is_leader), what="the partition led again")
    assert b.call(lambda: (b.server.replica_manager.partitions[tp].log.topic_id,
                           b.server.replica_manager.partitions[tp].log_end_offset)) == (new_id, 4)


def test_a_broker_joining_after_a_snapshot_loads_it(
        controller: ControllerThread, kraft_broker: Callable[..., EmbeddedBroker]) -> None:
    first = kraft_broker(1)
    admin = AdminClient({"bootstrap.servers": first.bootstrap})
    admin.create_topics([NewTopic("snap", num_partitions=2, replication_factor=1)])["snap"].result(20)
    produce_and_consume(first.bootstrap, "snap", 10)
    end = controller.call(lambda c: c.take_snapshot())  # the log before it is gone
    second = kraft_broker(2)
    assert controller.call(lambda c: [k for k, _ in c.requests].count(ApiKey.FETCH_SNAPSHOT)) >= 1
    assert second.call(lambda: sorted(second.server.metadata_cache.topics["snap"].partitions)) == [0, 1]
    assert (second.data_dir / "__cluster_metadata-0").is_dir()
    assert any(p.name.startswith(f"{end:020d}-") for p in (second.data_dir / "__cluster_metadata-0").iterdir())
    produce_and_consume(second.bootstrap, "snap", 10, first=100)


def test_delete_topics_create_partitions_and_topic_configs_go_to_the_controller(
        controller: ControllerThread, kraft_broker: Callable[..., EmbeddedBroker]) -> None:
    from confluent_kafka.admin import AlterConfigOpType, ConfigEntry, ConfigResource, NewPartitions

    b = kraft_broker(1)
    admin = AdminClient({"bootstrap.servers": b.bootstrap})
    admin.create_topics([NewTopic("adm", num_partitions=1, replication_factor=1)])["adm"].result(20)
    admin.create_partitions([NewPartitions("adm", 3)])["adm"].result(20)
    assert b.call(lambda: sorted(b.server.metadata_cache.topics["adm"].partitions)) == [0, 1, 2]
    assert controller.call(lambda c: sorted(c.image.topics.get_topic("adm").partitions)) == [0, 1, 2]
    with pytest.raises(Exception, match="Topic already has 3 partition"):
        admin.create_partitions([NewPartitions("adm", 3)])["adm"].result(20)
    resource = ConfigResource("TOPIC", "adm", incremental_configs=[
        ConfigEntry("retention.ms", "3600000", incremental_operation=AlterConfigOpType.SET)])
    admin.incremental_alter_configs([resource])[resource].result(20)
    assert controller.call(lambda c: dict(c.image.configs.topic_config("adm"))) == {"retention.ms": "3600000"}
    described = admin.describe_configs([ConfigResource("TOPIC", "adm")])
    entries = next(iter(described.values())).result(20)
    assert entries["retention.ms"].value == "3600000"
    resource = ConfigResource("TOPIC", "adm", incremental_configs=[
        ConfigEntry("retention.ms", None, incremental_operation=AlterConfigOpType.DELETE)])
    admin.incremental_alter_configs([resource])[resource].result(20)
    assert controller.call(lambda c: dict(c.image.configs.topic_config("adm"))) == {}
    admin.delete_topics(["adm"])["adm"].result(20)
    assert controller.call(lambda c: c.image.topics.get_topic("adm")) is None
    assert b.call(lambda: "adm" not in b.server.metadata_cache.topics)
    assert controller.call(lambda c: {k for k, _ in c.requests} >= {
        ApiKey.CREATE_PARTITIONS, ApiKey.INCREMENTAL_ALTER_CONFIGS, ApiKey.DELETE_TOPICS})


def test_elect_leaders_goes_to_the_controller(
        controller: ControllerThread, kraft_broker: Callable[..., EmbeddedBroker]) -> None:
    brokers = [kraft_broker(i) for i in (1, 2)]
    bootstrap = ",".join(b.bootstrap for b in brokers)
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic("el", num_partitions=1, replication_factor=2)])["el"].result(20)
    p = partition(controller, "el")
    preferred, other = p.replicas
    # Leadership away from the preferred replica (the controller fences it, then it comes back).
    controller.call(lambda c: c.fence(preferred))
    wait_for(lambda: partition(controller, "el").leader == other, what="leader moved")
    wait_for(lambda: not broker_state(controller, preferred).fenced, what="unfenced again by its heartbeat")
    wait_for(lambda: preferred in partition(controller, "el").isr, timeout=30, what="back in the ISR")
    from confluent_kafka import ElectionType
    from confluent_kafka import TopicPartition as TP

    results = admin.elect_leaders(ElectionType.PREFERRED, [TP("el", 0)]).result(40)
    assert all(e is None for e in results.values()), results
    wait_for(lambda: partition(controller, "el").leader == preferred, what="preferred leader elected")
    assert controller.call(lambda c: [k for k, _ in c.requests].count(ApiKey.ELECT_LEADERS)) >= 1
    wait_for(lambda: brokers[0].call(lambda: brokers[0].server.metadata_cache.partition("el", 0).leader) ==
             preferred, what="our metadata shows it")


def test_a_restarted_broker_goes_on_from_its_metadata_log_on_disk(
        controller: ControllerThread, kraft_broker: Callable[..., EmbeddedBroker]) -> None:
    b = kraft_broker(1)
    admin = AdminClient({"bootstrap.servers": b.bootstrap})
    admin.create_topics([NewTopic("disk", num_partitions=1, replication_factor=1)])["disk"].result(20)
    produce_and_consume(b.bootstrap, "disk", 5)
    b.stop()
    directory = b.data_dir / "__cluster_metadata-0"
    assert (directory / "quorum-state").exists() and any(p.suffix == ".log" for p in directory.iterdir())
    before = controller.call(lambda c: len(c.requests))
    end = wait_for(lambda: controller.call(lambda c: c.end_offset), what="log end")
    b.start()
    first_fetch = controller.call(lambda c: next(r for k, r in c.requests[before:] if k == ApiKey.FETCH))
    assert first_fetch.topics[0].partitions[0].fetch_offset > 0  # not from the start: from what is on disk
    assert first_fetch.topics[0].partitions[0].fetch_offset <= end
    produce_and_consume(b.bootstrap, "disk", 5, first=100)


def test_transactions_on_kraft_brokers(controller: ControllerThread,
                                       kraft_broker: Callable[..., EmbeddedBroker]) -> None:
    """The transaction coordinator in KRaft mode: __transaction_state created through the controller, producer
    ids from AllocateProducerIds, markers written across our brokers; read_committed sees only the commit."""
    brokers = [kraft_broker(i) for i in (1, 2)]
    bootstrap = ",".join(b.bootstrap for b in brokers)
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic("tx", num_partitions=2, replication_factor=2)])["tx"].result(20)
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": "kraft-tx"})
    producer.init_transactions(30)
    producer.begin_transaction()
    for i in range(10):
        producer.produce("tx", value=b"aborted%d" % i, partition=i % 2)
    producer.abort_transaction(30)
    producer.begin_transaction()
    for i in range(10):
        producer.produce("tx", value=b"committed%d" % i, partition=i % 2)
    producer.commit_transaction(30)
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "tx-reader", "auto.offset.reset": "earliest",
                         "isolation.level": "read_committed"})
    consumer.subscribe(["tx"])
    seen: list[bytes] = []
    deadline = time.monotonic() + 30
    while len(seen) < 10 and time.monotonic() < deadline:
        msg = consumer.poll(0.5)
        if msg is not None and msg.error() is None:
            seen.append(msg.value())
    consumer.close()
    assert sorted(seen) == sorted(b"committed%d" % i for i in range(10))
    assert controller.call(lambda c: c.image.topics.get_topic("__transaction_state")) is not None


def test_kafka_39s_broker_properties_with_bootstrap_servers_only(
        tmp_path: Path, controller: ControllerThread) -> None:
    """Kafka 3.9's config/kraft/broker.properties names the quorum by controller.quorum.bootstrap.servers only:
    the controller's endpoint comes from Fetch v16+ NodeEndpoints (KIP-853)."""
    address = controller.voters.split("@", 1)[1]
    props = {"process.roles": "broker", "node.id": "2", "controller.quorum.bootstrap.servers": address,
             "controller.listener.names": "CONTROLLER", "inter.broker.listener.name": "PLAINTEXT",
             "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,SSL:SSL,"
                                               "SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL", **FAST}
    b = EmbeddedBroker(props, data_dir=tmp_path / "b2")
    format_dirs(KafkaConfig(b.props), controller.call(lambda c: c.cluster_id), out=open("/dev/null", "w"))  # noqa: SIM115
    b.start()
    try:
        assert not broker_state(controller, 2).fenced
        produce_and_consume(b.bootstrap, "bootstrapped", 3)
    finally:
        b.stop()


def test_a_stale_broker_epoch_registers_again(controller: ControllerThread,
                                              kraft_broker: Callable[..., EmbeddedBroker]) -> None:
    b = kraft_broker(1)
    first = broker_state(controller, 1)
    controller.call(lambda c: c.brokers.pop(1))  # the controller no longer knows this registration
    second = wait_for(lambda: (r := broker_state(controller, 1)).epoch > first.epoch and not r.fenced and r,
                      what="registered again and unfenced")
    assert second.incarnation_id == first.incarnation_id  # the same process, a new broker epoch
    assert b.server.broker_epoch == second.epoch
    produce_and_consume(b.bootstrap, "after-stale", 3)


def test_start_refused_on_another_finalized_feature(tmp_path: Path) -> None:
    from protocol.metadata_records import FeatureLevelRecord

    c = ControllerThread().start()
    try:
        c.call(lambda ctl: ctl.append([FeatureLevelRecord(name="transaction.version", feature_level=3, version=0)]))
        props = {"process.roles": "broker", "node.id": "1", "controller.quorum.voters": c.voters,
                 "controller.listener.names": "CONTROLLER", **FAST}
        b = EmbeddedBroker(props, data_dir=tmp_path / "b")
        format_dirs(KafkaConfig(b.props), c.call(lambda ctl: ctl.cluster_id), out=open("/dev/null", "w"))  # noqa: SIM115
        with pytest.raises(RuntimeError) as e:
            b.start()
        assert ("UNSUPPORTED_VERSION: the cluster's finalized transaction.version is 3; this broker supports "
                "transaction.version 0 to 2: change it with `kafka-features.sh downgrade --feature "
                "transaction.version=2`") in str(e.value)
    finally:
        c.stop()


def test_the_leader_shrinks_the_isr_of_a_silent_follower_through_alter_partition(
        controller: ControllerThread, kraft_broker: Callable[..., EmbeddedBroker]) -> None:
    brokers = {i: kraft_broker(i) for i in (1, 2)}
    bootstrap = ",".join(b.bootstrap for b in brokers.values())
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic("lag", num_partitions=1, replication_factor=2)])["lag"].result(20)
    produce_and_consume(bootstrap, "lag", 5)
    p = partition(controller, "lag")
    leader, follower = p.leader, next(r for r in p.replicas if r != p.leader)
    assert sorted(p.isr) == [1, 2]
    # The follower stays registered and unfenced (it heartbeats) but stops fetching.
    brokers[follower].call(lambda: brokers[follower].server.fetcher_manager.shutdown())
    shrunk = wait_for(lambda: (q := partition(controller, "lag")).isr == (leader,) and q, timeout=20,
                      what="ISR shrink")
    assert not broker_state(controller, follower).fenced
    assert shrunk.leader_epoch == p.leader_epoch and shrunk.partition_epoch > p.partition_epoch
    requests = controller.call(lambda c: [r for k, r in c.requests if k == ApiKey.ALTER_PARTITION])
    assert any(r.broker_id == leader and [s.broker_id for s in r.topics[0].partitions[0].new_isr_with_epochs]
               == [leader] for r in requests)
    # The ISR's broker epochs: the leader's own, and each follower's from its fetches (Kafka's BrokerState).
    epochs = {s.broker_id: s.broker_epoch for r in requests for s in r.topics[0].partitions[0].new_isr_with_epochs}
    assert epochs[leader] == broker_state(controller, leader).epoch


def test_a_cluster_with_group_version_1_takes_the_broker_and_it_advertises_that_level(tmp_path: Path) -> None:
    """Kafka 4.0 finalizes group.version 1 (KIP-848 consumer groups): we register 0-1, so the cluster takes us,
    and ApiVersions v4 says group.version is finalized at 1 beside the cluster's metadata.version, with the
    image's offset as the finalized-features epoch, as a Kafka broker answers."""
    from protocol.metadata_records import FeatureLevelRecord

    c = ControllerThread().start()
    try:
        c.call(lambda ctl: ctl.append([FeatureLevelRecord(name="group.version", feature_level=1, version=0)]))
        props = {"process.roles": "broker", "node.id": "1", "controller.quorum.voters": c.voters,
                 "controller.listener.names": "CONTROLLER", **FAST}
        b = EmbeddedBroker(props, data_dir=tmp_path / "b")
        format_dirs(KafkaConfig(b.props), c.call(lambda ctl: ctl.cluster_id), out=open("/dev/null", "w"))  # noqa: SIM115
        b.start()
        try:
            assert b.server.controller.loader.image.features.finalized_versions.get("group.version") == 1
            request = request_class(ApiKey.API_VERSIONS)[4](client_software_name="t", client_software_version="1")
            with socket.create_connection(("127.0.0.1", b.port), timeout=10) as sock:
                resp = roundtrip(sock, request, 1)
            image = b.server.controller.loader.image
            assert {f.name: f.max_version_level for f in resp.finalized_features} == {
                "group.version": 1, "metadata.version": image.features.metadata_version}
            assert 0 < resp.finalized_features_epoch <= image.offset
            supported = {f.name: (f.min_version, f.max_version) for f in resp.supported_features}
            assert supported["metadata.version"] == (7, 33) and supported["group.version"] == (0, 1)
        finally:
            b.stop()
    finally:
        c.stop()

"""Share groups (KIP-932) with confluent-kafka 2.16's ShareConsumer over real sockets: members share the
partitions of a topic, every record is delivered, acknowledged ones never again; a member killed with its
records unacknowledged, or hung, has them redelivered (delivery count 2); rejected records
are not redelivered; a record released up to `group.share.delivery.count.limit` times is archived.

A member killed -9 loses its connection, which ends its share session: its records are released at once (Kafka
4.1); a member that hangs (SIGSTOP) keeps its connection and its records come back when their locks expire.
The broker's record lock is 1 s (`group.share.record.lock.duration.ms`, Kafka's minimum) where a test waits
for it, its share heartbeats 300 ms so members learn new assignments quickly, and the share groups start at
the earliest offset (Kafka's `share.auto.offset.reset=earliest` group config, set on the broker's share-partition
manager: group configs are not served yet).
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import textwrap
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable
from typing import Any

from confluent_kafka import AcknowledgeType, KafkaError, KafkaException, Producer, ShareConsumer
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, NewTopic, ResourceType

from broker.share.manager import share_partition_manager
from protocol import ApiKey, request_class
from tests.broker.wire import roundtrip
from tests.e2e.support import wait_until

FAST = {"group.share.heartbeat.interval.ms": "300", "group.share.min.heartbeat.interval.ms": "300",
        "group.share.record.lock.duration.ms": "1000", "group.share.min.record.lock.duration.ms": "1000"}


def start(broker_factory: Callable[..., Any], data_dir: Any = None, **overrides: str) -> Any:
    broker = broker_factory({**FAST, **overrides}, data_dir=data_dir)
    share_partition_manager(broker.server).auto_offset_reset = lambda group_id: "earliest"
    return broker


def settled(broker: Any, group: str, members: int) -> bool:
    """`members` members at the group's assignment epoch, every subscribed partition's state initialized and
    assigned (Kafka 4.1 assigns a partition once the share coordinator holds its state)."""
    found = broker.server.group_coordinator.coordinator.share_groups.get(group)
    if found is None or len(found.members) != members or found.state_metadata.initializing:
        return False
    assigned = {(tid, p) for m in found.members.values() for tid, ps in m.assigned.items() for p in ps}
    wanted = {(tid, p) for tid, count in found.subscription_metadata.values() for p in range(count)}
    return assigned == wanted and all(m.member_epoch == found.assignment_epoch for m in found.members.values())


def create_topic(bootstrap: str, topic: str, partitions: int) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_topics([NewTopic(topic, partitions, 1)], operation_timeout=10).values():
        future.result(15)


def produce(bootstrap: str, topic: str, n: int, partitions: int) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    for i in range(n):
        producer.produce(topic, b"v%d" % i, partition=i % partitions)
    assert producer.flush(15) == 0


def share_consumer(bootstrap: str, group: str, topic: str, **extra: Any) -> ShareConsumer:
    consumer = ShareConsumer({"bootstrap.servers": bootstrap, "group.id": group, **extra})
    consumer.subscribe([topic])
    return consumer


def poll_until(consumer: ShareConsumer, done: Callable[[], bool], timeout: float,
               on_message: Callable[[Any], None]) -> None:
    deadline = time.monotonic() + timeout
    while not done() and time.monotonic() < deadline:
        for m in consumer.poll(0.2):
            assert m.error() is None, m.error()
            on_message(m)


def test_four_members_share_two_partitions_and_every_record_is_delivered_once(broker_factory: Any) -> None:
    broker = start(broker_factory, **{"group.share.record.lock.duration.ms": "30000"})
    topic, group, n = f"share-{uuid.uuid4().hex[:6]}", "sg-four", 400
    create_topic(broker.bootstrap, topic, 2)
    produce(broker.bootstrap, topic, n, 2)
    seen: Counter[tuple[int, int]] = Counter()
    counts: Counter[int] = Counter()
    by_member: Counter[int] = Counter()
    lock = threading.Lock()
    stop = threading.Event()

    def member(index: int) -> None:
        consumer = share_consumer(broker.bootstrap, group, topic)
        try:
            while not stop.is_set():
                for m in consumer.poll(0.2):
                    assert m.error() is None
                    with lock:
                        seen[(m.partition(), m.offset())] += 1
                        counts[m.delivery_count()] += 1
                        by_member[index] += 1
        finally:
            consumer.close()

    threads = [threading.Thread(target=member, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    try:
        wait_until(lambda: len(seen) >= n, 60, "every record to be delivered")
        wait_until(lambda: settled(broker, group, 4), 30, "four members at the group's assignment epoch")
        for _ in range(20):  # more, a few at a time, while all four members are in
            produce(broker.bootstrap, topic, 10, 2)
            time.sleep(0.05)
        wait_until(lambda: len(seen) >= n + 200, 30, "the records produced later")
        time.sleep(1.0)  # nothing acknowledged comes back
    finally:
        stop.set()
        for t in threads:
            t.join(30)
    assert len(seen) == n + 200
    assert set(seen.values()) == {1}, [k for k, v in seen.items() if v > 1][:10]
    assert set(counts) == {1}
    assert len(by_member) >= 2  # the partitions were shared


KILLED_MEMBER = textwrap.dedent("""
    import sys, time
    from confluent_kafka import ShareConsumer
    c = ShareConsumer({"bootstrap.servers": sys.argv[1], "group.id": sys.argv[2],
                       "share.acknowledgement.mode": "explicit"})
    c.subscribe([sys.argv[3]])
    while True:
        got = [m for m in c.poll(0.5) if m.error() is None]
        if got:
            print("GOT", " ".join(f"{m.partition()}:{m.offset()}" for m in got), flush=True)
            time.sleep(3600)
""")


def _held_by_a_member_in_a_subprocess(broker: Any, group: str, topic: str) -> tuple[subprocess.Popen[str], set]:
    proc = subprocess.Popen([sys.executable, "-c", KILLED_MEMBER, broker.bootstrap, group, topic],
                            stdout=subprocess.PIPE, text=True)
    line = proc.stdout.readline() if proc.stdout else ""
    assert line.startswith("GOT"), line
    held = {tuple(int(x) for x in item.split(":")) for item in line.split()[1:]}
    assert held
    return proc, held


def _redelivered(broker: Any, group: str, topic: str, held: set) -> dict[tuple[int, int], int]:
    consumer = share_consumer(broker.bootstrap, group, topic)
    redelivered: dict[tuple[int, int], int] = {}
    try:
        poll_until(consumer, lambda: held <= set(redelivered), 30,
                   lambda m: redelivered.setdefault((m.partition(), m.offset()), m.delivery_count()))
    finally:
        consumer.close()
    return redelivered


def test_a_hung_members_records_are_redelivered_after_the_lock_with_delivery_count_2(broker_factory: Any) -> None:
    broker = start(broker_factory)
    topic, group = f"share-{uuid.uuid4().hex[:6]}", "sg-hung"
    create_topic(broker.bootstrap, topic, 1)
    produce(broker.bootstrap, topic, 5, 1)
    proc, held = _held_by_a_member_in_a_subprocess(broker, group, topic)
    try:
        os.kill(proc.pid, signal.SIGSTOP)  # its connection stays open: only the lock frees its records
        stopped_at = time.monotonic()
        redelivered = _redelivered(broker, group, topic, held)
        waited = time.monotonic() - stopped_at
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(10)
    assert held <= set(redelivered)
    assert {redelivered[k] for k in held} == {2}
    assert waited >= 0.5  # not before the 1 s lock ran out


def test_a_killed_members_records_are_redelivered_with_delivery_count_2(broker_factory: Any) -> None:
    broker = start(broker_factory, **{"group.share.record.lock.duration.ms": "60000"})
    topic, group = f"share-{uuid.uuid4().hex[:6]}", "sg-killed"
    create_topic(broker.bootstrap, topic, 1)
    produce(broker.bootstrap, topic, 5, 1)
    proc, held = _held_by_a_member_in_a_subprocess(broker, group, topic)
    os.kill(proc.pid, signal.SIGKILL)  # its connection drops: its share session ends, its records are released
    proc.wait(10)
    killed_at = time.monotonic()
    redelivered = _redelivered(broker, group, topic, held)
    assert held <= set(redelivered)
    assert {redelivered[k] for k in held} == {2}
    assert time.monotonic() - killed_at < 30  # well before the 60 s lock


def test_rejected_records_are_not_redelivered_and_released_ones_are(broker_factory: Any) -> None:
    broker = start(broker_factory)
    topic, group = f"share-{uuid.uuid4().hex[:6]}", "sg-reject"
    create_topic(broker.bootstrap, topic, 1)
    produce(broker.bootstrap, topic, 10, 1)
    consumer = share_consumer(broker.bootstrap, group, topic, **{"share.acknowledgement.mode": "explicit"})
    deliveries: list[tuple[int, int]] = []
    try:
        def ack(m: Any) -> None:
            deliveries.append((m.offset(), m.delivery_count()))
            if m.offset() == 3 and m.delivery_count() == 1:
                consumer.acknowledge(m, AcknowledgeType.RELEASE)
            elif m.offset() % 2:
                consumer.acknowledge(m, AcknowledgeType.REJECT)
            else:
                consumer.acknowledge(m, AcknowledgeType.ACCEPT)
        poll_until(consumer, lambda: (3, 2) in deliveries, 30, ack)
        poll_until(consumer, lambda: False, 2.5, ack)  # longer than the lock: nothing else comes back
        consumer.commit_sync()
    finally:
        consumer.close()
    assert sorted(deliveries) == sorted([(o, 1) for o in range(10)] + [(3, 2)])


def test_a_poison_record_is_archived_at_the_delivery_count_limit(broker_factory: Any) -> None:
    broker = start(broker_factory, **{"group.share.delivery.count.limit": "3"})
    topic, group = f"share-{uuid.uuid4().hex[:6]}", "sg-poison"
    create_topic(broker.bootstrap, topic, 1)
    produce(broker.bootstrap, topic, 3, 1)
    consumer = share_consumer(broker.bootstrap, group, topic, **{"share.acknowledgement.mode": "explicit"})
    deliveries: list[tuple[int, int]] = []
    try:
        def ack(m: Any) -> None:
            deliveries.append((m.offset(), m.delivery_count()))
            consumer.acknowledge(m, AcknowledgeType.RELEASE if m.offset() == 1 else AcknowledgeType.ACCEPT)
        poll_until(consumer, lambda: (1, 3) in deliveries, 30, ack)
        poll_until(consumer, lambda: False, 2.5, ack)
        consumer.commit_sync()
    finally:
        consumer.close()
    assert sorted(deliveries) == [(0, 1), (1, 1), (1, 2), (1, 3), (2, 1)]


def test_share_group_is_described_and_listed_by_type(broker_factory: Any) -> None:
    broker = start(broker_factory)
    topic, group = f"share-{uuid.uuid4().hex[:6]}", "sg-described"
    create_topic(broker.bootstrap, topic, 3)
    consumers = [share_consumer(broker.bootstrap, group, topic) for _ in range(2)]
    try:
        def polled() -> bool:
            for c in consumers:
                c.poll(0.1)
            return settled(broker, group, 2)
        wait_until(polled, 30, "two members at the group's assignment epoch")
        with socket.create_connection(("127.0.0.1", broker.port), timeout=30) as s:
            Describe = request_class(ApiKey.SHARE_GROUP_DESCRIBE)
            described = roundtrip(s, Describe[1](group_ids=[group], include_authorized_operations=False), 1)
            List = request_class(ApiKey.LIST_GROUPS)
            shares = roundtrip(s, List[5](states_filter=[], types_filter=["Share"]), 2)
            classic = roundtrip(s, List[5](states_filter=[], types_filter=["classic"]), 3)
    finally:
        for c in consumers:
            c.close()
    g = described.groups[0]
    assert (g.error_code, g.group_state, g.assignor_name, len(g.members)) == (0, "Stable", "simple", 2)
    assigned = sorted(p for m in g.members for t in m.assignment.topic_partitions if t.topic_name == topic
                      for p in t.partitions)
    assert assigned == [0, 1, 2]
    assert [(x.group_id, x.group_type, x.protocol_type) for x in shares.groups] == [(group, "share", "share")]
    assert group not in {x.group_id for x in classic.groups}


def test_a_share_group_survives_a_broker_restart(broker_factory: Any, tmp_path: Any) -> None:
    data_dir = tmp_path / "restarted"
    broker = start(broker_factory, data_dir=data_dir)
    topic, group = f"share-{uuid.uuid4().hex[:6]}", "sg-restart"
    create_topic(broker.bootstrap, topic, 3)
    Heartbeat = request_class(ApiKey.SHARE_GROUP_HEARTBEAT)
    joined = []
    with socket.create_connection(("127.0.0.1", broker.port), timeout=30) as s:
        find = request_class(ApiKey.FIND_COORDINATOR)[3](key=group, key_type=0)  # makes __consumer_offsets
        wait_until(lambda: roundtrip(s, find, 0).error_code == 0, 30, "the group coordinator")

        def join(member: str) -> bool:
            resp = roundtrip(s, Heartbeat[1](group_id=group, member_id=member, member_epoch=0,
                                             subscribed_topic_names=[topic]), 1)
            joined.append(resp)
            return resp.error_code == 0
        wait_until(lambda: join("m1"), 30, "the first member to join")
        assert join("m2")
        epochs = {"m1": joined[-2].member_epoch, "m2": joined[-1].member_epoch}

        def heartbeats() -> bool:  # until the partitions' state is initialized and they are assigned
            for m in epochs:
                resp = roundtrip(s, Heartbeat[1](group_id=group, member_id=m, member_epoch=epochs[m]), 2)
                assert resp.error_code == 0, resp
                epochs[m] = resp.member_epoch
            return settled(broker, group, 2)
        wait_until(heartbeats, 30, "the share partitions' state initialized and assigned")
    before = broker.server.group_coordinator.coordinator.share_groups[group]
    initialized = before.state_metadata.initialized
    epoch = before.group_epoch
    members = {m: (x.member_epoch, x.assigned, x.subscribed_topic_names) for m, x in before.members.items()}
    broker.stop()
    again = broker_factory(FAST, data_dir=data_dir, port=broker.port)
    with socket.create_connection(("127.0.0.1", again.port), timeout=30) as s:
        described: list[Any] = []
        Describe = request_class(ApiKey.SHARE_GROUP_DESCRIBE)
        wait_until(lambda: described.append(roundtrip(s, Describe[1](group_ids=[group],
                                                                     include_authorized_operations=False), 3))
                   or described[-1].groups[0].error_code == 0, 30, "the group to load")
    loaded = again.server.group_coordinator.coordinator.share_groups[group]
    # Epoch 1 and 2: the members join; 3: their partitions' state is initialized and assigned.
    assert loaded.group_epoch == epoch == 3
    assert loaded.state_metadata.initialized == initialized
    assert [sorted(v.partitions) for v in initialized.values()] == [[0, 1, 2]]
    assert {m: (x.member_epoch, x.assigned, x.subscribed_topic_names) for m, x in loaded.members.items()} == members
    assert sorted(p for _, assigned, _ in members.values() for ps in assigned.values() for p in ps) == [0, 1, 2]
    assert {m.member_id for m in described[-1].groups[0].members} == {"m1", "m2"}


def test_delete_groups_deletes_an_empty_share_group(broker_factory: Any) -> None:
    broker = start(broker_factory)
    topic, group = f"share-{uuid.uuid4().hex[:6]}", "sg-deleted"
    create_topic(broker.bootstrap, topic, 1)
    produce(broker.bootstrap, topic, 3, 1)
    consumer = share_consumer(broker.bootstrap, group, topic)
    seen: list[int] = []
    poll_until(consumer, lambda: len(seen) >= 3, 30, lambda m: seen.append(m.offset()))
    Delete = request_class(ApiKey.DELETE_GROUPS)
    with socket.create_connection(("127.0.0.1", broker.port), timeout=30) as s:
        busy = roundtrip(s, Delete[2](groups_names=[group]), 1)
        consumer.close()
        wait_until(lambda: not settled(broker, group, 1) and settled(broker, group, 0), 30, "the member to leave")
        deleted = roundtrip(s, Delete[2](groups_names=[group]), 2)
        again = roundtrip(s, Delete[2](groups_names=[group]), 3)
    assert [r.error_code for r in (*busy.results, *deleted.results, *again.results)] == [68, 0, 69]
    assert group not in broker.server.group_coordinator.coordinator.share_groups
    assert not [k for k in share_partition_manager(broker.server).partitions if k[0] == group]
    # A new group of that id starts afresh (here at the earliest offset): its state was deleted with the group.
    consumer = share_consumer(broker.bootstrap, group, topic)
    try:
        poll_until(consumer, lambda: len(seen) >= 6, 30, lambda m: seen.append(m.offset()))
    finally:
        consumer.close()
    assert seen == [0, 1, 2, 0, 1, 2]


def test_share_group_offsets_are_described(broker_factory: Any) -> None:
    broker = start(broker_factory)
    topic, group = f"share-{uuid.uuid4().hex[:6]}", "sg-offsets"
    create_topic(broker.bootstrap, topic, 2)
    produce(broker.bootstrap, topic, 10, 2)
    consumer = share_consumer(broker.bootstrap, group, topic, **{"share.acknowledgement.mode": "explicit"})
    seen: list[tuple[int, int]] = []
    try:
        def ack(m: Any) -> None:  # accept partition 0's records, release partition 1's (its start stays)
            seen.append((m.partition(), m.offset()))
            consumer.acknowledge(m, AcknowledgeType.ACCEPT if m.partition() == 0 else AcknowledgeType.RELEASE)
        poll_until(consumer, lambda: len({o for p, o in seen if p == 0}) >= 5, 30, ack)
        consumer.commit_sync()
        Req = request_class(ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS)
        G = Req.DescribeShareGroupOffsetsRequestGroup
        with socket.create_connection(("127.0.0.1", broker.port), timeout=30) as s:
            every = roundtrip(s, Req[0](groups=[G(group_id=group, topics=None)]), 1)
            named = roundtrip(s, Req[0](groups=[G(group_id=group, topics=[G.DescribeShareGroupOffsetsRequestTopic(
                topic_name=topic, partitions=[1])])]), 2)
    finally:
        consumer.close()
    starts = {p.partition_index: p.start_offset for t in every.groups[0].topics for p in t.partitions}
    assert starts == {0: 5, 1: 0}
    assert [(p.partition_index, p.start_offset, p.error_code) for p in named.groups[0].topics[0].partitions] == [
        (1, 0, 0)]


def test_a_share_groups_id_is_not_a_classic_or_consumer_group_and_back(broker_factory: Any) -> None:
    broker = start(broker_factory)
    Heartbeat = request_class(ApiKey.SHARE_GROUP_HEARTBEAT)
    ConsumerHeartbeat = request_class(ApiKey.CONSUMER_GROUP_HEARTBEAT)
    Join = request_class(ApiKey.JOIN_GROUP)
    with socket.create_connection(("127.0.0.1", broker.port), timeout=30) as s:
        find = request_class(ApiKey.FIND_COORDINATOR)[3](key="sg-ids", key_type=0)
        wait_until(lambda: roundtrip(s, find, 0).error_code == 0, 30, "the group coordinator")
        shared = roundtrip(s, Heartbeat[1](group_id="sg-ids", member_id="m1", member_epoch=0,
                                           subscribed_topic_names=["t"]), 1)
        consumer = roundtrip(s, ConsumerHeartbeat[1](group_id="sg-ids", member_id="c1", member_epoch=0,
                                                     rebalance_timeout_ms=30000, subscribed_topic_names=["t"],
                                                     topic_partitions=[]), 2)
        classic = roundtrip(s, Join[5](group_id="sg-ids", session_timeout_ms=10000, rebalance_timeout_ms=10000,
                                       member_id="", group_instance_id=None, protocol_type="consumer",
                                       protocols=[Join.JoinGroupRequestProtocol(name="range", metadata=b"")]), 3)
        joined = roundtrip(s, ConsumerHeartbeat[1](group_id="cg-ids", member_id="c1", member_epoch=0,
                                                   rebalance_timeout_ms=30000, subscribed_topic_names=["t"],
                                                   topic_partitions=[]), 4)
        refused = roundtrip(s, Heartbeat[1](group_id="cg-ids", member_id="m1", member_epoch=0,
                                            subscribed_topic_names=["t"]), 5)
    assert shared.error_code == 0 and joined.error_code == 0
    assert (consumer.error_code, classic.error_code, refused.error_code) == (69, 25, 69)


def test_a_silent_member_is_fenced_after_the_session_timeout(broker_factory: Any) -> None:
    broker = start(broker_factory, **{"group.share.session.timeout.ms": "1000",
                                      "group.share.min.session.timeout.ms": "1000"})
    topic = f"share-{uuid.uuid4().hex[:6]}"
    create_topic(broker.bootstrap, topic, 2)
    Heartbeat = request_class(ApiKey.SHARE_GROUP_HEARTBEAT)
    with socket.create_connection(("127.0.0.1", broker.port), timeout=30) as s:
        find = request_class(ApiKey.FIND_COORDINATOR)[3](key="sg-silent", key_type=0)
        wait_until(lambda: roundtrip(s, find, 0).error_code == 0, 30, "the group coordinator")

        def beat(member: str, epoch: int) -> Any:
            return roundtrip(s, Heartbeat[1](group_id="sg-silent", member_id=member, member_epoch=epoch,
                                             subscribed_topic_names=[topic] if epoch == 0 else None), 1)
        a, b = beat("a", 0), beat("b", 0)
        for _ in range(100):  # a takes its share once the partitions' state is initialized (b beats till then)
            a, b = beat("a", a.member_epoch), beat("b", b.member_epoch)
            if a.assignment is not None and sum(len(t.partitions) for t in a.assignment.topic_partitions) == 1:
                break
            time.sleep(0.1)
        assert a.assignment is not None and sum(len(t.partitions) for t in a.assignment.topic_partitions) == 1
        assignment = a.assignment
        deadline = time.monotonic() + 3
        while time.monotonic() < deadline:  # a heartbeats, b stays silent
            a = beat("a", a.member_epoch)
            assignment = a.assignment or assignment  # answered when it changes
            time.sleep(0.2)
        gone = beat("b", b.member_epoch)
        fenced = beat("a", a.member_epoch + 3)
        rejoined = beat("a", 0)  # the client rejoins with its member id after FENCED_MEMBER_EPOCH
    assert (fenced.error_code, rejoined.error_code, rejoined.member_epoch) == (110, 0, a.member_epoch)
    assert rejoined.assignment is not None
    assert gone.error_code == 25  # UNKNOWN_MEMBER_ID: fenced
    assert a.error_code == 0 and a.member_epoch > b.member_epoch
    assert sum(len(t.partitions) for t in assignment.topic_partitions) == 2


def test_records_a_member_closed_without_acknowledging_are_redelivered_with_delivery_count_2(
        broker_factory: Any) -> None:
    broker = start(broker_factory, **{"group.share.record.lock.duration.ms": "60000"})
    topic, group = f"share-{uuid.uuid4().hex[:6]}", "sg-closed"
    create_topic(broker.bootstrap, topic, 1)
    produce(broker.bootstrap, topic, 5, 1)
    first = share_consumer(broker.bootstrap, group, topic, **{"share.acknowledgement.mode": "explicit"})
    held: set[tuple[int, int]] = set()
    poll_until(first, lambda: bool(held), 30, lambda m: held.add((m.partition(), m.offset())))
    first.close()  # mid-batch: nothing acknowledged; its share session ends and releases them
    closed_at = time.monotonic()
    redelivered = _redelivered(broker, group, topic, held)
    assert {redelivered[k] for k in held} == {2}
    assert time.monotonic() - closed_at < 30  # not the 60 s lock


def test_group_configs_set_where_a_share_group_starts_and_its_lock(broker_factory: Any) -> None:
    """share.auto.offset.reset, share.record.lock.duration.ms and share.partition.max.record.locks (Kafka 4.2) as
    group configs (IncrementalAlterConfigs on a GROUP resource with confluent-kafka's AdminClient), described back
    with their source, bounds checked."""
    broker = broker_factory(FAST)  # no test override of the offset reset: the group config decides
    topic, group = f"share-{uuid.uuid4().hex[:6]}", "sg-configs"
    create_topic(broker.bootstrap, topic, 1)
    produce(broker.bootstrap, topic, 5, 1)  # before the group exists: only "earliest" delivers them
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})

    def alter(**configs: str) -> None:
        entries = [ConfigEntry(k.replace("_", "."), v, incremental_operation=AlterConfigOpType.SET)
                   for k, v in configs.items()]
        admin.incremental_alter_configs([ConfigResource(ResourceType.GROUP, group, incremental_configs=entries)])[
            ConfigResource(ResourceType.GROUP, group)].result(15)

    alter(share_auto_offset_reset="earliest", share_record_lock_duration_ms="1500",
          share_partition_max_record_locks="100")
    for too_far in ({"share_record_lock_duration_ms": "999999"},  # above group.share.max.record.lock.duration.ms
                    {"share_partition_max_record_locks": "4001"},  # above group.share.max.partition.max.record.locks
                    {"share_partition_max_record_locks": "99"}):  # below group.share.min.partition.max.record.locks
        try:
            alter(**too_far)
            raise AssertionError(f"{too_far} was accepted")
        except KafkaException as e:
            assert e.args[0].code() == KafkaError.INVALID_CONFIG
    described = admin.describe_configs([ConfigResource(ResourceType.GROUP, group)])[
        ConfigResource(ResourceType.GROUP, group)].result(15)
    assert {k: (v.value, int(v.source)) for k, v in described.items()} == {
        "share.auto.offset.reset": ("earliest", 8), "share.record.lock.duration.ms": ("1500", 8),
        "share.heartbeat.interval.ms": ("300", 5), "share.session.timeout.ms": ("45000", 5),
        "share.isolation.level": ("read_uncommitted", 5), "share.partition.max.record.locks": ("100", 8)}
    consumer = share_consumer(broker.bootstrap, group, topic)
    seen: list[int] = []
    try:
        poll_until(consumer, lambda: len(seen) >= 5, 30, lambda m: seen.append(m.offset()))
        # Looked at while the member's share session lasts: its end drops the group's share partitions here.
        [entry] = [e for (g, _), e in share_partition_manager(broker.server).partitions.items() if g == group]
    finally:
        consumer.close()
    assert sorted(seen) == list(range(5))
    assert entry.share.record_lock_duration_ms == 1500
    assert entry.share.max_in_flight == 100  # Kafka 4.2's group config: the partition's in-flight record limit


def test_share_auto_offset_reset_by_duration(broker_factory: Any) -> None:
    """by_duration:PT1H starts a new share group at the first record of the last hour: all of them here."""
    broker = broker_factory(FAST)
    topic, group = f"share-{uuid.uuid4().hex[:6]}", "sg-by-duration"
    create_topic(broker.bootstrap, topic, 1)
    produce(broker.bootstrap, topic, 4, 1)
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    resource = ConfigResource(ResourceType.GROUP, group, incremental_configs=[
        ConfigEntry("share.auto.offset.reset", "by_duration:PT1H", incremental_operation=AlterConfigOpType.SET)])
    admin.incremental_alter_configs([resource])[ConfigResource(ResourceType.GROUP, group)].result(15)
    consumer = share_consumer(broker.bootstrap, group, topic)
    seen: list[int] = []
    try:
        poll_until(consumer, lambda: len(seen) >= 4, 30, lambda m: seen.append(m.offset()))
    finally:
        consumer.close()
    assert sorted(seen) == [0, 1, 2, 3]


def test_share_isolation_level_read_committed(broker_factory: Any) -> None:
    """A group with share.isolation.level=read_committed gets committed transactions' records and plain ones,
    never an aborted transaction's, and nothing past the last stable offset while a transaction is open."""
    broker = broker_factory({**FAST, "transaction.state.log.replication.factor": "1",
                             "transaction.state.log.min.isr": "1", "transaction.state.log.num.partitions": "2"})
    topic, group = f"share-{uuid.uuid4().hex[:6]}", "sg-committed"
    create_topic(broker.bootstrap, topic, 1)
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    resource = ConfigResource(ResourceType.GROUP, group, incremental_configs=[
        ConfigEntry("share.isolation.level", "read_committed", incremental_operation=AlterConfigOpType.SET),
        ConfigEntry("share.auto.offset.reset", "earliest", incremental_operation=AlterConfigOpType.SET)])
    admin.incremental_alter_configs([resource])[ConfigResource(ResourceType.GROUP, group)].result(15)
    plain = Producer({"bootstrap.servers": broker.bootstrap})
    txn = Producer({"bootstrap.servers": broker.bootstrap, "transactional.id": "share-txn"})
    txn.init_transactions(15)
    plain.produce(topic, b"plain-0")
    plain.flush(10)
    txn.begin_transaction()
    txn.produce(topic, b"committed")
    txn.commit_transaction(15)
    txn.begin_transaction()
    txn.produce(topic, b"aborted")
    txn.abort_transaction(15)
    txn.begin_transaction()
    txn.produce(topic, b"open")  # not committed while the group reads
    txn.flush(10)
    plain.produce(topic, b"plain-1")
    plain.flush(10)
    consumer = share_consumer(broker.bootstrap, group, topic)
    seen: list[bytes] = []
    try:
        poll_until(consumer, lambda: False, 3, lambda m: seen.append(m.value()))
        assert sorted(seen) == [b"committed", b"plain-0"]  # plain-1 is past the open transaction
        txn.commit_transaction(15)
        poll_until(consumer, lambda: len(seen) >= 4, 30, lambda m: seen.append(m.value()))
    finally:
        consumer.close()
    assert sorted(seen) == [b"committed", b"open", b"plain-0", b"plain-1"]


def test_acknowledged_records_are_not_delivered_again_after_a_broker_restart(broker_factory: Any,
                                                                             tmp_path: Any) -> None:
    # The share-partition state lives in __share_group_state (the share coordinator, through the RpcPersister):
    # a restarted broker reads it back, so what was accepted stays done and the rest comes again.
    data_dir = tmp_path / "restarted"
    broker = start(broker_factory, data_dir=data_dir)
    topic, group = f"share-{uuid.uuid4().hex[:6]}", "sg-durable"
    create_topic(broker.bootstrap, topic, 1)
    produce(broker.bootstrap, topic, 10, 1)
    consumer = share_consumer(broker.bootstrap, group, topic, **{"share.acknowledgement.mode": "explicit"})
    first: list[int] = []
    try:
        def accept_half(m: Any) -> None:
            first.append(m.offset())
            if m.offset() < 5:
                consumer.acknowledge(m, AcknowledgeType.ACCEPT)
            else:
                consumer.acknowledge(m, AcknowledgeType.RELEASE)
        poll_until(consumer, lambda: len(first) >= 10, 30, accept_half)
        consumer.commit_sync()
    finally:
        consumer.close()
    assert sorted(first) == list(range(10))
    broker.stop()

    again = start(broker_factory, data_dir=data_dir)
    consumer = share_consumer(again.bootstrap, group, topic)
    second: list[tuple[int, int]] = []
    try:
        poll_until(consumer, lambda: len(second) >= 5, 30, lambda m: second.append((m.offset(), m.delivery_count())))
        poll_until(consumer, lambda: False, 2.0, lambda m: second.append((m.offset(), m.delivery_count())))
        consumer.commit_sync()
    finally:
        consumer.close()
    assert sorted(o for o, _ in second) == [5, 6, 7, 8, 9]
    assert all(count == 2 for _, count in second), second


def test_a_recreated_topics_records_come_at_delivery_count_1(broker_factory: Any) -> None:
    """confluent-kafka-python's own test_topic_recreate_resumes_with_fresh_delivery (passes on Kafka 4.4): a topic
    deleted and recreated under its name while a member's share session holds it. The session's partition is
    the old topic id's: UNKNOWN_TOPIC_ID, not the new topic's records fetched by name and sent under an id the
    member no longer takes (they came back at delivery count 5, after four lock expiries)."""
    # Kafka's default heartbeat (5 s): the member learns of the new topic's assignment seconds later, and goes
    # on fetching its session meanwhile.
    broker = start(broker_factory, **{"group.share.heartbeat.interval.ms": "5000"})
    topic, group = f"share-{uuid.uuid4().hex[:6]}", "sg-recreated"
    fast_metadata = {"topic.metadata.refresh.interval.ms": 500, "topic.metadata.propagation.max.ms": 0}
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    create_topic(broker.bootstrap, topic, 1)
    time.sleep(1)
    consumer = share_consumer(broker.bootstrap, group, topic, **fast_metadata)
    first: dict[bytes, int] = {}
    try:
        produce(broker.bootstrap, topic, 5, 1)
        poll_until(consumer, lambda: len(first) >= 5, 30, lambda m: first.setdefault(m.value(), m.delivery_count()))
        for future in admin.delete_topics([topic], operation_timeout=10).values():
            future.result(15)
        wait_until(lambda: topic not in admin.list_topics(timeout=5).topics, 30, "the topic deleted")
        create_topic(broker.bootstrap, topic, 1)
        time.sleep(2)  # as the client's test: the member's fetches go on meanwhile, under the old topic id
        producer = Producer({"bootstrap.servers": broker.bootstrap, **fast_metadata})
        for i in range(5):
            producer.produce(topic, b"after-%d" % i)
        assert producer.flush(15) == 0
        after: dict[bytes, int] = {}

        def take(m: Any) -> None:
            after.setdefault(m.value(), m.delivery_count())

        deadline = time.monotonic() + 45
        while len(after) < 5 and time.monotonic() < deadline:
            try:
                for m in consumer.poll(0.5):
                    if m.error() is None:
                        take(m)
            except KafkaException:
                continue  # the member's session recovering from the deleted topic
    finally:
        consumer.close()
    assert after == {b"after-%d" % i: 1 for i in range(5)}

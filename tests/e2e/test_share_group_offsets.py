"""The share-group offset admin APIs (KIP-932, Kafka 4.1/4.2) over a real socket with our codec (confluent-kafka
2.16's AdminClient has no share-group offset calls): DescribeShareGroupOffsets v1 with its lag,
AlterShareGroupOffsets and DeleteShareGroupOffsets, refused while the group has members, and what a
confluent-kafka ShareConsumer of the group receives after them; DeleteGroups deleting the share-partition state
the group coordinator initialized (Kafka 4.1's ShareGroupStatePartitionMetadata), and a deleted topic leaving
that record."""

from __future__ import annotations

import socket
import uuid
from typing import Any

from confluent_kafka import AcknowledgeType

from broker.share.manager import share_partition_manager
from protocol import ApiKey, request_class
from protocol.errors import ErrorCode
from tests.broker.wire import roundtrip
from tests.e2e.support import wait_until
from tests.e2e.test_share_groups import create_topic, poll_until, produce, settled, share_consumer, start

DESCRIBE = request_class(ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS)
ALTER = request_class(ApiKey.ALTER_SHARE_GROUP_OFFSETS)
DELETE = request_class(ApiKey.DELETE_SHARE_GROUP_OFFSETS)


def describe(s: socket.socket, group: str, topic: str) -> list[tuple[int, int, int, int]]:
    G = DESCRIBE.DescribeShareGroupOffsetsRequestGroup
    resp = roundtrip(s, DESCRIBE[1](groups=[G(group_id=group, topics=[G.DescribeShareGroupOffsetsRequestTopic(
        topic_name=topic, partitions=[0])])]), 1)
    return [(p.partition_index, p.start_offset, p.lag, p.error_code) for t in resp.groups[0].topics
            for p in t.partitions]


def alter(s: socket.socket, group: str, topic: str, start: int) -> Any:
    T = ALTER.AlterShareGroupOffsetsRequestTopic
    return roundtrip(s, ALTER[0](group_id=group, topics=[T(topic_name=topic, partitions=[
        T.AlterShareGroupOffsetsRequestPartition(partition_index=0, start_offset=start),
        T.AlterShareGroupOffsetsRequestPartition(partition_index=3, start_offset=0)])]), 2)


def delete(s: socket.socket, group: str, *topics: str) -> Any:
    T = DELETE.DeleteShareGroupOffsetsRequestTopic
    return roundtrip(s, DELETE[0](group_id=group, topics=[T(topic_name=t) for t in topics]), 3)


def test_share_group_offsets_are_described_with_lag_altered_and_deleted(broker_factory: Any) -> None:
    broker = start(broker_factory)
    topic, group = f"share-{uuid.uuid4().hex[:6]}", "sg-admin-offsets"
    create_topic(broker.bootstrap, topic, 1)
    produce(broker.bootstrap, topic, 5, 1)
    seen: list[int] = []
    consumer = share_consumer(broker.bootstrap, group, topic, **{"share.acknowledgement.mode": "explicit"})

    def accept(m: Any) -> None:
        seen.append(m.offset())
        consumer.acknowledge(m, AcknowledgeType.ACCEPT)
    with socket.create_connection(("127.0.0.1", broker.port), timeout=30) as s:
        try:
            poll_until(consumer, lambda: len(seen) >= 5, 30, accept)
            consumer.commit_sync()
            busy_alter, busy_delete = alter(s, group, topic, 0), delete(s, group, topic)
        finally:
            consumer.close()
        wait_until(lambda: settled(broker, group, 0), 30, "the member to leave")
        wait_until(lambda: describe(s, group, topic) == [(0, 5, 0, 0)], 30, "the acknowledgements to persist")
        produce(broker.bootstrap, topic, 2, 1)
        wait_until(lambda: describe(s, group, topic) == [(0, 5, 2, 0)], 30, "a lag of the two new records")
        altered = alter(s, group, topic, 1)
        after_alter = describe(s, group, topic)
        unknown = alter(s, "sg-no-such-group", topic, 0)
        consumer = share_consumer(broker.bootstrap, group, topic)
        try:
            poll_until(consumer, lambda: len(seen) >= 11, 30, lambda m: seen.append(m.offset()))
        finally:
            consumer.close()
        wait_until(lambda: settled(broker, group, 0), 30, "the member to leave")
        deleted = delete(s, group, topic, "no-such-topic")
        again = delete(s, group, topic)
        G = DESCRIBE.DescribeShareGroupOffsetsRequestGroup
        v0 = roundtrip(s, DESCRIBE[0](groups=[G(group_id=group, topics=None)]), 4)
    assert (busy_alter.error_code, busy_delete.error_code) == (ErrorCode.NON_EMPTY_GROUP, ErrorCode.NON_EMPTY_GROUP)
    assert altered.error_code == 0
    assert [(p.partition_index, p.error_code) for t in altered.responses for p in t.partitions] == [
        (0, 0), (3, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)]
    assert after_alter[0][:2] == (0, 1)
    # Kafka 4.2+: a share group that does not exist is created, empty, with the state set.
    assert unknown.error_code == 0
    assert [(p.partition_index, p.error_code) for t in unknown.responses for p in t.partitions] == [
        (0, 0), (3, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)]
    # The records from the new start offset are delivered again (offsets 1..6), then the state is deleted.
    assert seen == [0, 1, 2, 3, 4, 1, 2, 3, 4, 5, 6]
    assert deleted.error_code == 0
    assert sorted((t.topic_name, t.error_code) for t in deleted.responses) == [
        ("no-such-topic", ErrorCode.UNKNOWN_TOPIC_OR_PARTITION), (topic, 0)]
    assert [(t.error_code, t.error_message) for t in again.responses] == [
        (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "There is no offset information to delete.")]
    assert v0.groups[0].error_code == 0 and v0.groups[0].topics == []
    assert not broker.server.group_coordinator.coordinator.share_groups[group].state_metadata.with_state()


def test_a_deleted_topic_leaves_the_groups_share_partition_state_metadata(broker_factory: Any) -> None:
    from confluent_kafka.admin import AdminClient

    from protocol import request_class as rc

    broker = start(broker_factory)
    topic, group = f"share-{uuid.uuid4().hex[:6]}", "sg-topic-deleted"
    create_topic(broker.bootstrap, topic, 2)
    Heartbeat = rc(ApiKey.SHARE_GROUP_HEARTBEAT)
    coordinator = broker.server.group_coordinator.coordinator
    with socket.create_connection(("127.0.0.1", broker.port), timeout=30) as s:
        find = rc(ApiKey.FIND_COORDINATOR)[3](key=group, key_type=0)
        wait_until(lambda: roundtrip(s, find, 0).error_code == 0, 30, "the group coordinator")
        epoch = [0]

        def beat() -> bool:
            resp = roundtrip(s, Heartbeat[1](group_id=group, member_id="m1", member_epoch=epoch[0],
                                             subscribed_topic_names=[topic] if epoch[0] == 0 else None), 1)
            assert resp.error_code == 0, resp
            epoch[0] = resp.member_epoch
            return True
        wait_until(lambda: beat() and settled(broker, group, 1), 30, "the partitions' state initialized")
        assert [v.name for v in coordinator.share_groups[group].state_metadata.initialized.values()] == [topic]
        admin = AdminClient({"bootstrap.servers": broker.bootstrap})
        admin.delete_topics([topic], operation_timeout=10)[topic].result(15)
        wait_until(lambda: beat() and not coordinator.share_groups[group].state_metadata.with_state(), 30,
                   "the deleted topic to leave the record")


def test_delete_groups_deletes_the_state_of_every_initialized_partition(broker_factory: Any) -> None:
    """The group coordinator initializes the state of the subscribed partitions (Kafka 4.1's
    ShareGroupStatePartitionMetadata) and DeleteGroups deletes it, though no share-partition leader ever
    loaded it (nothing was fetched)."""
    broker = start(broker_factory)
    topic, group = f"share-{uuid.uuid4().hex[:6]}", "sg-state-deleted"
    create_topic(broker.bootstrap, topic, 2)
    Heartbeat = request_class(ApiKey.SHARE_GROUP_HEARTBEAT)
    persister = broker.server.share_persister
    with socket.create_connection(("127.0.0.1", broker.port), timeout=30) as s:
        find = request_class(ApiKey.FIND_COORDINATOR)[3](key=group, key_type=0)
        wait_until(lambda: roundtrip(s, find, 0).error_code == 0, 30, "the group coordinator")
        epoch = [0]

        def beat() -> bool:
            resp = roundtrip(s, Heartbeat[1](group_id=group, member_id="m1", member_epoch=epoch[0],
                                             subscribed_topic_names=[topic] if epoch[0] == 0 else None), 1)
            assert resp.error_code == 0, resp
            epoch[0] = resp.member_epoch
            return settled(broker, group, 1)
        wait_until(beat, 30, "the partitions' state initialized and assigned")
        (tid, value), = broker.server.group_coordinator.coordinator.share_groups[group].state_metadata \
            .initialized.items()
        assert sorted(value.partitions) == [0, 1]
        summaries = [broker.call(persister.read_summary, group, tid.bytes, p, -1) for p in (0, 1)]
        assert [(x.state_epoch, x.start_offset) for x in summaries] == [(epoch[0] - 1, -1)] * 2
        assert not [k for k in share_partition_manager(broker.server).partitions if k[0] == group]
        assert roundtrip(s, Heartbeat[1](group_id=group, member_id="m1", member_epoch=-1), 2).error_code == 0
        deleted = roundtrip(s, request_class(ApiKey.DELETE_GROUPS)[2](groups_names=[group]), 3)
    assert [r.error_code for r in deleted.results] == [0]
    summaries = [broker.call(persister.read_summary, group, tid.bytes, p, -1) for p in (0, 1)]
    assert [(x.state_epoch, x.start_offset) for x in summaries] == [(0, -1)] * 2


def test_delete_groups_of_a_share_group_whose_topic_was_deleted(broker_factory: Any) -> None:
    """The initialized topic is deleted after the last member left: DeleteGroups succeeds at once (the state went
    with the topic) rather than waiting on the share coordinator's refusals."""
    import time

    from confluent_kafka.admin import AdminClient

    broker = start(broker_factory)
    topic, group = f"share-{uuid.uuid4().hex[:6]}", "sg-topic-gone"
    create_topic(broker.bootstrap, topic, 1)
    Heartbeat = request_class(ApiKey.SHARE_GROUP_HEARTBEAT)
    with socket.create_connection(("127.0.0.1", broker.port), timeout=30) as s:
        find = request_class(ApiKey.FIND_COORDINATOR)[3](key=group, key_type=0)
        wait_until(lambda: roundtrip(s, find, 0).error_code == 0, 30, "the group coordinator")
        epoch = [0]

        def beat() -> bool:
            resp = roundtrip(s, Heartbeat[1](group_id=group, member_id="m1", member_epoch=epoch[0],
                                             subscribed_topic_names=[topic] if epoch[0] == 0 else None), 1)
            assert resp.error_code == 0, resp
            epoch[0] = resp.member_epoch
            return settled(broker, group, 1)
        wait_until(beat, 30, "the partition's state initialized")
        assert roundtrip(s, Heartbeat[1](group_id=group, member_id="m1", member_epoch=-1), 2).error_code == 0
        admin = AdminClient({"bootstrap.servers": broker.bootstrap})
        admin.delete_topics([topic], operation_timeout=10)[topic].result(15)
        wait_until(lambda: broker.server.metadata_cache.topic_id(topic) is None, 15, "the topic to go")
        started = time.monotonic()
        deleted = roundtrip(s, request_class(ApiKey.DELETE_GROUPS)[2](groups_names=[group]), 3)
    assert [r.error_code for r in deleted.results] == [0]
    assert time.monotonic() - started < 3


def test_an_admin_starts_a_share_group_no_consumer_joined_yet_at_an_offset(broker_factory: Any, tmp_path: Any) -> None:
    """Kafka 4.2+: AlterShareGroupOffsets on a share group that does not exist creates it, empty, with the
    partition's state at the start offset given (franz-go's TestShareGroupOffsetsAdmin does this); the group and
    its state outlive a restart, and the group's first consumer (confluent-kafka's ShareConsumer) starts there."""
    broker = start(broker_factory, data_dir=tmp_path / "b")
    topic, group = f"share-{uuid.uuid4().hex[:6]}", "sg-admin-first"
    create_topic(broker.bootstrap, topic, 1)
    produce(broker.bootstrap, topic, 10, 1)
    G = DESCRIBE.DescribeShareGroupOffsetsRequestGroup

    def all_offsets(s: socket.socket) -> list[tuple[str, int, int, int]]:
        resp = roundtrip(s, DESCRIBE[1](groups=[G(group_id=group, topics=None)]), 5)
        assert resp.groups[0].error_code == 0, resp
        return [(t.topic_name, p.partition_index, p.start_offset, p.error_code) for t in resp.groups[0].topics
                for p in t.partitions]
    with socket.create_connection(("127.0.0.1", broker.port), timeout=30) as s:
        find = request_class(ApiKey.FIND_COORDINATOR)[3](key=group, key_type=0)
        wait_until(lambda: roundtrip(s, find, 0).error_code == 0, 30, "the group coordinator")
        before = all_offsets(s)  # no group yet: no error, nothing listed
        altered = alter(s, group, topic, 6)
        listed = roundtrip(s, request_class(ApiKey.LIST_GROUPS)[5](states_filter=[], types_filter=["share"]), 6)
        named, every = describe(s, group, topic), all_offsets(s)
    assert before == []
    assert altered.error_code == 0
    assert [(p.partition_index, p.error_code) for t in altered.responses for p in t.partitions] == [
        (0, 0), (3, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)]
    assert [(g.group_id, g.group_state, g.group_type) for g in listed.groups] == [(group, "Empty", "share")]
    assert named == [(0, 6, 4, 0)] and every == [(topic, 0, 6, 0)]

    broker.stop()
    broker = start(broker_factory, data_dir=tmp_path / "b")
    with socket.create_connection(("127.0.0.1", broker.port), timeout=30) as s:
        find = request_class(ApiKey.FIND_COORDINATOR)[3](key=group, key_type=0)
        wait_until(lambda: roundtrip(s, find, 0).error_code == 0, 30, "the group coordinator")
        assert all_offsets(s) == [(topic, 0, 6, 0)]
    replayed = broker.server.group_coordinator.coordinator.share_groups[group]
    assert (replayed.group_epoch, replayed.assignment_epoch) == (1, 1)  # Kafka 4.4's epochs for such a group
    seen: list[int] = []
    consumer = share_consumer(broker.bootstrap, group, topic)
    try:
        poll_until(consumer, lambda: len(seen) >= 4, 30, lambda m: seen.append(m.offset()))
    finally:
        consumer.close()
    assert seen == [6, 7, 8, 9]

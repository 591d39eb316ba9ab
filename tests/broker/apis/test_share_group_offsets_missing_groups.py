"""The share-group offset admin APIs on groups that do not exist, or are not share groups, as Kafka 4.2-4.4 answer
them (read off a real Kafka 4.4 node): AlterShareGroupOffsets creates the group, DescribeShareGroupOffsets answers
from the share-partition state alone (no error), DeleteShareGroupOffsets needs the group. Over a real socket with
our codec (no stock Python client speaks these APIs)."""

from __future__ import annotations

import uuid
from typing import Any

from confluent_kafka import Producer

from protocol import ApiKey, request_class
from protocol.errors import ErrorCode

from .group_support import Member, coordinator_ready
from .share_support import topic_id
from .support import Brokers

ALTER = request_class(ApiKey.ALTER_SHARE_GROUP_OFFSETS)
DESCRIBE = request_class(ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS)
DELETE = request_class(ApiKey.DELETE_SHARE_GROUP_OFFSETS)
SG_DESCRIBE = request_class(ApiKey.SHARE_GROUP_DESCRIBE)
SG_HEARTBEAT = request_class(ApiKey.SHARE_GROUP_HEARTBEAT)
ZERO = uuid.UUID(int=0)


def alter(b: Brokers, group: str, topics: dict[str, list[tuple[int, int]]]) -> Any:
    T = ALTER.AlterShareGroupOffsetsRequestTopic
    return b.call(ALTER[0](group_id=group, topics=[T(topic_name=name, partitions=[
        T.AlterShareGroupOffsetsRequestPartition(partition_index=p, start_offset=o) for p, o in rows])
        for name, rows in topics.items()]))


def describe(b: Brokers, group: str, topics: dict[str, list[int]] | None) -> Any:
    G = DESCRIBE.DescribeShareGroupOffsetsRequestGroup
    asked = None if topics is None else [G.DescribeShareGroupOffsetsRequestTopic(topic_name=t, partitions=ps)
                                         for t, ps in topics.items()]
    [group_result] = b.call(DESCRIBE[1](groups=[G(group_id=group, topics=asked)])).groups
    return group_result


def rows(group_result: Any) -> list[tuple[str, uuid.UUID, int, int, int, int, int]]:
    return [(t.topic_name, t.topic_id or ZERO, p.partition_index, p.start_offset, p.leader_epoch, p.lag, p.error_code)
            for t in group_result.topics for p in t.partitions]


def share_group_state(b: Brokers, group: str) -> tuple[int, str, int]:
    [g] = b.call(SG_DESCRIBE[1](group_ids=[group], include_authorized_operations=False)).groups
    return g.error_code, g.group_state, g.group_epoch


def test_describe_answers_a_missing_group_and_an_unknown_topic_with_no_error(brokers: Brokers) -> None:
    b = brokers
    topic = b.topic("sgo-missing-describe", partitions=2)
    coordinator_ready(b, b.single.port, "sgo-nobody")
    named = describe(b, "sgo-nobody", {topic: [1], "sgo-no-such-topic": [0]})
    assert named.error_code == ErrorCode.NONE
    assert rows(named) == [(topic, topic_id(b, topic), 1, -1, 0, -1, 0), ("sgo-no-such-topic", ZERO, 0, -1, 0, -1, 0)]
    every = describe(b, "sgo-nobody", None)
    assert (every.error_code, every.topics) == (ErrorCode.NONE, [])
    # A classic group's id has no share-partition state either.
    classic = Member.join(b, "sgo-classic-describe").group
    every = describe(b, classic, None)
    assert (every.error_code, every.topics) == (ErrorCode.NONE, [])


def test_alter_creates_the_missing_group_empty_unless_nothing_is_initialized(brokers: Brokers) -> None:
    b = brokers
    topic = b.topic("sgo-missing-alter", partitions=2)
    for group in ("sgo-made", "sgo-not-made"):
        coordinator_ready(b, b.single.port, group)
    only_unknown = alter(b, "sgo-not-made", {"sgo-no-such-topic": [(0, 1)]})
    assert only_unknown.error_code == ErrorCode.NONE
    assert [(t.topic_name, t.topic_id or ZERO, p.error_code, p.error_message) for t in only_unknown.responses
            for p in t.partitions] == [("sgo-no-such-topic", ZERO, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                                        "This server does not host this topic-partition.")]
    assert share_group_state(b, "sgo-not-made")[0] == ErrorCode.GROUP_ID_NOT_FOUND

    made = alter(b, "sgo-made", {topic: [(1, 0), (7, 0)]})
    assert made.error_code == ErrorCode.NONE
    assert [(t.topic_id, p.partition_index, p.error_code) for t in made.responses for p in t.partitions] == [
        (topic_id(b, topic), 1, 0), (topic_id(b, topic), 7, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)]
    assert share_group_state(b, "sgo-made") == (ErrorCode.NONE, "Empty", 1)  # Kafka 4.4: epoch 1
    assert rows(describe(b, "sgo-made", None)) == [(topic, topic_id(b, topic), 1, 0, 0, 0, 0)]


def test_delete_needs_the_group_and_a_topic_with_state(brokers: Brokers) -> None:
    b = brokers
    topic = b.topic("sgo-missing-delete", partitions=1)
    coordinator_ready(b, b.single.port, "sgo-del-nobody")
    missing = b.call(DELETE[0](group_id="sgo-del-nobody", topics=[
        DELETE.DeleteShareGroupOffsetsRequestTopic(topic_name=topic)]))
    assert (missing.error_code, missing.error_message, missing.responses) == (
        ErrorCode.GROUP_ID_NOT_FOUND, "Group sgo-del-nobody not found.", [])
    coordinator_ready(b, b.single.port, "sgo-del-made")
    assert alter(b, "sgo-del-made", {topic: [(0, 0)]}).error_code == ErrorCode.NONE
    T = DELETE.DeleteShareGroupOffsetsRequestTopic
    first = b.call(DELETE[0](group_id="sgo-del-made", topics=[T(topic_name=topic)]))
    again = b.call(DELETE[0](group_id="sgo-del-made", topics=[T(topic_name=topic)]))
    assert [(t.topic_id, t.error_code) for t in first.responses] == [(topic_id(b, topic), ErrorCode.NONE)]
    # No state left: UNKNOWN_TOPIC_OR_PARTITION, and no topic id (Kafka 4.4 answers none here).
    assert [(t.topic_id or ZERO, t.error_code, t.error_message) for t in again.responses] == [
        (ZERO, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "There is no offset information to delete.")]
    # The group stays, empty: the state went, not the group.
    assert share_group_state(b, "sgo-del-made") == (ErrorCode.NONE, "Empty", 1)


def test_describe_answers_an_empty_group_id_as_kafka_4_4(brokers: Brokers) -> None:
    # Kafka 4.4 (read off a running node) refuses no empty id: all topics answer nothing, no error; named topics
    # fail in its share-state read and come back as an unexpected error.
    b = brokers
    topic = b.topic("sgo-empty-id", partitions=1)
    every = describe(b, "", None)
    assert (every.group_id, every.error_code, every.topics) == ("", ErrorCode.NONE, [])
    named = describe(b, "", {topic: [0]})
    assert (named.error_code, named.error_message, named.topics) == (
        ErrorCode.UNKNOWN_SERVER_ERROR, "The server experienced an unexpected error when processing the request.", [])


def test_a_start_offset_above_the_high_watermark_has_negative_lag(brokers: Brokers) -> None:
    b = brokers
    topic = b.topic("sgo-above-hw", partitions=1)
    producer = Producer({"bootstrap.servers": b.single.bootstrap})
    for _ in range(5):
        producer.produce(topic, b"v", partition=0)
    assert producer.flush(15) == 0
    coordinator_ready(b, b.single.port, "sgo-above")
    assert alter(b, "sgo-above", {topic: [(0, 100)]}).error_code == ErrorCode.NONE
    # High watermark 5, start 100: Kafka 4.4 answers lag -95 (the difference as it is).
    assert rows(describe(b, "sgo-above", None)) == [(topic, topic_id(b, topic), 0, 100, 0, -95, 0)]


def test_the_last_member_leaving_moves_the_assignment_epoch_with_the_group_epoch(brokers: Brokers) -> None:
    # Kafka 4.4: a member joining a new group makes it epoch 1/1; when it leaves, the group epoch becomes 2 and,
    # nobody being left to assign to, so does the assignment epoch (not on the next heartbeat: there is none).
    b = brokers
    topic = b.topic("sgo-leave", partitions=1)
    coordinator_ready(b, b.single.port, "sgo-leaver")
    joined = b.call(SG_HEARTBEAT[1](group_id="sgo-leaver", member_id="m1", member_epoch=0,
                                    subscribed_topic_names=[topic]))
    assert (joined.error_code, joined.member_epoch) == (ErrorCode.NONE, 1)
    left = b.call(SG_HEARTBEAT[1](group_id="sgo-leaver", member_id="m1", member_epoch=-1))
    assert left.error_code == ErrorCode.NONE
    [g] = b.call(SG_DESCRIBE[1](group_ids=["sgo-leaver"], include_authorized_operations=False)).groups
    assert (g.group_state, g.group_epoch, g.assignment_epoch, g.members) == ("Empty", 2, 2, [])

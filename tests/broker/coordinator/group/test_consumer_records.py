"""The KIP-848 consumer group records of `__consumer_offsets`: Kafka 3.9's byte layouts (keys 3-8, flexible
version-0 values) and their replay into groups, tombstones included."""

from __future__ import annotations

import uuid

import pytest

from broker.coordinator.group.consumer_group import ConsumerGroupMember, MemberState
from broker.coordinator.group.consumer_records import (
    ConsumerGroupReplay,
    current_assignment_record,
    decode_consumer_key,
    group_epoch_record,
    member_metadata_record,
    member_tombstones,
    partition_metadata_record,
    target_epoch_record,
    target_member_record,
)
from broker.coordinator.group.schema import SchemaError, decode_key

T1 = uuid.UUID("00000000-0000-0000-0000-000000000001")


def test_the_group_epoch_record_bytes() -> None:
    key, value = group_epoch_record("g", 5)
    assert key == b"\x00\x03\x00\x01g"
    assert value == b"\x00\x00" + b"\x00\x00\x00\x05" + b"\x00"  # version 0, epoch, no tagged fields
    assert decode_key(key) is None  # not a classic key: the classic loader leaves it to ours
    assert decode_consumer_key(key) == (3, "g", None)


def test_member_keyed_records_and_a_current_assignment_value() -> None:
    member = ConsumerGroupMember("m", member_epoch=3, previous_member_epoch=2, state=MemberState.UNREVOKED_PARTITIONS,
                                 assigned={T1: frozenset({1, 0})}, pending_revocation={T1: frozenset({2})})
    key, value = current_assignment_record("g", member)
    assert key == b"\x00\x08\x00\x01g\x00\x01m" and decode_consumer_key(key) == (8, "g", "m")

    def partitions(*ps: int) -> bytes:
        """A compact array of one topic: its id, its partitions, no tagged fields."""
        return b"\x02" + T1.bytes + bytes([len(ps) + 1]) + b"".join(p.to_bytes(4, "big") for p in ps) + b"\x00"

    assert value == (b"\x00\x00" + (3).to_bytes(4, "big") + (2).to_bytes(4, "big") + b"\x01"
                     + partitions(0, 1) + partitions(2) + b"\x00")


def test_replay_builds_the_group_and_tombstones_remove_it() -> None:
    member = ConsumerGroupMember("m", instance_id="i", client_id="c", client_host="/h", rebalance_timeout_ms=300,
                                 subscribed_topic_names=("t",), server_assignor="range", member_epoch=4,
                                 previous_member_epoch=3, assigned={T1: frozenset({0, 1})})
    records = [group_epoch_record("g", 4), partition_metadata_record("g", {"t": (T1, 2)}),
               member_metadata_record("g", member), target_member_record("g", "m", {T1: frozenset({0, 1})}),
               target_epoch_record("g", 4), current_assignment_record("g", member)]
    replay = ConsumerGroupReplay()
    for key, value in records:
        decoded = decode_consumer_key(key)
        assert decoded is not None
        replay.replay(decoded, value)
    group = replay.build()["g"]
    assert (group.group_epoch, group.assignment_epoch) == (4, 4)
    assert group.members == {"m": member} and group.static_members == {"i": "m"}
    assert group.subscription_metadata == {"t": (T1, 2)} and group.partition_epoch(T1, 1) == 4
    for key, value in member_tombstones("g", "m"):
        decoded = decode_consumer_key(key)
        assert decoded is not None
        replay.replay(decoded, value)
    assert replay.build()["g"].members == {}
    replay.replay((3, "g", None), None)
    assert replay.build() == {}


def test_malformed_values_are_schema_errors() -> None:
    replay = ConsumerGroupReplay()
    with pytest.raises(SchemaError):
        replay.replay((3, "g", None), b"\x00\x00\x00")
    with pytest.raises(SchemaError):
        replay.replay((8, "g", "m"), b"\x00\x01")

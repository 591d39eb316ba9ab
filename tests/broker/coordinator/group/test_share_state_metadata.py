"""Kafka 4.1's ShareGroupStatePartitionMetadata record (key 15): its bytes, and its replay with a share group."""

from __future__ import annotations

import struct
import uuid

from broker.coordinator.group.share_records import ShareGroupReplay, decode_share_key, group_epoch_record
from broker.coordinator.group.share_state_metadata import (
    InitValue,
    StatePartitionMetadata,
    decode_state_partition_metadata,
    state_partition_metadata_record,
    state_partition_metadata_tombstone,
)

T1, T2, T3 = uuid.UUID(int=1), uuid.UUID(int=2), uuid.UUID(int=3)


def test_the_record_is_kafkas_layout_and_decodes_back() -> None:
    md = StatePartitionMetadata(initializing={T1: InitValue("a", frozenset({2}), 7)},
                                initialized={T2: InitValue("b", frozenset({0, 1}), 9)}, deleting={T3: "c"})
    key, value = state_partition_metadata_record("g", md)
    assert key == struct.pack(">hh", 15, 1) + b"g"
    assert decode_share_key(key) == (15, "g", None)
    assert value is not None
    # version 0, then InitializingTopics: one topic (compact array length 2), its id, name "a", partitions [2],
    # CreateTimestamp 7 and empty tagged fields.
    assert value[:2] == b"\x00\x00" and value[2] == 2 and value[3:19] == T1.bytes
    assert value[19:21] == b"\x02a" and value[21:26] == b"\x02\x00\x00\x00\x02"
    assert value[26:34] == struct.pack(">q", 7) and value[34] == 0
    assert decode_state_partition_metadata(value) == md


def test_replay_restores_it_with_the_group_and_a_tombstone_clears_it() -> None:
    md = StatePartitionMetadata(initialized={T2: InitValue("b", frozenset({0, 1}), 9)})
    replay = ShareGroupReplay()
    for key, value in [group_epoch_record("g", 3), state_partition_metadata_record("g", md)]:
        replay.replay(decode_share_key(key), value)  # type: ignore[arg-type]
    assert replay.build()["g"].state_metadata == md
    key, value = state_partition_metadata_tombstone("g")
    replay.replay(decode_share_key(key), value)  # type: ignore[arg-type]
    assert replay.build()["g"].state_metadata == StatePartitionMetadata()


def test_a_group_with_only_state_metadata_replays_as_an_empty_group_until_its_epoch_tombstone() -> None:
    # AlterShareGroupOffsets on a group no member ever joined writes this record alone (Kafka 4.2+): its replay
    # is the group, empty at epoch 0.
    md = StatePartitionMetadata(initialized={T1: InitValue("a", frozenset({0}), 5)})
    replay = ShareGroupReplay()
    key, value = state_partition_metadata_record("admin-made", md)
    replay.replay(decode_share_key(key), value)  # type: ignore[arg-type]
    group = replay.build()["admin-made"]
    assert (group.group_epoch, group.assignment_epoch, group.members, group.state) == (0, 0, {}, "Empty")
    assert group.state_metadata == md
    # DeleteGroups writes the state tombstone, then the epoch's: nothing is left.
    tombstones = [state_partition_metadata_tombstone("admin-made"), (group_epoch_record("admin-made", 0)[0], None)]
    for key, value in tombstones:
        replay.replay(decode_share_key(key), value)  # type: ignore[arg-type]
    assert "admin-made" not in replay.build()

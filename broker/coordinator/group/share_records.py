"""The records of KIP-932 share groups in `__consumer_offsets`, byte-compatible with Kafka's group-coordinator
message specs (Kafka 4.0's layouts), and their replay while a partition loads.

Contract:
- Keys (non-flexible: an int16 version, then int16-length strings): 9 ShareGroupPartitionMetadataKey (group),
  10 ShareGroupMemberMetadataKey (group, member), 11 ShareGroupMetadataKey (group), 12
  ShareGroupTargetAssignmentMetadataKey (group), 13 ShareGroupTargetAssignmentMemberKey (group, member), 14
  ShareGroupCurrentMemberAssignmentKey (group, member), 15 ShareGroupStatePartitionMetadataKey (group; Kafka 4.1,
  share_state_metadata.py). `decode_share_key` gives (key version, group id,
  member id or None), or None for other key versions.
- Values are version 0, flexible: the subscribed topics' metadata (id, name, partition count; no racks); a
  member's rack, client id and host and subscribed topic names; the group epoch; the target assignment epoch; a
  member's target assignment; a member's current assignment (epoch, previous epoch, state 0, partitions). A None
  value is a tombstone. Unknown tagged fields (Kafka 4.1's additions) are skipped when read.
- `ShareGroupReplay` replays them per group id in log order; `build()` returns the share groups (those with a
  group epoch record), as Kafka's replay does. Malformed records raise `SchemaError`.
The value codec is consumer_records.py's (the same flexible layout rules).
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field

from broker.coordinator.group import consumer_records
from broker.coordinator.group.consumer_records import _Flex, _In, _key, _value, partition_metadata
from broker.coordinator.group.schema import SchemaError
from broker.coordinator.group.share_group import Assignment, ShareGroup, ShareGroupMember
from broker.coordinator.group.share_state_metadata import (
    STATE_PARTITION_METADATA,
    StatePartitionMetadata,
    decode_state_partition_metadata,
)

Record = tuple[bytes, bytes | None]

PARTITION_METADATA, MEMBER_METADATA, GROUP_EPOCH, TARGET_EPOCH, TARGET_MEMBER, CURRENT_ASSIGNMENT = range(9, 15)
_MEMBER_KEYS = frozenset({MEMBER_METADATA, TARGET_MEMBER, CURRENT_ASSIGNMENT})


def group_epoch_record(group_id: str, epoch: int) -> Record:
    return consumer_records.group_epoch_record(group_id, epoch, GROUP_EPOCH)


def partition_metadata_record(group_id: str, metadata: Mapping[str, tuple[uuid.UUID, int]]) -> Record:
    return consumer_records.partition_metadata_record(group_id, metadata, PARTITION_METADATA)


def member_metadata_record(group_id: str, m: ShareGroupMember) -> Record:
    w = _Flex()
    w.string(m.rack_id)
    w.string(m.client_id)
    w.string(m.client_host)
    w.length(len(m.subscribed_topic_names))
    for name in m.subscribed_topic_names:
        w.string(name)
    return _key(MEMBER_METADATA, group_id, m.member_id), w.value()


def target_epoch_record(group_id: str, epoch: int) -> Record:
    return consumer_records.target_epoch_record(group_id, epoch, TARGET_EPOCH)


def target_member_record(group_id: str, member_id: str, assignment: Assignment) -> Record:
    return consumer_records.target_member_record(group_id, member_id, assignment, TARGET_MEMBER)


def current_assignment_record(group_id: str, m: ShareGroupMember) -> Record:
    w = _Flex()
    w.int32(m.member_epoch)
    w.int32(m.previous_member_epoch)
    w.int8(0)  # MemberState STABLE: share members never revoke
    w.partitions(m.assigned)
    return _key(CURRENT_ASSIGNMENT, group_id, m.member_id), w.value()


def member_tombstones(group_id: str, member_id: str) -> list[Record]:
    """A removed member: its current assignment, target assignment and metadata (Kafka's order)."""
    return [(_key(CURRENT_ASSIGNMENT, group_id, member_id), None), (_key(TARGET_MEMBER, group_id, member_id), None),
            (_key(MEMBER_METADATA, group_id, member_id), None)]


def decode_share_key(data: bytes | memoryview) -> tuple[int, str, str | None] | None:
    r = _In(bytes(data))
    version = r.int16()
    if not PARTITION_METADATA <= version <= STATE_PARTITION_METADATA:
        return None
    group_id = r.short_string()
    member_id = r.short_string() if version in _MEMBER_KEYS else None
    if r.pos != len(r.data):
        raise SchemaError(f"trailing bytes after key version {version}")
    return version, group_id, member_id


@dataclass
class _Loading:
    epoch: int | None = None
    metadata: dict[str, tuple[uuid.UUID, int]] = field(default_factory=dict)
    target_epoch: int = 0
    members: dict[str, ShareGroupMember] = field(default_factory=dict)
    targets: dict[str, Assignment] = field(default_factory=dict)
    state_metadata: StatePartitionMetadata | None = None


class ShareGroupReplay:
    """Share group records of one partition, replayed in log order."""

    def __init__(self) -> None:
        self.groups: dict[str, _Loading] = {}

    def replay(self, key: tuple[int, str, str | None], raw: bytes | memoryview | None) -> None:
        version, group_id, member_id = key
        g = self.groups.setdefault(group_id, _Loading())
        if version == GROUP_EPOCH:
            if raw is None:
                del self.groups[group_id]
                return
            g.epoch = _value(raw).int32()
        elif version == PARTITION_METADATA:
            g.metadata = partition_metadata(raw)
        elif version == STATE_PARTITION_METADATA:
            g.state_metadata = decode_state_partition_metadata(raw) if raw is not None else None
        elif version == TARGET_EPOCH:
            g.target_epoch = _value(raw).int32() if raw is not None else 0
        elif version == TARGET_MEMBER:
            assert member_id is not None
            if raw is None:
                g.targets.pop(member_id, None)
            else:
                g.targets[member_id] = _value(raw).partitions()
        else:
            assert member_id is not None
            self._replay_member(g, version, member_id, raw)

    @staticmethod
    def _replay_member(g: _Loading, version: int, member_id: str, raw: bytes | memoryview | None) -> None:
        member = g.members.get(member_id) or ShareGroupMember(member_id)
        if version == MEMBER_METADATA:
            if raw is None:
                g.members.pop(member_id, None)
                return
            r = _value(raw)
            member.rack_id, member.client_id, member.client_host = r.string(), r.string() or "", r.string() or ""
            member.subscribed_topic_names = tuple(r.string() or "" for _ in range(r.length()))
        elif raw is None:
            member.member_epoch = member.previous_member_epoch = 0
            member.assigned = {}
        else:
            r = _value(raw)
            member.member_epoch, member.previous_member_epoch = r.int32(), r.int32()
            r.int8()
            member.assigned = r.partitions()
        g.members[member_id] = member

    def build(self) -> dict[str, ShareGroup]:
        out = {}
        for group_id, g in self.groups.items():
            # A group with share-partition state but no epoch record is one AlterShareGroupOffsets created
            # before any member joined: it exists, empty at epoch 0, as Kafka 4.2+ replays it.
            if g.epoch is None and g.state_metadata is None:
                continue
            group = ShareGroup(group_id, group_epoch=g.epoch or 0, assignment_epoch=g.target_epoch,
                               subscription_metadata=dict(g.metadata))
            group.members = dict(g.members)
            group.state_metadata = g.state_metadata or StatePartitionMetadata()
            group.target_assignment = {m: a for m, a in g.targets.items() if m in group.members}
            out[group_id] = group
        return out

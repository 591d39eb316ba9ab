"""The records of KIP-848 consumer groups in `__consumer_offsets`, byte-compatible with Kafka 3.9's
group-coordinator message specs, and their replay while a partition loads.

Contract:
- Keys (non-flexible: an int16 version, then int16-length strings): 3 ConsumerGroupMetadataKey (group),
  4 ConsumerGroupPartitionMetadataKey (group), 5 ConsumerGroupMemberMetadataKey (group, member),
  6 ConsumerGroupTargetAssignmentMetadataKey (group), 7 ConsumerGroupTargetAssignmentMemberKey (group,
  member), 8 ConsumerGroupCurrentMemberAssignmentKey (group, member). `decode_consumer_key` gives
  (key version, group id, member id or None), or None for other key versions.
- Values are version 0, flexible (compact strings and arrays, tagged fields): the group epoch; the
  subscribed topics' metadata (id, name, partition count; no racks); a member's subscription (instance,
  rack, client id/host, topic names, regex, rebalance timeout, server assignor, and for a member using the
  classic protocol its ClassicMemberMetadata as tagged field 0: session timeout, JoinGroup protocols); the target
  assignment
  epoch; a member's target assignment; a member's current assignment (epoch, previous epoch, state as Kafka's
  MemberState byte, assigned partitions, partitions pending revocation). A None value is a tombstone.
- `ConsumerGroupRecords` builds these for a change of a `ConsumerGroup`; `ConsumerGroupReplay` replays them
  per group id (tombstones included) and `build()` returns the groups, as Kafka's replay does.
- Input read back from a log is untrusted: malformed records raise `SchemaError`.
"""

from __future__ import annotations

import struct
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field

from broker.coordinator.group.consumer_group import (
    Assignment,
    ClassicMemberMetadata,
    ConsumerGroup,
    ConsumerGroupMember,
    MemberState,
)
from broker.coordinator.group.schema import SchemaError
from protocol.codec import uvarint_bytes

Record = tuple[bytes, bytes | None]

GROUP_EPOCH, PARTITION_METADATA, MEMBER_METADATA, TARGET_EPOCH, TARGET_MEMBER, CURRENT_ASSIGNMENT = range(3, 9)
_MEMBER_KEYS = frozenset({MEMBER_METADATA, TARGET_MEMBER, CURRENT_ASSIGNMENT})
# Kafka's MemberState bytes
_STATE_BYTES = {MemberState.STABLE: 0, MemberState.UNREVOKED_PARTITIONS: 1, MemberState.UNRELEASED_PARTITIONS: 2}
_STATES = {v: k for k, v in _STATE_BYTES.items()}

_I16, _I32 = struct.Struct(">h"), struct.Struct(">i")


# ---------------------------------------------------------------- encoding
def _string(s: str) -> bytes:
    raw = s.encode("utf-8")
    if len(raw) > 0x7FFF:
        raise SchemaError(f"string of {len(raw)} bytes does not fit an int16 length")
    return _I16.pack(len(raw)) + raw


def _key(version: int, group_id: str, member_id: str | None = None) -> bytes:
    return _I16.pack(version) + _string(group_id) + (_string(member_id) if member_id is not None else b"")


class _Flex:
    """A flexible-version value writer (compact strings and arrays, empty tagged fields)."""

    def __init__(self) -> None:
        self.parts: list[bytes] = [_I16.pack(0)]

    def int8(self, v: int) -> None:
        self.parts.append(struct.pack(">b", v))

    def int32(self, v: int) -> None:
        self.parts.append(_I32.pack(v))

    def string(self, v: str | None) -> None:
        if v is None:
            self.parts.append(uvarint_bytes(0))
            return
        raw = v.encode("utf-8")
        self.parts.append(uvarint_bytes(len(raw) + 1) + raw)

    def length(self, n: int) -> None:
        self.parts.append(uvarint_bytes(n + 1))

    def uuid(self, v: uuid.UUID) -> None:
        self.parts.append(v.bytes)

    def tags(self) -> None:
        self.parts.append(b"\x00")

    def bytes_(self, v: bytes) -> None:
        self.parts.append(uvarint_bytes(len(v) + 1) + v)

    def partitions(self, assignment: Assignment) -> None:
        items = sorted(assignment.items(), key=lambda item: str(item[0]))
        self.length(len(items))
        for topic_id, parts in items:
            self.uuid(topic_id)
            self.length(len(parts))
            for p in sorted(parts):
                self.int32(p)
            self.tags()

    def value(self) -> bytes:
        self.tags()
        return b"".join(self.parts)


# The builders below also write share groups' records (share_records.py), whose layouts are the same under
# other key versions: `key` is the record's key version.
def group_epoch_record(group_id: str, epoch: int, key: int = GROUP_EPOCH) -> Record:
    w = _Flex()
    w.int32(epoch)
    return _key(key, group_id), w.value()


def partition_metadata_record(group_id: str, metadata: Mapping[str, tuple[uuid.UUID, int]],
                              key: int = PARTITION_METADATA) -> Record:
    w = _Flex()
    w.length(len(metadata))
    for name, (topic_id, count) in sorted(metadata.items()):
        w.uuid(topic_id)
        w.string(name)
        w.int32(count)
        w.length(0)  # no rack metadata
        w.tags()
    return _key(key, group_id), w.value()


def member_metadata_record(group_id: str, m: ConsumerGroupMember) -> Record:
    w = _Flex()
    w.string(m.instance_id)
    w.string(m.rack_id)
    w.string(m.client_id)
    w.string(m.client_host)
    w.length(len(m.subscribed_topic_names))
    for name in m.subscribed_topic_names:
        w.string(name)
    w.string(m.subscribed_topic_regex)
    w.int32(m.rebalance_timeout_ms)
    w.string(m.server_assignor)
    if m.classic is None:
        return _key(MEMBER_METADATA, group_id, m.member_id), w.value()
    # ClassicMemberMetadata is tagged field 0, a nullable struct: a presence byte, then the struct.
    c = _Flex()
    c.parts = [b"\x01"]
    c.int32(m.classic.session_timeout_ms)
    c.length(len(m.classic.supported_protocols))
    for name, metadata in m.classic.supported_protocols:
        c.string(name)
        c.bytes_(metadata)
        c.tags()
    c.tags()
    body = b"".join(c.parts)
    w.parts.append(uvarint_bytes(1) + uvarint_bytes(0) + uvarint_bytes(len(body)) + body)
    return _key(MEMBER_METADATA, group_id, m.member_id), b"".join(w.parts)


def target_epoch_record(group_id: str, epoch: int, key: int = TARGET_EPOCH) -> Record:
    w = _Flex()
    w.int32(epoch)
    return _key(key, group_id), w.value()


def target_member_record(group_id: str, member_id: str, assignment: Assignment, key: int = TARGET_MEMBER) -> Record:
    w = _Flex()
    w.partitions(assignment)
    return _key(key, group_id, member_id), w.value()


def current_assignment_record(group_id: str, m: ConsumerGroupMember) -> Record:
    w = _Flex()
    w.int32(m.member_epoch)
    w.int32(m.previous_member_epoch)
    w.int8(_STATE_BYTES[m.state])
    w.partitions(m.assigned)
    w.partitions(m.pending_revocation)
    return _key(CURRENT_ASSIGNMENT, group_id, m.member_id), w.value()


def member_tombstones(group_id: str, member_id: str) -> list[Record]:
    """A removed member: its current assignment, target assignment and subscription (Kafka's order)."""
    return [(_key(CURRENT_ASSIGNMENT, group_id, member_id), None), (_key(TARGET_MEMBER, group_id, member_id), None),
            (_key(MEMBER_METADATA, group_id, member_id), None)]


def group_tombstones(group: ConsumerGroup) -> list[Record]:
    """Every record of a deleted consumer group."""
    out: list[Record] = []
    for member_id in group.members:
        out.extend(member_tombstones(group.group_id, member_id))
    out += [(_key(TARGET_EPOCH, group.group_id), None), (_key(PARTITION_METADATA, group.group_id), None),
            (_key(GROUP_EPOCH, group.group_id), None)]
    return out


# ---------------------------------------------------------------- decoding
class _In:
    def __init__(self, data: bytes, pos: int = 0) -> None:
        self.data, self.pos = data, pos

    def take(self, n: int) -> bytes:
        if n < 0 or self.pos + n > len(self.data):
            raise SchemaError(f"need {n} bytes at position {self.pos}, have {len(self.data) - self.pos}")
        chunk = self.data[self.pos:self.pos + n]
        self.pos += n
        return chunk

    def int8(self) -> int:
        return int(struct.unpack(">b", self.take(1))[0])

    def int16(self) -> int:
        return int(_I16.unpack(self.take(2))[0])

    def int32(self) -> int:
        return int(_I32.unpack(self.take(4))[0])

    def uvarint(self) -> int:
        value = 0
        for shift in range(0, 35, 7):
            byte = self.take(1)[0]
            value |= (byte & 0x7F) << shift
            if not byte & 0x80:
                return value
        raise SchemaError("unsigned varint longer than 5 bytes")

    def short_string(self) -> str:
        n = self.int16()
        try:
            return self.take(n).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise SchemaError(f"string is not UTF-8: {exc}") from None

    def string(self) -> str | None:
        n = self.uvarint() - 1
        if n < 0:
            return None
        try:
            return self.take(n).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise SchemaError(f"string is not UTF-8: {exc}") from None

    def length(self) -> int:
        n = self.uvarint() - 1
        if n < 0 or n > len(self.data) - self.pos:
            raise SchemaError(f"invalid array length {n}")
        return n

    def uuid(self) -> uuid.UUID:
        return uuid.UUID(bytes=self.take(16))

    def tags(self) -> dict[int, bytes]:
        out = {}
        for _ in range(self.uvarint()):
            tag = self.uvarint()
            out[tag] = self.take(self.uvarint())
        return out

    def bytes_(self) -> bytes:
        n = self.uvarint() - 1
        if n < 0:
            raise SchemaError("null bytes")
        return self.take(n)

    def partitions(self) -> dict[uuid.UUID, frozenset[int]]:
        out = {}
        for _ in range(self.length()):
            topic_id = self.uuid()
            out[topic_id] = frozenset(self.int32() for _ in range(self.length()))
            self.tags()
        return out


def decode_consumer_key(data: bytes | memoryview) -> tuple[int, str, str | None] | None:
    r = _In(bytes(data))
    version = r.int16()
    if not GROUP_EPOCH <= version <= CURRENT_ASSIGNMENT:
        return None
    group_id = r.short_string()
    member_id = r.short_string() if version in _MEMBER_KEYS else None
    if r.pos != len(r.data):
        raise SchemaError(f"trailing bytes after key version {version}")
    return version, group_id, member_id


def partition_metadata(raw: bytes | memoryview | None) -> dict[str, tuple[uuid.UUID, int]]:
    """A partition-metadata value (a consumer or share group's): topic name -> (topic id, partition count)."""
    metadata: dict[str, tuple[uuid.UUID, int]] = {}
    if raw is not None:
        r = _value(raw)
        for _ in range(r.length()):
            topic_id, name, count = r.uuid(), r.string() or "", r.int32()
            for _ in range(r.length()):  # partition racks, not used
                r.int32()
                for _ in range(r.length()):
                    r.string()
                r.tags()
            r.tags()
            metadata[name] = (topic_id, count)
    return metadata


def _value(data: bytes | memoryview) -> _In:
    r = _In(bytes(data))
    if r.int16() != 0:
        raise SchemaError("unknown consumer group value version")
    return r


@dataclass
class _Loading:
    epoch: int | None = None
    metadata: dict[str, tuple[uuid.UUID, int]] = field(default_factory=dict)
    target_epoch: int = 0
    members: dict[str, ConsumerGroupMember] = field(default_factory=dict)
    targets: dict[str, Assignment] = field(default_factory=dict)


class ConsumerGroupReplay:
    """Consumer group records of one partition, replayed in log order."""

    def __init__(self) -> None:
        self.groups: dict[str, _Loading] = {}

    def replay(self, key: tuple[int, str, str | None], raw: bytes | memoryview | None) -> None:
        version, group_id, member_id = key
        g = self.groups.setdefault(group_id, _Loading())
        if version == GROUP_EPOCH:
            if raw is None:
                del self.groups[group_id]
                return
            r = _value(raw)
            g.epoch = r.int32()
        elif version == PARTITION_METADATA:
            g.metadata = partition_metadata(raw)
        elif version == TARGET_EPOCH:
            g.target_epoch = _value(raw).int32() if raw is not None else 0
        else:
            assert member_id is not None
            self._replay_member(g, version, member_id, raw)

    @staticmethod
    def _replay_member(g: _Loading, version: int, member_id: str, raw: bytes | memoryview | None) -> None:
        if version == TARGET_MEMBER:
            if raw is None:
                g.targets.pop(member_id, None)
            else:
                g.targets[member_id] = _value(raw).partitions()
            return
        member = g.members.get(member_id) or ConsumerGroupMember(member_id)
        if version == MEMBER_METADATA:
            if raw is None:
                g.members.pop(member_id, None)
                return
            r = _value(raw)
            instance, rack, client_id, client_host = r.string(), r.string(), r.string() or "", r.string() or ""
            names = tuple(r.string() or "" for _ in range(r.length()))
            regex, rebalance_timeout, assignor = r.string(), r.int32(), r.string()
            classic = _classic_metadata(r.tags().get(0))
            g.members[member_id] = ConsumerGroupMember(
                member_id, instance, rack, client_id, client_host, rebalance_timeout, names, regex, assignor,
                member.member_epoch, member.previous_member_epoch, member.state, member.assigned,
                member.pending_revocation, classic)
        elif raw is None:
            if member_id in g.members:
                g.members[member_id] = ConsumerGroupMember(**{**_fields(member), "member_epoch": 0,
                                                             "previous_member_epoch": 0, "assigned": {},
                                                             "pending_revocation": {},
                                                             "state": MemberState.STABLE})
        else:
            r = _value(raw)
            epoch, previous, state = r.int32(), r.int32(), r.int8()
            assigned, revoking = r.partitions(), r.partitions()
            g.members[member_id] = ConsumerGroupMember(**{
                **_fields(member), "member_epoch": epoch, "previous_member_epoch": previous,
                "state": _STATES.get(state, MemberState.STABLE), "assigned": assigned,
                "pending_revocation": revoking})

    def build(self) -> dict[str, ConsumerGroup]:
        """The loaded groups (those with a group epoch record), their members indexed."""
        out = {}
        for group_id, g in self.groups.items():
            if g.epoch is None:
                continue
            group = ConsumerGroup(group_id, group_epoch=g.epoch, assignment_epoch=g.target_epoch,
                                  subscription_metadata=dict(g.metadata))
            for member in g.members.values():
                group.update_member(member)
            group.target_assignment = {m: a for m, a in g.targets.items() if m in group.members}
            out[group_id] = group
        return out


def _classic_metadata(raw: bytes | None) -> ClassicMemberMetadata | None:
    if raw is None:
        return None
    r = _In(raw)
    if r.int8() < 0:
        return None
    session_timeout = r.int32()
    protocols = []
    for _ in range(r.length()):
        name = r.string() or ""
        protocols.append((name, r.bytes_()))
        r.tags()
    r.tags()
    return ClassicMemberMetadata(session_timeout, tuple(protocols))


def _fields(member: ConsumerGroupMember) -> dict[str, object]:
    return {f: getattr(member, f) for f in ConsumerGroupMember.__dataclass_fields__}


_SUBSCRIPTION_FIELDS = ("instance_id", "rack_id", "client_id", "client_host", "rebalance_timeout_ms",
                        "subscribed_topic_names", "subscribed_topic_regex", "server_assignor", "classic")
_ASSIGNMENT_FIELDS = ("member_epoch", "previous_member_epoch", "state", "assigned", "pending_revocation")


def subscription_changes(group_id: str, before: ConsumerGroupMember | None, after: ConsumerGroupMember) -> list[Record]:
    """The member's subscription record if it is new or its subscription changed."""
    if before is None or any(getattr(before, f) != getattr(after, f) for f in _SUBSCRIPTION_FIELDS):
        return [member_metadata_record(group_id, after)]
    return []


def assignment_changes(group_id: str, before: ConsumerGroupMember | None, after: ConsumerGroupMember) -> list[Record]:
    """The member's current-assignment record if it is new or its epochs or partitions changed."""
    if before is None or any(getattr(before, f) != getattr(after, f) for f in _ASSIGNMENT_FIELDS):
        return [current_assignment_record(group_id, after)]
    return []


def target_records(group_id: str, epoch: int, before: Mapping[str, Assignment],
                   after: Mapping[str, Assignment]) -> list[Record]:
    """The changed members' target assignments, then the new target assignment epoch."""
    out = [target_member_record(group_id, m, a) for m, a in after.items() if before.get(m) != a]
    return [*out, target_epoch_record(group_id, epoch)]

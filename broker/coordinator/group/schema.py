"""Key and value formats of the records in `__consumer_offsets`, byte-compatible with Apache Kafka.

Contract (Kafka's group-coordinator message specs: OffsetCommitKey/Value, GroupMetadataKey/Value):
- Every key and every value starts with an int16 version.
- Key version 0 and 1: OffsetCommitKey (group, topic, partition). Key version 2: GroupMetadataKey (group).
  Higher key versions belong to coordinators we do not run (KIP-848 consumer groups, share groups,
  transactions); `decode_key` returns None for them so a loader can skip them.
- OffsetCommitValue versions 0-4: offset, leader_epoch (3+), metadata, commit_timestamp,
  expire_timestamp (1 only). We write version 3, or version 1 when an expire timestamp is set,
  as Kafka does.
- GroupMetadataValue versions 0-4: protocol_type, generation, protocol (nullable), leader (nullable),
  current_state_timestamp (2+), members[member_id, group_instance_id (3+), client_id, client_host,
  rebalance_timeout (1+), session_timeout, subscription, assignment]. We write version 3.
- Version 4 of both values is flexible (compact strings/bytes/arrays, tagged fields); we read it.
- A null value is a tombstone: the offset or group was deleted.
- Input read back from a log is untrusted: every length is checked against the bytes left before
  anything is allocated, and malformed input raises `SchemaError`.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

OFFSET_COMMIT_KEY_VERSION = 1
GROUP_METADATA_KEY_VERSION = 2
GROUP_METADATA_VALUE_VERSION = 3


def fits_int16_string(value: str | None) -> bool:
    """Whether a string fits these records' int16-length strings (None does: a nullable string). Flexible
    request versions carry longer strings than a record can hold, so the coordinator checks first."""
    return value is None or len(value) <= 0x7FFF // 3 or len(value.encode("utf-8")) <= 0x7FFF


class SchemaError(ValueError):
    """A key or value in __consumer_offsets could not be decoded."""


@dataclass(frozen=True, slots=True)
class OffsetCommitKey:
    group: str
    topic: str
    partition: int


@dataclass(frozen=True, slots=True)
class GroupMetadataKey:
    group: str


@dataclass(frozen=True, slots=True)
class OffsetCommitValue:
    offset: int
    leader_epoch: int
    metadata: str
    commit_timestamp: int
    expire_timestamp: int = -1


@dataclass(frozen=True, slots=True)
class MemberMetadataValue:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout: int
    session_timeout: int
    subscription: bytes
    assignment: bytes


@dataclass(frozen=True, slots=True)
class GroupMetadataValue:
    protocol_type: str
    generation: int
    protocol: str | None
    leader: str | None
    current_state_timestamp: int
    members: tuple[MemberMetadataValue, ...]


class _Reader:
    __slots__ = ("_data", "_pos", "_flexible")

    def __init__(self, data: bytes | memoryview, pos: int = 0, flexible: bool = False) -> None:
        self._data = data if isinstance(data, bytes) else bytes(data)
        self._pos = pos
        self._flexible = flexible

    def set_flexible(self, flexible: bool) -> None:
        self._flexible = flexible

    def _take(self, n: int) -> bytes:
        if n < 0 or self._pos + n > len(self._data):
            raise SchemaError(f"need {n} bytes at position {self._pos}, have {len(self._data) - self._pos}")
        chunk = self._data[self._pos:self._pos + n]
        self._pos += n
        return chunk

    def _unpack(self, fmt: struct.Struct) -> int:
        end = self._pos + fmt.size
        if end > len(self._data):
            raise SchemaError(f"need {fmt.size} bytes at position {self._pos}, "
                              f"have {len(self._data) - self._pos}")
        value: int = fmt.unpack_from(self._data, self._pos)[0]
        self._pos = end
        return value

    def int16(self) -> int:
        return self._unpack(_INT16)

    def int32(self) -> int:
        return self._unpack(_INT32)

    def int64(self) -> int:
        return self._unpack(_INT64)

    def uvarint(self) -> int:
        value = 0
        for shift in range(0, 35, 7):
            byte = self._take(1)[0]
            value |= (byte & 0x7F) << shift
            if not byte & 0x80:
                return value
        raise SchemaError("unsigned varint longer than 5 bytes")

    def _length(self, nullable: bool, wide: bool) -> int | None:
        if self._flexible:
            n = self.uvarint() - 1
        else:
            n = self.int32() if wide else self.int16()
        if n < 0:
            if n == -1 and nullable:
                return None
            raise SchemaError(f"invalid length {n} at position {self._pos}")
        return n

    def string(self) -> str:
        value = self.nullable_string()
        if value is None:
            raise SchemaError("null where a string is required")
        return value

    def nullable_string(self) -> str | None:
        n = self._length(nullable=True, wide=False)
        if n is None:
            return None
        try:
            return self._take(n).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise SchemaError(f"string is not UTF-8: {exc}") from None

    def bytes_(self) -> bytes:
        n = self._length(nullable=False, wide=True)
        return self._take(n or 0)

    def array_length(self) -> int:
        n = self._length(nullable=False, wide=True) or 0
        # Every element takes at least one byte, so a count beyond the bytes left is a lie.
        if n > len(self._data) - self._pos:
            raise SchemaError(f"array of {n} elements in {len(self._data) - self._pos} bytes")
        return n

    def tagged_fields(self) -> None:
        if not self._flexible:
            return
        for _ in range(self.uvarint()):
            self.uvarint()
            self._take(self.uvarint())

    def at_end(self) -> bool:
        return self._pos == len(self._data)


class _Writer:
    __slots__ = ("_parts",)

    def __init__(self) -> None:
        self._parts: list[bytes] = []

    def int16(self, v: int) -> None:
        self._parts.append(_INT16.pack(v))

    def int32(self, v: int) -> None:
        self._parts.append(_INT32.pack(v))

    def int64(self, v: int) -> None:
        self._parts.append(_INT64.pack(v))

    def nullable_string(self, v: str | None) -> None:
        if v is None:
            self.int16(-1)
            return
        raw = v.encode("utf-8")
        if len(raw) > 0x7FFF:
            raise SchemaError(f"string of {len(raw)} bytes does not fit an int16 length")
        self.int16(len(raw))
        self._parts.append(raw)

    string = nullable_string

    def bytes_(self, v: bytes) -> None:
        self.int32(len(v))
        self._parts.append(bytes(v))

    def getvalue(self) -> bytes:
        return b"".join(self._parts)


_INT16 = struct.Struct(">h")
_INT32 = struct.Struct(">i")
_INT64 = struct.Struct(">q")
_V3_HEAD = struct.Struct(">hqi")


def encode_offset_commit_key(key: OffsetCommitKey) -> bytes:
    w = _Writer()
    w.int16(OFFSET_COMMIT_KEY_VERSION)
    w.string(key.group)
    w.string(key.topic)
    w.int32(key.partition)
    return w.getvalue()


def encode_group_metadata_key(key: GroupMetadataKey) -> bytes:
    w = _Writer()
    w.int16(GROUP_METADATA_KEY_VERSION)
    w.string(key.group)
    return w.getvalue()


def _short_string_at(data: bytes, pos: int) -> tuple[str, int] | None:
    """A non-null int16-length string at pos and the position after it; None when it does not fit."""
    if pos + 2 > len(data):
        return None
    n = (data[pos] << 8) | data[pos + 1]
    end = pos + 2 + n
    if n > 0x7FFF or end > len(data):
        return None
    try:
        return data[pos + 2:end].decode("utf-8"), end
    except UnicodeDecodeError:
        return None


def decode_key(data: bytes | memoryview) -> OffsetCommitKey | GroupMetadataKey | None:
    """Decode a record key; None for key versions owned by coordinators other than the classic one."""
    data = data if isinstance(data, bytes) else bytes(data)
    # Fast path for the well-formed offset key that makes up most of a partition being loaded.
    if len(data) >= 2 and data[0] == 0 and data[1] in (0, 1):
        group = _short_string_at(data, 2)
        topic = _short_string_at(data, group[1]) if group is not None else None
        if group is not None and topic is not None and topic[1] + 4 == len(data):
            return OffsetCommitKey(group[0], topic[0], _INT32.unpack_from(data, topic[1])[0])
    r = _Reader(data)
    version = r.int16()
    if version in (0, 1):
        key: OffsetCommitKey | GroupMetadataKey = OffsetCommitKey(r.string(), r.string(), r.int32())
    elif version == 2:
        key = GroupMetadataKey(r.string())
    elif version < 0:
        raise SchemaError(f"negative key version {version}")
    else:
        return None
    if not r.at_end():
        raise SchemaError(f"trailing bytes after key version {version}")
    return key


def encode_offset_commit_value(value: OffsetCommitValue) -> bytes:
    """Version 1 when the commit carries an expire timestamp (retention from the request), else 3."""
    w = _Writer()
    if value.expire_timestamp >= 0:
        w.int16(1)
        w.int64(value.offset)
        w.string(value.metadata)
        w.int64(value.commit_timestamp)
        w.int64(value.expire_timestamp)
    else:
        w.int16(3)
        w.int64(value.offset)
        w.int32(value.leader_epoch)
        w.string(value.metadata)
        w.int64(value.commit_timestamp)
    return w.getvalue()


def decode_offset_commit_value(data: bytes | memoryview) -> OffsetCommitValue:
    data = data if isinstance(data, bytes) else bytes(data)
    # Fast path for version 3, what we and Kafka 2.1+ write.
    if len(data) >= 16 and data[0] == 0 and data[1] == 3:
        _, offset, leader_epoch = _V3_HEAD.unpack_from(data)
        metadata = _short_string_at(data, 14)
        if metadata is not None and metadata[1] + 8 <= len(data):
            commit_timestamp = _INT64.unpack_from(data, metadata[1])[0]
            return OffsetCommitValue(offset, leader_epoch, metadata[0], commit_timestamp)
    r = _Reader(data)
    version = r.int16()
    if not 0 <= version <= 4:
        raise SchemaError(f"unknown OffsetCommitValue version {version}")
    r.set_flexible(version >= 4)
    offset = r.int64()
    leader_epoch = r.int32() if version >= 3 else -1
    metadata = r.string()
    commit_timestamp = r.int64()
    expire_timestamp = r.int64() if version == 1 else -1
    r.tagged_fields()
    # Kafka readers ignore bytes past the fields they know (KIP-915 forward compatibility).
    return OffsetCommitValue(offset, leader_epoch, metadata, commit_timestamp, expire_timestamp)


def encode_group_metadata_value(value: GroupMetadataValue) -> bytes:
    w = _Writer()
    w.int16(GROUP_METADATA_VALUE_VERSION)
    w.string(value.protocol_type)
    w.int32(value.generation)
    w.nullable_string(value.protocol)
    w.nullable_string(value.leader)
    w.int64(value.current_state_timestamp)
    w.int32(len(value.members))
    for m in value.members:
        w.string(m.member_id)
        w.nullable_string(m.group_instance_id)
        w.string(m.client_id)
        w.string(m.client_host)
        w.int32(m.rebalance_timeout)
        w.int32(m.session_timeout)
        w.bytes_(m.subscription)
        w.bytes_(m.assignment)
    return w.getvalue()


def decode_group_metadata_value(data: bytes | memoryview) -> GroupMetadataValue:
    r = _Reader(data)
    version = r.int16()
    if not 0 <= version <= 4:
        raise SchemaError(f"unknown GroupMetadataValue version {version}")
    r.set_flexible(version >= 4)
    protocol_type = r.string()
    generation = r.int32()
    protocol = r.nullable_string()
    leader = r.nullable_string()
    current_state_timestamp = r.int64() if version >= 2 else -1
    members = []
    for _ in range(r.array_length()):
        member_id = r.string()
        group_instance_id = r.nullable_string() if version >= 3 else None
        client_id = r.string()
        client_host = r.string()
        # Version 0 had no rebalance timeout; Kafka used the session timeout in its place.
        rebalance_timeout = r.int32() if version >= 1 else -1
        session_timeout = r.int32()
        if version == 0:
            rebalance_timeout = session_timeout
        subscription = r.bytes_()
        assignment = r.bytes_()
        r.tagged_fields()
        members.append(MemberMetadataValue(member_id, group_instance_id, client_id, client_host,
                                           rebalance_timeout, session_timeout, subscription, assignment))
    r.tagged_fields()
    return GroupMetadataValue(protocol_type, generation, protocol, leader, current_state_timestamp,
                              tuple(members))

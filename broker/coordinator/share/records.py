"""The records of `__share_group_state` (Kafka 4.x's share coordinator: ShareSnapshotKey/Value and
ShareUpdateKey/Value), byte for byte, so a Kafka broker loads what we write and we load what Kafka wrote.

Contract:
- Key: `record type int16 | group_id string (int16 length) | topic_id uuid (16 bytes) | partition int32`; the
  type is 0 for ShareSnapshot and 1 for ShareUpdate (Kafka's coordinator-key apiKey, written where older
  formats wrote a key version). Other types return None from `decode_key` (skipped, as Kafka skips them).
- Value: `version int16` (0, the only one) then the flexible body (compact arrays, tagged fields):
  ShareSnapshotValue: snapshot_epoch int32, state_epoch int32, leader_epoch int32, start_offset int64,
  create_timestamp int64, write_timestamp int64, state_batches[first_offset int64, last_offset int64,
  delivery_state int8, delivery_count int16].
  ShareUpdateValue: snapshot_epoch int32, leader_epoch int32, start_offset int64 (-1: unchanged),
  state_batches as above (Kafka 4.2 adds a tagged DeliveryCompleteCount: read past like any unknown tag).
- A null value (tombstone) under a ShareSnapshot key deletes the share partition's state.
- Undecodable bytes raise `ShareRecordError`.
"""

from __future__ import annotations

import base64
import re
import struct
import uuid
from dataclasses import dataclass, field

from broker.coordinator.share.persister import PersisterStateBatch
from protocol.codec import uvarint_bytes

SNAPSHOT = 0
UPDATE = 1
VALUE_VERSION = 0

_BATCH = struct.Struct(">qqbh")
_BASE64URL = re.compile(r"[A-Za-z0-9_-]*={0,2}")


class ShareRecordError(ValueError):
    """A `__share_group_state` record that cannot be decoded."""


@dataclass(frozen=True, slots=True)
class ShareKey:
    """A share partition: Kafka's SharePartitionKey."""
    group_id: str
    topic_id: uuid.UUID
    partition: int

    def coordinator_key(self) -> str:
        """Kafka's `groupId:topicId:partition` (the topic id in Kafka's base64 form): what FindCoordinator is
        asked and what places the key on a partition of `__share_group_state`."""
        return f"{self.group_id}:{topic_id_string(self.topic_id)}:{self.partition}"


def topic_id_string(topic_id: uuid.UUID) -> str:
    """Kafka's Uuid.toString: URL-safe base64 without padding."""
    return base64.urlsafe_b64encode(topic_id.bytes).rstrip(b"=").decode()


def parse_topic_id(text: str) -> uuid.UUID:
    """Kafka's Uuid.fromString: at most 24 characters of URL-safe base64 (padding optional) for 16 bytes;
    ValueError otherwise."""
    if len(text) > 24 or not _BASE64URL.fullmatch(text):
        raise ValueError(f"not a topic id: {text!r}")
    raw = base64.urlsafe_b64decode(text.rstrip("=") + "=" * (-len(text.rstrip("=")) % 4))
    if len(raw) != 16:
        raise ValueError("a topic id has 16 bytes")
    return uuid.UUID(bytes=raw)


@dataclass(frozen=True, slots=True)
class ShareSnapshotValue:
    snapshot_epoch: int
    state_epoch: int
    leader_epoch: int
    start_offset: int
    create_timestamp: int
    write_timestamp: int
    state_batches: tuple[PersisterStateBatch, ...] = ()


@dataclass(frozen=True, slots=True)
class ShareUpdateValue:
    snapshot_epoch: int
    leader_epoch: int
    start_offset: int
    state_batches: tuple[PersisterStateBatch, ...] = field(default=())


def encode_key(kind: int, key: ShareKey) -> bytes:
    group = key.group_id.encode()
    return struct.pack(">hh", kind, len(group)) + group + key.topic_id.bytes + struct.pack(">i", key.partition)


def _batches(batches: tuple[PersisterStateBatch, ...]) -> bytes:
    out = bytearray(uvarint_bytes(len(batches) + 1))
    for b in batches:
        out += _BATCH.pack(b.first_offset, b.last_offset, b.delivery_state, b.delivery_count) + b"\x00"
    return bytes(out)


def encode_snapshot(value: ShareSnapshotValue) -> bytes:
    return (struct.pack(">hiiiqqq", VALUE_VERSION, value.snapshot_epoch, value.state_epoch, value.leader_epoch,
                        value.start_offset, value.create_timestamp, value.write_timestamp)
            + _batches(value.state_batches) + b"\x00")


def encode_update(value: ShareUpdateValue) -> bytes:
    return (struct.pack(">hiiq", VALUE_VERSION, value.snapshot_epoch, value.leader_epoch, value.start_offset)
            + _batches(value.state_batches) + b"\x00")


class _Reader:
    __slots__ = ("data", "pos")

    def __init__(self, data: bytes | memoryview) -> None:
        self.data = bytes(data)
        self.pos = 0

    def take(self, fmt: struct.Struct | str) -> tuple:
        s = fmt if isinstance(fmt, struct.Struct) else struct.Struct(fmt)
        if self.pos + s.size > len(self.data):
            raise ShareRecordError("truncated __share_group_state record")
        values = s.unpack_from(self.data, self.pos)
        self.pos += s.size
        return values

    def raw(self, n: int) -> bytes:
        if n < 0 or self.pos + n > len(self.data):
            raise ShareRecordError("truncated __share_group_state record")
        out = self.data[self.pos:self.pos + n]
        self.pos += n
        return out

    def uvarint(self) -> int:
        value = shift = 0
        while True:
            (b,) = self.take(">B")
            value |= (b & 0x7F) << shift
            if not b & 0x80:
                return value
            shift += 7
            if shift > 28:
                raise ShareRecordError("varint too long")

    def skip_tagged_fields(self) -> None:
        for _ in range(self.uvarint()):
            self.uvarint()
            self.raw(self.uvarint())

    def batches(self) -> tuple[PersisterStateBatch, ...]:
        n = self.uvarint() - 1
        if n < 0:
            return ()
        if n * _BATCH.size > len(self.data) - self.pos:
            raise ShareRecordError("state batch array longer than the record")
        out = []
        for _ in range(n):
            first, last, state, count = self.take(_BATCH)
            self.skip_tagged_fields()
            out.append(PersisterStateBatch(first, last, state, count))
        return tuple(out)


def decode_key(data: bytes | memoryview) -> tuple[int, ShareKey] | None:
    """(record type, key), or None for a record type the share coordinator does not know."""
    r = _Reader(data)
    (kind,) = r.take(">h")
    if kind not in (SNAPSHOT, UPDATE):
        return None
    (n,) = r.take(">h")
    if n < 0:
        raise ShareRecordError("null group id in a __share_group_state key")
    try:
        group = r.raw(n).decode()
    except UnicodeDecodeError as e:
        raise ShareRecordError(f"bad group id: {e}") from None
    topic_id = uuid.UUID(bytes=r.raw(16))
    (partition,) = r.take(">i")
    return kind, ShareKey(group, topic_id, partition)


def decode_snapshot(data: bytes | memoryview) -> ShareSnapshotValue:
    r = _Reader(data)
    (version,) = r.take(">h")
    if version != VALUE_VERSION:
        raise ShareRecordError(f"unknown ShareSnapshotValue version {version}")
    head = r.take(">iiiqqq")
    batches = r.batches()
    r.skip_tagged_fields()
    return ShareSnapshotValue(*head, state_batches=batches)


def decode_update(data: bytes | memoryview) -> ShareUpdateValue:
    r = _Reader(data)
    (version,) = r.take(">h")
    if version != VALUE_VERSION:
        raise ShareRecordError(f"unknown ShareUpdateValue version {version}")
    snapshot_epoch, leader_epoch, start_offset = r.take(">iiq")
    batches = r.batches()
    r.skip_tagged_fields()
    return ShareUpdateValue(snapshot_epoch, leader_epoch, start_offset, batches)

"""The embedded consumer protocol of classic groups (Kafka's ConsumerProtocolSubscription v0-3 and
ConsumerProtocolAssignment v0-3), read and written where the coordinator must understand it: when a classic group
becomes a KIP-848 consumer group or back, and for classic members of a consumer group.

Contract:
- `decode_subscription(data)` -> `Subscription` (topics, user data, owned partitions (v1+), generation (v2+, -1
  before), rack (v3+)); `decode_assignment(data)` -> (topic, partitions) pairs; both raise `SchemaError` on
  malformed input (it comes from clients). Versions above 3 are read as 3 (Kafka's forward compatibility: newer
  versions only append fields).
- `encode_assignment(partitions, version)` writes an assignment at `version` clamped to 0..3 (Kafka answers a
  member in the version of its subscription) with no user data.
- `subscription_version(data)` is the version a subscription was written in (0 when unreadable).
"""

from __future__ import annotations

import struct
from collections.abc import Iterable
from dataclasses import dataclass, field

from broker.coordinator.group.schema import SchemaError

_I16, _I32 = struct.Struct(">h"), struct.Struct(">i")
MAX_VERSION = 3


@dataclass(frozen=True, slots=True)
class Subscription:
    topics: tuple[str, ...]
    user_data: bytes | None = None
    owned_partitions: tuple[tuple[str, tuple[int, ...]], ...] = field(default_factory=tuple)
    generation_id: int = -1
    rack_id: str | None = None


class _Reader:
    def __init__(self, data: bytes) -> None:
        self.data, self.pos = data, 0

    def take(self, n: int) -> bytes:
        if n < 0 or self.pos + n > len(self.data):
            raise SchemaError(f"need {n} bytes at position {self.pos}, have {len(self.data) - self.pos}")
        chunk = self.data[self.pos:self.pos + n]
        self.pos += n
        return chunk

    def int16(self) -> int:
        return int(_I16.unpack(self.take(2))[0])

    def int32(self) -> int:
        return int(_I32.unpack(self.take(4))[0])

    def string(self, nullable: bool = False) -> str | None:
        n = self.int16()
        if n < 0:
            if nullable:
                return None
            raise SchemaError("null string")
        try:
            return self.take(n).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise SchemaError(f"string is not UTF-8: {exc}") from None

    def bytes_(self) -> bytes | None:
        n = self.int32()
        return None if n < 0 else self.take(n)

    def count(self) -> int:
        n = self.int32()
        if n < 0 or n > len(self.data) - self.pos:
            raise SchemaError(f"invalid array length {n}")
        return n

    def topic_partitions(self) -> tuple[tuple[str, tuple[int, ...]], ...]:
        out = []
        for _ in range(self.count()):
            topic = self.string() or ""
            out.append((topic, tuple(self.int32() for _ in range(self.count()))))
        return tuple(out)


def subscription_version(data: bytes) -> int:
    if len(data) < 2:
        return 0
    return max(0, min(int(_I16.unpack_from(data)[0]), MAX_VERSION))


def decode_subscription(data: bytes) -> Subscription:
    r = _Reader(bytes(data))
    version = r.int16()
    if version < 0:
        raise SchemaError(f"unknown subscription version {version}")
    topics = tuple(r.string() or "" for _ in range(r.count()))
    user_data = r.bytes_()
    owned: tuple[tuple[str, tuple[int, ...]], ...] = ()
    generation, rack = -1, None
    if version >= 1:
        owned = r.topic_partitions()
    if version >= 2:
        generation = r.int32()
    if version >= 3:
        rack = r.string(nullable=True)
    return Subscription(topics, user_data, owned, generation, rack)


def decode_assignment(data: bytes) -> tuple[tuple[str, tuple[int, ...]], ...]:
    if not data:
        return ()
    r = _Reader(bytes(data))
    if r.int16() < 0:
        raise SchemaError("unknown assignment version")
    return r.topic_partitions()


def encode_assignment(partitions: Iterable[tuple[str, Iterable[int]]], version: int) -> bytes:
    parts = [_I16.pack(max(0, min(version, MAX_VERSION)))]
    items = sorted((topic, sorted(ps)) for topic, ps in partitions)
    parts.append(_I32.pack(len(items)))
    for topic, ps in items:
        raw = topic.encode("utf-8")
        parts.append(_I16.pack(len(raw)) + raw + _I32.pack(len(ps)))
        parts.extend(_I32.pack(p) for p in ps)
    parts.append(_I32.pack(-1))  # no user data
    return b"".join(parts)

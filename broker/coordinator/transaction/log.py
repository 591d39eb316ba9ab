"""The records of `__transaction_state` (Kafka's TransactionLog with its TransactionLogKey / TransactionLogValue
message formats), byte for byte, so a Kafka broker loads what we write and we load what Kafka wrote.

Contract:
- Key, version 0 (the only one): `version int16 | transactional_id string` (int16 length + UTF-8).
- Value, written at version 0 (as Kafka 3.x writes it):
  `version int16 | producer_id int64 | producer_epoch int16 | transaction_timeout_ms int32 | status int8 |
  partitions array (int32 count, -1 = null) of {topic string | partition ids array of int32} |
  last_update_timestamp_ms int64 | start_timestamp_ms int64`.
  The partition array is null for Empty (Kafka writes it so), else the transaction's partitions grouped by
  topic (topics and partitions sorted here, an order Kafka does not fix). A tombstone (null value) removes
  the transactional id.
- Value version 1 (Kafka 4.x, the flexible form: compact strings and arrays, tagged fields) is written when
  `encode_value(target, version=1)` is asked (the state manager does so when the cluster finalized
  transaction.version >= 1, as Kafka, or when the transition comes from a TV2 client, whose epoch-bump fields
  must survive a reload) and read, with its tagged fields PreviousProducerId (tag 0, int64, default -1),
  NextProducerId (tag 1, int64, default -1) and ClientTransactionVersion (tag 2, int16, default 0), each
  written only when not its default (Kafka's generated code); unknown tags are skipped.
- `decode_key` returns None for a key version it does not know (skipped with a warning, as Kafka does);
  undecodable bytes raise `TxnLogError`.
- Loaded metadata has no last producer epoch (no field holds it: Kafka loses it too); from a version 0 value
  no previous/next producer id either.
"""

from __future__ import annotations

import struct
from collections import defaultdict

from broker.coordinator.transaction.metadata import (
    NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID,
    TransactionMetadata,
    TransactionState,
    TxnTransitMetadata,
)
from protocol.codec import uvarint_bytes
from storage import TopicPartition

KEY_VERSION = 0
VALUE_VERSION = 0
_VALUE_HEAD = struct.Struct(">qhib")
_TIMESTAMPS = struct.Struct(">qq")


class TxnLogError(ValueError):
    """A transaction log record that cannot be decoded."""


def encode_key(transactional_id: str) -> bytes:
    raw = transactional_id.encode()
    return struct.pack(">hh", KEY_VERSION, len(raw)) + raw


def encode_value(target: TxnTransitMetadata, version: int = VALUE_VERSION) -> bytes:
    if target.txn_state == TransactionState.EMPTY and target.topic_partitions:
        raise ValueError(f"an Empty transaction has no partitions: {target}")
    if version == 1:
        return _encode_value_v1(target)
    out = bytearray(struct.pack(">h", VALUE_VERSION))
    out += _VALUE_HEAD.pack(target.producer_id, target.producer_epoch, target.txn_timeout_ms, target.txn_state)
    if target.txn_state == TransactionState.EMPTY:
        out += struct.pack(">i", -1)
    else:
        by_topic: dict[str, list[int]] = defaultdict(list)
        for tp in target.topic_partitions:
            by_topic[tp.topic].append(tp.partition)
        out += struct.pack(">i", len(by_topic))
        for topic in sorted(by_topic):
            raw = topic.encode()
            ids = sorted(by_topic[topic])
            out += struct.pack(">h", len(raw)) + raw + struct.pack(f">i{len(ids)}i", len(ids), *ids)
    out += _TIMESTAMPS.pack(target.txn_last_update_timestamp, target.txn_start_timestamp)
    return bytes(out)


def _by_topic(target: TxnTransitMetadata) -> dict[str, list[int]]:
    by_topic: dict[str, list[int]] = defaultdict(list)
    for tp in target.topic_partitions:
        by_topic[tp.topic].append(tp.partition)
    return by_topic


def _encode_value_v1(target: TxnTransitMetadata) -> bytes:
    out = bytearray(struct.pack(">h", 1))
    out += _VALUE_HEAD.pack(target.producer_id, target.producer_epoch, target.txn_timeout_ms, target.txn_state)
    if target.txn_state == TransactionState.EMPTY:
        out += uvarint_bytes(0)  # null
    else:
        by_topic = _by_topic(target)
        out += uvarint_bytes(len(by_topic) + 1)
        for topic in sorted(by_topic):
            raw = topic.encode()
            ids = sorted(by_topic[topic])
            out += uvarint_bytes(len(raw) + 1) + raw + uvarint_bytes(len(ids) + 1) + struct.pack(f">{len(ids)}i", *ids)
            out += uvarint_bytes(0)  # no tagged fields
    out += _TIMESTAMPS.pack(target.txn_last_update_timestamp, target.txn_start_timestamp)
    tags = []
    if target.last_producer_id != NO_PRODUCER_ID:
        tags.append((0, struct.pack(">q", target.last_producer_id)))
    if target.next_producer_id != NO_PRODUCER_ID:
        tags.append((1, struct.pack(">q", target.next_producer_id)))
    if target.client_transaction_version != 0:
        tags.append((2, struct.pack(">h", target.client_transaction_version)))
    out += uvarint_bytes(len(tags))
    for tag, raw in tags:
        out += uvarint_bytes(tag) + uvarint_bytes(len(raw)) + raw
    return bytes(out)


class _Reader:
    __slots__ = ("data", "pos")

    def __init__(self, data: bytes | memoryview) -> None:
        self.data = bytes(data)
        self.pos = 0

    def take(self, fmt: struct.Struct | str) -> tuple[int, ...]:
        s = fmt if isinstance(fmt, struct.Struct) else struct.Struct(fmt)
        if self.pos + s.size > len(self.data):
            raise TxnLogError("truncated transaction log record")
        values = s.unpack_from(self.data, self.pos)
        self.pos += s.size
        return values

    def raw(self, n: int) -> bytes:
        if n < 0 or self.pos + n > len(self.data):
            raise TxnLogError("truncated transaction log record")
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
                raise TxnLogError("varint too long")

    def string(self, compact: bool) -> str:
        n = self.uvarint() - 1 if compact else self.take(">h")[0]
        if n < 0:
            raise TxnLogError("null string in a transaction log record")
        try:
            return self.raw(n).decode()
        except UnicodeDecodeError as e:
            raise TxnLogError(f"bad string: {e}") from None

    def array_length(self, compact: bool) -> int:
        n = self.uvarint() - 1 if compact else self.take(">i")[0]
        if n > len(self.data) - self.pos:
            raise TxnLogError("array longer than the record")
        return n

    def skip_tagged_fields(self) -> None:
        for _ in range(self.uvarint()):
            self.uvarint()
            self.raw(self.uvarint())


def decode_key(data: bytes | memoryview) -> str | None:
    """The transactional id of a key, or None for a key version this broker does not know."""
    r = _Reader(data)
    (version,) = r.take(">h")
    if version != KEY_VERSION:
        return None
    return r.string(compact=False)


def decode_value(transactional_id: str, data: bytes | memoryview | None) -> TransactionMetadata | None:
    """The metadata a value holds; None for a tombstone."""
    if data is None:
        return None
    r = _Reader(data)
    (version,) = r.take(">h")
    if version not in (0, 1):
        raise TxnLogError(f"unknown transaction log value version {version}")
    flexible = version >= 1
    producer_id, producer_epoch, timeout_ms, status = r.take(_VALUE_HEAD)
    try:
        state = TransactionState(status)
    except ValueError:
        raise TxnLogError(f"unknown transaction state id {status}") from None
    partitions: set[TopicPartition] = set()
    for _ in range(max(r.array_length(flexible), 0)):
        topic = r.string(flexible)
        count = r.array_length(flexible)
        ids = r.take(f">{max(count, 0)}i")
        if flexible:
            r.skip_tagged_fields()
        partitions.update(TopicPartition(topic, p) for p in ids)
    last_update, start = r.take(_TIMESTAMPS)
    previous_id = next_id = NO_PRODUCER_ID
    client_version = 0
    if flexible:
        for _ in range(r.uvarint()):
            tag = r.uvarint()
            raw = r.raw(r.uvarint())
            try:
                if tag == 0:
                    (previous_id,) = struct.unpack(">q", raw)
                elif tag == 1:
                    (next_id,) = struct.unpack(">q", raw)
                elif tag == 2:
                    (client_version,) = struct.unpack(">h", raw)
            except struct.error:
                raise TxnLogError(f"bad tagged field {tag}") from None
    return TransactionMetadata(transactional_id, producer_id, previous_id, producer_epoch, NO_PRODUCER_EPOCH,
                               timeout_ms, state, partitions if state != TransactionState.EMPTY else set(),
                               start, last_update, next_id, client_version)

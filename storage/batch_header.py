"""Record batch v2 headers, read with ``struct`` only: storage never decodes records on the hot path.

Contract: ``BatchHeader.parse(buf, pos)`` reads the fixed 61-byte header of the magic-2 batch at ``pos``
(big-endian, Kafka's ``DefaultRecordBatch`` layout). Offsets and ``partitionLeaderEpoch`` sit before the CRC
and are not covered by it, which is why the log may patch them in place. ``crc_is_valid`` checks CRC32C over
attributes..end. Nothing here raises ``AssertionError`` on bad input; callers get ``CorruptLogError``.
"""

from __future__ import annotations

import struct
from typing import NamedTuple

import crc32c

from storage.errors import CorruptLogError

# baseOffset, batchLength, partitionLeaderEpoch, magic, crc, attributes, lastOffsetDelta, baseTimestamp,
# maxTimestamp, producerId, producerEpoch, baseSequence, recordsCount
HEADER_STRUCT = struct.Struct(">qiibIhiqqqhii")
HEADER_SIZE = HEADER_STRUCT.size  # 61
assert HEADER_SIZE == 61  # noqa: S101 - module invariant, not input validation

# Bytes that precede batchLength's payload: baseOffset + batchLength.
LOG_OVERHEAD = 12
BASE_OFFSET_AT = 0
LENGTH_AT = 8
PARTITION_LEADER_EPOCH_AT = 12
MAGIC_AT = 16
CRC_AT = 17
ATTRIBUTES_AT = 21
LAST_OFFSET_DELTA_AT = 23
MAX_TIMESTAMP_AT = 35
CRC_COVERED_FROM = ATTRIBUTES_AT

# First 27 bytes are enough to walk a log: offsets, length, epoch, magic, crc, attributes, lastOffsetDelta.
WALK_STRUCT = struct.Struct(">qiibIhi")
WALK_SIZE = WALK_STRUCT.size  # 27

ATTR_COMPRESSION_MASK = 0x07
ATTR_TIMESTAMP_TYPE_LOG_APPEND = 0x08
ATTR_TRANSACTIONAL = 0x10
ATTR_CONTROL = 0x20

NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
NO_SEQUENCE = -1
NO_TIMESTAMP = -1

_INT64 = struct.Struct(">q")
_INT32 = struct.Struct(">i")
_UINT32 = struct.Struct(">I")
_INT16 = struct.Struct(">h")


class BatchHeader(NamedTuple):
    """The 61-byte v2 header; a NamedTuple because it is built on every append (cheap to create/replace)."""

    base_offset: int
    batch_length: int
    partition_leader_epoch: int
    magic: int
    crc: int
    attributes: int
    last_offset_delta: int
    base_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    records_count: int

    @classmethod
    def parse(cls, buf: bytes | bytearray | memoryview, pos: int = 0) -> BatchHeader:
        if len(buf) - pos < HEADER_SIZE:
            raise CorruptLogError(f"record batch header truncated at position {pos}")
        h = cls._make(HEADER_STRUCT.unpack_from(buf, pos))
        if h.magic != 2:
            raise CorruptLogError(f"unsupported magic {h.magic} at position {pos}")
        if h.batch_length < HEADER_SIZE - LOG_OVERHEAD:
            raise CorruptLogError(f"batch length {h.batch_length} smaller than header at position {pos}")
        if h.last_offset_delta < 0:
            raise CorruptLogError(f"negative lastOffsetDelta at position {pos}")
        return h

    @property
    def size(self) -> int:
        return self.batch_length + LOG_OVERHEAD

    @property
    def last_offset(self) -> int:
        return self.base_offset + self.last_offset_delta

    @property
    def next_offset(self) -> int:
        return self.base_offset + self.last_offset_delta + 1

    @property
    def last_sequence(self) -> int:
        if self.base_sequence == NO_SEQUENCE:
            return NO_SEQUENCE
        # sequences wrap at Int32.MaxValue as Kafka's DefaultRecordBatch.incrementSequence does
        return (self.base_sequence + self.last_offset_delta) % 2147483648

    @property
    def is_transactional(self) -> bool:
        return bool(self.attributes & ATTR_TRANSACTIONAL)

    @property
    def is_control(self) -> bool:
        return bool(self.attributes & ATTR_CONTROL)

    @property
    def has_producer_id(self) -> bool:
        return self.producer_id >= 0


def crc_is_valid(buf: bytes | bytearray | memoryview, pos: int, size: int) -> bool:
    (stored,) = _UINT32.unpack_from(buf, pos + CRC_AT)
    view = memoryview(buf)[pos + CRC_COVERED_FROM : pos + size]
    return crc32c.crc32c(view) == stored


def set_base_offset(buf: bytearray | memoryview, pos: int, base_offset: int) -> None:
    _INT64.pack_into(buf, pos + BASE_OFFSET_AT, base_offset)


def set_partition_leader_epoch(buf: bytearray | memoryview, pos: int, epoch: int) -> None:
    _INT32.pack_into(buf, pos + PARTITION_LEADER_EPOCH_AT, epoch)


def set_log_append_time(buf: bytearray | memoryview, pos: int, size: int, timestamp: int) -> None:
    """Mark the batch LogAppendTime with ``timestamp`` as its max timestamp; both fields are CRC-covered."""
    (attributes,) = _INT16.unpack_from(buf, pos + ATTRIBUTES_AT)
    _INT16.pack_into(buf, pos + ATTRIBUTES_AT, attributes | ATTR_TIMESTAMP_TYPE_LOG_APPEND)
    _INT64.pack_into(buf, pos + MAX_TIMESTAMP_AT, timestamp)
    crc = crc32c.crc32c(memoryview(buf)[pos + CRC_COVERED_FROM : pos + size])
    _UINT32.pack_into(buf, pos + CRC_AT, crc)


def iter_batches(
    buf: bytes | bytearray | memoryview, *, allow_partial_tail: bool = False
) -> list[tuple[int, BatchHeader]]:
    """(position, header) of every batch in a buffer of whole batches; CorruptLogError otherwise.

    With ``allow_partial_tail`` a truncated last batch (or header) is left out instead of raising."""
    out: list[tuple[int, BatchHeader]] = []
    pos = 0
    end = len(buf)
    while pos < end:
        if allow_partial_tail and end - pos < HEADER_SIZE:
            break
        h = BatchHeader.parse(buf, pos)
        if pos + h.size > end:
            if allow_partial_tail:
                break
            raise CorruptLogError(f"batch at position {pos} truncated: {h.size} bytes, {end - pos} left")
        out.append((pos, h))
        pos += h.size
    return out

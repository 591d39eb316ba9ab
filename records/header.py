"""The 61-byte header of a v2 record batch: its layout, the one parser, and the in-place setters.

Layout (Kafka's ``DefaultRecordBatch``, big-endian)::

    baseOffset int64 | batchLength int32 | partitionLeaderEpoch int32 | magic int8 | crc uint32 |
    attributes int16 | lastOffsetDelta int32 | baseTimestamp int64 | maxTimestamp int64 |
    producerId int64 | producerEpoch int16 | baseSequence int32 | recordsCount int32 | records...

``batchLength`` counts the bytes after itself, so a batch occupies ``batchLength + LOG_OVERHEAD`` bytes. The
CRC32C covers ``attributes .. end``: baseOffset and partitionLeaderEpoch are patched in place without
touching it, while attributes and maxTimestamp (LogAppendTime) need a new CRC.

Contract:
- One parser: ``parse_fields(buf, pos)`` is a single ``struct.unpack_from`` plus the structural checks every
  reader needs: 61 bytes present, magic 2 (0/1: ``InvalidRecordError``, any other: ``CorruptRecordError``),
  ``batchLength`` >= 49; whether the whole batch is present is the caller's check. ``parse_header`` returns
  the same fields as a named ``BatchHeader``; ``BatchHeader.unpack_from`` skips the checks (the dump tool
  shows whatever a file holds; re-reading a header just written).
- The setters work on ``(buffer, position)`` of a writable buffer (``bytearray`` or a writable
  ``memoryview``); ``set_max_timestamp`` computes the CRC once, and only when a field changes.
- CRC32C is the C-accelerated ``crc32c`` package.
"""

from __future__ import annotations

import struct
from enum import IntEnum
from typing import NamedTuple

# The extension module itself: `python -m broker` stands in for the crc32c package (broker/lazy_packages.py), whose
# __init__ looks its own version up in the installed distributions (importlib.metadata: 30-200 ms at start-up).
from crc32c._crc32c import crc32c

from records.compression import Compression
from records.errors import CorruptRecordError, InvalidRecordError

__all__ = [
    "BATCH_HEADER_SIZE",
    "LOG_OVERHEAD",
    "MIN_BATCH_LENGTH",
    "BatchHeader",
    "TimestampType",
    "compute_crc",
    "crc_is_valid",
    "increment_sequence",
    "parse_fields",
    "parse_header",
    "set_base_offset",
    "set_max_timestamp",
    "set_partition_leader_epoch",
]

HEADER_STRUCT = struct.Struct(">qiibIhiqqqhii")
BATCH_HEADER_SIZE = HEADER_STRUCT.size  # 61
LOG_OVERHEAD = 12  # baseOffset + batchLength: the part of a batch that batchLength does not count
MIN_BATCH_LENGTH = BATCH_HEADER_SIZE - LOG_OVERHEAD  # 49

BASE_OFFSET_AT = 0
LENGTH_AT = 8
PARTITION_LEADER_EPOCH_AT = 12
MAGIC_AT = 16
CRC_AT = 17
ATTRIBUTES_AT = 21  # the CRC covers from here to the end of the batch
LAST_OFFSET_DELTA_AT = 23
MAX_TIMESTAMP_AT = 35

COMPRESSION_MASK = 0x07
TIMESTAMP_TYPE_MASK = 0x08  # set: LogAppendTime
TRANSACTIONAL_MASK = 0x10
CONTROL_MASK = 0x20
DELETE_HORIZON_MASK = 0x40  # KIP-534: baseTimestamp holds the delete horizon

NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
NO_SEQUENCE = -1
NO_TIMESTAMP = -1
NO_PARTITION_LEADER_EPOCH = -1
INT32_MAX = 2**31 - 1

_INT64 = struct.Struct(">q")
_INT32 = struct.Struct(">i")
_UINT32 = struct.Struct(">I")
_INT16 = struct.Struct(">h")
_new = tuple.__new__
_unpack = HEADER_STRUCT.unpack_from


class TimestampType(IntEnum):
    CREATE_TIME = 0
    LOG_APPEND_TIME = 1


def increment_sequence(sequence: int, increment: int) -> int:
    """Kafka's sequences wrap from Integer.MAX_VALUE to 0."""
    if sequence > INT32_MAX - increment:
        return increment - (INT32_MAX - sequence) - 1
    return sequence + increment


def last_sequence_of(base_sequence: int, last_offset_delta: int) -> int:
    return NO_SEQUENCE if base_sequence < 0 else increment_sequence(base_sequence, last_offset_delta)


def compression_of(attributes: int) -> Compression:
    code = attributes & COMPRESSION_MASK
    if code > Compression.ZSTD:
        raise InvalidRecordError(f"unknown compression codec {code}")
    return Compression(code)


def timestamp_type_of(attributes: int) -> TimestampType:
    return TimestampType.LOG_APPEND_TIME if attributes & TIMESTAMP_TYPE_MASK else TimestampType.CREATE_TIME


_LEGACY_MAGIC = (0, 1)


def parse_fields(buf: bytes | bytearray | memoryview, pos: int = 0) -> tuple:
    """The parser: the 13 header fields at ``pos`` as a plain tuple (``BatchHeader``'s order) after the
    structural checks of the module contract. Hot paths keep the plain tuple; ``parse_header`` names it."""
    left = len(buf) - pos
    if left < BATCH_HEADER_SIZE:
        if left > MAGIC_AT and buf[pos + MAGIC_AT] in _LEGACY_MAGIC:
            raise InvalidRecordError(f"message format v{buf[pos + MAGIC_AT]} where record batch v2 is required")
        raise CorruptRecordError(f"{left} bytes are too few for a record batch header")
    h = _unpack(buf, pos)
    if h[3] != 2:
        if h[3] in _LEGACY_MAGIC:
            raise InvalidRecordError(f"message format v{h[3]} where record batch v2 is required")
        raise CorruptRecordError(f"unknown magic byte {h[3]}")
    if h[1] < MIN_BATCH_LENGTH:
        raise CorruptRecordError(f"batch_length {h[1]} is below the minimum {MIN_BATCH_LENGTH}")
    return h


class BatchHeader(NamedTuple):
    """The 13 header fields of one v2 batch, named (a tuple: cheap to build on every append and walk)."""

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
    def unpack_from(cls, buf: bytes | bytearray | memoryview, pos: int = 0) -> BatchHeader:
        """The fields at ``pos``, unchecked; ``buf`` must hold 61 bytes there (``struct.error`` otherwise)."""
        return _new(cls, _unpack(buf, pos))

    @property
    def size(self) -> int:
        """Bytes the whole batch occupies (Kafka's ``sizeInBytes``)."""
        return self[1] + LOG_OVERHEAD

    @property
    def last_offset(self) -> int:
        return self[0] + self[6]

    @property
    def next_offset(self) -> int:
        return self[0] + self[6] + 1

    @property
    def last_sequence(self) -> int:
        return last_sequence_of(self[11], self[6])

    @property
    def compression_code(self) -> int:
        return self[5] & COMPRESSION_MASK

    @property
    def compression(self) -> Compression:
        return compression_of(self[5])

    @property
    def timestamp_type(self) -> TimestampType:
        return timestamp_type_of(self[5])

    @property
    def is_transactional(self) -> bool:
        return bool(self[5] & TRANSACTIONAL_MASK)

    @property
    def is_control(self) -> bool:
        return bool(self[5] & CONTROL_MASK)

    @property
    def has_delete_horizon(self) -> bool:
        return bool(self[5] & DELETE_HORIZON_MASK)

    @property
    def has_producer_id(self) -> bool:
        return self[9] >= 0


def parse_header(buf: bytes | bytearray | memoryview, pos: int = 0) -> BatchHeader:
    """``parse_fields`` as a named ``BatchHeader``."""
    return _new(BatchHeader, parse_fields(buf, pos))


# -- CRC and in-place setters ---------------------------------------------------------------------------------
def compute_crc(buf: bytes | bytearray | memoryview, pos: int, size: int) -> int:
    """CRC32C of the batch's ``attributes .. end``."""
    return crc32c(memoryview(buf)[pos + ATTRIBUTES_AT:pos + size])


def crc_is_valid(buf: bytes | bytearray | memoryview, pos: int, size: int) -> bool:
    return compute_crc(buf, pos, size) == _UINT32.unpack_from(buf, pos + CRC_AT)[0]


def set_base_offset(buf: bytearray | memoryview, pos: int, base_offset: int) -> None:
    _INT64.pack_into(buf, pos + BASE_OFFSET_AT, base_offset)


def set_partition_leader_epoch(buf: bytearray | memoryview, pos: int, epoch: int) -> None:
    _INT32.pack_into(buf, pos + PARTITION_LEADER_EPOCH_AT, epoch)


def set_max_timestamp(
    buf: bytearray | memoryview, pos: int, size: int, timestamp_type: TimestampType, timestamp: int
) -> bool:
    """Kafka's ``DefaultRecordBatch.setMaxTimestamp``: write the timestamp type and max timestamp and the CRC
    that covers them, computed once. Nothing is written when both already hold those values; returns whether
    the batch changed."""
    (attributes,) = _INT16.unpack_from(buf, pos + ATTRIBUTES_AT)
    new_attributes = attributes & ~TIMESTAMP_TYPE_MASK
    if timestamp_type == TimestampType.LOG_APPEND_TIME:
        new_attributes |= TIMESTAMP_TYPE_MASK
    if new_attributes == attributes and _INT64.unpack_from(buf, pos + MAX_TIMESTAMP_AT)[0] == timestamp:
        return False
    _INT16.pack_into(buf, pos + ATTRIBUTES_AT, new_attributes)
    _INT64.pack_into(buf, pos + MAX_TIMESTAMP_AT, timestamp)
    _UINT32.pack_into(buf, pos + CRC_AT, compute_crc(buf, pos, size))
    return True

"""Deflated batches: the byte form of v2 record batches, read without copying or decoding records.

Contract:
- ``RecordBatch(buf)`` wraps exactly one v2 batch (``len(buf) == 12 + batch_length``) without copying. Its
  header is parsed once (``records.header.parse_fields``); records are decoded, and decompressed, only when
  ``records()`` is called. The setters need a writable buffer: ``set_base_offset`` and
  ``set_partition_leader_epoch`` leave the CRC alone (it does not cover them), ``set_max_timestamp``
  rewrites attributes, max timestamp and the CRC as Kafka's ``DefaultRecordBatch.setMaxTimestamp``.
- ``iter_batches`` splits a records blob (a produce partition, a fetch slice, a segment) into views;
  ``batch_headers`` lists ``(position, BatchHeader)`` of a blob of whole batches, the form storage walks
  (``batch_fields``: the same with plain tuples).
- Untrusted bytes raise only ``CorruptRecordError`` or ``InvalidRecordError`` (``records.errors``).
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from typing import TYPE_CHECKING

from records.compression import Compression, decompress
from records.errors import CorruptRecordError, InvalidRecordError
from records.header import (
    BATCH_HEADER_SIZE,
    CONTROL_MASK,
    DELETE_HORIZON_MASK,
    HEADER_STRUCT,
    LOG_OVERHEAD,
    MAGIC_AT,
    TIMESTAMP_TYPE_MASK,
    TRANSACTIONAL_MASK,
    BatchHeader,
    TimestampType,
    compression_of,
    compute_crc,
    last_sequence_of,
    parse_fields,
    set_base_offset,
    set_max_timestamp,
    set_partition_leader_epoch,
    timestamp_type_of,
)
from records.record import Record, decode_records, iter_offsets_and_timestamps

if TYPE_CHECKING:
    from records.legacy import LegacyMessage

__all__ = [
    "DEFAULT_MAX_DECOMPRESSED_SIZE",
    "RecordBatch",
    "batch_fields",
    "batch_headers",
    "iter_batches",
    "read_magic",
]

# Cap on a decompressed batch payload when decoding records, in the absence of a caller's limit. Kafka's
# own limit is implicit (heap); ours keeps a hostile frame from expanding without bound.
DEFAULT_MAX_DECOMPRESSED_SIZE = 256 * 1024 * 1024

_OFFSET_AND_LENGTH = struct.Struct(">qi")
_new = object.__new__
_new_tuple = tuple.__new__


class RecordBatch:
    """Zero-copy view over one magic v2 record batch."""

    __slots__ = ("_buf", "_h")

    def __init__(self, buf: bytes | bytearray | memoryview) -> None:
        if not isinstance(buf, memoryview):
            buf = memoryview(buf)
        if buf.format != "B" or buf.ndim != 1:
            buf = buf.cast("B")
        h = parse_fields(buf, 0)
        if h[1] != len(buf) - LOG_OVERHEAD:
            raise CorruptRecordError(f"batch_length {h[1]} does not match the {len(buf)}-byte buffer")
        self._buf = buf
        self._h = h

    @classmethod
    def _of(cls, buf: memoryview, h: tuple) -> RecordBatch:
        """A view over bytes whose header fields ``h`` were parsed and whose length was checked already."""
        batch = _new(cls)
        batch._buf = buf
        batch._h = h
        return batch

    # -- header fields ------------------------------------------------------------------------------------
    @property
    def buffer(self) -> memoryview:
        return self._buf

    @property
    def header(self) -> BatchHeader:
        return _new_tuple(BatchHeader, self._h)

    @property
    def base_offset(self) -> int:
        return self._h[0]

    @property
    def batch_length(self) -> int:
        return self._h[1]

    @property
    def partition_leader_epoch(self) -> int:
        return self._h[2]

    @property
    def magic(self) -> int:
        return self._h[3]

    @property
    def crc(self) -> int:
        return self._h[4]

    @property
    def attributes(self) -> int:
        return self._h[5]

    @property
    def compression(self) -> Compression:
        return compression_of(self._h[5])

    @property
    def timestamp_type(self) -> TimestampType:
        return timestamp_type_of(self._h[5])

    @property
    def is_transactional(self) -> bool:
        return bool(self._h[5] & TRANSACTIONAL_MASK)

    @property
    def is_control(self) -> bool:
        return bool(self._h[5] & CONTROL_MASK)

    @property
    def has_delete_horizon(self) -> bool:
        return bool(self._h[5] & DELETE_HORIZON_MASK)

    @property
    def last_offset_delta(self) -> int:
        return self._h[6]

    @property
    def first_timestamp(self) -> int:
        return self._h[7]

    base_timestamp = first_timestamp

    @property
    def max_timestamp(self) -> int:
        return self._h[8]

    @property
    def producer_id(self) -> int:
        return self._h[9]

    @property
    def producer_epoch(self) -> int:
        return self._h[10]

    @property
    def base_sequence(self) -> int:
        return self._h[11]

    @property
    def last_sequence(self) -> int:
        return last_sequence_of(self._h[11], self._h[6])

    @property
    def records_count(self) -> int:
        return self._h[12]

    @property
    def last_offset(self) -> int:
        return self._h[0] + self._h[6]

    @property
    def next_offset(self) -> int:
        return self._h[0] + self._h[6] + 1

    @property
    def size_in_bytes(self) -> int:
        return len(self._buf)

    def __repr__(self) -> str:
        return (
            f"RecordBatch(base_offset={self.base_offset}, last_offset_delta={self.last_offset_delta}, "
            f"records_count={self.records_count}, compression={self.compression.name}, "
            f"size={self.size_in_bytes}, producer_id={self.producer_id})"
        )

    # -- checks and in-place patching ---------------------------------------------------------------------
    def compute_crc(self) -> int:
        return compute_crc(self._buf, 0, len(self._buf))

    def is_valid(self) -> bool:
        return self.compute_crc() == self._h[4]

    def ensure_valid(self) -> None:
        computed = self.compute_crc()
        if computed != self._h[4]:
            raise CorruptRecordError(
                f"record batch at base_offset {self._h[0]} has CRC 0x{self._h[4]:08x}, computed 0x{computed:08x}"
            )

    def _refresh(self) -> None:
        self._h = HEADER_STRUCT.unpack_from(self._buf, 0)

    def set_base_offset(self, offset: int) -> None:
        set_base_offset(self._buf, 0, offset)
        self._refresh()

    def set_partition_leader_epoch(self, epoch: int) -> None:
        set_partition_leader_epoch(self._buf, 0, epoch)
        self._refresh()

    def set_max_timestamp(self, timestamp_type: TimestampType, ts: int) -> None:
        if set_max_timestamp(self._buf, 0, len(self._buf), timestamp_type, ts):
            self._refresh()

    # -- records ------------------------------------------------------------------------------------------
    def records_payload(self, max_size: int | None = DEFAULT_MAX_DECOMPRESSED_SIZE) -> memoryview:
        """The records section, decompressed if the batch is compressed."""
        body = self._buf[BATCH_HEADER_SIZE:]
        codec = self.compression
        if codec == Compression.NONE:
            return body
        return memoryview(decompress(codec, body, max_size))

    def _checked_count(self, payload: memoryview | bytes) -> int:
        count = self._h[12]
        if count < 0:
            raise CorruptRecordError(f"negative records_count {count}")
        # Each record takes at least 7 bytes, so a count beyond that cannot be honest.
        if count > len(payload) // 7 + 1:
            raise CorruptRecordError(f"records_count {count} impossible in {len(payload)} bytes")
        return count

    def records(self, max_size: int | None = DEFAULT_MAX_DECOMPRESSED_SIZE) -> Iterator[Record]:
        """Decode the records (the inflated form); decompresses first when needed. A batch without records
        (the cleaner's header-only batch) has nothing to decompress, as in Kafka."""
        h = self._h
        if h[12] == 0:
            return iter(())
        payload = self.records_payload(max_size)
        count = self._checked_count(payload)
        log_append = bool(h[5] & TIMESTAMP_TYPE_MASK)
        return decode_records(payload, count, h[0], h[7], h[8] if log_append else None, h[11])

    def offsets_and_timestamps(self, max_size: int | None = DEFAULT_MAX_DECOMPRESSED_SIZE) -> Iterator[tuple[int, int]]:
        """(offset, timestamp) of each record as written (CreateTime deltas), without keys and values."""
        if self._h[12] == 0:
            return iter(())
        payload = bytes(self.records_payload(max_size))
        return iter_offsets_and_timestamps(payload, self._checked_count(payload), self._h[0], self._h[7])

    def validate_records(
        self, *, require_keys: bool = False, max_size: int | None = DEFAULT_MAX_DECOMPRESSED_SIZE
    ) -> int:
        """Record-level checks of Kafka's LogValidator for when records must be decoded: offset deltas 0..n-1
        in order (INVALID_RECORD otherwise), a key on every record if ``require_keys``. Returns the largest
        record timestamp (-1 if none)."""
        base = self._h[0]
        max_timestamp = -1
        expected = 0
        for record in self.records(max_size):
            if record.offset - base != expected:
                raise InvalidRecordError(f"record offset delta {record.offset - base} where {expected} was expected")
            if require_keys and record.key is None:
                raise InvalidRecordError("compacted topic cannot accept a record without a key")
            if record.timestamp > max_timestamp:
                max_timestamp = record.timestamp
            expected += 1
        if expected and expected - 1 != self._h[6]:
            raise InvalidRecordError(f"last_offset_delta {self._h[6]} but {expected} records")
        return max_timestamp


# ----------------------------------------------------------------------------------------------------
def read_magic(buf: bytes | bytearray | memoryview) -> int:
    """Magic byte of the first batch or message: offset 16 in v0, v1 and v2 alike."""
    if len(buf) <= MAGIC_AT:
        raise CorruptRecordError(f"{len(buf)} bytes are too few to hold a batch header")
    magic = buf[MAGIC_AT]
    return magic if isinstance(magic, int) else ord(magic)


def iter_batches(
    buf: bytes | bytearray | memoryview, *, allow_legacy: bool = False
) -> Iterator[RecordBatch | LegacyMessage]:
    """Split a records blob into ``RecordBatch`` views.

    Magic 0/1 entries raise ``InvalidRecordError`` unless ``allow_legacy``; then each one is yielded as a
    shallow ``records.legacy.LegacyMessage`` (a compressed wrapper stays one entry).
    """
    view = memoryview(buf).cast("B") if not isinstance(buf, memoryview) else buf
    pos = 0
    n = len(view)
    while pos < n:
        if n - pos < LOG_OVERHEAD + 5:
            raise CorruptRecordError(f"{n - pos} trailing bytes are too few for a batch header")
        magic = view[pos + MAGIC_AT]
        if magic in (0, 1) and allow_legacy:
            from records.legacy import iter_legacy_messages  # legacy builds on this module

            _base, length = _OFFSET_AND_LENGTH.unpack_from(view, pos)
            end = pos + LOG_OVERHEAD + length
            if length < 0 or end > n:
                raise CorruptRecordError(f"message size {length} is negative or runs past the buffer")
            yield from iter_legacy_messages(view[pos:end], deep=False)
        else:
            h = parse_fields(view, pos)
            end = pos + LOG_OVERHEAD + h[1]
            if end > n:
                raise CorruptRecordError(f"batch_length {h[1]} runs past the end of the {n}-byte buffer")
            yield RecordBatch._of(view[pos:end], h)
        pos = end


def batch_fields(
    buf: bytes | bytearray | memoryview, *, allow_partial_tail: bool = False
) -> list[tuple[int, tuple]]:
    """(position, header fields as a plain tuple) of every batch in a buffer of whole batches.

    With ``allow_partial_tail`` a truncated last batch (or header) is left out instead of raising
    ``CorruptRecordError`` (a fetch response cut at ``max_bytes``)."""
    out: list[tuple[int, tuple]] = []
    pos = 0
    end = len(buf)
    while pos < end:
        if allow_partial_tail and end - pos < BATCH_HEADER_SIZE:
            break
        h = parse_fields(buf, pos)
        size = h[1] + LOG_OVERHEAD
        if pos + size > end:
            if allow_partial_tail:
                break
            raise CorruptRecordError(f"batch at position {pos} truncated: {size} bytes, {end - pos} left")
        out.append((pos, h))
        pos += size
    return out


def batch_headers(
    buf: bytes | bytearray | memoryview, *, allow_partial_tail: bool = False
) -> list[tuple[int, BatchHeader]]:
    """``batch_fields`` with each header named (``BatchHeader``)."""
    return [(pos, _new_tuple(BatchHeader, h)) for pos, h in batch_fields(buf, allow_partial_tail=allow_partial_tail)]

"""Record batches, magic v2: a zero-copy view over the bytes, builders, and the produce-path fast checks.

Contract:
- ``RecordBatch(buf)`` wraps exactly one v2 batch (``len(buf) == 12 + batch_length``) without copying.
  Header fields are unpacked once with ``struct`` (61 bytes); records are decoded (and decompressed) only
  when ``records()`` is called.
- The in-place setters need a writable buffer (a ``memoryview`` over a ``bytearray`` or mmap).
  ``set_base_offset`` / ``set_partition_leader_epoch`` leave the CRC alone because Kafka's CRC32C covers
  only ``attributes .. end``; ``set_max_timestamp`` rewrites attributes and max timestamp and recomputes
  the CRC, like Kafka's ``DefaultRecordBatch.setMaxTimestamp``.
- ``iter_batches`` splits a records blob (a produce partition, a fetch slice, a segment) into views.
- ``validate_batches`` is the per-partition produce check: header-only work plus CRC32C (C-accelerated
  ``crc32c``), the checks Kafka's ``LogValidator`` makes on client batches, and a ``BatchesSummary``.
  ``assign_offsets`` then patches base offsets and leader epochs in place.
- Untrusted bytes only ever raise ``CorruptRecordError`` (damaged: CRC, truncation, impossible lengths,
  bad varints) or ``InvalidRecordError`` (well-formed but unacceptable), both ``ValueError`` subclasses.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from enum import IntEnum
from typing import TYPE_CHECKING, NamedTuple

from crc32c import crc32c

from protocol.compression import Compression, CorruptRecordError, InvalidRecordError, compress, decompress

if TYPE_CHECKING:
    from protocol.legacy import LegacyMessage

__all__ = [
    "BATCH_HEADER_SIZE",
    "LOG_OVERHEAD",
    "BatchesSummary",
    "Compression",
    "ControlRecordType",
    "CorruptRecordError",
    "InvalidRecordError",
    "Record",
    "RecordBatch",
    "RecordTooLargeError",
    "TimestampType",
    "assign_offsets",
    "build_batch",
    "build_control_batch",
    "iter_batches",
    "parse_control_record",
    "read_magic",
    "validate_batches",
]


class RecordTooLargeError(InvalidRecordError):
    """A batch larger than ``max.message.bytes``: Kafka answers MESSAGE_TOO_LARGE (error code 10)."""


class TimestampType(IntEnum):
    CREATE_TIME = 0
    LOG_APPEND_TIME = 1


class ControlRecordType(IntEnum):
    ABORT = 0
    COMMIT = 1


# BaseOffset, Length, PartitionLeaderEpoch, Magic, CRC, Attributes, LastOffsetDelta, BaseTimestamp,
# MaxTimestamp, ProducerId, ProducerEpoch, BaseSequence, RecordsCount.
_HEADER = struct.Struct(">qiibIhiqqqhii")
BATCH_HEADER_SIZE = _HEADER.size  # 61
LOG_OVERHEAD = 12  # base offset + length, the part not counted by batch_length
_MIN_BATCH_LENGTH = BATCH_HEADER_SIZE - LOG_OVERHEAD  # 49

_BASE_OFFSET = struct.Struct(">q")
_INT32 = struct.Struct(">i")
_UINT32 = struct.Struct(">I")
_INT16 = struct.Struct(">h")
_INT64 = struct.Struct(">q")
_OFFSET_AND_LENGTH = struct.Struct(">qi")

_LENGTH_OFFSET = 8
_PARTITION_LEADER_EPOCH_OFFSET = 12
_MAGIC_OFFSET = 16
_CRC_OFFSET = 17
_ATTRIBUTES_OFFSET = 21
_MAX_TIMESTAMP_OFFSET = 35

_COMPRESSION_MASK = 0x07
_TIMESTAMP_TYPE_MASK = 0x08
_TRANSACTIONAL_MASK = 0x10
_CONTROL_MASK = 0x20
_DELETE_HORIZON_MASK = 0x40

_INT32_MAX = 2**31 - 1
_CODECS = tuple(Compression)

# Cap on a decompressed batch payload when decoding records, in the absence of a caller's limit. Kafka's
# own limit is implicit (heap); ours keeps a hostile frame from expanding without bound.
DEFAULT_MAX_DECOMPRESSED_SIZE = 256 * 1024 * 1024


def _increment_sequence(sequence: int, increment: int) -> int:
    # Kafka's sequences wrap from Integer.MAX_VALUE to 0.
    if sequence > _INT32_MAX - increment:
        return increment - (_INT32_MAX - sequence) - 1
    return sequence + increment


@dataclass(frozen=True, slots=True)
class Record:
    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: list[tuple[str, bytes | None]] = field(default_factory=list)
    sequence: int = -1


class RecordBatch:
    """Zero-copy view over one magic v2 record batch."""

    __slots__ = ("_buf", "_h")

    def __init__(self, buf: memoryview) -> None:
        if not isinstance(buf, memoryview):
            buf = memoryview(buf)
        if buf.format != "B" or buf.ndim != 1:
            buf = buf.cast("B")
        if len(buf) < BATCH_HEADER_SIZE:
            raise CorruptRecordError(f"record batch of {len(buf)} bytes is shorter than its 61-byte header")
        h = _HEADER.unpack_from(buf, 0)
        if h[3] != 2:
            raise InvalidRecordError(f"record batch magic {h[3]} is not 2")
        if h[1] != len(buf) - LOG_OVERHEAD:
            raise CorruptRecordError(f"batch_length {h[1]} does not match the {len(buf)}-byte buffer")
        self._buf = buf
        self._h = h

    # -- header fields ------------------------------------------------------------------------------------
    @property
    def buffer(self) -> memoryview:
        return self._buf

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
        code = self._h[5] & _COMPRESSION_MASK
        try:
            return Compression(code)
        except ValueError:
            raise InvalidRecordError(f"unknown compression codec {code}") from None

    @property
    def timestamp_type(self) -> TimestampType:
        if self._h[5] & _TIMESTAMP_TYPE_MASK:
            return TimestampType.LOG_APPEND_TIME
        return TimestampType.CREATE_TIME

    @property
    def is_transactional(self) -> bool:
        return bool(self._h[5] & _TRANSACTIONAL_MASK)

    @property
    def is_control(self) -> bool:
        return bool(self._h[5] & _CONTROL_MASK)

    @property
    def has_delete_horizon(self) -> bool:
        return bool(self._h[5] & _DELETE_HORIZON_MASK)

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
        if self._h[11] < 0:
            return -1
        return _increment_sequence(self._h[11], self._h[6])

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
        return crc32c(self._buf[_ATTRIBUTES_OFFSET:])

    def is_valid(self) -> bool:
        return self.compute_crc() == self._h[4]

    def ensure_valid(self) -> None:
        computed = self.compute_crc()
        if computed != self._h[4]:
            raise CorruptRecordError(
                f"record batch at base_offset {self._h[0]} has CRC 0x{self._h[4]:08x}, "
                f"computed 0x{computed:08x}"
            )

    def _refresh(self) -> None:
        self._h = _HEADER.unpack_from(self._buf, 0)

    def set_base_offset(self, offset: int) -> None:
        _BASE_OFFSET.pack_into(self._buf, 0, offset)
        self._refresh()

    def set_partition_leader_epoch(self, epoch: int) -> None:
        _INT32.pack_into(self._buf, _PARTITION_LEADER_EPOCH_OFFSET, epoch)
        self._refresh()

    def set_max_timestamp(self, timestamp_type: TimestampType, ts: int) -> None:
        if self.timestamp_type == timestamp_type and self.max_timestamp == ts:
            return
        attributes = self._h[5] & ~_TIMESTAMP_TYPE_MASK
        if timestamp_type == TimestampType.LOG_APPEND_TIME:
            attributes |= _TIMESTAMP_TYPE_MASK
        _INT16.pack_into(self._buf, _ATTRIBUTES_OFFSET, attributes)
        _INT64.pack_into(self._buf, _MAX_TIMESTAMP_OFFSET, ts)
        _UINT32.pack_into(self._buf, _CRC_OFFSET, crc32c(self._buf[_ATTRIBUTES_OFFSET:]))
        self._refresh()

    # -- records ------------------------------------------------------------------------------------------
    def records_payload(self, max_size: int | None = DEFAULT_MAX_DECOMPRESSED_SIZE) -> memoryview:
        """The records section, decompressed if the batch is compressed."""
        body = self._buf[BATCH_HEADER_SIZE:]
        codec = self.compression
        if codec == Compression.NONE:
            return body
        return memoryview(decompress(codec, body, max_size))

    def records(self, max_size: int | None = DEFAULT_MAX_DECOMPRESSED_SIZE) -> Iterator[Record]:
        """Decode the records; decompresses first when needed. Kafka's offsets/timestamps/sequences."""
        h = self._h
        count = h[12]
        if count < 0:
            raise CorruptRecordError(f"negative records_count {count}")
        payload = self.records_payload(max_size)
        # Each record takes at least 7 bytes, so a count beyond that cannot be honest.
        if count > len(payload) // 7 + 1:
            raise CorruptRecordError(f"records_count {count} impossible in {len(payload)} bytes")
        log_append = bool(h[5] & _TIMESTAMP_TYPE_MASK)
        return _iter_records(payload, count, h[0], h[7], h[8] if log_append else None, h[11])

    def validate_records(
        self, *, require_keys: bool = False, max_size: int | None = DEFAULT_MAX_DECOMPRESSED_SIZE
    ) -> int:
        """The record-level checks of Kafka's LogValidator, for when the broker must decode (compacted
        topics, compressed client batches): offset deltas 0..n-1 in order (INVALID_RECORD otherwise), a key
        on every record if ``require_keys``. Returns the largest record timestamp (-1 if none)."""
        base = self._h[0]
        max_timestamp = -1
        expected = 0
        for record in self.records(max_size):
            if record.offset - base != expected:
                raise InvalidRecordError(
                    f"record offset delta {record.offset - base} where {expected} was expected"
                )
            if require_keys and record.key is None:
                raise InvalidRecordError("compacted topic cannot accept a record without a key")
            if record.timestamp > max_timestamp:
                max_timestamp = record.timestamp
            expected += 1
        if expected and expected - 1 != self._h[6]:
            raise InvalidRecordError(f"last_offset_delta {self._h[6]} but {expected} records")
        return max_timestamp


def _read_varint(buf: bytes, pos: int, end: int) -> tuple[int, int]:
    """Zigzag varint up to 64 bits; returns (value, new_pos)."""
    if pos < end:
        b = buf[pos]
        if b < 0x80:  # one byte: the common case for lengths, deltas and counts
            return (b >> 1) ^ -(b & 1), pos + 1
    result = 0
    shift = 0
    while True:
        if pos >= end:
            raise CorruptRecordError("record truncated inside a varint")
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            break
        shift += 7
        if shift > 63:
            raise CorruptRecordError("varint longer than 10 bytes")
    return (result >> 1) ^ -(result & 1), pos


def _iter_records(
    payload: memoryview,
    count: int,
    base_offset: int,
    base_timestamp: int,
    log_append_time: int | None,
    base_sequence: int,
) -> Iterator[Record]:
    # One copy of the records section: indexing and slicing bytes is cheaper than a memoryview, and keys
    # and values come out as bytes anyway.
    data = bytes(payload)
    pos = 0
    end = len(data)
    for _ in range(count):
        length, pos = _read_varint(data, pos, end)
        if length < 0 or pos + length > end:
            raise CorruptRecordError(f"record length {length} is negative or past the batch end")
        record_end = pos + length
        if pos >= record_end:
            raise CorruptRecordError("empty record")
        pos += 1  # attributes, unused
        timestamp_delta, pos = _read_varint(data, pos, record_end)
        offset_delta, pos = _read_varint(data, pos, record_end)
        key_len, pos = _read_varint(data, pos, record_end)
        if key_len < -1 or pos + key_len > record_end:
            raise CorruptRecordError(f"record key length {key_len} is invalid")
        key = None
        if key_len >= 0:
            key = data[pos:pos + key_len]
            pos += key_len
        value_len, pos = _read_varint(data, pos, record_end)
        if value_len < -1 or pos + value_len > record_end:
            raise CorruptRecordError(f"record value length {value_len} is invalid")
        value = None
        if value_len >= 0:
            value = data[pos:pos + value_len]
            pos += value_len
        header_count, pos = _read_varint(data, pos, record_end)
        if header_count < 0 or header_count > record_end - pos:
            raise CorruptRecordError(f"invalid record header count {header_count}")
        headers: list[tuple[str, bytes | None]] = []
        for _h in range(header_count):
            hk_len, pos = _read_varint(data, pos, record_end)
            if hk_len < 0 or pos + hk_len > record_end:
                raise CorruptRecordError(f"record header key length {hk_len} is invalid")
            # Java decodes with replacement of malformed UTF-8; so do we.
            hkey = data[pos:pos + hk_len].decode("utf-8", "replace")
            pos += hk_len
            hv_len, pos = _read_varint(data, pos, record_end)
            if hv_len < -1 or pos + hv_len > record_end:
                raise CorruptRecordError(f"record header value length {hv_len} is invalid")
            hval = None
            if hv_len >= 0:
                hval = data[pos:pos + hv_len]
                pos += hv_len
            headers.append((hkey, hval))
        if pos != record_end:
            raise CorruptRecordError(f"record declared {length} bytes but used {length - (record_end - pos)}")
        yield Record(
            offset=base_offset + offset_delta,
            timestamp=log_append_time if log_append_time is not None else base_timestamp + timestamp_delta,
            key=key,
            value=value,
            headers=headers,
            sequence=-1 if base_sequence < 0 else _increment_sequence(base_sequence, offset_delta),
        )
    if pos != end:
        raise CorruptRecordError(f"{end - pos} bytes left after the declared {count} records")


# ----------------------------------------------------------------------------------------------------
def read_magic(buf: bytes | bytearray | memoryview) -> int:
    """Magic byte of the first batch or message: offset 16 in v0, v1 and v2 alike."""
    if len(buf) <= _MAGIC_OFFSET:
        raise CorruptRecordError(f"{len(buf)} bytes are too few to hold a batch header")
    magic = buf[_MAGIC_OFFSET]
    return magic if isinstance(magic, int) else ord(magic)


def iter_batches(
    buf: bytes | bytearray | memoryview, *, allow_legacy: bool = False
) -> Iterator[RecordBatch | LegacyMessage]:
    """Split a records blob into ``RecordBatch`` views.

    Magic 0/1 entries raise ``InvalidRecordError`` unless ``allow_legacy``; then each one is yielded as a
    shallow ``protocol.legacy.LegacyMessage`` (a compressed wrapper stays one entry).
    """
    view = memoryview(buf).cast("B") if not isinstance(buf, memoryview) else buf
    pos = 0
    n = len(view)
    while pos < n:
        if n - pos < LOG_OVERHEAD + 5:
            raise CorruptRecordError(f"{n - pos} trailing bytes are too few for a batch header")
        _base, length = _OFFSET_AND_LENGTH.unpack_from(view, pos)
        magic = view[pos + _MAGIC_OFFSET]
        end = pos + LOG_OVERHEAD + length
        if magic == 2:
            if length < _MIN_BATCH_LENGTH:
                raise CorruptRecordError(f"batch_length {length} is below the minimum {_MIN_BATCH_LENGTH}")
            if end > n:
                raise CorruptRecordError(f"batch_length {length} runs past the end of the {n}-byte buffer")
            yield RecordBatch(view[pos:end])
        elif magic in (0, 1) and allow_legacy:
            from protocol.legacy import iter_legacy_messages  # legacy imports this module

            if length < 0 or end > n:
                raise CorruptRecordError(f"message size {length} is negative or runs past the buffer")
            yield from iter_legacy_messages(view[pos:end], deep=False)
        elif magic in (0, 1):
            raise InvalidRecordError(f"message format v{magic} where record batch v2 is required")
        else:
            raise CorruptRecordError(f"unknown magic byte {magic}")
        pos = end


# ----------------------------------------------------------------------------------------------------
def _write_varint(out: bytearray, value: int) -> None:
    v = (value << 1) ^ (value >> 63)
    while v >= 0x80:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)


def _encode_record(
    out: bytearray,
    offset_delta: int,
    timestamp_delta: int,
    key: bytes | None,
    value: bytes | None,
    headers: Sequence[tuple[str, bytes | None]],
) -> None:
    body = bytearray(b"\x00")  # attributes
    _write_varint(body, timestamp_delta)
    _write_varint(body, offset_delta)
    if key is None:
        body.append(1)  # varint(-1)
    else:
        _write_varint(body, len(key))
        body += key
    if value is None:
        body.append(1)
    else:
        _write_varint(body, len(value))
        body += value
    _write_varint(body, len(headers))
    for hkey, hval in headers:
        hk = hkey.encode("utf-8")
        _write_varint(body, len(hk))
        body += hk
        if hval is None:
            body.append(1)
        else:
            _write_varint(body, len(hval))
            body += hval
    _write_varint(out, len(body))
    out += body


RecordInput = tuple[bytes | None, bytes | None, Sequence[tuple[str, bytes | None]], int]


def build_batch(
    records: Sequence[RecordInput],
    *,
    base_offset: int = 0,
    compression: Compression = Compression.NONE,
    producer_id: int = -1,
    producer_epoch: int = -1,
    base_sequence: int = -1,
    partition_leader_epoch: int = -1,
    is_transactional: bool = False,
    is_control: bool = False,
    timestamp_type: TimestampType = TimestampType.CREATE_TIME,
    max_timestamp: int | None = None,
    offset_deltas: Sequence[int] | None = None,
) -> bytes:
    """Build one v2 batch from ``(key, value, headers, timestamp)`` tuples.

    Offsets are ``base_offset + index`` unless ``offset_deltas`` gives them (compacted batches keep gaps).
    ``max_timestamp`` defaults to the largest record timestamp (Kafka puts the log append time there for
    LOG_APPEND_TIME batches; pass it). An empty ``records`` gives an empty batch with timestamps -1.
    """
    if offset_deltas is not None and len(offset_deltas) != len(records):
        raise ValueError("offset_deltas must have one entry per record")
    body = bytearray()
    if records:
        first_timestamp = records[0][3]
        for i, (key, value, headers, timestamp) in enumerate(records):
            delta = offset_deltas[i] if offset_deltas is not None else i
            _encode_record(body, delta, timestamp - first_timestamp, key, value, headers)
        last_offset_delta = offset_deltas[-1] if offset_deltas is not None else len(records) - 1
        computed_max = max(r[3] for r in records)
    else:
        first_timestamp = -1
        last_offset_delta = 0
        computed_max = -1
    if max_timestamp is None:
        max_timestamp = computed_max
    payload = compress(compression, body) if compression != Compression.NONE else bytes(body)
    attributes = int(compression) & _COMPRESSION_MASK
    if timestamp_type == TimestampType.LOG_APPEND_TIME:
        attributes |= _TIMESTAMP_TYPE_MASK
    if is_transactional:
        attributes |= _TRANSACTIONAL_MASK
    if is_control:
        attributes |= _CONTROL_MASK
    out = bytearray(BATCH_HEADER_SIZE)
    _HEADER.pack_into(
        out,
        0,
        base_offset,
        BATCH_HEADER_SIZE - LOG_OVERHEAD + len(payload),
        partition_leader_epoch,
        2,
        0,
        attributes,
        last_offset_delta,
        first_timestamp,
        max_timestamp,
        producer_id,
        producer_epoch,
        base_sequence,
        len(records),
    )
    out += payload
    _UINT32.pack_into(out, _CRC_OFFSET, crc32c(memoryview(out)[_ATTRIBUTES_OFFSET:]))
    return bytes(out)


def build_control_batch(
    control_type: ControlRecordType,
    *,
    producer_id: int,
    producer_epoch: int,
    coordinator_epoch: int,
    timestamp: int,
    base_offset: int = 0,
    partition_leader_epoch: int = -1,
) -> bytes:
    """A transaction marker (COMMIT/ABORT) batch as the transaction coordinator writes it.

    Key: version int16 (0) + type int16; value: version int16 (0) + coordinator_epoch int32.
    """
    key = struct.pack(">hh", 0, int(control_type))
    value = struct.pack(">hi", 0, coordinator_epoch)
    return build_batch(
        [(key, value, (), timestamp)],
        base_offset=base_offset,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        base_sequence=-1,
        partition_leader_epoch=partition_leader_epoch,
        is_transactional=True,
        is_control=True,
    )


def parse_control_record(record: Record) -> tuple[ControlRecordType, int]:
    """(type, coordinator_epoch) of a record from a control batch."""
    if record.key is None or len(record.key) < 4:
        raise CorruptRecordError("control record key shorter than 4 bytes")
    _version, ctype = struct.unpack_from(">hh", record.key, 0)
    try:
        kind = ControlRecordType(ctype)
    except ValueError:
        raise InvalidRecordError(f"unknown control record type {ctype}") from None
    if record.value is None or len(record.value) < 6:
        raise CorruptRecordError("control record value shorter than 6 bytes")
    _vversion, coordinator_epoch = struct.unpack_from(">hi", record.value, 0)
    return kind, coordinator_epoch


# ----------------------------------------------------------------------------------------------------
class BatchesSummary(NamedTuple):
    """What the produce path needs to know about one partition's batches, from headers only.

    ``offset_count`` is how many offsets ``assign_offsets`` consumes (sum of last_offset_delta + 1).
    ``offset_delta_of_max_timestamp`` is relative to the first assigned offset: the last offset of the
    first batch holding ``max_timestamp`` (Kafka's shallow offset of max timestamp).
    """

    batch_count: int
    record_count: int
    offset_count: int
    size_in_bytes: int
    first_batch: RecordBatch
    last_batch: RecordBatch
    max_timestamp: int
    offset_delta_of_max_timestamp: int
    producer_id: int
    producer_epoch: int
    first_sequence: int
    last_sequence: int
    is_transactional: bool
    is_control: bool
    codecs: frozenset[Compression]
    timestamp_type: TimestampType


def validate_batches(
    buf: bytes | bytearray | memoryview, *, max_batch_size: int, from_client: bool = True
) -> BatchesSummary:
    """Walk all batches with header-only work, check them as Kafka's LogValidator does, summarize.

    Always: magic 2, sane lengths, CRC32C, known codec, each batch within ``max_batch_size``
    (``RecordTooLargeError``). With ``from_client`` (a Produce request, not replication): a positive
    records_count equal to last_offset_delta + 1, no control batches, a base sequence when there is a
    producer id, and exactly one batch (Kafka: "Compressed outer record has more than one batch" applies to
    every v2 batch).
    """
    view = memoryview(buf).cast("B") if not isinstance(buf, memoryview) else buf
    n = len(view)
    if n == 0:
        raise InvalidRecordError("no record batches")
    unpack = _HEADER.unpack_from
    pos = 0
    batch_count = record_count = offset_count = 0
    first_h: tuple | None = None
    max_ts = -1
    max_ts_delta = -1
    codecs: set[Compression] = set()
    first_view = last_view = view
    last_h: tuple = ()
    while pos < n:
        if n - pos > _MAGIC_OFFSET and view[pos + _MAGIC_OFFSET] in (0, 1):
            raise InvalidRecordError(
                f"message format v{view[pos + _MAGIC_OFFSET]} where record batch v2 is required"
            )
        if n - pos < BATCH_HEADER_SIZE:
            raise CorruptRecordError(f"{n - pos} trailing bytes are too few for a batch header")
        h = unpack(view, pos)
        length = h[1]
        if h[3] != 2:
            raise CorruptRecordError(f"unknown magic byte {h[3]}")
        if length < _MIN_BATCH_LENGTH:
            raise CorruptRecordError(f"batch_length {length} is below the minimum {_MIN_BATCH_LENGTH}")
        end = pos + LOG_OVERHEAD + length
        if end > n:
            raise CorruptRecordError(f"batch_length {length} runs past the end of the {n}-byte buffer")
        size = end - pos
        if size > max_batch_size:
            raise RecordTooLargeError(f"batch of {size} bytes exceeds the maximum {max_batch_size}")
        batch_view = view[pos:end]
        crc = crc32c(batch_view[_ATTRIBUTES_OFFSET:])
        if crc != h[4]:
            raise CorruptRecordError(f"record batch CRC 0x{h[4]:08x} does not match computed 0x{crc:08x}")
        attributes = h[5]
        code = attributes & _COMPRESSION_MASK
        if code > 4:
            raise InvalidRecordError(f"unknown compression codec {code}")
        last_offset_delta = h[6]
        count = h[12]
        if from_client:
            if last_offset_delta < 0:
                raise InvalidRecordError("batch has an invalid offset range")
            if count <= 0:
                raise InvalidRecordError(f"invalid reported count {count} for record batch")
            if count != last_offset_delta + 1:
                raise InvalidRecordError(
                    f"inconsistent batch offset range ({last_offset_delta + 1}) and record count ({count})"
                )
            if attributes & _CONTROL_MASK:
                raise InvalidRecordError("clients are not allowed to write control records")
            if h[9] >= 0 and h[11] < 0:
                raise InvalidRecordError(f"invalid sequence number {h[11]} for producer id {h[9]}")
            if batch_count >= 1:
                raise InvalidRecordError("a produce request may carry only one v2 batch per partition")
        elif last_offset_delta < 0 or count < 0:
            raise CorruptRecordError("negative last_offset_delta or records_count")
        codecs.add(_CODECS[code])
        span = last_offset_delta + 1
        if h[8] > max_ts:
            max_ts = h[8]
            max_ts_delta = offset_count + last_offset_delta
        if first_h is None:
            first_h = h
            first_view = batch_view
        last_h = h
        last_view = batch_view
        batch_count += 1
        record_count += count
        offset_count += span
        pos = end
    if first_h is None:  # unreachable: n > 0 means one iteration ran
        raise InvalidRecordError("no record batches")
    last_sequence = -1 if last_h[11] < 0 else _increment_sequence(last_h[11], last_h[6])
    first_batch = RecordBatch(first_view)
    return BatchesSummary(
        batch_count=batch_count,
        record_count=record_count,
        offset_count=offset_count,
        size_in_bytes=n,
        first_batch=first_batch,
        last_batch=first_batch if batch_count == 1 else RecordBatch(last_view),
        max_timestamp=max_ts,
        offset_delta_of_max_timestamp=max_ts_delta,
        producer_id=first_h[9],
        producer_epoch=first_h[10],
        first_sequence=first_h[11],
        last_sequence=last_sequence,
        is_transactional=bool(first_h[5] & _TRANSACTIONAL_MASK),
        is_control=bool(first_h[5] & _CONTROL_MASK),
        codecs=frozenset(codecs),
        timestamp_type=(
            TimestampType.LOG_APPEND_TIME if first_h[5] & _TIMESTAMP_TYPE_MASK else TimestampType.CREATE_TIME
        ),
    )


def assign_offsets(
    buf: bytearray | memoryview,
    first_offset: int,
    leader_epoch: int,
    *,
    log_append_time: int | None = None,
) -> int:
    """Patch every batch's base offset and partition leader epoch in place; returns the next offset.

    ``buf`` must be writable and already validated. With ``log_append_time`` each batch also becomes
    LOG_APPEND_TIME with that max timestamp, and its CRC is recomputed (the only case that needs it).
    """
    view = memoryview(buf).cast("B") if not isinstance(buf, memoryview) else buf
    n = len(view)
    pos = 0
    offset = first_offset
    pack_q = _BASE_OFFSET.pack_into
    pack_i = _INT32.pack_into
    while pos < n:
        if n - pos < BATCH_HEADER_SIZE:
            raise CorruptRecordError(f"{n - pos} trailing bytes are too few for a batch header")
        _base, length = _OFFSET_AND_LENGTH.unpack_from(view, pos)
        (last_offset_delta,) = _INT32.unpack_from(view, pos + 23)
        end = pos + LOG_OVERHEAD + length
        if length < _MIN_BATCH_LENGTH or end > n or last_offset_delta < 0:
            raise CorruptRecordError(f"batch at byte {pos} has an impossible length or offset delta")
        pack_q(view, pos, offset)
        pack_i(view, pos + _PARTITION_LEADER_EPOCH_OFFSET, leader_epoch)
        if log_append_time is not None:
            RecordBatch(view[pos:end]).set_max_timestamp(TimestampType.LOG_APPEND_TIME, log_append_time)
        offset += last_offset_delta + 1
        pos = end
    return offset

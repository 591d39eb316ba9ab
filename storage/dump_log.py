"""Kafka's ``kafka-dump-log`` (DumpLogSegments) for our log directories, plus a tool-grade v2 record codec.

Contract:
- ``python -m storage.dump_log --files A,B [--print-data-log] [--deep-iteration] [--verify-index-only]
  [--index-sanity-check] [--skip-record-metadata] [--max-message-size N] [--max-bytes N]``; paths may also be
  given positionally and may be directories (a partition dir or a whole log dir, dumped file by file).
- Understands ``.log`` (v2 batches; v0/v1 message sets shallowly), ``.index``, ``.timeindex``, ``.snapshot``
  (producer state), ``.txnindex``, ``leader-epoch-checkpoint``, ``*-offset-checkpoint``
  (``replication-``, ``recovery-point-``, ``log-start-``, ``cleaner-``), ``partition.metadata`` and
  ``meta.properties``. Output lines follow Kafka's DumpLogSegments so operators feel at home; problems go to
  stderr like Kafka's (index mismatches, non-consecutive offsets, trailing invalid bytes).
- The binary file formats are declared with construct (clarity over speed; this is a tool). The v2 record
  codec (``iter_batches``, ``decode_records``, ``encode_batch``) uses ``struct`` because the log cleaner
  shares it; it never runs on the produce/fetch hot path.
- Input is untrusted: every length is checked against what is left in the buffer and against explicit caps
  (``max_batch_bytes``, ``max_decompressed_bytes``); malformed data raises ``RecordDecodeError`` or
  ``CheckpointFormatError``, never an ``AssertionError`` or an unbounded allocation.
"""

from __future__ import annotations

import argparse
import base64
import os
import struct
import sys
import uuid
import zlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

import construct as cs
import cramjam
import crc32c

# ---------------------------------------------------------------------------------------------------------
# Errors and constants
# ---------------------------------------------------------------------------------------------------------


class RecordDecodeError(Exception):
    """A record batch (or a record inside it) is malformed, truncated or exceeds a size cap."""


class CheckpointFormatError(Exception):
    """A text checkpoint file does not follow Kafka's format."""


LOG_OVERHEAD = 12  # baseOffset int64 + length int32: the part of a batch not counted in its length field
BATCH_HEADER_SIZE = 61
MAGIC_V2 = 2
NO_SEQUENCE = -1
NO_PRODUCER_ID = -1
NO_TIMESTAMP = -1

COMPRESSION_NONE = 0
COMPRESSION_GZIP = 1
COMPRESSION_SNAPPY = 2
COMPRESSION_LZ4 = 3
COMPRESSION_ZSTD = 4
COMPRESSION_NAMES = {0: "none", 1: "gzip", 2: "snappy", 3: "lz4", 4: "zstd"}

ATTR_COMPRESSION_MASK = 0x07
ATTR_TIMESTAMP_TYPE = 0x08  # set = LogAppendTime
ATTR_TRANSACTIONAL = 0x10
ATTR_CONTROL = 0x20
ATTR_DELETE_HORIZON = 0x40  # KIP-534: baseTimestamp holds the delete horizon

DEFAULT_MAX_BATCH_BYTES = 128 * 1024 * 1024
DEFAULT_MAX_DECOMPRESSED_BYTES = 128 * 1024 * 1024
DEFAULT_MAX_MESSAGE_SIZE = 5 * 1024 * 1024  # Kafka's --max-message-size default
INT32_MAX = 2**31 - 1

_HEADER = struct.Struct(">qiibIhiqqqhii")
_CRC_START = 21  # attributes onwards is covered by the CRC32C
_XERIAL_MAGIC = b"\x82SNAPPY\x00"
_XERIAL_HEADER = _XERIAL_MAGIC + struct.pack(">ii", 1, 1)
_XERIAL_BLOCK = 32 * 1024  # Java's SnappyOutputStream default block size


# ---------------------------------------------------------------------------------------------------------
# The v2 record batch: header, records, varints, compression
# ---------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class BatchHeader:
    """The 61-byte v2 batch header (legacy v0/v1 message sets are mapped onto it with magic < 2)."""

    base_offset: int
    batch_length: int  # bytes after the length field
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

    @property
    def size_in_bytes(self) -> int:
        return self.batch_length + LOG_OVERHEAD

    @property
    def last_offset(self) -> int:
        return self.base_offset + self.last_offset_delta

    @property
    def compression(self) -> int:
        return self.attributes & ATTR_COMPRESSION_MASK

    @property
    def timestamp_type(self) -> str:
        if self.magic == 0:
            return "NoTimestampType"
        return "LogAppendTime" if self.attributes & ATTR_TIMESTAMP_TYPE else "CreateTime"

    @property
    def is_transactional(self) -> bool:
        return self.magic >= MAGIC_V2 and bool(self.attributes & ATTR_TRANSACTIONAL)

    @property
    def is_control(self) -> bool:
        return self.magic >= MAGIC_V2 and bool(self.attributes & ATTR_CONTROL)

    @property
    def delete_horizon_ms(self) -> int | None:
        if self.magic >= MAGIC_V2 and self.attributes & ATTR_DELETE_HORIZON:
            return self.base_timestamp
        return None

    @property
    def last_sequence(self) -> int:
        if self.base_sequence == NO_SEQUENCE:
            return NO_SEQUENCE
        return increment_sequence(self.base_sequence, self.last_offset_delta)


def increment_sequence(sequence: int, increment: int) -> int:
    """Kafka's sequences wrap from Int.MaxValue to 0."""
    if sequence > INT32_MAX - increment:
        return increment - (INT32_MAX - sequence) - 1
    return sequence + increment


@dataclass(frozen=True)
class Record:
    """One decoded v2 record with its absolute offset and timestamp."""

    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes | None], ...] = ()
    size_in_bytes: int = 0  # as encoded, including its length varint

    @property
    def key_size(self) -> int:
        return -1 if self.key is None else len(self.key)

    @property
    def value_size(self) -> int:
        return -1 if self.value is None else len(self.value)


def parse_batch_header(buf: bytes | bytearray | memoryview, pos: int = 0) -> BatchHeader:
    if len(buf) - pos < BATCH_HEADER_SIZE:
        raise RecordDecodeError(f"batch header needs {BATCH_HEADER_SIZE} bytes, {len(buf) - pos} left")
    return BatchHeader(*_HEADER.unpack_from(buf, pos))


def batch_crc_valid(batch: bytes | bytearray | memoryview) -> bool:
    """CRC32C over attributes..end, as Kafka's DefaultRecordBatch.isValid (v2 only)."""
    if len(batch) < BATCH_HEADER_SIZE:
        return False
    (stored,) = struct.unpack_from(">I", batch, 17)
    return crc32c.crc32c(bytes(memoryview(batch)[_CRC_START:])) == stored


def iter_batches(
    buf: bytes | bytearray | memoryview, *, max_batch_bytes: int = DEFAULT_MAX_BATCH_BYTES
) -> Iterator[tuple[int, BatchHeader, memoryview]]:
    """Yields (position, header, whole batch bytes) for each complete batch; stops at a partial tail.

    Legacy v0/v1 entries (magic read at byte 16) are yielded with a header whose magic is 0/1 and whose
    other v2 fields are placeholders; ``decode_records`` refuses them.
    """
    view = memoryview(buf)
    pos = 0
    end = len(view)
    while end - pos >= LOG_OVERHEAD + 5:
        base_offset, length = struct.unpack_from(">qi", view, pos)
        if length < 0 or length > max_batch_bytes or pos + LOG_OVERHEAD + length > end:
            return
        magic = view[pos + 16]
        if magic >= MAGIC_V2:
            if length + LOG_OVERHEAD < BATCH_HEADER_SIZE:
                return
            header = parse_batch_header(view, pos)
        else:
            header = _legacy_header(view, pos, base_offset, length, magic)
            if header is None:
                return
        yield pos, header, view[pos : pos + LOG_OVERHEAD + length]
        pos += LOG_OVERHEAD + length


def _legacy_header(view: memoryview, pos: int, offset: int, length: int, magic: int) -> BatchHeader | None:
    # v0: crc(4) magic(1) attributes(1) key value; v1 adds timestamp(8) after attributes.
    min_len = 14 if magic == 0 else 22
    if length < min_len:
        return None
    (crc,) = struct.unpack_from(">I", view, pos + 12)
    attributes = view[pos + 17]
    timestamp = struct.unpack_from(">q", view, pos + 18)[0] if magic == 1 else NO_TIMESTAMP
    # A legacy entry's offset is its last (inner) offset; expose it as a one-record batch.
    return BatchHeader(offset, length, -1, magic, crc, attributes & ATTR_COMPRESSION_MASK, 0, timestamp,
                       timestamp, NO_PRODUCER_ID, -1, NO_SEQUENCE, 1)


def legacy_crc_valid(batch: memoryview) -> bool:
    (stored,) = struct.unpack_from(">I", batch, 12)
    return zlib.crc32(bytes(batch[16:])) & 0xFFFFFFFF == stored


_FILE_CHUNK = 4 * 1024 * 1024


def iter_file_batches(
    fd: int, start: int, end: int, *, max_batch_bytes: int = DEFAULT_MAX_BATCH_BYTES
) -> Iterator[tuple[int, BatchHeader, memoryview]]:
    """Like ``iter_batches`` over bytes [start, end) of an open file, read in chunks (segments can be 1 GiB).

    Positions are absolute file positions. Stops at the first incomplete or oversized batch.
    """
    pos = start
    while end - pos >= LOG_OVERHEAD + 5:
        chunk = os.pread(fd, min(_FILE_CHUNK, end - pos), pos)
        consumed = 0
        for rel, header, batch in iter_batches(chunk, max_batch_bytes=max_batch_bytes):
            yield pos + rel, header, batch
            consumed = rel + header.size_in_bytes
        if consumed == 0:
            # Either one batch larger than the chunk, or an incomplete tail: read exactly what it declares.
            (length,) = struct.unpack_from(">i", chunk, 8)
            size = LOG_OVERHEAD + length
            if length < 0 or length > max_batch_bytes or pos + size > end or size <= len(chunk):
                return
            whole = os.pread(fd, size, pos)
            for rel, header, batch in iter_batches(whole, max_batch_bytes=max_batch_bytes):
                yield pos + rel, header, batch
                consumed = rel + header.size_in_bytes
            if consumed == 0:
                return
        pos += consumed


def _varint_at(buf: bytes, pos: int, end: int, max_bytes: int = 5) -> tuple[int, int]:
    """The zig-zag varint at ``pos`` (never reading at or past ``end``): (value, next position)."""
    if pos < end:
        b = buf[pos]
        if b < 0x80:  # one byte: the common case for lengths, deltas and counts
            return (b >> 1) ^ -(b & 1), pos + 1
    raw = 0
    shift = 0
    for _ in range(max_bytes):
        if pos >= end:
            raise RecordDecodeError("truncated varint")
        b = buf[pos]
        pos += 1
        raw |= (b & 0x7F) << shift
        if b < 0x80:
            return (raw >> 1) ^ -(raw & 1), pos
        shift += 7
    raise RecordDecodeError("varint too long")


def _nullable_at(buf: bytes, pos: int, end: int) -> tuple[bytes | None, int]:
    n, pos = _varint_at(buf, pos, end)
    if n < 0:
        if n != -1:
            raise RecordDecodeError(f"negative length {n}")
        return None, pos
    if n > end - pos:
        raise RecordDecodeError(f"length {n} exceeds the {end - pos} bytes left")
    return buf[pos : pos + n], pos + n


def decompress(codec: int, data: bytes | memoryview, max_size: int = DEFAULT_MAX_DECOMPRESSED_BYTES) -> bytes:
    """Inflates a batch's records section; raises RecordDecodeError on bad data or output above max_size."""
    try:
        if codec == COMPRESSION_NONE:
            out = bytes(data)
        elif codec == COMPRESSION_GZIP:
            d = zlib.decompressobj(wbits=47)  # 32+15: gzip or zlib header, auto-detected
            out = d.decompress(bytes(data), max_size + 1)
        elif codec == COMPRESSION_SNAPPY:
            out = _snappy_decompress(bytes(data), max_size)
        elif codec == COMPRESSION_LZ4:
            out = bytes(cramjam.lz4.decompress(bytes(data)))
        elif codec == COMPRESSION_ZSTD:
            out = bytes(cramjam.zstd.decompress(bytes(data)))
        else:
            raise RecordDecodeError(f"unknown compression codec {codec}")
    except RecordDecodeError:
        raise
    except Exception as exc:  # the codecs raise assorted types; one typed error for callers
        raise RecordDecodeError(f"{COMPRESSION_NAMES.get(codec, codec)} decompression failed: {exc}") from exc
    if len(out) > max_size:
        raise RecordDecodeError(f"decompressed size exceeds {max_size} bytes")
    return out


def _snappy_decompress(data: bytes, max_size: int) -> bytes:
    # Java clients write xerial-framed snappy; librdkafka may write raw snappy blocks. Accept both.
    if not data.startswith(_XERIAL_MAGIC):
        return bytes(cramjam.snappy.decompress_raw(data))
    pos = len(_XERIAL_HEADER)
    parts: list[bytes] = []
    total = 0
    while pos < len(data):
        if len(data) - pos < 4:
            raise RecordDecodeError("truncated xerial snappy block length")
        (n,) = struct.unpack_from(">i", data, pos)
        pos += 4
        if n < 0 or n > len(data) - pos:
            raise RecordDecodeError("bad xerial snappy block length")
        block = bytes(cramjam.snappy.decompress_raw(data[pos : pos + n]))
        total += len(block)
        if total > max_size:
            raise RecordDecodeError(f"decompressed size exceeds {max_size} bytes")
        parts.append(block)
        pos += n
    return b"".join(parts)


def compress(codec: int, data: bytes) -> bytes:
    """Compresses a records section the way Kafka's Java producer frames it for each codec."""
    if codec == COMPRESSION_NONE:
        return data
    if codec == COMPRESSION_GZIP:
        c = zlib.compressobj(wbits=31)
        return c.compress(data) + c.flush()
    if codec == COMPRESSION_SNAPPY:
        blocks = [_XERIAL_HEADER]
        for i in range(0, len(data), _XERIAL_BLOCK):
            raw = bytes(cramjam.snappy.compress_raw(data[i : i + _XERIAL_BLOCK]))
            blocks.append(struct.pack(">i", len(raw)) + raw)
        return b"".join(blocks)
    if codec == COMPRESSION_LZ4:
        return _lz4_frame(data)
    if codec == COMPRESSION_ZSTD:
        return bytes(cramjam.zstd.compress(data))
    raise ValueError(f"unknown compression codec {codec}")


_XXH_P1, _XXH_P2, _XXH_P3, _XXH_P4, _XXH_P5 = 2654435761, 2246822519, 3266489917, 668265263, 374761393
_M32 = 0xFFFFFFFF


def _rotl32(x: int, r: int) -> int:
    return ((x << r) | (x >> (32 - r))) & _M32


def _xxh32_short(data: bytes, seed: int = 0) -> int:
    """xxHash32 for inputs under 16 bytes: only the LZ4 frame descriptor checksum needs it."""
    if len(data) >= 16:
        raise ValueError("short-input xxHash32 only")
    h = (seed + _XXH_P5 + len(data)) & _M32
    i = 0
    while i + 4 <= len(data):
        (word,) = struct.unpack_from("<I", data, i)
        h = (_rotl32((h + word * _XXH_P3) & _M32, 17) * _XXH_P4) & _M32
        i += 4
    for b in data[i:]:
        h = (_rotl32((h + b * _XXH_P5) & _M32, 11) * _XXH_P1) & _M32
    h ^= h >> 15
    h = (h * _XXH_P2) & _M32
    h ^= h >> 13
    h = (h * _XXH_P3) & _M32
    return h ^ (h >> 16)


def _lz4_frame(data: bytes) -> bytes:
    # As Kafka's Java KafkaLZ4BlockOutputStream writes it: FLG 0x60 (v1, independent blocks, no checksums),
    # BD 0x40 (64 KiB blocks), a correct descriptor checksum (KIP-57), incompressible blocks stored raw.
    descriptor = bytes((0x60, 0x40))
    parts = [struct.pack("<I", 0x184D2204), descriptor, bytes(((_xxh32_short(descriptor) >> 8) & 0xFF,))]
    for i in range(0, len(data), 64 * 1024):
        chunk = data[i : i + 64 * 1024]
        block = bytes(cramjam.lz4.compress_block(chunk, store_size=False))
        if len(block) >= len(chunk):
            parts.append(struct.pack("<I", len(chunk) | 0x80000000) + chunk)
        else:
            parts.append(struct.pack("<I", len(block)) + block)
    parts.append(b"\x00\x00\x00\x00")
    return b"".join(parts)


def decode_records(
    batch: bytes | bytearray | memoryview,
    header: BatchHeader | None = None,
    *,
    max_decompressed_bytes: int = DEFAULT_MAX_DECOMPRESSED_BYTES,
) -> list[Record]:
    """Decodes every record of one v2 batch (the whole batch bytes, as yielded by ``iter_batches``)."""
    view = memoryview(batch)
    if header is None:
        header = parse_batch_header(view)
    if header.magic != MAGIC_V2:
        raise RecordDecodeError(f"record decoding supports magic 2 only, got {header.magic}")
    if header.size_in_bytes > len(view):
        raise RecordDecodeError("batch is truncated")
    if header.records_count < 0:
        raise RecordDecodeError(f"negative record count {header.records_count}")
    compressed = view[BATCH_HEADER_SIZE : header.size_in_bytes]
    body = decompress(header.compression, compressed, max_decompressed_bytes)
    # Each record takes at least 7 bytes, so a huge count in a small body is rejected before looping.
    if header.records_count > len(body):
        raise RecordDecodeError(f"record count {header.records_count} cannot fit in {len(body)} bytes")
    varint, nullable = _varint_at, _nullable_at
    base_offset = header.base_offset
    # With a KIP-534 delete horizon, baseTimestamp holds the horizon and deltas are relative to it.
    base_ts = header.base_timestamp
    log_append_time = header.max_timestamp if header.attributes & ATTR_TIMESTAMP_TYPE else None
    body_end = len(body)
    pos = 0
    records: list[Record] = []
    for _ in range(header.records_count):
        start = pos
        length, pos = varint(body, pos, body_end)
        if length < 1 or length > body_end - pos:
            raise RecordDecodeError(f"record length {length} does not fit the {body_end - pos} bytes left")
        rec_end = pos + length
        pos += 1  # record attributes: unused in v2
        ts_delta, pos = varint(body, pos, rec_end, 10)
        offset_delta, pos = varint(body, pos, rec_end)
        key, pos = nullable(body, pos, rec_end)
        value, pos = nullable(body, pos, rec_end)
        n_headers, pos = varint(body, pos, rec_end)
        headers: tuple[tuple[str, bytes | None], ...] = ()
        if n_headers:
            if n_headers < 0 or n_headers > rec_end - pos:
                raise RecordDecodeError(f"bad header count {n_headers}")
            hlist: list[tuple[str, bytes | None]] = []
            for _ in range(n_headers):
                hkey, pos = nullable(body, pos, rec_end)
                if hkey is None:
                    raise RecordDecodeError("null header key")
                hvalue, pos = nullable(body, pos, rec_end)
                hlist.append((hkey.decode("utf-8", errors="replace"), hvalue))
            headers = tuple(hlist)
        if pos != rec_end:
            raise RecordDecodeError("record length does not match its fields")
        timestamp = base_ts + ts_delta if log_append_time is None else log_append_time
        records.append(Record(base_offset + offset_delta, timestamp, key, value, headers, pos - start))
    if pos != body_end:
        raise RecordDecodeError(f"{body_end - pos} trailing bytes after {header.records_count} records")
    return records


def _varint(n: int) -> bytes:
    z = (n << 1) ^ (n >> 63)
    out = bytearray()
    while z >= 0x80:
        out.append((z & 0x7F) | 0x80)
        z >>= 7
    out.append(z)
    return bytes(out)


def _encode_nullable(b: bytes | None) -> bytes:
    return _varint(-1) if b is None else _varint(len(b)) + b


def encode_record(offset_delta: int, timestamp_delta: int, key: bytes | None, value: bytes | None,
                  headers: Sequence[tuple[str, bytes | None]] = ()) -> bytes:
    parts = [b"\x00", _varint(timestamp_delta), _varint(offset_delta), _encode_nullable(key),
             _encode_nullable(value), _varint(len(headers))]
    for hkey, hval in headers:
        parts.append(_encode_nullable(hkey.encode("utf-8")))
        parts.append(_encode_nullable(hval))
    body = b"".join(parts)
    return _varint(len(body)) + body


def encode_batch(
    records: Sequence[Record],
    *,
    base_offset: int,
    last_offset_delta: int | None = None,
    partition_leader_epoch: int = -1,
    compression: int = COMPRESSION_NONE,
    log_append_time: int | None = None,
    is_transactional: bool = False,
    is_control: bool = False,
    producer_id: int = NO_PRODUCER_ID,
    producer_epoch: int = -1,
    base_sequence: int = NO_SEQUENCE,
    base_timestamp: int | None = None,
) -> bytes:
    """Builds one v2 batch keeping each record's absolute offset (offset deltas from ``base_offset``).

    ``last_offset_delta`` defaults to the last record's delta; the cleaner passes the original batch's value
    so an emptied or trimmed batch still covers the producer's sequence range, as Kafka's cleaner does.
    With ``log_append_time`` the batch is LogAppendTime and that value is its max timestamp.
    """
    if records:
        first_ts = records[0].timestamp if base_timestamp is None else base_timestamp
        max_ts = max(r.timestamp for r in records)
        deltas = [r.offset - base_offset for r in records]
        if min(deltas) < 0 or max(deltas) > INT32_MAX:
            raise ValueError("record offsets must lie in [base_offset, base_offset + 2^31)")
        body = b"".join(
            encode_record(d, r.timestamp - first_ts, r.key, r.value, r.headers)
            for d, r in zip(deltas, records, strict=True)
        )
        lod = deltas[-1] if last_offset_delta is None else last_offset_delta
    else:
        first_ts = NO_TIMESTAMP if base_timestamp is None else base_timestamp
        max_ts = first_ts  # an empty batch (the cleaner's RETAIN_EMPTY) carries one timestamp in both fields
        body = b""
        lod = 0 if last_offset_delta is None else last_offset_delta
    attributes = compression & ATTR_COMPRESSION_MASK
    if log_append_time is not None:
        attributes |= ATTR_TIMESTAMP_TYPE
        max_ts = log_append_time
    if is_transactional:
        attributes |= ATTR_TRANSACTIONAL
    if is_control:
        attributes |= ATTR_CONTROL
    payload = compress(compression, body) if records else body
    length = BATCH_HEADER_SIZE - LOG_OVERHEAD + len(payload)
    out = bytearray(_HEADER.pack(base_offset, length, partition_leader_epoch, MAGIC_V2, 0, attributes, lod,
                                 first_ts, max_ts, producer_id, producer_epoch, base_sequence, len(records)))
    out += payload
    struct.pack_into(">I", out, 17, crc32c.crc32c(bytes(out[_CRC_START:])))
    return bytes(out)


def control_record_type(key: bytes | None) -> int | None:
    """Control record key: version int16, type int16 (0 = ABORT, 1 = COMMIT, ...)."""
    if key is None or len(key) < 4:
        return None
    return struct.unpack_from(">hh", key)[1]


CONTROL_TYPE_NAMES = {0: "ABORT", 1: "COMMIT", 2: "LEADER_CHANGE", 3: "SNAPSHOT_HEADER", 4: "SNAPSHOT_FOOTER",
                      5: "KRAFT_VERSION", 6: "KRAFT_VOTERS"}


# ---------------------------------------------------------------------------------------------------------
# Binary index / snapshot formats (construct: the tool's place for declarative structs)
# ---------------------------------------------------------------------------------------------------------

OffsetIndexEntry = cs.Struct("relative_offset" / cs.Int32sb, "position" / cs.Int32sb)  # 8 bytes
TimeIndexEntry = cs.Struct("timestamp" / cs.Int64sb, "relative_offset" / cs.Int32sb)  # 12 bytes
# Kafka's ProducerStateManager snapshot (version 1): version, crc32c of everything after it, entries.
ProducerSnapshotEntry = cs.Struct(
    "producer_id" / cs.Int64sb, "producer_epoch" / cs.Int16sb, "last_sequence" / cs.Int32sb,
    "last_offset" / cs.Int64sb, "offset_delta" / cs.Int32sb, "timestamp" / cs.Int64sb,
    "coordinator_epoch" / cs.Int32sb, "current_txn_first_offset" / cs.Int64sb,
)
ProducerSnapshotHeader = cs.Struct("version" / cs.Int16sb, "crc" / cs.Int32ub, "count" / cs.Int32sb)
# Kafka's TransactionIndex entry (AbortedTxn), 34 bytes.
AbortedTxnEntry = cs.Struct(
    "version" / cs.Int16sb, "producer_id" / cs.Int64sb, "first_offset" / cs.Int64sb,
    "last_offset" / cs.Int64sb, "last_stable_offset" / cs.Int64sb,
)
OFFSET_INDEX_ENTRY_SIZE = 8
TIME_INDEX_ENTRY_SIZE = 12


def base_offset_from_name(path: Path) -> int:
    stem = path.name.split(".")[0]
    if not stem.isdigit():
        raise ValueError(f"{path.name}: file name does not start with a base offset")
    return int(stem)


def read_offset_index(path: Path) -> list[tuple[int, int]]:
    """(absolute offset, position) entries; stops at the zero-filled preallocated tail like Kafka's tool."""
    base = base_offset_from_name(path)
    data = path.read_bytes()
    entries: list[tuple[int, int]] = []
    for i in range(len(data) // OFFSET_INDEX_ENTRY_SIZE):
        e = OffsetIndexEntry.parse(data[i * 8 : i * 8 + 8])
        if e.relative_offset == 0 and i > 0:
            break
        entries.append((base + e.relative_offset, e.position))
    return entries


def read_time_index(path: Path) -> list[tuple[int, int]]:
    """(timestamp, absolute offset) entries, stopping at the zero-filled tail."""
    base = base_offset_from_name(path)
    data = path.read_bytes()
    entries: list[tuple[int, int]] = []
    for i in range(len(data) // TIME_INDEX_ENTRY_SIZE):
        e = TimeIndexEntry.parse(data[i * 12 : i * 12 + 12])
        if e.relative_offset == 0 and i > 0:
            break
        entries.append((e.timestamp, base + e.relative_offset))
    return entries


# ---------------------------------------------------------------------------------------------------------
# Text checkpoint formats
# ---------------------------------------------------------------------------------------------------------


def _checkpoint_lines(text: str, path: Path) -> list[str]:
    lines = text.splitlines()
    if len(lines) < 2:
        raise CheckpointFormatError(f"{path}: expected a version line and a count line")
    if lines[0].strip() != "0":
        raise CheckpointFormatError(f"{path}: unsupported version {lines[0]!r}")
    try:
        count = int(lines[1])
    except ValueError:
        raise CheckpointFormatError(f"{path}: bad entry count {lines[1]!r}") from None
    body = lines[2:]
    if count != len(body):
        raise CheckpointFormatError(f"{path}: expected {count} entries, found {len(body)}")
    return body


def read_offset_checkpoint(path: Path) -> list[tuple[str, int, int]]:
    """Kafka's OffsetCheckpointFile ("0\\n<n>\\n<topic> <partition> <offset>\\n") as tuples."""
    out: list[tuple[str, int, int]] = []
    for line in _checkpoint_lines(path.read_text(encoding="utf-8"), path):
        parts = line.split(" ")
        if len(parts) != 3:
            raise CheckpointFormatError(f"{path}: malformed line {line!r}")
        try:
            out.append((parts[0], int(parts[1]), int(parts[2])))
        except ValueError:
            raise CheckpointFormatError(f"{path}: malformed line {line!r}") from None
    return out


def read_leader_epoch_checkpoint(path: Path) -> list[tuple[int, int]]:
    """Kafka's LeaderEpochCheckpointFile: "0\\n<n>\\n<epoch> <start_offset>\\n" -> [(epoch, start_offset)]."""
    out: list[tuple[int, int]] = []
    for line in _checkpoint_lines(path.read_text(encoding="utf-8"), path):
        parts = line.split(" ")
        if len(parts) != 2:
            raise CheckpointFormatError(f"{path}: malformed line {line!r}")
        try:
            out.append((int(parts[0]), int(parts[1])))
        except ValueError:
            raise CheckpointFormatError(f"{path}: malformed line {line!r}") from None
    return out


def read_properties(path: Path) -> dict[str, str]:
    """Java-properties subset used by meta.properties / partition.metadata ('k=v' or 'k: v', '#' comments)."""
    props: dict[str, str] = {}
    for raw in path.read_text(encoding="utf-8").splitlines():
        line = raw.strip()
        if not line or line.startswith(("#", "!")):
            continue
        cut = min((i for i in (line.find("="), line.find(":")) if i >= 0), default=-1)
        if cut < 0:
            raise CheckpointFormatError(f"{path}: malformed line {raw!r}")
        props[line[:cut].strip()] = line[cut + 1 :].strip()
    return props


def topic_id_from_base64(text: str) -> uuid.UUID:
    """Kafka prints Uuids as url-safe base64 without padding (22 chars)."""
    try:
        raw = base64.urlsafe_b64decode(text + "==")
    except ValueError:
        raise CheckpointFormatError(f"bad topic id {text!r}") from None
    if len(raw) != 16:
        raise CheckpointFormatError(f"bad topic id {text!r}")
    return uuid.UUID(bytes=raw)


# ---------------------------------------------------------------------------------------------------------
# The dump tool
# ---------------------------------------------------------------------------------------------------------


@dataclass
class DumpOptions:
    print_data_log: bool = False
    deep_iteration: bool = False
    verify_index_only: bool = False
    index_sanity_check: bool = False
    skip_record_metadata: bool = False
    max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE
    max_bytes: int = INT32_MAX

    @property
    def is_deep(self) -> bool:
        return self.print_data_log or self.deep_iteration


@dataclass
class DumpProblems:
    """What Kafka's tool prints to stderr at the end: index mismatches, offset gaps, time index errors."""

    index_mismatches: dict[str, list[tuple[int, int]]] = field(default_factory=dict)
    non_consecutive: dict[str, list[tuple[int, int]]] = field(default_factory=dict)
    time_index_mismatches: dict[str, list[tuple[int, int]]] = field(default_factory=dict)
    time_index_out_of_order: dict[str, list[tuple[int, int]]] = field(default_factory=dict)
    time_index_not_found: dict[str, list[tuple[int, int]]] = field(default_factory=dict)

    def print(self, err: TextIO) -> None:
        for name, pairs in self.index_mismatches.items():
            err.write(f"Mismatches in :{name}\n")
            for idx, log in sorted(pairs, reverse=True):
                err.write(f"  Index offset: {idx}, log offset: {log}\n")
        for name, pairs in self.time_index_mismatches.items():
            err.write(f"Found timestamp mismatch in :{name}\n")
            for idx, log in pairs:
                err.write(f"  Index timestamp: {idx}, log timestamp: {log}\n")
        for name, pairs in self.time_index_out_of_order.items():
            err.write(f"Found out of order timestamp in :{name}\n")
            for idx, prev in pairs:
                err.write(f"  Index timestamp: {idx}, Previously indexed timestamp: {prev}\n")
        for pairs in self.time_index_not_found.values():
            err.write("The following indexed offsets are not found in the log.\n")
            for idx, log in pairs:
                err.write(f"Indexed offset: {idx}, found log offset: {log}\n")
        for name, pairs in self.non_consecutive.items():
            err.write(f"Non-consecutive offsets in {name}\n")
            for prev, nxt in pairs:
                err.write(f"  {prev} is followed by {nxt}\n")

    @property
    def any(self) -> bool:
        return any((self.index_mismatches, self.non_consecutive, self.time_index_mismatches,
                    self.time_index_out_of_order, self.time_index_not_found))


def _bool(b: bool) -> str:
    return "true" if b else "false"


def _text(b: bytes) -> str:
    return b.decode("utf-8", errors="replace")


def format_batch(header: BatchHeader, position: int, is_valid: bool) -> str:
    if header.magic >= MAGIC_V2:
        horizon = header.delete_horizon_ms
        horizon_text = "OptionalLong.empty" if horizon is None else f"OptionalLong[{horizon}]"
        head = (f"baseOffset: {header.base_offset} lastOffset: {header.last_offset}"
                f" count: {header.records_count}"
                f" baseSequence: {header.base_sequence} lastSequence: {header.last_sequence}"
                f" producerId: {header.producer_id} producerEpoch: {header.producer_epoch}"
                f" partitionLeaderEpoch: {header.partition_leader_epoch}"
                f" isTransactional: {_bool(header.is_transactional)} isControl: {_bool(header.is_control)}"
                f" deleteHorizonMs: {horizon_text}")
    else:
        head = f"offset: {header.last_offset}"
    return (f"{head} position: {position} {header.timestamp_type}: {header.max_timestamp}"
            f" size: {header.size_in_bytes} magic: {header.magic}"
            f" compresscodec: {COMPRESSION_NAMES.get(header.compression, str(header.compression))}"
            f" crc: {header.crc} isvalid: {_bool(is_valid)}")


def format_record(header: BatchHeader, record: Record, opts: DumpOptions) -> str:
    parts: list[str] = []
    if not opts.skip_record_metadata:
        seq = NO_SEQUENCE if header.base_sequence == NO_SEQUENCE else increment_sequence(
            header.base_sequence, record.offset - header.base_offset)
        line = (f"| offset: {record.offset} {header.timestamp_type}: {record.timestamp}"
                f" keySize: {record.key_size} valueSize: {record.value_size}"
                f" sequence: {seq} headerKeys: [{','.join(k for k, _ in record.headers)}]")
        if header.is_control:
            ctype = control_record_type(record.key)
            if ctype in (0, 1) and record.value is not None and len(record.value) >= 6:
                coordinator_epoch = struct.unpack_from(">i", record.value, 2)[0]
                line += f" endTxnMarker: {CONTROL_TYPE_NAMES[ctype]} coordinatorEpoch: {coordinator_epoch}"
            else:
                line += f" controlType: {CONTROL_TYPE_NAMES.get(ctype or -1, 'UNKNOWN')}({ctype})"
        parts.append(line)
    if opts.print_data_log and not header.is_control:
        prefix = "| " if opts.skip_record_metadata else " "
        if record.key is not None:
            parts.append(f"{prefix}key: {_text(record.key)}")
            prefix = " "
        if record.value is not None:
            parts.append(f"{prefix}payload: {_text(record.value)}")
    return "".join(parts)


def dump_log_file(path: Path, opts: DumpOptions, out: TextIO, problems: DumpProblems) -> None:
    out.write(f"Log starting offset: {base_offset_from_name(path)}\n")
    with open(path, "rb") as f:
        end = min(os.fstat(f.fileno()).st_size, opts.max_bytes)
        valid_bytes = 0
        last_offset: int | None = None  # the first record of a segment starts the sequence (base > 0 is fine)
        for position, header, batch in iter_file_batches(f.fileno(), 0, end):
            is_valid = batch_crc_valid(batch) if header.magic >= MAGIC_V2 else legacy_crc_valid(batch)
            out.write(format_batch(header, position, is_valid) + "\n")
            if opts.is_deep and header.magic >= MAGIC_V2:
                try:
                    records = decode_records(batch, header)
                except RecordDecodeError as exc:
                    out.write(f"| cannot decode records: {exc}\n")
                    records = []
                for record in records:
                    if last_offset is not None and record.offset != last_offset + 1:
                        problems.non_consecutive.setdefault(str(path.absolute()), []).append(
                            (last_offset, record.offset))
                    last_offset = record.offset
                    out.write(format_record(header, record, opts) + "\n")
            valid_bytes += header.size_in_bytes
    trailing = end - valid_bytes
    if trailing > 0 and opts.max_bytes == INT32_MAX:
        out.write(f"Found {trailing} invalid bytes at the end of {path.name}\n")


def _batch_at(fd: int, position: int, max_size: int) -> BatchHeader | None:
    size = os.fstat(fd).st_size
    if position < 0 or position >= size:
        return None
    for _pos, header, _batch in iter_file_batches(fd, position, min(size, position + max_size)):
        return header
    return None


def dump_index_file(path: Path, opts: DumpOptions, out: TextIO, problems: DumpProblems) -> None:
    size = path.stat().st_size
    entries = read_offset_index(path)
    if not entries:
        out.write(f"{path} is empty.\n")
        return
    if opts.index_sanity_check:
        base = base_offset_from_name(path)
        if size % OFFSET_INDEX_ENTRY_SIZE != 0:
            raise CheckpointFormatError(f"Index file {path.name} is corrupt, found {size} bytes which is "
                                        f"neither positive nor a multiple of {OFFSET_INDEX_ENTRY_SIZE}.")
        if entries[-1][0] < base:
            raise CheckpointFormatError(f"Corrupt index found, index file ({path}) has non-zero size but the "
                                        f"last offset is {entries[-1][0]} which is less than the base offset "
                                        f"{base}.")
        out.write(f"{path} passed sanity check.\n")
        return
    with open(_sibling(path, ".log"), "rb") as f:
        for offset, position in entries:
            header = _batch_at(f.fileno(), position, opts.max_message_size)
            found = header.last_offset if header is not None else -1
            if found != offset:
                problems.index_mismatches.setdefault(str(path.absolute()), []).append((offset, found))
            if not opts.verify_index_only:
                out.write(f"offset: {offset} position: {position}\n")


def dump_time_index_file(path: Path, opts: DumpOptions, out: TextIO, problems: DumpProblems) -> None:
    entries = read_time_index(path)
    if opts.index_sanity_check:
        size = path.stat().st_size
        base = base_offset_from_name(path)
        if size % TIME_INDEX_ENTRY_SIZE != 0:
            raise CheckpointFormatError(f"Time index file {path.name} is corrupt, found {size} bytes which "
                                        f"is neither positive nor a multiple of {TIME_INDEX_ENTRY_SIZE}.")
        if entries and (entries[-1][1] < base or entries[-1][0] < entries[0][0]):
            raise CheckpointFormatError(f"Corrupt time index found, time index file ({path}) has non-zero "
                                        f"size but its last entry {entries[-1]} is out of order.")
        out.write(f"{path} passed sanity check.\n")
        return
    with open(_sibling(path, ".log"), "rb") as f:
        fd = f.fileno()
        # Headers only (small); a matching batch is re-read to check its records' timestamps.
        batches = [(p, h) for p, h, _b in iter_file_batches(fd, 0, os.fstat(fd).st_size)]
        _check_time_index(path, entries, batches, fd, opts, out, problems)


def _check_time_index(path: Path, entries: list[tuple[int, int]], batches: list[tuple[int, BatchHeader]],
                      fd: int, opts: DumpOptions, out: TextIO, problems: DumpProblems) -> None:
    key = str(path.absolute())
    prev_ts = NO_TIMESTAMP
    for timestamp, offset in entries:
        match = next(((p, h) for p, h in batches if h.last_offset >= offset), None)
        if match is None:
            problems.time_index_not_found.setdefault(key, []).append((offset, -1))
        elif match[1].last_offset != offset:
            problems.time_index_not_found.setdefault(key, []).append((offset, match[1].last_offset))
        else:
            position, header = match
            batch = memoryview(os.pread(fd, header.size_in_bytes, position))
            max_ts = header.max_timestamp
            if header.magic >= MAGIC_V2 and not header.attributes & ATTR_TIMESTAMP_TYPE:
                try:
                    max_ts = max((r.timestamp for r in decode_records(batch, header)), default=NO_TIMESTAMP)
                except RecordDecodeError:
                    max_ts = header.max_timestamp
            if max_ts != timestamp:
                problems.time_index_mismatches.setdefault(key, []).append((timestamp, max_ts))
            if prev_ts >= timestamp:
                problems.time_index_out_of_order.setdefault(key, []).append((timestamp, prev_ts))
        if not opts.verify_index_only:
            out.write(f"timestamp: {timestamp} offset: {offset}\n")
        prev_ts = timestamp


def dump_producer_snapshot(path: Path, out: TextIO) -> None:
    data = path.read_bytes()
    if len(data) < ProducerSnapshotHeader.sizeof():
        raise CheckpointFormatError(f"{path}: snapshot too short")
    head = ProducerSnapshotHeader.parse(data)
    if crc32c.crc32c(data[6:]) != head.crc:
        raise CheckpointFormatError(f"Snapshot is corrupt (CRC is no longer valid). Stored crc: {head.crc}")
    n = head.count
    entry_size = ProducerSnapshotEntry.sizeof()
    if n < 0 or 10 + n * entry_size != len(data):
        raise CheckpointFormatError(f"{path}: entry count {n} does not match the file size")
    for i in range(n):
        e = ProducerSnapshotEntry.parse(data[10 + i * entry_size : 10 + (i + 1) * entry_size])
        line = (f"producerId: {e.producer_id} producerEpoch: {e.producer_epoch}"
                f" coordinatorEpoch: {e.coordinator_epoch}"
                f" currentTxnFirstOffset: {e.current_txn_first_offset}"
                f" lastTimestamp: {e.timestamp}")
        if e.last_sequence >= 0:
            first_seq = max(0, e.last_sequence - e.offset_delta)
            line += (f" firstSequence: {first_seq} lastSequence: {e.last_sequence}"
                     f" lastOffset: {e.last_offset}"
                     f" offsetDelta: {e.offset_delta} timestamp: {e.timestamp}")
        out.write(line + "\n")


def dump_txn_index(path: Path, out: TextIO) -> None:
    data = path.read_bytes()
    size = AbortedTxnEntry.sizeof()
    for i in range(len(data) // size):
        e = AbortedTxnEntry.parse(data[i * size : (i + 1) * size])
        out.write(f"version: {e.version} producerId: {e.producer_id} firstOffset: {e.first_offset}"
                  f" lastOffset: {e.last_offset} lastStableOffset: {e.last_stable_offset}\n")


def dump_checkpoint(path: Path, out: TextIO) -> None:
    name = path.name
    if name == "leader-epoch-checkpoint":
        for epoch, start in read_leader_epoch_checkpoint(path):
            out.write(f"epoch: {epoch} startOffset: {start}\n")
    elif name.endswith("-offset-checkpoint"):
        for topic, partition, offset in read_offset_checkpoint(path):
            out.write(f"topic: {topic} partition: {partition} offset: {offset}\n")
    elif name == "partition.metadata":
        props = read_properties(path)
        topic_id = props.get("topic_id", "")
        out.write(f"version: {props.get('version', '')} topic_id: {topic_id}"
                  f" (uuid: {topic_id_from_base64(topic_id) if topic_id else 'none'})\n")
    elif name == "meta.properties":
        for k, v in sorted(read_properties(path).items()):
            out.write(f"{k}={v}\n")


CHECKPOINT_NAMES = {"leader-epoch-checkpoint", "partition.metadata", "meta.properties"}


def _sibling(path: Path, suffix: str) -> Path:
    return path.with_name(path.name.split(".")[0] + suffix)


def _is_checkpoint(path: Path) -> bool:
    return path.name in CHECKPOINT_NAMES or path.name.endswith("-offset-checkpoint")


def expand_paths(paths: Sequence[Path]) -> list[Path]:
    """Files as given; a directory expands to its files (sorted) and its partition sub-directories."""
    out: list[Path] = []
    for p in paths:
        if p.is_dir():
            children = sorted(p.iterdir())
            out.extend(c for c in children if c.is_file())
            out.extend(expand_paths([c for c in children if c.is_dir()]))
        else:
            out.append(p)
    return out


def dump_file(path: Path, opts: DumpOptions, out: TextIO, err: TextIO, problems: DumpProblems) -> None:
    out.write(f"Dumping {path}\n")
    suffix = path.suffix
    if suffix == ".log":
        dump_log_file(path, opts, out, problems)
    elif suffix == ".index":
        dump_index_file(path, opts, out, problems)
    elif suffix == ".timeindex":
        dump_time_index_file(path, opts, out, problems)
    elif suffix == ".snapshot":
        dump_producer_snapshot(path, out)
    elif suffix == ".txnindex":
        dump_txn_index(path, out)
    elif _is_checkpoint(path):
        dump_checkpoint(path, out)
    else:
        err.write(f"Ignoring unknown file {path}\n")


def run(paths: Sequence[Path], opts: DumpOptions, out: TextIO, err: TextIO) -> int:
    """Dumps every path; returns the exit status (1 if a file could not be read or parsed)."""
    problems = DumpProblems()
    status = 0
    for path in expand_paths(paths):
        try:
            dump_file(path, opts, out, err, problems)
        except (OSError, ValueError, RecordDecodeError, CheckpointFormatError, cs.ConstructError) as exc:
            err.write(f"{path}: {exc}\n")
            status = 1
    problems.print(err)
    return status


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m storage.dump_log",
        description="Parse a log file and dump its contents to the console, useful for debugging a seemingly "
                    "corrupt log segment (Kafka's kafka-dump-log).")
    parser.add_argument("paths", nargs="*", type=Path, help="files or directories (alternative to --files)")
    parser.add_argument("--files", default="", help="comma-separated data and index log files to dump")
    parser.add_argument("--print-data-log", action="store_true", help="print the messages' content")
    parser.add_argument("--deep-iteration", action="store_true", help="iterate records, not only batches")
    parser.add_argument("--verify-index-only", action="store_true", help="only report index mismatches")
    parser.add_argument("--index-sanity-check", action="store_true", help="only run the index sanity check")
    parser.add_argument("--skip-record-metadata", action="store_true", help="do not print record metadata")
    parser.add_argument("--max-message-size", type=int, default=DEFAULT_MAX_MESSAGE_SIZE)
    parser.add_argument("--max-bytes", type=int, default=INT32_MAX)
    args = parser.parse_args(argv)
    paths = list(args.paths) + [Path(p) for p in args.files.split(",") if p]
    if not paths:
        parser.error("Missing required argument \"[files]\"")
    opts = DumpOptions(print_data_log=args.print_data_log, deep_iteration=args.deep_iteration,
                       verify_index_only=args.verify_index_only, index_sanity_check=args.index_sanity_check,
                       skip_record_metadata=args.skip_record_metadata, max_message_size=args.max_message_size,
                       max_bytes=args.max_bytes)
    return run(paths, opts, sys.stdout, sys.stderr)


if __name__ == "__main__":
    sys.exit(main())

__all__ = [
    "BatchHeader", "Record", "RecordDecodeError", "CheckpointFormatError", "DumpOptions", "iter_batches",
    "parse_batch_header", "decode_records", "encode_batch", "encode_record", "compress", "decompress",
    "batch_crc_valid", "read_offset_index", "read_time_index", "read_offset_checkpoint",
    "read_leader_epoch_checkpoint", "read_properties", "run", "main",
]

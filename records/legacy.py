"""Legacy message sets (magic v0 and v1): reading, building, and conversion to and from v2 batches.

Contract:
- A message set is a run of ``offset int64, message_size int32, crc uint32, magic int8, attributes int8,
  [timestamp int64 (v1 only)], key bytes(int32 length, -1 = null), value bytes``. The CRC is zlib's CRC32
  over ``magic .. end`` and is always checked (``CorruptRecordError`` on mismatch).
- A compressed message (attributes bits 0-2: gzip 1, snappy 2, lz4 3) is a wrapper whose value is a
  compressed inner message set. ``iter_legacy_messages(deep=True)`` yields the inner messages with
  absolute offsets: v0 inner offsets are absolute already; v1 inner offsets are relative, and
  ``absolute = wrapper_offset - last_inner_offset + inner_offset`` when that base is >= 0 (a client's
  wrapper at offset 0 keeps the relative offsets). In a v1 LOG_APPEND_TIME wrapper
  every inner message takes the wrapper's timestamp. Nested compression is an ``InvalidRecordError``.
- lz4 wrappers in magic v0 carry the broken KIP-57 frame header checksum (Kafka reads and writes it that
  way for v0); the decoder accepts both checksums.
- ``up_convert`` turns a legacy set into one v2 batch with fresh offsets, as Kafka does for Produce v0-v2
  (``LogValidator``: v0 messages get timestamp -1; ``log_append_time`` stamps everything).
- ``down_convert`` turns v2 batches into a v0/v1 message set for Fetch v0-v3 clients, as Kafka's
  ``RecordsUtil.downConvert``: control batches are dropped, a compressed batch becomes one wrapper with
  the same codec, record headers are dropped (v0/v1 cannot carry them), zstd cannot be expressed
  (``UnsupportedCompressionTypeError``, Kafka's UNSUPPORTED_COMPRESSION_TYPE).
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

from records.batch import DEFAULT_MAX_DECOMPRESSED_SIZE, RecordBatch, iter_batches
from records.compression import Compression, compress, decompress, lz4_frame_compress
from records.errors import CorruptRecordError, InvalidRecordError
from records.header import TimestampType
from records.record import build_batch

__all__ = [
    "LegacyMessage",
    "UnsupportedCompressionTypeError",
    "build_message_set",
    "down_convert",
    "iter_legacy_messages",
    "up_convert",
]


class UnsupportedCompressionTypeError(InvalidRecordError):
    """A codec the target message format cannot carry (zstd in v0/v1): UNSUPPORTED_COMPRESSION_TYPE (76)."""


_OFFSET_AND_SIZE = struct.Struct(">qi")
_V0_HEADER = struct.Struct(">Ibb")  # crc, magic, attributes
_V1_HEADER = struct.Struct(">Ibbq")  # crc, magic, attributes, timestamp
_INT32 = struct.Struct(">i")
_LOG_OVERHEAD = 12
_MIN_MESSAGE_SIZE = {0: 4 + 1 + 1 + 4 + 4, 1: 4 + 1 + 1 + 8 + 4 + 4}
_COMPRESSION_MASK = 0x07
_TIMESTAMP_TYPE_MASK = 0x08
_NO_TIMESTAMP = -1


@dataclass(frozen=True, slots=True)
class LegacyMessage:
    """One v0/v1 message: a plain message, a decompressed inner message, or (shallow) a wrapper."""

    offset: int
    magic: int
    attributes: int
    timestamp: int
    timestamp_type: TimestampType
    key: bytes | None
    value: bytes | None
    crc: int
    raw: bytes = field(repr=False, default=b"")

    @property
    def compression(self) -> Compression:
        return Compression(self.attributes & _COMPRESSION_MASK)


def _read_bytes(buf: memoryview, pos: int, end: int) -> tuple[bytes | None, int]:
    if pos + 4 > end:
        raise CorruptRecordError("message truncated in a length field")
    (length,) = _INT32.unpack_from(buf, pos)
    pos += 4
    if length == -1:
        return None, pos
    if length < 0 or pos + length > end:
        raise CorruptRecordError(f"message key/value length {length} is invalid")
    return bytes(buf[pos:pos + length]), pos + length


def _iter_shallow(view: memoryview) -> Iterator[LegacyMessage]:
    n = len(view)
    pos = 0
    while pos < n:
        if n - pos < _LOG_OVERHEAD + 5:
            raise CorruptRecordError(f"{n - pos} trailing bytes are too few for a message")
        offset, size = _OFFSET_AND_SIZE.unpack_from(view, pos)
        magic = view[pos + 16]
        if magic not in (0, 1):
            raise InvalidRecordError(f"magic {magic} in a legacy message set")
        end = pos + _LOG_OVERHEAD + size
        if size < _MIN_MESSAGE_SIZE[magic] or end > n:
            raise CorruptRecordError(f"message size {size} is invalid or runs past the buffer")
        body = pos + _LOG_OVERHEAD
        if magic == 0:
            crc, _magic, attributes = _V0_HEADER.unpack_from(view, body)
            timestamp = _NO_TIMESTAMP
            kpos = body + _V0_HEADER.size
        else:
            crc, _magic, attributes, timestamp = _V1_HEADER.unpack_from(view, body)
            kpos = body + _V1_HEADER.size
        computed = zlib.crc32(view[body + 4:end])
        if computed != crc:
            raise CorruptRecordError(
                f"message at offset {offset} has CRC 0x{crc:08x}, computed 0x{computed:08x}"
            )
        codec = attributes & _COMPRESSION_MASK
        if codec > 3:
            raise InvalidRecordError(f"compression codec {codec} in a v{magic} message")
        key, vpos = _read_bytes(view, kpos, end)
        value, after = _read_bytes(view, vpos, end)
        if after != end:
            raise CorruptRecordError(f"message at offset {offset} has {end - after} stray bytes")
        ts_type = TimestampType.CREATE_TIME
        if magic == 1 and attributes & _TIMESTAMP_TYPE_MASK:
            ts_type = TimestampType.LOG_APPEND_TIME
        raw = bytes(view[pos:end])
        yield LegacyMessage(offset, magic, attributes, timestamp, ts_type, key, value, crc, raw)
        pos = end


def iter_legacy_messages(
    buf: bytes | bytearray | memoryview,
    *,
    deep: bool = True,
    max_size: int | None = DEFAULT_MAX_DECOMPRESSED_SIZE,
) -> Iterator[LegacyMessage]:
    """Messages of a v0/v1 set; ``deep`` expands compressed wrappers (bounded by ``max_size``)."""
    view = memoryview(buf).cast("B") if not isinstance(buf, memoryview) else buf
    for message in _iter_shallow(view):
        codec = message.attributes & _COMPRESSION_MASK
        if not deep or codec == 0:
            yield message
            continue
        if message.value is None:
            raise InvalidRecordError(f"compressed wrapper at offset {message.offset} has a null value")
        inner_set = decompress(Compression(codec), message.value, max_size)
        inner = list(_iter_shallow(memoryview(inner_set)))
        if not inner:
            raise InvalidRecordError(f"compressed wrapper at offset {message.offset} holds no messages")
        # A v1 wrapper from a client still has offset 0 (offsets are the broker's to assign); then the base
        # is negative and the relative inner offsets stand, as in Kafka's deep iterator.
        absolute_base = message.offset - inner[-1].offset if message.magic > 0 else -1
        for m in inner:
            if m.attributes & _COMPRESSION_MASK:
                raise InvalidRecordError("inner messages of a compressed wrapper must not be compressed")
            offset = m.offset + absolute_base if absolute_base >= 0 else m.offset
            timestamp, ts_type = m.timestamp, m.timestamp_type
            if message.magic > 0 and message.timestamp_type == TimestampType.LOG_APPEND_TIME:
                timestamp, ts_type = message.timestamp, TimestampType.LOG_APPEND_TIME
            yield LegacyMessage(
                offset, m.magic, m.attributes, timestamp, ts_type, m.key, m.value, m.crc, m.raw
            )


# ----------------------------------------------------------------------------------------------------
def _encode_message(
    out: bytearray,
    offset: int,
    magic: int,
    attributes: int,
    timestamp: int,
    key: bytes | None,
    value: bytes | None,
) -> None:
    body = bytearray()
    body.append(magic)
    body.append(attributes & 0xFF)
    if magic == 1:
        body += struct.pack(">q", timestamp)
    for part in (key, value):
        if part is None:
            body += b"\xff\xff\xff\xff"
        else:
            body += _INT32.pack(len(part))
            body += part
    out += _OFFSET_AND_SIZE.pack(offset, len(body) + 4)
    out += struct.pack(">I", zlib.crc32(body))
    out += body


LegacyInput = tuple[int, int, bytes | None, bytes | None]  # offset, timestamp, key, value


def build_message_set(
    messages: Sequence[LegacyInput],
    *,
    magic: int,
    compression: Compression = Compression.NONE,
    timestamp_type: TimestampType = TimestampType.CREATE_TIME,
) -> bytes:
    """A v0/v1 message set from ``(offset, timestamp, key, value)`` with absolute offsets.

    Compressed: one wrapper at the last offset; v1 inner offsets become relative to the first message, and
    the wrapper timestamp is the max timestamp (v1 LOG_APPEND_TIME: all timestamps are that value).
    """
    if magic not in (0, 1):
        raise ValueError(f"magic {magic} is not a legacy format")
    if compression == Compression.ZSTD:
        raise UnsupportedCompressionTypeError("zstd cannot be used with message format v0/v1")
    ts_bit = _TIMESTAMP_TYPE_MASK if magic == 1 and timestamp_type == TimestampType.LOG_APPEND_TIME else 0
    out = bytearray()
    if compression == Compression.NONE:
        for offset, timestamp, key, value in messages:
            _encode_message(out, offset, magic, ts_bit, timestamp, key, value)
        return bytes(out)
    if not messages:
        return b""
    first_offset = messages[0][0]
    inner = bytearray()
    for offset, timestamp, key, value in messages:
        inner_offset = offset - first_offset if magic == 1 else offset
        _encode_message(inner, inner_offset, magic, ts_bit, timestamp, key, value)
    if compression == Compression.LZ4 and magic == 0:
        payload = lz4_frame_compress(inner, broken_header_checksum=True)
    else:
        payload = compress(compression, inner)
    wrapper_ts = max(m[1] for m in messages) if magic == 1 else _NO_TIMESTAMP
    _encode_message(out, messages[-1][0], magic, int(compression) | ts_bit, wrapper_ts, None, payload)
    return bytes(out)


def up_convert(
    buf: bytes | bytearray | memoryview,
    *,
    base_offset: int,
    log_append_time: int | None,
    compression: Compression | None = None,
) -> bytes:
    """A legacy set as one v2 batch with offsets ``base_offset, base_offset+1, ...``.

    ``compression=None`` keeps the source codec (topic ``compression.type=producer``).
    """
    messages = list(iter_legacy_messages(buf))
    if not messages:
        raise InvalidRecordError("empty message set")
    if compression is None:
        compression = Compression.NONE
        for m in _iter_shallow(memoryview(buf).cast("B") if not isinstance(buf, memoryview) else buf):
            if m.compression != Compression.NONE:
                compression = m.compression
    if log_append_time is not None:
        records = [(m.key, m.value, (), log_append_time) for m in messages]
        return build_batch(
            records,
            base_offset=base_offset,
            compression=compression,
            timestamp_type=TimestampType.LOG_APPEND_TIME,
            max_timestamp=log_append_time,
        )
    records = [(m.key, m.value, (), m.timestamp) for m in messages]
    return build_batch(records, base_offset=base_offset, compression=compression)


def down_convert(buf_v2: bytes | bytearray | memoryview, to_magic: int) -> bytes:
    """v2 batches (legacy entries allowed in between) as a magic ``to_magic`` message set."""
    if to_magic not in (0, 1):
        raise ValueError(f"cannot down-convert to magic {to_magic}")
    out = bytearray()
    for entry in iter_batches(buf_v2, allow_legacy=True):
        if isinstance(entry, LegacyMessage):
            if entry.magic <= to_magic:
                out += entry.raw
                continue
            messages = list(iter_legacy_messages(entry.raw))
            codec = entry.compression
            ts_type = entry.timestamp_type
            rows = [(m.offset, m.timestamp, m.key, m.value) for m in messages]
        else:
            batch: RecordBatch = entry
            if batch.is_control:
                continue
            codec = batch.compression
            ts_type = batch.timestamp_type
            rows = [(r.offset, r.timestamp, r.key, r.value) for r in batch.records()]
            if not rows:
                continue
        if codec == Compression.ZSTD:
            raise UnsupportedCompressionTypeError("zstd batches cannot be down-converted to v0/v1")
        out += build_message_set(rows, magic=to_magic, compression=codec, timestamp_type=ts_type)
    return bytes(out)

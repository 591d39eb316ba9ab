"""Kafka's record compression codecs: gzip, snappy, lz4 and zstd, encode and decode.

Contract:
- ``compress(codec, data)`` writes what Kafka's Java producer writes:
  gzip: one gzip member; snappy: xerial framing (``\\x82SNAPPY\\x00``, version 1, compatible 1, then
  big-endian length-prefixed raw snappy blocks of at most 32 KiB input each, as xerial's
  ``SnappyOutputStream`` does); lz4: an LZ4 frame with FLG=0x60 (version 1, independent blocks, no
  checksums), BD=0x40 (64 KiB blocks), a correct header checksum (HC), incompressible blocks stored raw;
  zstd: one zstd frame.
- ``decompress(codec, data, max_size)`` reads everything clients write in practice: gzip (several members
  allowed); snappy both xerial-framed (Java) and plain raw snappy (librdkafka); lz4 frames with or without
  content size, block checksums or content checksum, with a correct HC or the broken HC that Kafka before
  0.10 wrote (KIP-57: the hash taken over magic+FLG+BD instead of FLG+BD); zstd (one or more frames).
  Block and content checksums inside lz4 frames are skipped, not verified: the batch CRC32C (v2) or the
  message CRC32 (v0/v1) already covers the compressed bytes.
- With ``max_size`` the decoder never produces more than ``max_size`` bytes of output (decompression
  bomb guard) and raises ``CorruptRecordError`` instead.
- Every failure on untrusted input is a ``CorruptRecordError``; codecs we do not know raise
  ``InvalidRecordError`` (both from ``records.errors``).
"""

from __future__ import annotations

import struct
import zlib
from enum import IntEnum
from typing import Any

from records.errors import CorruptRecordError, InvalidRecordError


def _cramjam() -> Any:
    """cramjam (lz4, snappy, zstd), imported by the first batch that needs it: its extension module is 1.4 MB of a
    broker's resident memory, which a broker that never sees those codecs does without (issue 35). After the first
    call this is a dictionary lookup."""
    import cramjam

    return cramjam

__all__ = [
    "Compression",
    "compress",
    "decompress",
    "lz4_frame_compress",
    "lz4_frame_decompress",
    "snappy_xerial_compress",
    "snappy_decompress",
    "xxh32",
]


class Compression(IntEnum):
    NONE = 0
    GZIP = 1
    SNAPPY = 2
    LZ4 = 3
    ZSTD = 4


# ---------------------------------------------------------------------------------------------------------
# xxHash32, only for the one-byte LZ4 frame header checksum (a handful of input bytes), so pure Python is
# fine. Written from the xxHash specification.
_P1 = 2654435761
_P2 = 2246822519
_P3 = 3266489917
_P4 = 668265263
_P5 = 374761393
_M32 = 0xFFFFFFFF


def _rotl(x: int, r: int) -> int:
    return ((x << r) | (x >> (32 - r))) & _M32


def _round(acc: int, lane: int) -> int:
    acc = (acc + lane * _P2) & _M32
    return (_rotl(acc, 13) * _P1) & _M32


def xxh32(data: bytes | bytearray | memoryview, seed: int = 0) -> int:
    """xxHash32 of ``data`` (used for the LZ4 frame descriptor checksum)."""
    data = bytes(data)
    n = len(data)
    pos = 0
    if n >= 16:
        v1 = (seed + _P1 + _P2) & _M32
        v2 = (seed + _P2) & _M32
        v3 = seed & _M32
        v4 = (seed - _P1) & _M32
        while pos + 16 <= n:
            a, b, c, d = struct.unpack_from("<4I", data, pos)
            v1, v2, v3, v4 = _round(v1, a), _round(v2, b), _round(v3, c), _round(v4, d)
            pos += 16
        acc = (_rotl(v1, 1) + _rotl(v2, 7) + _rotl(v3, 12) + _rotl(v4, 18)) & _M32
    else:
        acc = (seed + _P5) & _M32
    acc = (acc + n) & _M32
    while pos + 4 <= n:
        (lane,) = struct.unpack_from("<I", data, pos)
        acc = (acc + lane * _P3) & _M32
        acc = (_rotl(acc, 17) * _P4) & _M32
        pos += 4
    while pos < n:
        acc = (acc + data[pos] * _P5) & _M32
        acc = (_rotl(acc, 11) * _P1) & _M32
        pos += 1
    acc ^= acc >> 15
    acc = (acc * _P2) & _M32
    acc ^= acc >> 13
    acc = (acc * _P3) & _M32
    acc ^= acc >> 16
    return acc


# ---------------------------------------------------------------------------------------------------------
# LZ4 frame (https://github.com/lz4/lz4/blob/dev/doc/lz4_Frame_format.md), as Kafka reads and writes it.
_LZ4_MAGIC = 0x184D2204
_LZ4_MAGIC_BYTES = struct.pack("<I", _LZ4_MAGIC)
_LZ4_UNCOMPRESSED_BIT = 0x80000000
_LZ4_BLOCK_SIZE = 64 * 1024
# FLG: version 01, block independence; BD: max block size code 4 (64 KiB). Exactly what Kafka writes.
_LZ4_FLG = 0x60
_LZ4_BD = 0x40


def _lz4_header_checksum(descriptor: bytes) -> int:
    return (xxh32(descriptor) >> 8) & 0xFF


def lz4_frame_compress(
    data: bytes | bytearray | memoryview, *, broken_header_checksum: bool = False
) -> bytes:
    """Encode ``data`` as Kafka's Java client does; ``broken_header_checksum`` writes the KIP-57 HC that
    Kafka uses for magic v0 message sets (the hash also covers the 4 magic bytes)."""
    view = memoryview(data).cast("B")
    header = _LZ4_MAGIC_BYTES + bytes((_LZ4_FLG, _LZ4_BD))
    hc = _lz4_header_checksum(header if broken_header_checksum else header[4:])
    parts = [header, bytes((hc,))]
    for start in range(0, len(view), _LZ4_BLOCK_SIZE):
        chunk = view[start:start + _LZ4_BLOCK_SIZE]
        block = bytes(_cramjam().lz4.compress_block(chunk, store_size=False))
        if len(block) >= len(chunk):
            parts.append(struct.pack("<I", len(chunk) | _LZ4_UNCOMPRESSED_BIT))
            parts.append(bytes(chunk))
        else:
            parts.append(struct.pack("<I", len(block)))
            parts.append(block)
    parts.append(b"\x00\x00\x00\x00")
    return b"".join(parts)


def lz4_frame_decompress(data: bytes | bytearray | memoryview, max_size: int | None = None) -> bytes:
    """Decode one LZ4 frame; accepts a correct or a KIP-57 header checksum."""
    view = memoryview(data).cast("B")
    n = len(view)
    if n < 7:
        raise CorruptRecordError("lz4 frame shorter than its header")
    (magic,) = struct.unpack_from("<I", view, 0)
    if magic != _LZ4_MAGIC:
        raise CorruptRecordError(f"lz4 frame has bad magic 0x{magic:08x}")
    flg, bd = view[4], view[5]
    if flg >> 6 != 1 or flg & 0x03 or bd & 0x8F:
        raise CorruptRecordError(f"lz4 frame descriptor not supported (FLG=0x{flg:02x}, BD=0x{bd:02x})")
    block_size_code = (bd >> 4) & 0x07
    if block_size_code < 4:
        raise CorruptRecordError(f"lz4 frame has invalid block size code {block_size_code}")
    max_block = 1 << (2 * block_size_code + 8)
    independent = bool(flg & 0x20)
    block_checksum = bool(flg & 0x10)
    has_content_size = bool(flg & 0x08)
    content_checksum = bool(flg & 0x04)
    pos = 6
    if has_content_size:
        if n < pos + 9:
            raise CorruptRecordError("lz4 frame truncated in its content size")
        (content_size,) = struct.unpack_from("<Q", view, pos)
        if max_size is not None and content_size > max_size:
            raise CorruptRecordError(f"lz4 content size {content_size} exceeds limit {max_size}")
        pos += 8
    if n < pos + 1:
        raise CorruptRecordError("lz4 frame truncated in its header checksum")
    hc = view[pos]
    correct_hc = _lz4_header_checksum(bytes(view[4:pos]))
    if hc != correct_hc and hc != _lz4_header_checksum(bytes(view[0:pos])):
        raise CorruptRecordError("lz4 frame descriptor checksum mismatch")
    pos += 1

    if not independent:
        # Linked blocks need the previous blocks as dictionary; let the full frame decoder handle them. It
        # insists on a correct HC, so hand it one. The output is bounded by LZ4's maximum ratio (255:1).
        fixed = bytearray(view)
        fixed[pos - 1] = correct_hc
        try:
            out = bytes(_cramjam().lz4.decompress(bytes(fixed)))
        except _cramjam().DecompressionError as exc:
            raise CorruptRecordError(f"lz4 frame cannot be decompressed: {exc}") from None
        if max_size is not None and len(out) > max_size:
            raise CorruptRecordError(f"lz4 output exceeds limit {max_size}")
        return out

    parts: list[bytes] = []
    total = 0
    scratch = bytearray(max_block)
    while True:
        if n < pos + 4:
            raise CorruptRecordError("lz4 frame truncated: no end mark")
        (word,) = struct.unpack_from("<I", view, pos)
        pos += 4
        if word == 0:
            if content_checksum:
                if n < pos + 4:
                    raise CorruptRecordError("lz4 frame truncated in its content checksum")
                pos += 4
            break
        size = word & ~_LZ4_UNCOMPRESSED_BIT
        if size > max_block or n < pos + size:
            raise CorruptRecordError(f"lz4 block of {size} bytes is truncated or over the {max_block} limit")
        block = view[pos:pos + size]
        pos += size
        if block_checksum:
            if n < pos + 4:
                raise CorruptRecordError("lz4 frame truncated in a block checksum")
            pos += 4
        if word & _LZ4_UNCOMPRESSED_BIT:
            out_block = bytes(block)
        else:
            try:
                produced = _cramjam().lz4.decompress_block_into(block, scratch, output_len=max_block)
            except _cramjam().DecompressionError as exc:
                raise CorruptRecordError(f"lz4 block cannot be decompressed: {exc}") from None
            out_block = bytes(scratch[:produced])
        total += len(out_block)
        if max_size is not None and total > max_size:
            raise CorruptRecordError(f"lz4 output exceeds limit {max_size}")
        parts.append(out_block)
    return b"".join(parts)


# ---------------------------------------------------------------------------------------------------------
# Snappy: xerial framing (Java) or raw (librdkafka).
_XERIAL_MAGIC = b"\x82SNAPPY\x00"
_XERIAL_HEADER = _XERIAL_MAGIC + struct.pack(">ii", 1, 1)
_XERIAL_BLOCK_SIZE = 32 * 1024


def snappy_xerial_compress(data: bytes | bytearray | memoryview) -> bytes:
    view = memoryview(data).cast("B")
    parts = [_XERIAL_HEADER]
    for start in range(0, len(view), _XERIAL_BLOCK_SIZE):
        block = bytes(_cramjam().snappy.compress_raw(view[start:start + _XERIAL_BLOCK_SIZE]))
        parts.append(struct.pack(">i", len(block)))
        parts.append(block)
    return b"".join(parts)


def _snappy_raw(block: memoryview, budget: int | None) -> bytes:
    try:
        size = _cramjam().snappy.decompress_raw_len(block)
    except _cramjam().DecompressionError as exc:
        raise CorruptRecordError(f"snappy block has a bad length preamble: {exc}") from None
    if budget is not None and size > budget:
        raise CorruptRecordError(f"snappy output exceeds limit (block of {size} bytes)")
    try:
        return bytes(_cramjam().snappy.decompress_raw(block))
    except _cramjam().DecompressionError as exc:
        raise CorruptRecordError(f"snappy block cannot be decompressed: {exc}") from None


def snappy_decompress(data: bytes | bytearray | memoryview, max_size: int | None = None) -> bytes:
    view = memoryview(data).cast("B")
    # The version/compat ints are not checked: some producers write them little-endian.
    if len(view) < 16 or bytes(view[:8]) != _XERIAL_MAGIC:
        return _snappy_raw(view, max_size)
    parts: list[bytes] = []
    total = 0
    pos = 16
    n = len(view)
    while pos < n:
        if n < pos + 4:
            raise CorruptRecordError("xerial snappy stream truncated in a block length")
        (size,) = struct.unpack_from(">i", view, pos)
        pos += 4
        if size < 0 or n < pos + size:
            raise CorruptRecordError(f"xerial snappy block length {size} is negative or truncated")
        out = _snappy_raw(view[pos:pos + size], None if max_size is None else max_size - total)
        pos += size
        total += len(out)
        parts.append(out)
    return b"".join(parts)


# ---------------------------------------------------------------------------------------------------------
def _gzip_decompress(view: memoryview, max_size: int | None) -> bytes:
    parts: list[bytes] = []
    total = 0
    data = bytes(view)
    try:
        while True:
            d = zlib.decompressobj(wbits=31)
            # max_length bounds what zlib produces, so a bomb stops at the limit.
            limit = 0 if max_size is None else max_size - total + 1
            out = d.decompress(data, limit)
            total += len(out)
            if max_size is not None and total > max_size:
                raise CorruptRecordError(f"gzip output exceeds limit {max_size}")
            if not d.eof:
                raise CorruptRecordError("gzip stream truncated")
            parts.append(out)
            data = d.unused_data
            if not data:
                break
    except zlib.error as exc:
        raise CorruptRecordError(f"gzip stream cannot be decompressed: {exc}") from None
    return b"".join(parts)


_ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"


def _zstd_frame_content_size(view: memoryview) -> int | None:
    """Frame_Content_Size from the first frame header, when the writer recorded it."""
    if len(view) < 6:
        return None
    descriptor = view[4]
    fcs_flag = descriptor >> 6
    single_segment = bool(descriptor & 0x20)
    pos = 5 if single_segment else 6
    pos += (0, 1, 2, 4)[descriptor & 0x03]
    size = (1 if single_segment else 0, 2, 4, 8)[fcs_flag]
    if size == 0 or len(view) < pos + size:
        return None
    value = int.from_bytes(view[pos:pos + size], "little")
    return value + 256 if size == 2 else value


def _zstd_decompress(view: memoryview, max_size: int | None) -> bytes:
    if len(view) < 4 or bytes(view[:4]) != _ZSTD_MAGIC:
        raise CorruptRecordError("zstd frame has bad magic")
    if max_size is None:
        try:
            return bytes(_cramjam().zstd.decompress(view))
        except _cramjam().DecompressionError as exc:
            raise CorruptRecordError(f"zstd frame cannot be decompressed: {exc}") from None
    # decompress_into stops with an error when its buffer is full, so every allocation is bounded. Start at
    # the declared content size (Java's streaming writer leaves it out; then guess) and grow 4x up to the
    # limit; one spare byte tells "exactly full" apart from "more to come".
    cap = max_size + 1
    declared = _zstd_frame_content_size(view)
    if declared is not None and declared > max_size:
        raise CorruptRecordError(f"zstd content size {declared} exceeds limit {max_size}")
    size = min(cap, declared + 1 if declared is not None else max(64 * 1024, 4 * len(view)))
    while True:
        out = bytearray(size)
        try:
            produced = _cramjam().zstd.decompress_into(view, out)
        except _cramjam().DecompressionError as exc:
            if "whole buffer" not in str(exc):
                raise CorruptRecordError(f"zstd frame cannot be decompressed: {exc}") from None
            produced = size
        if produced < size:
            del out[produced:]
            return bytes(out)
        if size >= cap:
            raise CorruptRecordError(f"zstd output exceeds limit {max_size}")
        size = min(cap, size * 4)


def compress(codec: Compression, data: bytes | bytearray | memoryview) -> bytes:
    """Encode ``data`` with ``codec`` the way Kafka's Java producer does."""
    if codec == Compression.NONE:
        return bytes(data)
    if codec == Compression.GZIP:
        return bytes(_cramjam().gzip.compress(data))
    if codec == Compression.SNAPPY:
        return snappy_xerial_compress(data)
    if codec == Compression.LZ4:
        return lz4_frame_compress(data)
    if codec == Compression.ZSTD:
        return bytes(_cramjam().zstd.compress(data, level=3))
    raise InvalidRecordError(f"unknown compression codec {codec}")


def decompress(codec: Compression, data: bytes | memoryview, max_size: int | None = None) -> bytes:
    """Decode ``data``; with ``max_size``, output larger than that raises ``CorruptRecordError``."""
    view = memoryview(data).cast("B") if not isinstance(data, memoryview) else data.cast("B")
    if codec == Compression.NONE:
        out = bytes(view)
        if max_size is not None and len(out) > max_size:
            raise CorruptRecordError(f"data exceeds limit {max_size}")
        return out
    if codec == Compression.GZIP:
        return _gzip_decompress(view, max_size)
    if codec == Compression.SNAPPY:
        return snappy_decompress(view, max_size)
    if codec == Compression.LZ4:
        return lz4_frame_decompress(view, max_size)
    if codec == Compression.ZSTD:
        return _zstd_decompress(view, max_size)
    raise InvalidRecordError(f"unknown compression codec {codec}")

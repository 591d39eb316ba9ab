"""Codecs against independent implementations (kafka-python's codec module over python-snappy, python-lz4,
zstandard, xxhash) and hand-built fixtures of the documented formats (xerial snappy, KIP-57 lz4)."""

from __future__ import annotations

import gzip
import os
import struct

import kafka.codec as kcodec
import lz4.frame
import pytest
import snappy
import xxhash
import zstandard
from hypothesis import given, settings
from hypothesis import strategies as st

from protocol.compression import (
    Compression,
    CorruptRecordError,
    InvalidRecordError,
    compress,
    decompress,
    lz4_frame_compress,
    xxh32,
)

CODECS = [c for c in Compression if c != Compression.NONE]
DATA = b"".join(b"record %d of a kafka batch; " % i for i in range(6000)) + os.urandom(90_000)


@pytest.mark.parametrize("codec", list(Compression), ids=lambda c: c.name)
@pytest.mark.parametrize("data", [b"", b"x", DATA], ids=["empty", "one", "large"])
def test_round_trip(codec: Compression, data: bytes) -> None:
    assert decompress(codec, compress(codec, data)) == data
    assert decompress(codec, memoryview(compress(codec, data))) == data


def test_decoded_by_independent_implementations() -> None:
    assert gzip.decompress(compress(Compression.GZIP, DATA)) == DATA
    assert kcodec.snappy_decode(compress(Compression.SNAPPY, DATA)) == DATA
    assert lz4.frame.decompress(compress(Compression.LZ4, DATA)) == DATA
    assert zstandard.ZstdDecompressor().decompressobj().decompress(compress(Compression.ZSTD, DATA)) == DATA


def test_reads_independent_encoders() -> None:
    assert decompress(Compression.GZIP, gzip.compress(DATA)) == DATA
    assert decompress(Compression.GZIP, gzip.compress(DATA[:1000]) + gzip.compress(DATA[1000:])) == DATA
    assert decompress(Compression.SNAPPY, kcodec.snappy_encode(DATA)) == DATA  # xerial, like Java
    assert decompress(Compression.SNAPPY, kcodec.snappy_encode(DATA, xerial_compatible=False)) == DATA
    assert decompress(Compression.LZ4, kcodec.lz4_encode(DATA)) == DATA  # content size set, no checksum
    assert decompress(Compression.ZSTD, kcodec.zstd_encode(DATA)) == DATA


def test_snappy_written_as_java_xerial_framing() -> None:
    out = compress(Compression.SNAPPY, DATA)
    assert out[:8] == b"\x82SNAPPY\x00"
    assert struct.unpack(">ii", out[8:16]) == (1, 1)
    # Walk the blocks per the format: each holds at most 32 KiB of input.
    pos, blocks = 16, []
    while pos < len(out):
        (size,) = struct.unpack_from(">i", out, pos)
        blocks.append(snappy.decompress(out[pos + 4:pos + 4 + size]))
        pos += 4 + size
    assert pos == len(out)
    assert all(len(b) <= 32 * 1024 for b in blocks) and b"".join(blocks) == DATA


def xerial_fixture(data: bytes, block: int, version_fmt: str = ">ii") -> bytes:
    out = bytearray(b"\x82SNAPPY\x00" + struct.pack(version_fmt, 1, 1))
    for i in range(0, len(data), block):
        raw = snappy.compress(data[i:i + block])
        out += struct.pack(">i", len(raw)) + raw
    return bytes(out)


@pytest.mark.parametrize("block", [1000, 32 * 1024, 1 << 20])
def test_reads_hand_built_xerial_streams(block: int) -> None:
    assert decompress(Compression.SNAPPY, xerial_fixture(DATA, block)) == DATA
    # Some producers write the version ints little-endian; readers ignore them.
    assert decompress(Compression.SNAPPY, xerial_fixture(DATA, block, "<ii")) == DATA


def test_reads_plain_snappy_like_librdkafka() -> None:
    assert decompress(Compression.SNAPPY, snappy.compress(DATA)) == DATA


def test_lz4_written_as_kafka_java_frame() -> None:
    out = compress(Compression.LZ4, DATA)
    assert struct.unpack_from("<I", out, 0)[0] == 0x184D2204
    assert out[4] == 0x60 and out[5] == 0x40
    assert out[6] == (xxhash.xxh32(out[4:6]).intdigest() >> 8) & 0xFF
    assert out[-4:] == b"\x00\x00\x00\x00"
    info = lz4.frame.get_frame_info(out)
    assert info["block_linked"] is False and info["content_checksum"] is False


def test_lz4_incompressible_block_stored_raw() -> None:
    data = os.urandom(100_000)
    out = compress(Compression.LZ4, data)
    (first_block,) = struct.unpack_from("<I", out, 7)
    assert first_block & 0x80000000 and first_block & 0x7FFFFFFF == 64 * 1024
    assert lz4.frame.decompress(out) == data and decompress(Compression.LZ4, out) == data


def test_lz4_kip57_broken_header_checksum_read_and_written() -> None:
    # kafka-python writes the pre-0.10 Kafka frame: HC over magic+FLG+BD.
    old = kcodec.lz4_encode_old_kafka(DATA)
    assert old[6] == (xxhash.xxh32(old[0:6]).intdigest() >> 8) & 0xFF
    assert decompress(Compression.LZ4, old) == DATA
    ours = lz4_frame_compress(DATA, broken_header_checksum=True)
    assert ours[6] == (xxhash.xxh32(ours[0:6]).intdigest() >> 8) & 0xFF
    assert kcodec.lz4_decode_old_kafka(ours) == DATA
    assert decompress(Compression.LZ4, ours) == DATA


def test_lz4_wrong_header_checksum_rejected() -> None:
    out = bytearray(compress(Compression.LZ4, DATA))
    good = out[6]
    broken = (xxhash.xxh32(bytes(out[0:6])).intdigest() >> 8) & 0xFF
    out[6] = next(v for v in range(256) if v not in (good, broken))
    with pytest.raises(CorruptRecordError):
        decompress(Compression.LZ4, bytes(out))


@pytest.mark.parametrize(
    "options",
    [
        {"content_checksum": True},
        {"block_checksum": True},
        {"block_linked": True},
        {"store_size": False, "block_linked": False},
        {"block_size": lz4.frame.BLOCKSIZE_MAX256KB, "block_linked": False},
        {"block_size": lz4.frame.BLOCKSIZE_MAX4MB, "content_checksum": True, "block_linked": False},
    ],
    ids=lambda o: ",".join(f"{k}={v}" for k, v in o.items()),
)
def test_lz4_frame_variants(options: dict) -> None:
    assert decompress(Compression.LZ4, lz4.frame.compress(DATA, **options)) == DATA


def test_xxh32_matches_reference() -> None:
    for n in (0, 1, 3, 4, 7, 15, 16, 17, 31, 32, 100):
        data = os.urandom(n)
        assert xxh32(data) == xxhash.xxh32(data).intdigest()
        assert xxh32(data, 12345) == xxhash.xxh32(data, seed=12345).intdigest()


@pytest.mark.parametrize("codec", CODECS, ids=lambda c: c.name)
def test_decompression_bomb_guard(codec: Compression) -> None:
    bomb = compress(codec, bytes(8 << 20))
    assert len(bomb) < 1 << 20
    with pytest.raises(CorruptRecordError):
        decompress(codec, bomb, max_size=1 << 20)
    assert decompress(codec, bomb, max_size=8 << 20) == bytes(8 << 20)


def test_bomb_guard_on_independent_encodings() -> None:
    zeros = bytes(4 << 20)
    for codec, blob in [
        (Compression.SNAPPY, snappy.compress(zeros)),
        (Compression.LZ4, lz4.frame.compress(zeros, block_linked=True)),
        (Compression.LZ4, lz4.frame.compress(zeros, store_size=False)),
        (Compression.ZSTD, zstandard.ZstdCompressor(write_content_size=False).compress(zeros)),
        (Compression.GZIP, gzip.compress(zeros)),
    ]:
        with pytest.raises(CorruptRecordError):
            decompress(codec, blob, max_size=100_000)


@pytest.mark.parametrize("codec", CODECS, ids=lambda c: c.name)
def test_garbage_and_truncation_raise_corrupt(codec: Compression) -> None:
    good = compress(codec, DATA)
    # b"\x00" would be a valid empty raw snappy block; b"\x05" promises 5 bytes and has none.
    for blob in (b"", b"\x05", os.urandom(64), good[: len(good) // 2], good[:10]):
        with pytest.raises(CorruptRecordError):
            decompress(codec, blob)


def test_unknown_codec_is_invalid() -> None:
    with pytest.raises(InvalidRecordError):
        compress(7, b"x")  # type: ignore[arg-type]
    with pytest.raises(InvalidRecordError):
        decompress(5, b"x")  # type: ignore[arg-type]


@settings(max_examples=60, deadline=None)
@given(codec=st.sampled_from(list(Compression)), data=st.binary(max_size=70_000))
def test_round_trip_property(codec: Compression, data: bytes) -> None:
    assert decompress(codec, compress(codec, data), max_size=len(data)) == data


@settings(max_examples=150, deadline=None)
@given(codec=st.sampled_from(CODECS), data=st.binary(max_size=300))
def test_arbitrary_input_only_raises_corrupt(codec: Compression, data: bytes) -> None:
    try:
        decompress(codec, data, max_size=1 << 16)
    except CorruptRecordError:
        pass


def test_zstd_without_content_size_and_concatenated_frames() -> None:
    streaming = zstandard.ZstdCompressor(write_content_size=False).compress(DATA)
    assert decompress(Compression.ZSTD, streaming, max_size=len(DATA)) == DATA
    two_frames = compress(Compression.ZSTD, DATA[:5000]) + compress(Compression.ZSTD, DATA[5000:])
    assert decompress(Compression.ZSTD, two_frames, max_size=len(DATA)) == DATA
    assert decompress(Compression.ZSTD, two_frames) == DATA
    with pytest.raises(CorruptRecordError):
        decompress(Compression.ZSTD, two_frames, max_size=len(DATA) - 1)

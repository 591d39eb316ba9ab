"""Legacy v0/v1 message sets against kafka-python's legacy implementation; up/down conversion."""

from __future__ import annotations

import struct
import zlib

import pytest
from kafka.record.legacy_records import LegacyRecordBatchBuilder
from kafka.record.memory_records import MemoryRecords

from protocol.legacy import (
    LegacyMessage,
    UnsupportedCompressionTypeError,
    build_message_set,
    down_convert,
    iter_legacy_messages,
    up_convert,
)
from protocol.records import (
    Compression,
    ControlRecordType,
    CorruptRecordError,
    InvalidRecordError,
    RecordBatch,
    TimestampType,
    build_batch,
    build_control_batch,
    iter_batches,
    read_magic,
)

LEGACY_CODECS = [Compression.NONE, Compression.GZIP, Compression.SNAPPY, Compression.LZ4]


def rows(n: int = 25) -> list[tuple[int, int, bytes | None, bytes | None]]:
    return [
        (i, 1_600_000_000_000 + 10 * i, None if i % 3 == 0 else b"k%d" % i, None if i % 5 == 4 else b"v" * i)
        for i in range(n)
    ]


def kafka_python_set(magic: int, codec: Compression, data) -> bytes:
    builder = LegacyRecordBatchBuilder(magic=magic, compression_type=int(codec), batch_size=1 << 22)
    for offset, ts, key, value in data:
        builder.append(offset, timestamp=ts, key=key, value=value)
    return bytes(builder.build())


def kafka_python_read(buf: bytes) -> list[tuple]:
    out = []
    for batch in MemoryRecords(buf):
        for r in batch:
            out.append((r.offset, -1 if r.timestamp is None else r.timestamp, r.key, r.value))
    return out


def ours(buf: bytes) -> list[tuple]:
    return [(m.offset, m.timestamp, m.key, m.value) for m in iter_legacy_messages(buf)]


@pytest.mark.parametrize("magic", [0, 1])
@pytest.mark.parametrize("codec", LEGACY_CODECS, ids=lambda c: c.name)
def test_reads_kafka_python_message_sets(magic: int, codec: Compression) -> None:
    data = rows()
    raw = kafka_python_set(magic, codec, data)
    assert read_magic(raw) == magic
    assert ours(raw) == kafka_python_read(raw)
    expected_ts = [ts if magic == 1 else -1 for _, ts, _, _ in data]
    assert [m[1] for m in ours(raw)] == expected_ts
    assert [(m[2], m[3]) for m in ours(raw)] == [(k, v) for _, _, k, v in data]


@pytest.mark.parametrize("magic", [0, 1])
@pytest.mark.parametrize("codec", LEGACY_CODECS, ids=lambda c: c.name)
def test_kafka_python_reads_our_message_sets(magic: int, codec: Compression) -> None:
    data = [(o + 1000, ts, k, v) for o, ts, k, v in rows()]
    raw = build_message_set(data, magic=magic, compression=codec)
    expected = [(o, ts if magic == 1 else -1, k, v) for o, ts, k, v in data]
    assert kafka_python_read(raw) == expected
    assert ours(raw) == expected


def test_v0_lz4_wrapper_uses_kip57_checksum() -> None:
    raw = build_message_set(rows(3), magic=0, compression=Compression.LZ4)
    [wrapper] = list(iter_legacy_messages(raw, deep=False))
    assert wrapper.compression == Compression.LZ4
    import xxhash

    assert wrapper.value[6] == (xxhash.xxh32(wrapper.value[0:6]).intdigest() >> 8) & 0xFF


def test_v1_log_append_time_wrapper_stamps_inner_messages() -> None:
    raw = build_message_set(rows(4), magic=1, compression=Compression.GZIP,
                            timestamp_type=TimestampType.LOG_APPEND_TIME)
    messages = list(iter_legacy_messages(raw))
    assert {m.timestamp for m in messages} == {max(ts for _, ts, _, _ in rows(4))}
    assert all(m.timestamp_type == TimestampType.LOG_APPEND_TIME for m in messages)


def test_crc_mismatch_and_truncation_are_corrupt() -> None:
    raw = bytearray(build_message_set(rows(3), magic=1))
    raw[30] ^= 0x01
    with pytest.raises(CorruptRecordError):
        list(iter_legacy_messages(bytes(raw)))
    good = build_message_set(rows(3), magic=0)
    for cut in (5, 20, len(good) - 1):
        with pytest.raises(CorruptRecordError):
            list(iter_legacy_messages(good[:cut]))


def test_impossible_lengths_are_corrupt() -> None:
    body = bytes([1, 0]) + struct.pack(">q", 5) + struct.pack(">i", 1000) + struct.pack(">i", -1)
    raw = struct.pack(">qiI", 0, len(body) + 4, zlib.crc32(body)) + body
    with pytest.raises(CorruptRecordError):
        list(iter_legacy_messages(raw))
    raw2 = bytearray(build_message_set(rows(2), magic=1))
    struct.pack_into(">i", raw2, 8, -5)
    with pytest.raises(CorruptRecordError):
        list(iter_legacy_messages(bytes(raw2)))


def test_nested_compression_is_invalid() -> None:
    inner = build_message_set(rows(2), magic=1, compression=Compression.GZIP)
    from protocol.compression import compress

    body = bytes([1, 1]) + struct.pack(">q", 0) + struct.pack(">i", -1)
    payload = compress(Compression.GZIP, inner)
    body += struct.pack(">i", len(payload)) + payload
    raw = struct.pack(">qiI", 1, len(body) + 4, zlib.crc32(body)) + body
    with pytest.raises(InvalidRecordError):
        list(iter_legacy_messages(raw))


@pytest.mark.parametrize("magic", [0, 1])
@pytest.mark.parametrize("codec", LEGACY_CODECS, ids=lambda c: c.name)
def test_up_convert_keeps_keys_values_timestamps(magic: int, codec: Compression) -> None:
    data = rows()
    raw = kafka_python_set(magic, codec, data)
    v2 = up_convert(raw, base_offset=5000, log_append_time=None)
    batch = RecordBatch(memoryview(v2))
    batch.ensure_valid()
    assert batch.compression == codec and batch.base_offset == 5000
    got = [(r.offset, r.timestamp, r.key, r.value) for r in batch.records()]
    assert got == [(5000 + i, ts if magic == 1 else -1, k, v) for i, (_, ts, k, v) in enumerate(data)]


def test_up_convert_log_append_time_and_codec_override() -> None:
    raw = kafka_python_set(1, Compression.SNAPPY, rows(5))
    v2 = up_convert(raw, base_offset=0, log_append_time=42, compression=Compression.ZSTD)
    batch = RecordBatch(memoryview(v2))
    assert batch.compression == Compression.ZSTD
    assert batch.timestamp_type == TimestampType.LOG_APPEND_TIME and batch.max_timestamp == 42
    assert [r.timestamp for r in batch.records()] == [42] * 5
    with pytest.raises(InvalidRecordError):
        up_convert(b"", base_offset=0, log_append_time=None)


@pytest.mark.parametrize("to_magic", [0, 1])
@pytest.mark.parametrize("codec", LEGACY_CODECS, ids=lambda c: c.name)
def test_down_convert_then_up_convert_round_trip(to_magic: int, codec: Compression) -> None:
    records = [(k, v, [], ts) for _, ts, k, v in rows()]
    v2 = build_batch(records, base_offset=300, compression=codec)
    v2 += build_batch([(b"tail", b"t", [("h", b"dropped")], 1_700_000_000_000)], base_offset=325)
    legacy = down_convert(v2, to_magic)
    assert read_magic(legacy) == to_magic
    expected = [(300 + i, ts if to_magic == 1 else -1, k, v) for i, (k, v, _, ts) in enumerate(records)]
    expected.append((325, 1_700_000_000_000 if to_magic == 1 else -1, b"tail", b"t"))
    assert kafka_python_read(legacy) == expected
    assert ours(legacy) == expected
    shallow = list(iter_legacy_messages(legacy, deep=False))
    if codec != Compression.NONE:
        assert shallow[0].compression == codec and shallow[0].offset == 324
    back = RecordBatch(memoryview(up_convert(legacy, base_offset=300, log_append_time=None)))
    assert [(r.offset, r.timestamp, r.key, r.value) for r in back.records()] == expected


def test_down_convert_skips_control_batches_and_keeps_log_append_time() -> None:
    data = build_batch([(None, b"a", [], 1)], base_offset=0, timestamp_type=TimestampType.LOG_APPEND_TIME,
                       max_timestamp=77, compression=Compression.GZIP)
    marker = build_control_batch(ControlRecordType.COMMIT, producer_id=1, producer_epoch=0,
                                 coordinator_epoch=0, timestamp=5, base_offset=1)
    legacy = down_convert(data + marker, 1)
    messages = list(iter_legacy_messages(legacy))
    assert [(m.offset, m.timestamp, m.value, m.timestamp_type) for m in messages] == [
        (0, 77, b"a", TimestampType.LOG_APPEND_TIME)
    ]


def test_down_convert_zstd_unsupported() -> None:
    v2 = build_batch([(None, b"a", [], 1)], compression=Compression.ZSTD)
    with pytest.raises(UnsupportedCompressionTypeError):
        down_convert(v2, 1)
    assert issubclass(UnsupportedCompressionTypeError, InvalidRecordError)


def test_down_convert_passes_legacy_entries_and_converts_v1_to_v0() -> None:
    v1 = build_message_set(rows(3), magic=1, compression=Compression.SNAPPY)
    v0 = build_message_set([(10, -1, b"x", b"y")], magic=0)
    mixed = v0 + v1
    entries = list(iter_batches(memoryview(mixed), allow_legacy=True))
    assert all(isinstance(e, LegacyMessage) for e in entries) and len(entries) == 2
    assert down_convert(mixed, 1) == mixed
    as_v0 = down_convert(mixed, 0)
    assert {m.magic for m in iter_legacy_messages(as_v0)} == {0}
    assert [m.value for m in iter_legacy_messages(as_v0)] == [b"y"] + [v for _, _, _, v in rows(3)]

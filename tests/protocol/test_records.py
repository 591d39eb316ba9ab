"""Record batch v2: byte compatibility with kafka-python's independent implementation, in-place patching,
typed errors, validate_batches / assign_offsets."""

from __future__ import annotations

import struct

import pytest
from crc32c import crc32c
from kafka.record.default_records import DefaultRecordBatch, DefaultRecordBatchBuilder
from kafka.record.memory_records import MemoryRecords, MemoryRecordsBuilder

from protocol.records import (
    BATCH_HEADER_SIZE,
    BatchesSummary,
    Compression,
    ControlRecordType,
    CorruptRecordError,
    InvalidRecordError,
    RecordBatch,
    RecordTooLargeError,
    TimestampType,
    assign_offsets,
    build_batch,
    build_control_batch,
    iter_batches,
    parse_control_record,
    read_magic,
    validate_batches,
)

CODECS = list(Compression)


Row = tuple[bytes | None, bytes | None, list[tuple[str, bytes | None]], int]


def sample_records(n: int = 50) -> list[Row]:
    rows = []
    for i in range(n):
        key = None if i % 4 == 0 else b"key-%d" % i
        value = None if i % 7 == 3 else (b"value-%d-" % i) * (i % 9)
        headers = [] if i % 3 else [("trace", b"t%d" % i), ("empty", None), ("ünï", b"")]
        rows.append((key, value, headers, 1_700_000_000_000 + i * 3 - (i % 5)))
    return rows


def kafka_python_batch(codec: Compression, rows, *, producer=(-1, -1, -1), transactional=False) -> bytes:
    builder = DefaultRecordBatchBuilder(
        magic=2,
        compression_type=int(codec),
        is_transactional=transactional,
        producer_id=producer[0],
        producer_epoch=producer[1],
        base_sequence=producer[2],
        batch_size=1 << 24,
    )
    for i, (key, value, headers, ts) in enumerate(rows):
        builder.append(i, timestamp=ts, key=key, value=value, headers=headers)
    return bytes(builder.build())


def as_tuples(records) -> list[tuple]:
    return [(r.offset, r.timestamp, r.key, r.value, [tuple(h) for h in r.headers]) for r in records]


@pytest.mark.parametrize("codec", CODECS, ids=lambda c: c.name)
def test_reads_kafka_python_batches_for_every_codec(codec: Compression) -> None:
    rows = sample_records()
    raw = kafka_python_batch(codec, rows, producer=(4711, 3, 100), transactional=True)
    theirs = DefaultRecordBatch(raw)
    batch = RecordBatch(memoryview(raw))
    batch.ensure_valid()
    assert batch.is_valid()
    assert batch.compression == codec
    assert batch.base_offset == theirs.base_offset == 0
    assert batch.batch_length == len(raw) - 12
    assert batch.size_in_bytes == len(raw)
    assert batch.magic == 2
    assert batch.crc == theirs.crc
    assert batch.attributes == theirs.attributes
    assert batch.is_transactional and not batch.is_control
    assert batch.timestamp_type == TimestampType.CREATE_TIME
    assert batch.last_offset_delta == theirs.last_offset_delta == len(rows) - 1
    assert batch.first_timestamp == theirs.first_timestamp == rows[0][3]
    assert batch.max_timestamp == theirs.max_timestamp == max(r[3] for r in rows)
    assert (batch.producer_id, batch.producer_epoch, batch.base_sequence) == (4711, 3, 100)
    assert batch.last_sequence == theirs.last_sequence == 100 + len(rows) - 1
    assert batch.records_count == len(rows)
    assert batch.last_offset == len(rows) - 1 and batch.next_offset == len(rows)
    ours = list(batch.records())
    assert as_tuples(ours) == as_tuples(theirs)
    assert [r.sequence for r in ours] == [100 + i for i in range(len(rows))]


@pytest.mark.parametrize("codec", CODECS, ids=lambda c: c.name)
def test_kafka_python_reads_our_batches_for_every_codec(codec: Compression) -> None:
    rows = sample_records()
    raw = build_batch(
        rows, base_offset=500, compression=codec, producer_id=9, producer_epoch=2, base_sequence=7
    )
    theirs = DefaultRecordBatch(raw)
    assert theirs.validate_crc()
    assert theirs.compression_type == int(codec)
    assert theirs.base_offset == 500
    assert (theirs.producer_id, theirs.producer_epoch, theirs.base_sequence) == (9, 2, 7)
    expected = [(500 + i, ts, k, v, [tuple(h) for h in hs]) for i, (k, v, hs, ts) in enumerate(rows)]
    assert as_tuples(theirs) == expected
    # And our reader agrees with our writer.
    assert as_tuples(RecordBatch(memoryview(raw)).records()) == expected


def test_uncompressed_batch_is_byte_identical_to_kafka_python() -> None:
    rows = sample_records(20)
    theirs = kafka_python_batch(Compression.NONE, rows, producer=(1, 0, 0))
    ours = build_batch(rows, producer_id=1, producer_epoch=0, base_sequence=0, partition_leader_epoch=0)
    assert ours == theirs


def test_reads_memory_records_builder_output_with_several_batches() -> None:
    builder = MemoryRecordsBuilder(magic=2, compression_type=1, batch_size=1 << 20, offset=0)
    for i in range(10):
        builder.append(timestamp=1000 + i, key=None, value=b"x%d" % i)
    builder.close()
    first = bytes(builder.buffer())
    second = build_batch([(None, b"y", [], 2000)], base_offset=10)
    blob = first + second
    batches = list(iter_batches(memoryview(blob)))
    assert [b.base_offset for b in batches] == [0, 10]
    values = [r.value for b in batches for r in b.records()]
    assert values == [b"x%d" % i for i in range(10)] + [b"y"]
    assert read_magic(blob) == 2


def test_base_offset_and_leader_epoch_patch_in_place_keep_crc() -> None:
    raw = bytearray(build_batch(sample_records(5), compression=Compression.LZ4))
    view = memoryview(raw)
    batch = RecordBatch(view)
    crc_before = batch.crc
    payload_before = bytes(raw[21:])
    batch.set_base_offset(123_456_789_000)
    batch.set_partition_leader_epoch(17)
    assert batch.base_offset == 123_456_789_000 and batch.partition_leader_epoch == 17
    assert batch.crc == crc_before and bytes(raw[21:]) == payload_before
    batch.ensure_valid()
    theirs = DefaultRecordBatch(bytes(raw))
    assert theirs.validate_crc() and theirs.base_offset == 123_456_789_000 and theirs.leader_epoch == 17
    assert [r.offset for r in batch.records()] == [123_456_789_000 + i for i in range(5)]


def test_set_max_timestamp_log_append_time_recomputes_crc() -> None:
    raw = bytearray(build_batch(sample_records(6), compression=Compression.GZIP))
    batch = RecordBatch(memoryview(raw))
    old_crc = batch.crc
    batch.set_max_timestamp(TimestampType.LOG_APPEND_TIME, 1_800_000_000_000)
    assert batch.timestamp_type == TimestampType.LOG_APPEND_TIME
    assert batch.max_timestamp == 1_800_000_000_000
    assert batch.crc != old_crc and batch.is_valid()
    assert batch.compression == Compression.GZIP
    assert all(r.timestamp == 1_800_000_000_000 for r in batch.records())
    theirs = DefaultRecordBatch(bytes(raw))
    assert theirs.validate_crc() and theirs.timestamp_type == 1
    assert all(r.timestamp == 1_800_000_000_000 for r in theirs)


def test_setters_on_read_only_buffer_raise() -> None:
    batch = RecordBatch(memoryview(build_batch(sample_records(1))))
    with pytest.raises(TypeError):
        batch.set_base_offset(5)


@pytest.mark.parametrize("position", range(21, 200, 7))
def test_flipped_byte_after_crc_field_is_detected(position: int) -> None:
    raw = bytearray(build_batch(sample_records(10)))
    raw[position] ^= 0x20
    batch = RecordBatch(memoryview(raw))
    assert not batch.is_valid()
    with pytest.raises(CorruptRecordError):
        batch.ensure_valid()
    with pytest.raises(CorruptRecordError):
        validate_batches(memoryview(raw), max_batch_size=1 << 20, from_client=False)


def test_control_batch_round_trip() -> None:
    raw = build_control_batch(
        ControlRecordType.COMMIT, producer_id=77, producer_epoch=4, coordinator_epoch=12, timestamp=999
    )
    batch = RecordBatch(memoryview(raw))
    assert batch.is_control and batch.is_transactional
    assert (batch.producer_id, batch.producer_epoch, batch.base_sequence) == (77, 4, -1)
    [record] = list(batch.records())
    assert record.key == struct.pack(">hh", 0, 1)
    assert parse_control_record(record) == (ControlRecordType.COMMIT, 12)
    theirs = list(DefaultRecordBatch(raw))
    assert theirs[0].commit and not theirs[0].abort
    abort = RecordBatch(memoryview(build_control_batch(
        ControlRecordType.ABORT, producer_id=1, producer_epoch=0, coordinator_epoch=0, timestamp=1
    )))
    assert parse_control_record(next(abort.records()))[0] == ControlRecordType.ABORT


# -- typed errors -----------------------------------------------------------------------------------------
def test_truncated_batch_raises_corrupt() -> None:
    raw = build_batch(sample_records(3))
    for cut in (0, 5, 16, 40, 60, len(raw) - 1):
        with pytest.raises(CorruptRecordError):
            list(iter_batches(memoryview(raw[:cut] if cut else b"\x00" * 11)))
    with pytest.raises(CorruptRecordError):
        RecordBatch(memoryview(raw[:-1]))


@pytest.mark.parametrize("length", [-1, 0, 48, 2**31 - 1])
def test_impossible_batch_lengths_raise_corrupt(length: int) -> None:
    raw = bytearray(build_batch(sample_records(3)))
    struct.pack_into(">i", raw, 8, length)
    with pytest.raises(CorruptRecordError):
        list(iter_batches(memoryview(raw)))
    with pytest.raises(CorruptRecordError):
        validate_batches(memoryview(raw), max_batch_size=1 << 30)


def test_legacy_magic_is_invalid_unless_allowed() -> None:
    from protocol.legacy import LegacyMessage, build_message_set

    legacy = build_message_set([(0, 5, b"k", b"v")], magic=1)
    assert read_magic(legacy) == 1
    with pytest.raises(InvalidRecordError):
        list(iter_batches(memoryview(legacy)))
    with pytest.raises(InvalidRecordError):
        validate_batches(memoryview(legacy), max_batch_size=1 << 20)
    [entry] = list(iter_batches(memoryview(legacy), allow_legacy=True))
    assert isinstance(entry, LegacyMessage) and entry.value == b"v"
    raw = bytearray(build_batch(sample_records(1)))
    raw[16] = 7
    with pytest.raises(CorruptRecordError):
        list(iter_batches(memoryview(raw)))


def bad_record_batch(record_bytes: bytes, count: int = 1) -> bytes:
    """A batch whose records section is given verbatim, with a valid CRC."""
    out = bytearray(BATCH_HEADER_SIZE)
    struct.pack_into(">qiibIhiqqqhii", out, 0, 0, 49 + len(record_bytes), -1, 2, 0, 0, count - 1, 0, 0,
                     -1, -1, -1, count)
    out += record_bytes
    struct.pack_into(">I", out, 17, crc32c(bytes(out[21:])))
    return bytes(out)


@pytest.mark.parametrize(
    "record_bytes",
    [
        b"\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff",  # varint never ends
        b"\x01",  # negative length (zigzag 1 == -1)
        b"\x7e\x00",  # length 63 past the end
        b"\x0e\x00\x00\x00\x07\x00\x00\x00",  # key length -4
        b"\x0e\x00\x00\x00\x40\x00\x00\x00",  # key length 32 past record end
        b"\x0c\x00\x00\x00\x01\x01\x03",  # header count -2
        b"\x10\x00\x00\x00\x01\x01\x00\x00",  # record declares 8 bytes, uses 6
    ],
)
def test_malformed_records_raise_corrupt(record_bytes: bytes) -> None:
    batch = RecordBatch(memoryview(bad_record_batch(record_bytes)))
    batch.ensure_valid()
    with pytest.raises(CorruptRecordError):
        list(batch.records())


def test_records_count_larger_than_payload_raises() -> None:
    good = build_batch([(None, b"v", [], 1)])
    records_section = good[BATCH_HEADER_SIZE:]
    with pytest.raises(CorruptRecordError):
        list(RecordBatch(memoryview(bad_record_batch(records_section, count=2))).records())
    with pytest.raises(CorruptRecordError):
        list(RecordBatch(memoryview(bad_record_batch(records_section, count=1_000_000))).records())


def test_unknown_codec_is_invalid() -> None:
    raw = bytearray(build_batch(sample_records(2)))
    struct.pack_into(">h", raw, 21, 6)
    struct.pack_into(">I", raw, 17, crc32c(bytes(raw[21:])))
    with pytest.raises(InvalidRecordError):
        list(RecordBatch(memoryview(raw)).records())
    with pytest.raises(InvalidRecordError):
        validate_batches(memoryview(raw), max_batch_size=1 << 20)


# -- validate_batches / assign_offsets ---------------------------------------------------------------------
def test_validate_batches_summary_single_client_batch() -> None:
    rows = sample_records(30)
    raw = build_batch(rows, compression=Compression.SNAPPY, producer_id=5, producer_epoch=1, base_sequence=40,
                      is_transactional=True)
    s = validate_batches(memoryview(raw), max_batch_size=1 << 20)
    assert isinstance(s, BatchesSummary)
    assert (s.batch_count, s.record_count, s.offset_count, s.size_in_bytes) == (1, 30, 30, len(raw))
    assert s.max_timestamp == max(r[3] for r in rows)
    assert s.offset_delta_of_max_timestamp == 29
    assert (s.producer_id, s.producer_epoch, s.first_sequence, s.last_sequence) == (5, 1, 40, 69)
    assert s.is_transactional and not s.is_control
    assert s.codecs == frozenset({Compression.SNAPPY})
    assert s.first_batch.base_offset == 0 and s.last_batch is not None


def test_validate_batches_replication_many_batches() -> None:
    a = build_batch([(None, b"a", [], 10), (None, b"b", [], 30)], base_offset=0)
    b = build_batch([(None, b"c", [], 20)], base_offset=2, compression=Compression.ZSTD)
    c = build_control_batch(ControlRecordType.ABORT, producer_id=1, producer_epoch=0, coordinator_epoch=0,
                            timestamp=5, base_offset=3)
    blob = a + b + c
    s = validate_batches(memoryview(blob), max_batch_size=1 << 20, from_client=False)
    assert (s.batch_count, s.record_count, s.offset_count) == (3, 4, 4)
    assert s.max_timestamp == 30 and s.offset_delta_of_max_timestamp == 1
    assert s.codecs == frozenset({Compression.NONE, Compression.ZSTD})
    assert s.last_batch.is_control
    with pytest.raises(InvalidRecordError):
        validate_batches(memoryview(a + b), max_batch_size=1 << 20)  # two batches from a client


def test_validate_batches_client_checks() -> None:
    with pytest.raises(InvalidRecordError):
        validate_batches(memoryview(b""), max_batch_size=100)
    control = build_control_batch(ControlRecordType.COMMIT, producer_id=1, producer_epoch=0,
                                  coordinator_epoch=0, timestamp=1)
    with pytest.raises(InvalidRecordError, match="control"):
        validate_batches(memoryview(control), max_batch_size=1 << 20)
    no_sequence = build_batch([(None, b"v", [], 1)], producer_id=3, producer_epoch=0, base_sequence=-1)
    with pytest.raises(InvalidRecordError, match="sequence"):
        validate_batches(memoryview(no_sequence), max_batch_size=1 << 20)
    gap = build_batch([(None, b"v", [], 1), (None, b"w", [], 1)], offset_deltas=[0, 5])
    with pytest.raises(InvalidRecordError, match="inconsistent"):
        validate_batches(memoryview(gap), max_batch_size=1 << 20)
    assert validate_batches(memoryview(gap), max_batch_size=1 << 20, from_client=False).offset_count == 6
    big = build_batch([(None, b"x" * 5000, [], 1)])
    with pytest.raises(RecordTooLargeError):
        validate_batches(memoryview(big), max_batch_size=4096)
    assert issubclass(RecordTooLargeError, InvalidRecordError)


def test_assign_offsets_patches_every_batch() -> None:
    a = build_batch([(None, b"a", [], 10), (None, b"b", [], 30)])
    b = build_batch([(b"k", b"c", [], 20)], compression=Compression.GZIP)
    buf = bytearray(a + b)
    next_offset = assign_offsets(buf, 1000, 7)
    assert next_offset == 1003
    batches = list(iter_batches(memoryview(buf)))
    assert [(x.base_offset, x.partition_leader_epoch, x.is_valid()) for x in batches] == [
        (1000, 7, True),
        (1002, 7, True),
    ]
    assert [r.offset for x in batches for r in x.records()] == [1000, 1001, 1002]
    theirs = [r.offset for batch in MemoryRecords(bytes(buf)) for r in batch]
    assert theirs == [1000, 1001, 1002]


def test_assign_offsets_with_log_append_time() -> None:
    buf = bytearray(build_batch([(None, b"a", [], 10)], compression=Compression.LZ4))
    assign_offsets(memoryview(buf), 5, 2, log_append_time=123456)
    batch = RecordBatch(memoryview(buf))
    assert batch.is_valid() and batch.timestamp_type == TimestampType.LOG_APPEND_TIME
    assert batch.max_timestamp == 123456 and next(batch.records()).timestamp == 123456


def test_empty_batch_build() -> None:
    raw = build_batch([], base_offset=10)
    batch = RecordBatch(memoryview(raw))
    assert batch.records_count == 0 and list(batch.records()) == []
    assert batch.first_timestamp == -1 and batch.max_timestamp == -1
    with pytest.raises(InvalidRecordError):
        validate_batches(memoryview(raw), max_batch_size=1 << 20)


def test_sequence_wraps_like_kafka() -> None:
    raw = build_batch([(None, b"a", [], 1)] * 3, producer_id=1, producer_epoch=0, base_sequence=2**31 - 2)
    batch = RecordBatch(memoryview(raw))
    assert [r.sequence for r in batch.records()] == [2**31 - 2, 2**31 - 1, 0]
    assert batch.last_sequence == 0


def test_validate_records_kafka_record_level_checks() -> None:
    rows = sample_records(8)
    batch = RecordBatch(memoryview(build_batch(rows, compression=Compression.SNAPPY)))
    assert batch.validate_records() == max(r[3] for r in rows)
    with pytest.raises(InvalidRecordError, match="key"):
        batch.validate_records(require_keys=True)  # sample row 0 has a null key
    keyed = RecordBatch(memoryview(build_batch([(b"k", b"v", [], 5), (b"j", None, [], 9)])))
    assert keyed.validate_records(require_keys=True) == 9
    gap = RecordBatch(memoryview(build_batch([(b"k", b"v", [], 1)] * 2, offset_deltas=[0, 3])))
    with pytest.raises(InvalidRecordError, match="offset delta"):
        gap.validate_records()


@pytest.mark.parametrize("codec", CODECS, ids=lambda c: c.name)
def test_build_batch_keeps_offset_gaps_and_the_cleaners_overrides(codec: Compression) -> None:
    """What the log cleaner writes: surviving records at their own offsets, the original last offset delta
    (the producer's sequence range) and, for an emptied batch, a header-only batch (Kafka's writeEmptyHeader)."""
    rows = [(b"key%d" % (i % 4), (b"value-%d " % i) * 40 if i % 5 else None, [("trace", b"t%d" % i)] if i % 2
             else [], 1_700_000_000_000 + i * 3) for i in range(0, 60, 3)]
    raw = build_batch(rows, base_offset=100, offset_deltas=[i for i in range(0, 60, 3)], last_offset_delta=59,
                      compression=codec, partition_leader_epoch=4, producer_id=9, producer_epoch=1, base_sequence=5)
    batch = RecordBatch(memoryview(raw))
    batch.ensure_valid()
    assert (batch.compression, batch.last_offset, batch.records_count, batch.last_sequence) == (codec, 159, 20, 64)
    assert batch.max_timestamp == rows[-1][3] and batch.partition_leader_epoch == 4
    assert [(r.offset, r.timestamp, r.key, r.value, list(r.headers)) for r in batch.records()] == [
        (100 + i * 3, ts, k, v, hs) for i, (k, v, hs, ts) in enumerate(rows)]
    if codec in (Compression.NONE, Compression.GZIP):  # the codecs kafka-python reads without extras
        theirs = DefaultRecordBatch(raw)
        assert theirs.validate_crc() and [r.offset for r in theirs] == [100 + i * 3 for i in range(20)]
    empty = build_batch([], base_offset=50, last_offset_delta=1, base_timestamp=777, compression=codec,
                        producer_id=9, producer_epoch=0, base_sequence=4)
    header_only = RecordBatch(memoryview(empty))
    assert len(empty) == BATCH_HEADER_SIZE and header_only.is_valid()
    assert (header_only.compression, header_only.last_offset, header_only.records_count) == (codec, 51, 0)
    assert header_only.first_timestamp == header_only.max_timestamp == 777 and header_only.last_sequence == 5
    assert list(header_only.records()) == []

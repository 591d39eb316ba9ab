"""Property tests (hypothesis) over records and codecs, and a bounded mutation fuzz loop: damaged batches
only ever raise CorruptRecordError / InvalidRecordError."""

from __future__ import annotations

import random
import struct
import time

from crc32c import crc32c
from hypothesis import given, settings
from hypothesis import strategies as st
from kafka.record.default_records import DefaultRecordBatch

from protocol.legacy import build_message_set, iter_legacy_messages
from protocol.records import (
    Compression,
    CorruptRecordError,
    InvalidRecordError,
    RecordBatch,
    TimestampType,
    build_batch,
    iter_batches,
    read_magic,
    validate_batches,
)

header_key = st.text(max_size=12)
optional_bytes = st.none() | st.binary(max_size=200)
record = st.tuples(
    optional_bytes,
    optional_bytes,
    st.lists(st.tuples(header_key, optional_bytes), max_size=4),
    st.integers(min_value=-1, max_value=2**50),
)


@settings(max_examples=120, deadline=None)
@given(
    records=st.lists(record, min_size=1, max_size=40),
    codec=st.sampled_from(list(Compression)),
    base_offset=st.integers(min_value=0, max_value=2**62),
    producer=st.sampled_from([(-1, -1, -1), (12, 0, 0), (2**40, 32000, 2**31 - 5)]),
)
def test_build_then_read_round_trip(records, codec, base_offset, producer) -> None:
    raw = build_batch(records, base_offset=base_offset, compression=codec, producer_id=producer[0],
                      producer_epoch=producer[1], base_sequence=producer[2])
    batch = RecordBatch(memoryview(raw))
    assert batch.is_valid()
    assert batch.records_count == len(records)
    assert batch.max_timestamp == max(r[3] for r in records)
    got = list(batch.records())
    assert [(r.key, r.value, r.headers, r.timestamp) for r in got] == [
        (k, v, list(h), ts) for k, v, h, ts in records
    ]
    assert [r.offset for r in got] == [base_offset + i for i in range(len(records))]
    # A client's batch starts at offset 0 (Kafka rejects any other); replicated batches keep their offsets.
    summary = validate_batches(memoryview(raw), max_batch_size=len(raw), from_client=base_offset == 0)
    assert summary.record_count == len(records)
    # kafka-python, an independent reader, agrees.
    theirs = list(DefaultRecordBatch(raw))
    assert [(r.offset, r.timestamp, r.key, r.value, [tuple(h) for h in r.headers]) for r in theirs] == [
        (r.offset, r.timestamp, r.key, r.value, r.headers) for r in got
    ]


@settings(max_examples=60, deadline=None)
@given(
    messages=st.lists(
        st.tuples(optional_bytes, optional_bytes, st.integers(0, 2**45)), min_size=1, max_size=20
    ),
    magic=st.sampled_from([0, 1]),
    codec=st.sampled_from([Compression.NONE, Compression.GZIP, Compression.SNAPPY, Compression.LZ4]),
)
def test_legacy_build_then_read_round_trip(messages, magic, codec) -> None:
    rows = [(100 + i, ts, k, v) for i, (k, v, ts) in enumerate(messages)]
    raw = build_message_set(rows, magic=magic, compression=codec)
    got = [(m.offset, m.timestamp, m.key, m.value) for m in iter_legacy_messages(raw)]
    assert got == [(o, ts if magic == 1 else -1, k, v) for o, ts, k, v in rows]


def _consume(buf: bytes) -> None:
    view = memoryview(buf)
    for batch in iter_batches(view, allow_legacy=True):
        if isinstance(batch, RecordBatch):
            batch.is_valid()
            for _ in batch.records(max_size=1 << 20):
                pass
            _ = (batch.timestamp_type, batch.last_sequence, batch.compression)
        else:
            list(iter_legacy_messages(batch.raw, max_size=1 << 20))
    if read_magic(view) == 2:
        validate_batches(view, max_batch_size=1 << 20, from_client=False)


def _seeds() -> list[bytes]:
    rows = [(b"k%d" % i, b"v" * (i * 3), [("h", b"x")] if i % 2 else [], 1000 + i) for i in range(12)]
    seeds = [build_batch(rows, compression=c) for c in Compression]
    seeds.append(build_batch(rows[:3], timestamp_type=TimestampType.LOG_APPEND_TIME, max_timestamp=5))
    seeds += [build_message_set([(i, 1000 + i, b"k", b"v%d" % i) for i in range(5)], magic=m, compression=c)
              for m in (0, 1) for c in (Compression.NONE, Compression.GZIP, Compression.LZ4)]
    return seeds


def _mutate(rng: random.Random, seed: bytes, fix_crc: bool) -> bytes:
    buf = bytearray(seed)
    choice = rng.randrange(6)
    if choice == 0:
        for _ in range(rng.randint(1, 4)):
            buf[rng.randrange(len(buf))] = rng.randrange(256)
    elif choice == 1:
        del buf[rng.randrange(len(buf)):]
    elif choice == 2:
        pos = rng.randrange(len(buf))
        buf[pos:pos] = rng.randbytes(rng.randint(1, 16))
    elif choice == 3:
        struct.pack_into(">i", buf, 8, rng.choice([-1, 0, 1, 48, 49, 2**31 - 1, len(buf) - 11]))
    elif choice == 4:
        struct.pack_into(">i", buf, 57 if len(buf) >= 61 else 0, rng.choice([-1, 0, 2, 1000, 2**31 - 1]))
    else:
        pos = rng.randrange(61, len(buf)) if len(buf) > 61 else 0
        buf[pos] = rng.choice([0x00, 0x01, 0x7F, 0x80, 0xFF])
    if fix_crc and len(buf) >= 61 and buf[16] == 2:
        # Re-sign the damage so the decoder, not the CRC, must catch it.
        struct.pack_into(">I", buf, 17, crc32c(bytes(buf[21:])))
    return bytes(buf)


def test_mutation_fuzz_only_typed_errors() -> None:
    rng = random.Random(20240611)
    seeds = _seeds()
    for seed in seeds:
        _consume(seed)  # the seeds themselves are valid
    deadline = time.monotonic() + 12
    iterations = 0
    typed_errors = 0
    while iterations < 150_000 and time.monotonic() < deadline:
        mutated = _mutate(rng, rng.choice(seeds), fix_crc=rng.random() < 0.7)
        try:
            _consume(mutated)
        except (CorruptRecordError, InvalidRecordError):
            typed_errors += 1
        iterations += 1
    assert iterations > 500
    assert typed_errors > iterations // 3

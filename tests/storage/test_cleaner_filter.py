"""The cleaner's per-batch rules (filter_batch), its transaction tracking and its segment-level helpers, on real
bytes and segments."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest
from kafka.record.memory_records import MemoryRecords

from records import BATCH_HEADER_SIZE, Compression, Record, RecordBatch, TimestampType, crc_is_valid, parse_header
from storage.cleaner import CleanedTransactionMetadata, CleanerStats, _group_segments, filter_batch, segment_batches
from storage.config import LogConfig
from storage.segment import LogSegment

from .conftest import encode_batch

T0 = 1_700_000_000_000


def batch(base: int, kvs: list[tuple[bytes | None, bytes | None]], **kw) -> bytes:
    records = [Record(base + i, T0 + i, k, v) for i, (k, v) in enumerate(kvs)]
    return encode_batch(records, base_offset=base, **kw)


def run_filter(raw: bytes, offset_map: dict[bytes, int], *, drop_tombstones: bool = False,
               aborted: bool = False, retain_empty: bool = False) -> tuple[bytes | None, CleanerStats]:
    stats = CleanerStats()
    header = parse_header(raw)
    out = filter_batch(header, memoryview(raw), offset_map, drop_tombstones=drop_tombstones, aborted=aborted,
                       retain_empty=retain_empty, stats=stats)
    return out, stats


def kafka_python_read(raw: bytes) -> list[tuple[int, bytes | None, bytes | None]]:
    out = []
    for b in MemoryRecords(bytearray(raw)):
        assert b.validate_crc()
        out.extend((r.offset, r.key, r.value) for r in b)
    return out


def test_fully_retained_batch_is_copied_byte_for_byte() -> None:
    raw = batch(10, [(b"a", b"1"), (b"b", b"2")], compression=Compression.GZIP, producer_id=5,
                producer_epoch=1, base_sequence=0)
    out, stats = run_filter(raw, {b"a": 10, b"b": 11})
    assert out == raw
    assert stats.records_read == 2 and stats.records_retained == 2


@pytest.mark.parametrize("codec", [0, 1, 2, 3, 4])
def test_partial_batch_keeps_offsets_producer_fields_and_compression(codec: int) -> None:
    raw = batch(100, [(b"a", b"1"), (b"b", b"2"), (b"a", b"3"), (b"c", b"4")], compression=codec,
                partition_leader_epoch=7, producer_id=42, producer_epoch=3, base_sequence=20)
    out, stats = run_filter(raw, {b"a": 102, b"b": 101, b"c": 103})
    assert out is not None and out != raw
    h = parse_header(out)
    orig = parse_header(raw)
    assert (h.base_offset, h.last_offset_delta, h.partition_leader_epoch) == (100, 3, 7)
    assert (h.producer_id, h.producer_epoch, h.base_sequence, h.last_sequence) == (42, 3, 20, 23)
    assert h.compression == codec and h.records_count == 3 and h.max_timestamp == orig.max_timestamp
    assert crc_is_valid(out, 0, len(out))
    assert [(r.offset, r.key, r.value, r.timestamp) for r in RecordBatch(out).records()] == [
        (101, b"b", b"2", T0 + 1), (102, b"a", b"3", T0 + 2), (103, b"c", b"4", T0 + 3)]
    assert stats.records_retained == 3
    if codec in (0, 1):
        assert kafka_python_read(out) == [(101, b"b", b"2"), (102, b"a", b"3"), (103, b"c", b"4")]


def test_tombstones_dropped_only_when_old_enough_and_keyless_always() -> None:
    raw = batch(0, [(b"a", None), (None, b"x"), (b"b", b"2")])
    out, stats = run_filter(raw, {b"a": 0, b"b": 2}, drop_tombstones=False)
    assert [(r.offset, r.key, r.value) for r in RecordBatch(out).records()] == [(0, b"a", None), (2, b"b", b"2")]
    assert stats.keyless_removed == 1 and stats.tombstones_removed == 0
    out, stats = run_filter(raw, {b"a": 0, b"b": 2}, drop_tombstones=True)
    assert [(r.offset, r.key) for r in RecordBatch(out).records()] == [(2, b"b")]
    assert stats.tombstones_removed == 1


def test_emptied_batch_dropped_or_kept_empty_for_the_producers_last_batch() -> None:
    raw = batch(50, [(b"a", b"1"), (b"a", b"2")], producer_id=9, producer_epoch=0, base_sequence=4,
                compression=Compression.ZSTD)
    out, _ = run_filter(raw, {b"a": 99})
    assert out is None
    out, _ = run_filter(raw, {b"a": 99}, retain_empty=True)
    h = parse_header(out)
    assert (h.base_offset, h.last_offset, h.records_count, h.last_sequence) == (50, 51, 0, 5)
    assert h.max_timestamp == T0 + 1 and h.base_timestamp == T0 + 1
    assert crc_is_valid(out, 0, len(out)) and len(out) == BATCH_HEADER_SIZE
    assert kafka_python_read(out) == []


def test_aborted_records_removed_control_batches_kept() -> None:
    raw = batch(0, [(b"a", b"1")], is_transactional=True, producer_id=3, producer_epoch=0, base_sequence=0)
    out, stats = run_filter(raw, {b"a": 0}, aborted=True)
    assert out is None and stats.aborted_removed == 1
    abort = Record(1, T0, struct.pack(">hh", 0, 0), struct.pack(">hi", 0, 0))
    marker = encode_batch([abort], base_offset=1, is_transactional=True, is_control=True, producer_id=3,
                             producer_epoch=0)
    out, _ = run_filter(marker, {}, drop_tombstones=True)
    assert out == marker


def test_log_append_time_is_preserved() -> None:
    raw = batch(0, [(b"a", b"1"), (b"b", b"2")], log_append_time=T0 + 500)
    out, _ = run_filter(raw, {b"a": 5, b"b": 1})
    h = parse_header(out)
    assert h.timestamp_type == TimestampType.LOG_APPEND_TIME and h.max_timestamp == T0 + 500
    assert [(r.offset, r.timestamp) for r in RecordBatch(out).records()] == [(1, T0 + 500)]


def _segment(tmp_path: Path, base: int, batches: list[bytes]) -> LogSegment:
    seg = LogSegment.open(tmp_path, base, LogConfig(segment_index_bytes=4096, index_interval_bytes=1))
    for b in batches:
        seg.append(b)
    return seg


def _txn(base: int, pid: int, kind: int | None = None) -> bytes:
    if kind is None:
        return batch(base, [(b"k", b"v")], is_transactional=True, producer_id=pid, producer_epoch=0,
                     base_sequence=base)
    return encode_batch([Record(base, T0, struct.pack(">hh", 0, kind), struct.pack(">hi", 0, 0))],
                        base_offset=base, is_transactional=True, is_control=True, producer_id=pid, producer_epoch=0)


def test_cleaned_transaction_metadata_follows_kafkas_marker_rules(tmp_path: Path) -> None:
    """Data of an aborted transaction (known from the index) is discardable; its ABORT marker stays while any
    of that data was seen, and goes into the cleaned index then; a COMMIT marker whose data was seen stays;
    markers of transactions with no data seen may go."""
    from storage.transaction_index import AbortedTxn, TransactionIndex

    seg = _segment(tmp_path, 0, [_txn(0, 1), _txn(1, 2), _txn(2, 1, kind=0), _txn(3, 2, kind=1),
                                 _txn(4, 3, kind=0), _txn(5, 4, kind=1)])
    txns = CleanedTransactionMetadata()
    aborted = AbortedTxn(1, 0, 2, 1)
    txns.add_aborted_transactions([aborted, AbortedTxn(3, 4, 4, 5)])
    index = TransactionIndex(0, tmp_path / "cleaned.txnindex")
    txns.cleaned_index = index
    seen = []
    for header, raw in segment_batches(seg):
        if header.is_control:
            seen.append(("marker", header.base_offset, txns.on_control_batch_read(header, raw)))
        else:
            seen.append(("data", header.base_offset, txns.on_batch_read(header)))
    assert seen == [("data", 0, True), ("data", 1, False), ("marker", 2, False), ("marker", 3, False),
                    ("marker", 4, True), ("marker", 5, True)]
    assert index.all_aborted_txns() == [aborted]


def test_markers_get_a_delete_horizon_then_go_and_a_producers_last_stays_empty() -> None:
    marker = _txn(7, 3, kind=1)
    out, _ = run_filter(marker, {})
    assert out == marker  # data still in the log: kept as it is
    stats = CleanerStats()
    h = parse_header(marker)
    stamped = filter_batch(h, memoryview(marker), {}, drop_tombstones=False, aborted=False, retain_empty=False,
                           stats=stats, marker_horizon_ms=T0 + 99)
    sh = parse_header(stamped)
    assert sh.has_delete_horizon and sh.base_timestamp == T0 + 99 and sh.is_control and crc_is_valid(stamped, 0,
                                                                                                        len(stamped))
    assert [(r.offset, r.timestamp, r.key) for r in RecordBatch(stamped).records()] == \
        [(r.offset, r.timestamp, r.key) for r in RecordBatch(marker).records()]
    assert filter_batch(sh, memoryview(stamped), {}, drop_tombstones=False, aborted=True, retain_empty=False,
                        stats=stats) is None
    empty = filter_batch(sh, memoryview(stamped), {}, drop_tombstones=False, aborted=True, retain_empty=True,
                         stats=stats)
    eh = parse_header(empty)
    assert (eh.base_offset, eh.records_count, eh.is_control, eh.producer_id) == (7, 0, True, 3)
    # an emptied batch no longer carrying a producer's state goes at the next clean
    assert filter_batch(eh, memoryview(empty), {}, drop_tombstones=False, aborted=False, retain_empty=False,
                        stats=stats, marker_horizon_ms=T0) is None


def test_group_segments_by_size(tmp_path: Path) -> None:
    segs = [_segment(tmp_path, i * 10, [batch(i * 10 + j, [(b"k", b"v" * 100)]) for j in range(3)])
            for i in range(4)]
    size = segs[0].size
    big = 1 << 20

    def bases(groups: list[list[LogSegment]]) -> list[list[int]]:
        return [[s.base_offset for s in g] for g in groups]

    assert bases(_group_segments(segs, size * 2, big)) == [[0, 10], [20, 30]]
    assert bases(_group_segments(segs, size * 10, big)) == [[0, 10, 20, 30]]
    assert bases(_group_segments(segs, 1, big)) == [[0], [10], [20], [30]]
    for s in segs:
        s.on_become_inactive()  # trims the indexes to their entries, as a rolled segment's are
    entry_bytes = segs[0].offset_index.size_in_bytes
    assert entry_bytes == 16  # two entries: the first batch of a segment is not indexed
    assert bases(_group_segments(segs, size * 10, entry_bytes * 3)) == [[0, 10, 20], [30]]

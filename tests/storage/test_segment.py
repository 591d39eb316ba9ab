"""LogSegment: append, index entries, reads as file slices, recovery and truncation, on real files."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from records import batch_headers as iter_batches
from records import parse_header, set_base_offset
from storage import KafkaStorageError, LogConfig, LogSegment

from .conftest import build_batch


def _with_offset(buf: bytearray, base: int) -> bytearray:
    for pos, _ in iter_batches(buf):
        set_base_offset(buf, pos, base)
    return buf


def _fill(seg: LogSegment, n: int, base: int = 0, records: int = 2, ts: int = 1_000) -> list[bytes]:
    written = []
    offset = base
    for i in range(n):
        b = _with_offset(build_batch(records, value_size=40, timestamp=ts + i, seed=i), offset)
        seg.append(b)
        written.append(bytes(b))
        offset += records
    return written


CFG = LogConfig(index_interval_bytes=200, segment_index_bytes=4096)


def test_append_writes_bytes_and_indexes(tmp_path: Path) -> None:
    seg = LogSegment.open(tmp_path, 0, CFG)
    written = _fill(seg, 20)
    assert (tmp_path / "00000000000000000000.log").read_bytes() == b"".join(written)
    assert seg.next_offset == 40
    assert seg.offset_index.entries > 3
    for offset, pos in seg.offset_index.all_entries():
        # every entry points at a batch start whose last offset is the entry's offset
        assert parse_header(os.pread(seg.fd, 61, pos)).last_offset == offset
    assert seg.max_timestamp_so_far == 1_000 + 19 + 1


def test_read_returns_whole_batch_containing_offset(tmp_path: Path) -> None:
    seg = LogSegment.open(tmp_path, 100, CFG)
    written = _fill(seg, 10, base=100)
    sl, incomplete = seg.read(105, 10_000)
    assert not incomplete
    assert sl.read() == b"".join(written[2:])
    sl, _ = seg.read(105, len(written[2]) + len(written[3]) + 5)  # max_size cuts at a batch boundary
    assert sl.read() == written[2] + written[3]
    sl, _ = seg.read(105, 1)  # min_one_message: the first batch whole
    assert sl.read() == written[2]
    sl, incomplete = seg.read(105, 1, min_one_message=False)
    assert sl is None and incomplete
    sl, _ = seg.read(104, 10_000, max_offset=108)  # batches with base >= 108 excluded
    assert sl.read() == b"".join(written[2:4])
    sl, _ = seg.read(104, 10_000, max_offset=107)  # 107 is inside batch 106..107: included
    assert sl.read() == b"".join(written[2:4])
    assert seg.read(120, 100) is None


def test_recover_rebuilds_index_identically(tmp_path: Path) -> None:
    seg = LogSegment.open(tmp_path, 0, CFG)
    _fill(seg, 30)
    entries = seg.offset_index.all_entries()
    time_entries = seg.time_index.all_entries()
    result = seg.recover()
    assert result.truncated_bytes == 0
    assert seg.offset_index.all_entries() == entries
    assert seg.time_index.all_entries() == time_entries
    assert seg.next_offset == 60


def test_recover_truncates_torn_tail(tmp_path: Path) -> None:
    seg = LogSegment.open(tmp_path, 0, CFG)
    written = _fill(seg, 5)
    with open(seg.log_path, "ab") as f:
        f.write(written[0][:30])
    result = seg.recover()
    assert result.truncated_bytes == 30
    assert "torn" in result.reason
    assert seg.log_path.read_bytes() == b"".join(written)


def test_recover_stops_at_corrupt_crc(tmp_path: Path) -> None:
    seg = LogSegment.open(tmp_path, 0, CFG)
    written = _fill(seg, 5)
    pos = len(written[0]) + len(written[1]) + 70  # inside batch 2's records
    data = bytearray(seg.log_path.read_bytes())
    data[pos] ^= 0xFF
    seg.log_path.write_bytes(data)
    result = seg.recover()
    assert result.reason == "CRC32C mismatch"
    assert result.bad_offset == 4
    assert seg.size == len(written[0]) + len(written[1])
    assert seg.next_offset == 4


def test_truncate_to_cuts_at_batch_start(tmp_path: Path) -> None:
    seg = LogSegment.open(tmp_path, 0, CFG)
    written = _fill(seg, 10)
    removed = seg.truncate_to(7)  # inside batch 6..7: the whole batch goes
    assert removed == sum(len(w) for w in written[3:])
    assert seg.next_offset == 6
    assert seg.log_path.read_bytes() == b"".join(written[:3])
    assert all(o < 7 for o, _ in seg.offset_index.all_entries())
    _fill(seg, 1, base=6)
    assert seg.next_offset == 8


def test_reopen_after_close_restores_state_without_scan(tmp_path: Path) -> None:
    seg = LogSegment.open(tmp_path, 0, CFG)
    _fill(seg, 25)
    state = (seg.next_offset, seg.max_timestamp_so_far, seg.offset_index.all_entries(), seg.size)
    seg.close()
    assert (tmp_path / "00000000000000000000.index").stat().st_size == 8 * len(state[2])  # trimmed
    seg2 = LogSegment.open(tmp_path, 0, CFG)
    assert not seg2.needs_recovery
    assert (seg2.next_offset, seg2.max_timestamp_so_far, seg2.offset_index.all_entries(), seg2.size) == state


def test_find_offset_by_timestamp(tmp_path: Path) -> None:
    seg = LogSegment.open(tmp_path, 0, CFG)
    _fill(seg, 20, ts=5_000)  # batch i: timestamps 5000+i, 5001+i
    assert seg.find_offset_by_timestamp(5_000, 0)[:2] == (0, 5_000)
    assert seg.find_offset_by_timestamp(5_010, 0)[:2] == (19, 5_010)  # second record of batch 18..19
    assert seg.find_offset_by_timestamp(5_010, 30)[:2] == (30, 5_015)  # never below the starting offset
    assert seg.find_offset_by_timestamp(10_000, 0) is None


def test_should_roll_on_size_time_and_offset_overflow(tmp_path: Path) -> None:
    seg = LogSegment.open(tmp_path, 0, CFG, now_ms=0)
    cfg = LogConfig(segment_bytes=1000, segment_ms=10_000)
    assert not seg.should_roll(100, 0, 10, cfg, now_ms=0)
    assert seg.should_roll(100, 0, 2**31, cfg, now_ms=0)  # relative offset overflow
    _fill(seg, 1, ts=1_000)
    assert seg.should_roll(1000, 0, 10, cfg, now_ms=1_000)
    assert not seg.should_roll(10, 0, 10, cfg, now_ms=5_000)
    assert seg.should_roll(10, 0, 10, cfg, now_ms=1_001 + 10_001)


def test_failed_write_is_rolled_back(tmp_path: Path) -> None:
    seg = LogSegment.open(tmp_path, 0, CFG)
    written = _fill(seg, 2)
    os.close(seg.fd)  # any write now fails with EBADF
    seg.fd = os.open(seg.log_path, os.O_RDONLY)
    with pytest.raises(KafkaStorageError):
        seg.append(_with_offset(build_batch(2), 4))
    assert seg.size == sum(len(w) for w in written)
    assert seg.next_offset == 4


def test_full_index_never_fails_a_multi_batch_append_or_recovery(tmp_path: Path) -> None:
    cfg = LogConfig(index_interval_bytes=0, segment_index_bytes=32)  # 4 offset entries, 2 time entries
    seg = LogSegment.open(tmp_path, 0, cfg)
    many = bytearray()
    offset = 0
    for i in range(10):
        many += _with_offset(build_batch(1, seed=i, timestamp=1_000 + i), offset)
        offset += 1
    seg.append(many)
    assert seg.next_offset == 10 and seg.size == len(many)
    assert seg.offset_index.entries <= 4
    for target in range(10):
        assert seg.translate_offset(target)[2] == target
    assert seg.recover().truncated_bytes == 0
    assert seg.next_offset == 10

"""OffsetIndex and TimeIndex: Kafka's file formats, lookups, truncation, trimming and sanity checks."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

from storage import CorruptIndexError, InvalidRecordError, OffsetIndex, TimeIndex


def test_offset_index_format_is_relative_offset_and_position_big_endian(tmp_path: Path) -> None:
    idx = OffsetIndex(tmp_path / "00000000000000000100.index", 100, 4096)
    assert not (tmp_path / "00000000000000000100.index").exists()  # a new index: created with its first entry
    idx.append(105, 4200)
    assert (tmp_path / "00000000000000000100.index").stat().st_size == 4096  # preallocated
    idx.append(130, 9000)
    idx.trim_to_valid_size()
    idx.close()
    raw = (tmp_path / "00000000000000000100.index").read_bytes()
    assert raw == struct.pack(">ii", 5, 4200) + struct.pack(">ii", 30, 9000)


def test_offset_index_lookup_is_floor(tmp_path: Path) -> None:
    idx = OffsetIndex(tmp_path / "0.index", 0, 8 * 1000)
    for i in range(1, 500):
        idx.append(i * 10, i * 100)
    assert idx.lookup(0) == (0, 0)
    assert idx.lookup(9) == (0, 0)
    assert idx.lookup(10) == (10, 100)
    assert idx.lookup(15) == (10, 100)
    assert idx.lookup(4990) == (4990, 49900)
    assert idx.lookup(10**9) == (4990, 49900)
    assert idx.lookup_by_position(250) == (20, 200)
    assert idx.lookup_by_position(50) == (0, 0)


def test_offset_index_rejects_non_increasing_and_full(tmp_path: Path) -> None:
    idx = OffsetIndex(tmp_path / "0.index", 0, 16)
    idx.append(1, 10)
    with pytest.raises(InvalidRecordError):
        idx.append(1, 20)
    idx.append(2, 20)
    assert idx.is_full()
    with pytest.raises(InvalidRecordError):
        idx.append(3, 30)


def test_offset_index_truncate_removes_entries_at_or_after(tmp_path: Path) -> None:
    idx = OffsetIndex(tmp_path / "0.index", 0, 800)
    for i in range(1, 10):
        idx.append(i * 10, i * 100)
    idx.truncate_to(50)
    assert idx.all_entries()[-1] == (40, 400)
    idx.truncate_to(35)
    assert idx.all_entries()[-1] == (30, 300)
    idx.truncate_to(0)
    assert idx.entries == 0


def test_reopen_counts_entries_from_trimmed_file(tmp_path: Path) -> None:
    p = tmp_path / "0.index"
    idx = OffsetIndex(p, 0, 800)
    idx.append(3, 100)
    idx.append(7, 300)
    idx.trim_to_valid_size()
    idx.close()
    idx2 = OffsetIndex(p, 0, 800)
    assert idx2.entries == 2
    idx2.sanity_check(log_size=400)
    idx2.append(9, 500)  # grows back to the max size when appended to
    assert idx2.lookup(8) == (7, 300)


def test_untrimmed_index_after_crash_fails_sanity_check(tmp_path: Path) -> None:
    p = tmp_path / "0.index"
    idx = OffsetIndex(p, 0, 800)
    idx.append(3, 100)
    idx.flush()
    idx.close()  # not trimmed: trailing zero entries, as after kill -9
    with pytest.raises(CorruptIndexError):
        OffsetIndex(p, 0, 800).sanity_check()


def test_index_position_beyond_log_fails_sanity_check(tmp_path: Path) -> None:
    idx = OffsetIndex(tmp_path / "0.index", 0, 800)
    idx.append(3, 5000)
    with pytest.raises(CorruptIndexError):
        idx.sanity_check(log_size=100)


def test_index_length_not_multiple_of_entry_fails(tmp_path: Path) -> None:
    p = tmp_path / "0.index"
    p.write_bytes(b"\x00" * 13)
    with pytest.raises(CorruptIndexError):
        OffsetIndex(p, 0, 800).sanity_check()


def test_time_index_format_and_lookup(tmp_path: Path) -> None:
    p = tmp_path / "00000000000000000050.timeindex"
    ti = TimeIndex(p, 50, 12 * 100)
    ti.maybe_append(1000, 55)
    ti.maybe_append(1000, 56)  # not larger: skipped
    ti.maybe_append(2000, 60)
    ti.maybe_append(1500, 61)  # not larger: skipped
    assert ti.entries == 2
    assert ti.lookup(999) == (-1, 50)
    assert ti.lookup(1000) == (1000, 55)
    assert ti.lookup(1999) == (1000, 55)
    assert ti.lookup(5000) == (2000, 60)
    ti.trim_to_valid_size()
    ti.close()
    assert p.read_bytes() == struct.pack(">qi", 1000, 5) + struct.pack(">qi", 2000, 10)


def test_time_index_keeps_a_slot_for_the_roll_entry(tmp_path: Path) -> None:
    ti = TimeIndex(tmp_path / "0.timeindex", 0, 36)
    ti.maybe_append(1, 1)
    ti.maybe_append(2, 2)
    assert ti.is_full()
    with pytest.raises(InvalidRecordError):
        ti.maybe_append(3, 3)
    ti.maybe_append(3, 3, skip_full_check=True)
    assert ti.entries == 3


def test_time_index_truncate(tmp_path: Path) -> None:
    ti = TimeIndex(tmp_path / "0.timeindex", 0, 1200)
    for i in range(1, 10):
        ti.maybe_append(i * 100, i * 10)
    ti.truncate_to(45)
    assert ti.last_entry() == (400, 40)


def test_time_index_sanity_check_detects_decreasing_tail(tmp_path: Path) -> None:
    p = tmp_path / "0.timeindex"
    p.write_bytes(struct.pack(">qi", 500, 1) + struct.pack(">qi", 100, 2))
    with pytest.raises(CorruptIndexError):
        TimeIndex(p, 0, 1200).sanity_check()

"""LogOffsetMetadata: where offsets sit in the log, so that a delayed fetch measures bytes by subtraction."""

from __future__ import annotations

from pathlib import Path

import pytest

from storage import Log, LogConfig, LogOffsetMetadata, OffsetOutOfRangeError

from .conftest import build_batch

CFG = LogConfig(segment_bytes=2048, index_interval_bytes=256, segment_index_bytes=4096)
NOW = 1_700_000_000_000


def _log_of_three_segments(tmp_path: Path) -> Log:
    lg = Log.open(tmp_path / "topic-0", CFG, now_ms=NOW)
    while len(lg.segments) < 3:
        lg.append_as_leader(build_batch(3, value_size=30, seed=lg.log_end_offset), 0, now_ms=NOW)
    return lg


def test_metadata_compares_by_segment_and_subtracts_positions() -> None:
    a = LogOffsetMetadata(10, 0, 100)
    b = LogOffsetMetadata(20, 0, 350)
    c = LogOffsetMetadata(30, 25, 0)
    assert b.position_diff(a) == 250
    assert a.on_same_segment(b) and a.on_older_segment(c) and not c.on_older_segment(a)
    with pytest.raises(ValueError):
        c.position_diff(a)  # different segments: no byte distance
    offset_only = LogOffsetMetadata(10)
    assert offset_only.message_offset_only and not a.message_offset_only
    with pytest.raises(ValueError):
        b.position_diff(offset_only)


def test_reads_and_conversion_place_offsets_where_their_batches_start(tmp_path: Path) -> None:
    lg = _log_of_three_segments(tmp_path)
    second = lg.segments[1]
    batches = second.batches_from(0)
    pos, header = batches[1]
    offset = header.base_offset + 1  # inside the batch: its start is the position
    info = lg.read(offset, 1 << 20)
    expected = LogOffsetMetadata(offset, second.base_offset, pos)
    assert info.fetch_offset_metadata == expected
    assert info.records is not None and info.records.position == pos
    assert lg.convert_to_offset_metadata(offset) == expected

    end = lg.log_end_offset_metadata
    assert end == LogOffsetMetadata(lg.log_end_offset, lg.active_segment.base_offset, lg.active_segment.size)
    assert lg.convert_to_offset_metadata(lg.log_end_offset) == end
    assert lg.read(lg.log_end_offset, 100).fetch_offset_metadata == end
    # The bytes between two offsets on one segment: the batches from the one to the other.
    first_of_active = lg.convert_to_offset_metadata(lg.active_segment.base_offset)
    assert end.position_diff(first_of_active) == lg.active_segment.size


def test_read_stopped_by_max_offset_knows_only_the_offset(tmp_path: Path) -> None:
    lg = _log_of_three_segments(tmp_path)
    info = lg.read(6, 1 << 20, max_offset=6)  # a consumer at the high watermark
    assert info.records is None and info.fetch_offset_metadata == LogOffsetMetadata(6)


def test_conversion_outside_the_log_is_out_of_range(tmp_path: Path) -> None:
    lg = _log_of_three_segments(tmp_path)
    lg.maybe_increment_log_start_offset(4)
    with pytest.raises(OffsetOutOfRangeError):
        lg.convert_to_offset_metadata(3)
    with pytest.raises(OffsetOutOfRangeError):
        lg.convert_to_offset_metadata(lg.log_end_offset + 1)

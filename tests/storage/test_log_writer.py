"""A log with a writer thread (storage.log_writer): appends are reserved at once and readable only once written;
order, rolls, reopening, truncation and a failed write behave as the in-place append does."""

from __future__ import annotations

import errno
import os
import threading
from pathlib import Path

import pytest

from storage import Log, LogConfig
from storage import log_writer as log_writer_module
from storage.log_writer import LogWriter

from .conftest import build_batch


def batch(n: int = 3) -> bytearray:
    return build_batch(n, value_size=100, timestamp=1_700_000_000_000)


class Gate:
    """Holds the writer thread before each write until released: the test decides when a write lands."""

    def __init__(self) -> None:
        self.open = threading.Event()

    def __call__(self, log_path: Path) -> None:
        assert self.open.wait(10)


@pytest.fixture
def gate(monkeypatch: pytest.MonkeyPatch) -> Gate:
    g = Gate()
    monkeypatch.setattr(log_writer_module, "injected_stall", g)
    return g


def open_log(path: Path, writer: LogWriter | None = None, **cfg: int) -> Log:
    lg = Log.open(path / "t-0", LogConfig(**cfg))
    lg.writer = writer
    return lg


def settle(lg: Log) -> None:
    lg.wait_for_writes()


def test_an_append_is_readable_only_once_written(tmp_path: Path, gate: Gate) -> None:
    writer = LogWriter("d")
    lg = open_log(tmp_path, writer)
    info = lg.append_as_leader(batch(3), 0, now_ms=0)
    assert (info.first_offset, info.last_offset) == (0, 2)
    # reserved: the next append is placed after it, but nothing is readable and the LEO has not moved
    assert lg.appended_end_offset == 3 and lg.log_end_offset == 0
    assert lg.read(0, 1 << 20).records is None
    info2 = lg.append_as_leader(batch(2), 0, now_ms=0)
    assert info2.first_offset == 3 and lg.appended_end_offset == 5
    gate.open.set()
    settle(lg)
    assert lg.log_end_offset == lg.appended_end_offset == 5
    data = lg.read(0, 1 << 20).records
    assert data is not None and data.length == os.path.getsize(lg.active_segment.log_path)
    assert writer.take_changed() == {lg}
    lg.close()
    writer.close()


def test_writes_across_rolls_reopen_identical_to_in_place_appends(tmp_path: Path) -> None:
    writer = LogWriter("d")
    threaded = open_log(tmp_path / "a", writer, segment_bytes=2000, index_interval_bytes=300)
    in_place = open_log(tmp_path / "b", None, segment_bytes=2000, index_interval_bytes=300)
    for i in range(40):
        for lg in (threaded, in_place):
            lg.append_as_leader(batch(1 + i % 4), 0, now_ms=i)
    settle(threaded)
    assert threaded.log_end_offset == in_place.log_end_offset
    assert [s.base_offset for s in threaded.segments] == [s.base_offset for s in in_place.segments]
    assert len(threaded.segments) > 3
    threaded.close()
    in_place.close()
    writer.close()
    for name in sorted(os.listdir(tmp_path / "b" / "t-0")):
        if name.endswith((".log", ".index", ".timeindex")):
            assert (tmp_path / "a" / "t-0" / name).read_bytes() == (tmp_path / "b" / "t-0" / name).read_bytes(), name
    reopened = Log.open(tmp_path / "a" / "t-0", LogConfig(segment_bytes=2000, index_interval_bytes=300))
    assert reopened.log_end_offset == in_place.log_end_offset
    reopened.close()


def test_truncation_waits_for_the_writer(tmp_path: Path, gate: Gate) -> None:
    writer = LogWriter("d")
    lg = open_log(tmp_path, writer)
    lg.append_as_leader(batch(3), 0, now_ms=0)
    lg.append_as_leader(batch(3), 0, now_ms=0)
    threading.Timer(0.2, gate.open.set).start()
    lg.truncate_to(3)  # blocks until both writes are in, then cuts the second
    assert lg.log_end_offset == lg.appended_end_offset == 3
    assert lg.active_segment.size == os.path.getsize(lg.active_segment.log_path)
    lg.append_as_leader(batch(1), 0, now_ms=0)
    settle(lg)
    assert lg.log_end_offset == 4
    lg.close()
    writer.close()


def test_a_failed_write_rolls_back_every_later_reservation(tmp_path: Path, gate: Gate,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    writer = LogWriter("d")
    lg = open_log(tmp_path, writer)
    lg.append_as_leader(batch(2), 0, now_ms=0)
    gate.open.set()
    settle(lg)
    assert lg.log_end_offset == 2
    gate.open.clear()
    real = os.pwritev
    calls = {"n": 0}

    def full_disk(fd: int, buffers: list, position: int) -> int:
        calls["n"] += 1
        if calls["n"] == 1:
            real(fd, [memoryview(buffers[0])[:10]], position)  # a partial write, then the disk is full
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(fd, buffers, position)

    monkeypatch.setattr(log_writer_module.os, "pwritev", full_disk)
    lg.append_as_leader(batch(3), 0, now_ms=0)  # 2..4: its write fails
    lg.append_as_leader(batch(3), 0, now_ms=0)  # 5..7: queued behind it, fails with it
    assert lg.appended_end_offset == 8
    gate.open.set()
    settle(lg)
    assert lg.truncations == 1
    assert lg.log_end_offset == lg.appended_end_offset == 2
    assert os.path.getsize(lg.active_segment.log_path) == lg.active_segment.size
    # the log goes on: the next append takes the rolled-back offsets and is written
    info = lg.append_as_leader(batch(1), 0, now_ms=0)
    assert info.first_offset == 2
    settle(lg)
    assert lg.log_end_offset == 3
    lg.close()
    writer.close()
    reopened = Log.open(tmp_path / "t-0", LogConfig())
    assert reopened.log_end_offset == 3
    reopened.close()


def test_a_producers_state_after_a_rollback_accepts_its_retry(tmp_path: Path, gate: Gate,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    writer = LogWriter("d")
    lg = open_log(tmp_path, writer)
    raw = build_batch(1, producer_id=7, producer_epoch=0, base_sequence=0)

    def fail(fd: int, buffers: list, position: int) -> int:
        raise OSError(errno.EIO, "I/O error")

    monkeypatch.setattr(log_writer_module.os, "pwritev", fail)
    lg.append_as_leader(bytearray(raw), 0, now_ms=0)
    gate.open.set()
    settle(lg)
    assert lg.log_end_offset == 0 and lg.truncations == 1
    monkeypatch.undo()
    lg.writer = writer
    # sequence 0 again is not a duplicate: the failed batch is gone from the producer state too
    info = lg.append_as_leader(bytearray(raw), 0, now_ms=0)
    assert not info.duplicate and info.first_offset == 0
    settle(lg)
    assert lg.log_end_offset == 1
    lg.close()
    writer.close()


def test_a_new_logs_metadata_files_reach_the_disk_before_its_first_data(tmp_path: Path, gate: Gate) -> None:
    """Kafka flushes partition.metadata before an append writes: the writer thread writes what is behind (the
    topic id, a new leader's epoch) before the log's first bytes, so a crash never leaves data without them."""
    import uuid

    writer = LogWriter("d")
    lg = Log.create(tmp_path / "t-0", LogConfig(), topic_id=uuid.uuid4())
    lg.writer = writer
    lg.maybe_assign_epoch_start_offset(3, 0)
    assert lg.has_unflushed_metadata
    lg.append_as_leader(batch(2), 3, now_ms=0)
    assert not (lg.dir / "partition.metadata").exists()  # reserved only: the writer is held at the gate
    gate.open.set()
    settle(lg)
    assert not lg.has_unflushed_metadata
    assert (lg.dir / "partition.metadata").exists()
    assert (lg.dir / "leader-epoch-checkpoint").read_text() == "0\n1\n3 0\n"
    lg.close()
    writer.close()


def test_an_in_place_append_writes_the_metadata_files_first(tmp_path: Path) -> None:
    import uuid

    lg = Log.create(tmp_path / "t-0", LogConfig(), topic_id=uuid.uuid4())
    lg.maybe_assign_epoch_start_offset(0, 0)
    assert not (lg.dir / "leader-epoch-checkpoint").exists()
    lg.append_as_leader(batch(1), 0, now_ms=0)
    assert (lg.dir / "partition.metadata").exists()
    assert (lg.dir / "leader-epoch-checkpoint").read_text() == "0\n1\n0 0\n"
    lg.close_handles()


def test_metadata_files_of_a_deleted_log_are_not_written(tmp_path: Path) -> None:
    """A worker thread's flush-metadata-file that comes after the log was deleted leaves the renamed
    directory alone (Kafka's writeIfDirExists)."""
    import uuid

    lg = Log.create(tmp_path / "t-0", LogConfig(), topic_id=uuid.uuid4())
    lg.maybe_assign_epoch_start_offset(0, 0)
    moved = lg.delete()
    lg.flush_metadata_files()
    assert sorted(p.name for p in moved.iterdir()) == ["00000000000000000000.log"]


def test_a_closed_segment_keeps_its_index_files_even_without_entries(tmp_path: Path,
                                                                     caplog: pytest.LogCaptureFixture) -> None:
    """The index files of a new segment are created with their first entry; a segment closed before it has one
    still leaves both (empty, as Kafka's trimmed indexes), so the next start finds them and recovers nothing."""
    import logging

    lg = Log.create(tmp_path / "t-0", LogConfig())
    assert not (lg.dir / "00000000000000000000.index").exists()
    lg.close()
    assert (lg.dir / "00000000000000000000.index").stat().st_size == 0
    assert (lg.dir / "00000000000000000000.timeindex").stat().st_size == 0
    again = Log.open(tmp_path / "t-0", LogConfig(), had_clean_shutdown=True)
    again.append_as_leader(batch(1), 0, now_ms=0)
    assert (lg.dir / "00000000000000000000.index").stat().st_size > 0  # grown back for its entries
    again.close()
    with caplog.at_level(logging.INFO, logger="storage.log"):
        third = Log.open(tmp_path / "t-0", LogConfig(), had_clean_shutdown=True)
    assert third.log_end_offset == 1
    assert "rebuilding indexes" not in caplog.text
    third.close()

"""LeaderEpochFileCache: Kafka's assign / endOffsetFor / truncation semantics, persisted."""

from __future__ import annotations

from pathlib import Path

from storage import UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET, LeaderEpochFileCache


def test_assign_persists_and_reloads(tmp_path: Path) -> None:
    cache = LeaderEpochFileCache.load(tmp_path)
    cache.assign(0, 0)
    cache.assign(0, 5)  # same epoch, later offset: no change
    cache.assign(2, 10)
    assert cache.entries() == [(0, 0), (2, 10)]
    assert (tmp_path / "leader-epoch-checkpoint").read_text() == "0\n2\n0 0\n2 10\n"
    assert LeaderEpochFileCache.load(tmp_path).entries() == [(0, 0), (2, 10)]


def test_assign_removes_non_monotonic_entries(tmp_path: Path) -> None:
    cache = LeaderEpochFileCache.load(tmp_path)
    cache.assign(1, 0)
    cache.assign(2, 10)
    cache.assign(3, 8)  # start offset goes back: epoch 2 entry is dropped
    assert cache.entries() == [(1, 0), (3, 8)]


def test_end_offset_for(tmp_path: Path) -> None:
    cache = LeaderEpochFileCache.load(tmp_path)
    cache.assign(2, 10)
    cache.assign(4, 20)
    cache.assign(7, 35)
    leo = 50
    assert cache.end_offset_for(7, leo) == (7, 50)  # latest epoch: log end offset
    assert cache.end_offset_for(4, leo) == (4, 35)
    assert cache.end_offset_for(5, leo) == (4, 35)  # unknown epoch between: floor epoch, next start
    assert cache.end_offset_for(1, leo) == (1, 10)  # older than all
    assert cache.end_offset_for(8, leo) == (UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET)
    assert cache.end_offset_for(UNDEFINED_EPOCH, leo) == (UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET)


def test_epoch_for_offset(tmp_path: Path) -> None:
    cache = LeaderEpochFileCache.load(tmp_path)
    cache.assign(2, 10)
    cache.assign(4, 20)
    assert cache.epoch_for_offset(5) is None
    assert cache.epoch_for_offset(10) == 2
    assert cache.epoch_for_offset(19) == 2
    assert cache.epoch_for_offset(1000) == 4


def test_truncate_from_end_and_start(tmp_path: Path) -> None:
    cache = LeaderEpochFileCache.load(tmp_path)
    for epoch, offset in [(1, 0), (2, 10), (3, 20), (4, 30)]:
        cache.assign(epoch, offset)
    cache.truncate_from_end(20)
    assert cache.entries() == [(1, 0), (2, 10)]
    cache.truncate_from_start(15)
    assert cache.entries() == [(2, 15)]
    assert LeaderEpochFileCache.load(tmp_path).entries() == [(2, 15)]
    cache.truncate_from_start(10)  # before the first entry: nothing
    assert cache.entries() == [(2, 15)]

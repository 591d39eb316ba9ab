"""The replica mover's divergence check, on real logs: a copy is kept only while the current log still holds
it (same end of the copy's latest leader epoch, nothing truncated below the copy's end)."""

from __future__ import annotations

from pathlib import Path

from broker.server.log_dir_mover import ReplicaAlterLogDirsManager
from records.record import build_batch
from storage import Log, LogConfig, TopicPartition

TP = TopicPartition("t", 0)


def log_with(path: Path, batches: list[tuple[int, int, int]]) -> Log:
    """A log holding, for each (base offset, count, leader epoch), `count` records written in that epoch."""
    lg = Log.open(path, LogConfig(), topic_partition=TP)
    for base, count, epoch in batches:
        lg.append_as_follower(build_batch([(None, b"v", [], 0)] * count, base_offset=base,
                                          partition_leader_epoch=epoch))
    return lg


def test_a_copy_of_a_prefix_has_not_diverged(tmp_path: Path) -> None:
    current = log_with(tmp_path / "a" / "t-0", [(0, 5, 1), (5, 5, 2)])
    copy = log_with(tmp_path / "b" / "t-0", [(0, 5, 1), (5, 2, 2)])
    assert not ReplicaAlterLogDirsManager._diverged(current, copy)
    empty = log_with(tmp_path / "c" / "t-0", [])
    assert not ReplicaAlterLogDirsManager._diverged(current, empty)


def test_a_copy_past_the_current_end_or_of_a_rewritten_epoch_has_diverged(tmp_path: Path) -> None:
    copy = log_with(tmp_path / "b" / "t-0", [(0, 5, 1), (5, 5, 2)])
    shorter = log_with(tmp_path / "a" / "t-0", [(0, 5, 1), (5, 3, 2)])
    assert ReplicaAlterLogDirsManager._diverged(shorter, copy)
    # Truncated to 7 by leader epoch, then written again in epoch 3: as long as the copy, different data.
    rewritten = log_with(tmp_path / "c" / "t-0", [(0, 5, 1), (5, 2, 2), (7, 5, 3)])
    assert ReplicaAlterLogDirsManager._diverged(rewritten, copy)

"""The leader-epoch cache of one partition, persisted as ``leader-epoch-checkpoint``.

Contract (Kafka's LeaderEpochFileCache): entries (epoch, start_offset) strictly increasing in both fields.
``assign`` adds an entry when the epoch is new, first removing entries that would break monotonicity;
``end_offset_for`` is the OffsetsForLeaderEpoch answer; ``truncate_from_end``/``truncate_from_start`` follow
log truncation and log start offset moves. Every change is written through to the checkpoint file
(tmp + fsync + rename). Constants follow Kafka: UNDEFINED_EPOCH = -1, UNDEFINED_EPOCH_OFFSET = -1.
"""

from __future__ import annotations

import bisect
import logging
from pathlib import Path

from storage.checkpoints import LeaderEpochCheckpointFile

log = logging.getLogger(__name__)

UNDEFINED_EPOCH = -1
UNDEFINED_EPOCH_OFFSET = -1
LEADER_EPOCH_CHECKPOINT = "leader-epoch-checkpoint"


class LeaderEpochFileCache:
    def __init__(self, path: Path | None, entries: list[tuple[int, int]] | None = None) -> None:
        self._file = LeaderEpochCheckpointFile(path) if path is not None else None
        self._epochs: list[int] = []
        self._offsets: list[int] = []
        for epoch, offset in entries or []:
            self._assign(epoch, offset)

    @classmethod
    def load(cls, dir: Path) -> LeaderEpochFileCache:
        path = Path(dir) / LEADER_EPOCH_CHECKPOINT
        return cls(path, LeaderEpochCheckpointFile(path).read())

    def _flush(self) -> None:
        if self._file is not None:
            self._file.write(self.entries())

    def entries(self) -> list[tuple[int, int]]:
        return list(zip(self._epochs, self._offsets, strict=True))

    def assign(self, epoch: int, start_offset: int) -> None:
        if self._assign(epoch, start_offset):
            self._flush()

    def _assign(self, epoch: int, start_offset: int) -> bool:
        if epoch < 0 or start_offset < 0:
            raise ValueError(f"invalid leader epoch entry ({epoch}, {start_offset})")
        if self._epochs and epoch == self._epochs[-1] and start_offset >= self._offsets[-1]:
            return False
        while self._epochs and (self._epochs[-1] >= epoch or self._offsets[-1] >= start_offset):
            removed = (self._epochs.pop(), self._offsets.pop())
            if removed[0] != epoch:
                log.info("leader epoch cache: removed %s before assigning (%d, %d)", removed, epoch, start_offset)
        self._epochs.append(epoch)
        self._offsets.append(start_offset)
        return True

    def latest_epoch(self) -> int | None:
        return self._epochs[-1] if self._epochs else None

    def latest_entry(self) -> tuple[int, int] | None:
        return (self._epochs[-1], self._offsets[-1]) if self._epochs else None

    def earliest_entry(self) -> tuple[int, int] | None:
        return (self._epochs[0], self._offsets[0]) if self._epochs else None

    def end_offset_for(self, epoch: int, log_end_offset: int) -> tuple[int, int]:
        if epoch == UNDEFINED_EPOCH or not self._epochs:
            return UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET
        if epoch == self._epochs[-1]:
            return epoch, log_end_offset
        higher = bisect.bisect_right(self._epochs, epoch)
        if higher >= len(self._epochs):
            return UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET
        if higher == 0:
            # smaller than any known epoch: the data is gone; the follower restarts at our first epoch's start
            return epoch, self._offsets[0]
        return self._epochs[higher - 1], self._offsets[higher]

    def epoch_for_offset(self, offset: int) -> int | None:
        i = bisect.bisect_right(self._offsets, offset)
        return self._epochs[i - 1] if i > 0 else None

    def start_offset_of(self, epoch: int) -> int | None:
        i = bisect.bisect_left(self._epochs, epoch)
        return self._offsets[i] if i < len(self._epochs) and self._epochs[i] == epoch else None

    def truncate_from_end(self, end_offset: int) -> None:
        """Remove entries whose start offset >= ``end_offset`` (follower truncation)."""
        if end_offset < 0 or not self._offsets or self._offsets[-1] < end_offset:
            return
        i = bisect.bisect_left(self._offsets, end_offset)
        del self._epochs[i:], self._offsets[i:]
        self._flush()

    def truncate_from_start(self, start_offset: int) -> None:
        """Drop entries before ``start_offset``; the last one at or before it is moved up to start there."""
        if not self._offsets or self._offsets[0] >= start_offset:
            return
        i = bisect.bisect_right(self._offsets, start_offset)
        kept_epoch = self._epochs[i - 1]
        del self._epochs[:i], self._offsets[:i]
        self._epochs.insert(0, kept_epoch)
        self._offsets.insert(0, start_offset)
        self._flush()

    def clear_and_flush(self) -> None:
        self._epochs.clear()
        self._offsets.clear()
        self._flush()

"""The leader-epoch cache of one partition, persisted as ``leader-epoch-checkpoint``.

Contract (Kafka's LeaderEpochFileCache): entries (epoch, start_offset) strictly increasing in both fields.
``assign`` adds an entry when the epoch is new, first removing entries that would break monotonicity;
``end_offset_for`` is the OffsetsForLeaderEpoch answer; ``truncate_from_end``/``truncate_from_start`` follow
log truncation and log start offset moves. Every change is written through to the checkpoint file
(tmp + fsync + rename + directory fsync), except an ``assign(..., flush=False)``: the entry a new leader adds at
its log end offset (Kafka's maybeAssignEpochStartOffset), which the owner writes with ``flush_if_dirty`` off the
caller's thread, and before any data reaches the log (``Log.flush_metadata_files``). Kafka writes that entry
synchronously, but an entry starting at the log end offset is dropped again when the log is loaded
(``truncate_from_end(log_end_offset)``, Kafka's LogLoader): until data of that epoch is written, a crash leaves
the same cache with or without it. ``flush_if_dirty`` may run on any thread: writes are serialized and the
newest entries always win. Constants follow Kafka: UNDEFINED_EPOCH = -1, UNDEFINED_EPOCH_OFFSET = -1.
"""

from __future__ import annotations

import bisect
import logging
import threading
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
        # Changes count in `_version` (under `_lock`, held only to change or copy the lists); `_written` is the
        # version in the file. `_write_lock` is held across a write, so two writers never cross.
        self._lock = threading.Lock()
        self._write_lock = threading.Lock()
        self._version = 0
        for epoch, offset in entries or []:
            self._assign(epoch, offset)
        self._written = self._version

    @classmethod
    def load(cls, dir: Path) -> LeaderEpochFileCache:
        path = Path(dir) / LEADER_EPOCH_CHECKPOINT
        return cls(path, LeaderEpochCheckpointFile(path).read())

    def _flush(self) -> None:
        self.flush_if_dirty()

    @property
    def dirty(self) -> bool:
        """Changes not in the checkpoint file yet (an ``assign(..., flush=False)``)."""
        return self._file is not None and self._written != self._version

    def flush_if_dirty(self, *, sync_dir: bool = True) -> bool:
        """Write the entries to the checkpoint file unless it already holds them (any thread); True when written
        (``sync_dir=False``: the caller then fsyncs the directory)."""
        if self._file is None:
            return False
        with self._write_lock:
            with self._lock:
                if self._written == self._version:
                    return False
                entries, version = self.entries(), self._version
            self._file.write(entries, sync_dir=sync_dir)
            self._written = version
            return True

    def entries(self) -> list[tuple[int, int]]:
        return list(zip(self._epochs, self._offsets, strict=True))

    def assign(self, epoch: int, start_offset: int, *, flush: bool = True) -> None:
        """Add (epoch, start_offset) when the epoch is new; ``flush=False`` leaves the write to the owner
        (``flush_if_dirty``, before any data of the epoch is written)."""
        if self._assign(epoch, start_offset) and flush:
            self._flush()

    def _assign(self, epoch: int, start_offset: int) -> bool:
        if epoch < 0 or start_offset < 0:
            raise ValueError(f"invalid leader epoch entry ({epoch}, {start_offset})")
        if self._epochs and epoch == self._epochs[-1] and start_offset >= self._offsets[-1]:
            return False
        with self._lock:
            while self._epochs and (self._epochs[-1] >= epoch or self._offsets[-1] >= start_offset):
                removed = (self._epochs.pop(), self._offsets.pop())
                if removed[0] != epoch:
                    log.info("leader epoch cache: removed %s before assigning (%d, %d)", removed, epoch,
                             start_offset)
            self._epochs.append(epoch)
            self._offsets.append(start_offset)
            self._version += 1
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
        with self._lock:
            del self._epochs[i:], self._offsets[i:]
            self._version += 1
        self._flush()

    def truncate_from_start(self, start_offset: int) -> None:
        """Drop entries before ``start_offset``; the last one at or before it is moved up to start there."""
        if not self._offsets or self._offsets[0] >= start_offset:
            return
        i = bisect.bisect_right(self._offsets, start_offset)
        kept_epoch = self._epochs[i - 1]
        with self._lock:
            del self._epochs[:i], self._offsets[:i]
            self._epochs.insert(0, kept_epoch)
            self._offsets.insert(0, start_offset)
            self._version += 1
        self._flush()

    def clear_and_flush(self) -> None:
        with self._lock:
            self._epochs.clear()
            self._offsets.clear()
            self._version += 1
        self._flush()

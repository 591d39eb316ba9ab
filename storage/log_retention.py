"""Retention and deletion of a partition's ``Log``: the log start offset, retention.ms / retention.bytes, and
the delayed removal of deleted segments (Kafka's UnifiedLog.deleteOldSegments and friends).

Contract (a mixin of ``storage.log.Log``, whose state it changes under its lock): whole segments leave the
log by being renamed ``.deleted`` and are removed ``file.delete.delay.ms`` later (``take_expired_deletes``);
only segments wholly below the high watermark (default: the log end offset) are deleted by retention; the
log start offset only moves up, and the leader-epoch cache, the producer state and the first unstable
offset follow it.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from storage.config import LogConfig
from storage.epoch_cache import LeaderEpochFileCache
from storage.errors import OffsetOutOfRangeError
from storage.log_loader import DELETED_SUFFIX
from storage.producer_state import ProducerStateManager
from storage.segment import LogSegment
from storage.values import TopicPartition

log = logging.getLogger("storage.log")


def _now_ms() -> int:
    return int(time.time() * 1000)


class LogRetention:
    segments: list[LogSegment]
    config: LogConfig
    topic_partition: TopicPartition
    log_start_offset: int
    log_end_offset: int
    recovery_point: int
    leader_epoch_cache: LeaderEpochFileCache
    producer_state: ProducerStateManager
    _lock: threading.RLock
    _pending_deletes: list[LogSegment]
    _roll: Callable[[int, int], None]
    _update_first_unstable_offset: Callable[[], None]
    size_in_bytes: Callable[[], int]

    def maybe_increment_log_start_offset(self, offset: int) -> bool:
        if offset > self.log_end_offset:
            raise OffsetOutOfRangeError(
                f"{self.topic_partition}: log start offset {offset} > log end offset {self.log_end_offset}"
            )
        if offset <= self.log_start_offset:
            return False
        self.log_start_offset = offset
        self.leader_epoch_cache.truncate_from_start(offset)
        self.producer_state.on_log_start_offset_incremented(offset)
        self._update_first_unstable_offset()
        self._delete_segments_below_start(_now_ms())
        return True

    def _delete_segments_below_start(self, now_ms: int) -> int:
        return self._delete_old_segments(
            lambda seg, nxt: nxt is not None and nxt.base_offset <= self.log_start_offset,
            None,
            now_ms,
            "log start offset",
        )

    def delete_retention_segments(self, now_ms: int, *, high_watermark: int | None = None) -> int:
        """Kafka's deleteOldSegments: retention.ms, retention.bytes (delete policy only) and log start offset.

        Only segments wholly below ``high_watermark`` (default: the log end offset) are deleted."""
        deleted = 0
        cfg = self.config
        if cfg.delete_enabled and cfg.retention_ms >= 0:
            deleted += self._delete_old_segments(
                lambda seg, nxt: now_ms - seg.largest_timestamp() > cfg.retention_ms,
                high_watermark,
                now_ms,
                f"retention.ms {cfg.retention_ms}",
            )
        if cfg.delete_enabled and cfg.retention_bytes >= 0:
            diff = self.size_in_bytes() - cfg.retention_bytes

            def over_size(seg: LogSegment, nxt: LogSegment | None) -> bool:
                nonlocal diff
                if diff - seg.size >= 0:
                    diff -= seg.size
                    return True
                return False

            deleted += self._delete_old_segments(
                over_size, high_watermark, now_ms, f"retention.bytes {cfg.retention_bytes}"
            )
        deleted += self._delete_segments_below_start(now_ms)
        return deleted

    def _delete_old_segments(
        self,
        predicate,
        high_watermark: int | None,
        now_ms: int,  # noqa: ANN001
        reason: str,
    ) -> int:
        upper_limit = self.log_end_offset if high_watermark is None else min(high_watermark, self.log_end_offset)
        doomed: list[LogSegment] = []
        segs = list(self.segments)
        for i, seg in enumerate(segs):
            nxt = segs[i + 1] if i + 1 < len(segs) else None
            upper = nxt.base_offset if nxt is not None else self.log_end_offset
            if nxt is None and seg.size == 0:
                break
            if upper <= upper_limit and predicate(seg, nxt):
                doomed.append(seg)
            else:
                break
        if not doomed:
            return 0
        with self._lock:
            if len(doomed) == len(self.segments):
                self._roll(self.log_end_offset, now_ms)
            log.info(
                "%s: deleting %d segment(s) by %s: %s",
                self.topic_partition,
                len(doomed),
                reason,
                [s.base_offset for s in doomed],
            )
            self._schedule_deletion(doomed, now_ms)
            self.segments = [s for s in self.segments if s not in doomed]
            self.log_start_offset = max(self.log_start_offset, self.segments[0].base_offset)
            self.recovery_point = max(self.recovery_point, self.log_start_offset)
        self.leader_epoch_cache.truncate_from_start(self.log_start_offset)
        self.producer_state.delete_snapshots_before(self.log_start_offset)
        self.producer_state.on_log_start_offset_incremented(self.log_start_offset)
        self._update_first_unstable_offset()
        return len(doomed)

    def _schedule_deletion(self, doomed: list[LogSegment], now_ms: int) -> None:
        for seg in doomed:
            seg.change_file_suffixes("", DELETED_SUFFIX)
            seg.deleted_at_ms = now_ms
            self._pending_deletes.append(seg)

    def take_expired_deletes(self, now_ms: int) -> list[LogSegment]:
        """Segments renamed to .deleted at least file.delete.delay.ms ago, forgotten by this log: the caller
        calls their `delete_files` (from any thread: nothing here refers to them any more)."""
        delay = self.config.file_delete_delay_ms
        due: list[LogSegment] = []
        waiting: list[LogSegment] = []
        with self._lock:  # the cleaner's thread schedules deletions too (replace_segments)
            for seg in self._pending_deletes:
                expired = seg.deleted_at_ms is not None and now_ms - seg.deleted_at_ms >= delay
                (due if expired else waiting).append(seg)
            self._pending_deletes = waiting
        return due

    def delete_expired_files(self, now_ms: int) -> None:
        for seg in self.take_expired_deletes(now_ms):
            seg.delete_files()

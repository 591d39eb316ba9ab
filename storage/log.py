"""One partition's log: a directory ``<topic>-<partition>`` of segments, checkpoints and snapshots.

Contract: offsets are dense and increase across segments ordered by base offset; ``log_start_offset`` <=
every readable offset < ``log_end_offset``. Leader appends get offsets assigned in place (baseOffset and
partitionLeaderEpoch are outside the CRC) and pass idempotent-producer checks; follower appends keep the
leader's offsets and must start at or after the log end offset. Reads return ``FileSlice``s of whole batches
(never spanning two segments) for ``sendfile``. Every method is synchronous and called from one thread,
except ``flush``, which may run in a worker thread while appends continue (a lock guards the segment list
and the recovery point). ``Log.open`` loads and recovers the directory through ``storage.log_loader``
(Kafka's LogLoader); a leader append is checked once, and its offsets assigned, by
``storage.log_validator`` (Kafka's LogValidator). Whole segments leave the log by being renamed
``.deleted`` and removed ``file_delete_delay_ms`` later (``delete_expired_files``), as Kafka does.
"""

from __future__ import annotations

import bisect
import logging
import os
import shutil
import threading
import time
import uuid
from pathlib import Path

from records import BatchHeader
from storage.checkpoints import PartitionMetadataFile, fsync_dir
from storage.config import LogConfig
from storage.epoch_cache import LeaderEpochFileCache
from storage.errors import (
    CorruptLogError,
    DuplicateSequenceError,
    InvalidRecordError,
    OffsetOutOfRangeError,
    RecordTooLargeError,
)
from storage.log_loader import DELETED_SUFFIX, SWAP_SUFFIX, LogLoader, rebuild_producer_state
from storage.log_validator import AppendOrigin, validate_and_assign_offsets
from storage.producer_state import BatchMetadata, ProducerStateEntry, ProducerStateManager
from storage.segment import LogSegment, parse_batches
from storage.values import FetchDataInfo, LogAppendInfo, LogOffsetMetadata, TopicPartition

log = logging.getLogger(__name__)

PARTITION_METADATA = "partition.metadata"
DELETE_DIR_SUFFIX = "-delete"
LOG_APPEND_TIME = "LogAppendTime"


def _now_ms() -> int:
    return int(time.time() * 1000)


class Log:
    def __init__(self, dir: Path, config: LogConfig, topic_partition: TopicPartition) -> None:
        self.dir = Path(dir)
        self.config = config
        self.topic_partition = topic_partition
        self.segments: list[LogSegment] = []
        self.log_start_offset = 0
        self.log_end_offset = 0
        self.recovery_point = 0
        self.topic_id: uuid.UUID | None = None
        self.leader_epoch_cache = LeaderEpochFileCache(None)
        self.producer_state = ProducerStateManager(self.dir)
        self.last_flush_ms = _now_ms()
        self._lock = threading.RLock()
        self._pending_deletes: list[LogSegment] = []
        self._unsynced_files: list[Path] = []
        self._dir_needs_sync = False
        self._closed = False

    # ==== opening and recovery =========================================================================
    @classmethod
    def open(
        cls,
        dir: Path,
        config: LogConfig,
        *,
        log_start_offset: int = 0,
        recovery_point: int = 0,
        had_clean_shutdown: bool = False,
        topic_id: uuid.UUID | None = None,
        now_ms: int | None = None,
    ) -> Log:
        dir = Path(dir)
        dir.mkdir(parents=True, exist_ok=True)
        self = cls(dir, config, TopicPartition.from_dir_name(dir.name))
        LogLoader(
            self,
            log_start_offset=log_start_offset,
            recovery_point=recovery_point,
            had_clean_shutdown=had_clean_shutdown,
            now_ms=_now_ms() if now_ms is None else now_ms,
        ).load()
        self._load_topic_id(topic_id)
        return self

    def _load_topic_id(self, topic_id: uuid.UUID | None) -> None:
        meta = PartitionMetadataFile(self.dir / PARTITION_METADATA)
        try:
            stored = meta.read()
        except CorruptLogError as e:
            log.warning("%s: rewriting unreadable partition.metadata: %s", self.topic_partition, e)
            stored = None
        if stored is not None and topic_id is not None and stored != topic_id:
            raise ValueError(f"{self.topic_partition}: topic id {topic_id} does not match stored {stored}")
        self.topic_id = stored or topic_id
        if stored is None and topic_id is not None:
            meta.write(topic_id)

    def assign_topic_id(self, topic_id: uuid.UUID) -> None:
        self._load_topic_id(topic_id)

    # ==== appends ========================================================================================
    @property
    def active_segment(self) -> LogSegment:
        return self.segments[-1]

    def append_as_leader(
        self,
        records: bytearray | memoryview,
        leader_epoch: int,
        *,
        now_ms: int,
        log_append_time: int | None = None,
        origin: AppendOrigin = AppendOrigin.CLIENT,
    ) -> LogAppendInfo:
        """Validate (``storage.log_validator``), assign offsets in place, check the idempotent producer's
        state and append; raises the typed errors of ``storage.errors``. Topics with
        ``message.timestamp.type=LogAppendTime`` get ``now_ms`` as log append time unless
        ``log_append_time`` is given. A duplicate of a producer's recent batch is not written: the result
        carries the original offsets and ``duplicate=True``."""
        buf = records
        if isinstance(buf, memoryview) and buf.readonly or isinstance(buf, bytes):
            buf = bytearray(buf)
        if log_append_time is None and self.config.message_timestamp_type == LOG_APPEND_TIME:
            log_append_time = now_ms
        assigned = validate_and_assign_offsets(
            buf,
            self.topic_partition,
            self.config,
            first_offset=self.log_end_offset,
            leader_epoch=leader_epoch,
            origin=origin,
            log_append_time=log_append_time,
        )
        pending: dict[int, ProducerStateEntry] = {}
        for _, h in assigned:
            if not h.has_producer_id or h.is_control:
                continue
            checked = self.producer_state.validate_append(h, pending)
            if isinstance(checked, BatchMetadata):
                if len(assigned) != 1:
                    raise DuplicateSequenceError(
                        f"{self.topic_partition}: duplicate batch of producer {h.producer_id} among several"
                    )
                return LogAppendInfo(
                    checked.first_offset,
                    checked.last_offset,
                    checked.timestamp,
                    checked.last_offset,
                    -1,
                    self.log_start_offset,
                    h.records_count,
                    0,
                    duplicate=True,
                )
            pending[h.producer_id] = checked
        info = self._append(buf, assigned, now_ms, log_append_time)
        for _, h in assigned:
            if h.has_producer_id and not h.is_control:
                entry = pending[h.producer_id]
                entry.add_batch(h.producer_epoch, h, h.base_offset)
            elif h.has_producer_id:
                self.producer_state.replay(h)
        for entry in pending.values():
            self.producer_state.update(entry)
        self.producer_state.map_end_offset = self.log_end_offset
        latest = self.leader_epoch_cache.latest_epoch()
        if leader_epoch >= 0 and (latest is None or leader_epoch > latest):
            self.leader_epoch_cache.assign(leader_epoch, info.first_offset)
        return info

    def append_as_follower(self, records: memoryview | bytes | bytearray) -> LogAppendInfo:
        """Append batches fetched from the leader. A trailing partial batch (a fetch response cut at max_bytes,
        as Kafka leaders send) is ignored, like Kafka's follower does; with no whole batch nothing is written
        and ``records_count`` is 0."""
        batches = parse_batches(records, self.topic_partition, allow_partial_tail=True)
        if not batches:
            leo = self.log_end_offset
            return LogAppendInfo(leo, leo - 1, -1, -1, -1, self.log_start_offset, 0, 0)
        if batches[-1][0] + batches[-1][1].size < len(records):
            records = memoryview(records)[: batches[-1][0] + batches[-1][1].size]
        self._check_sizes(batches)
        expected = self.log_end_offset
        for _, h in batches:
            if h.base_offset < expected:
                raise InvalidRecordError(
                    f"{self.topic_partition}: follower append at offset {h.base_offset} below {expected}"
                )
            expected = h.next_offset
        info = self._append(records, batches, _now_ms(), None)
        for _, h in batches:
            if h.partition_leader_epoch >= 0:
                self.leader_epoch_cache.assign(h.partition_leader_epoch, h.base_offset)
            self.producer_state.replay(h)
        return info

    def _check_sizes(self, batches: list[tuple[int, BatchHeader]]) -> None:
        for _, h in batches:
            if h.size > self.config.max_message_bytes:
                raise RecordTooLargeError(
                    f"{self.topic_partition}: batch of {h.size} bytes exceeds max.message.bytes "
                    f"{self.config.max_message_bytes}"
                )

    def _append(
        self,
        buf,
        batches: list[tuple[int, BatchHeader]],
        now_ms: int,  # noqa: ANN001
        log_append_time: int | None,
    ) -> LogAppendInfo:
        first = batches[0][1]
        last = batches[-1][1]
        max_ts, offset_of_max_ts = -1, first.base_offset
        for _, h in batches:
            if h.max_timestamp > max_ts:
                max_ts, offset_of_max_ts = h.max_timestamp, h.last_offset
        size = len(buf)
        seg = self.active_segment
        if seg.should_roll(size, max_ts, last.last_offset, self.config, now_ms) or (
            not seg.can_convert_to_relative_offset(first.base_offset)
        ):
            self._roll(first.base_offset, now_ms)
            seg = self.active_segment
        seg.append(buf, batches)
        self.log_end_offset = last.next_offset
        return LogAppendInfo(
            first_offset=first.base_offset,
            last_offset=last.last_offset,
            max_timestamp=max_ts,
            offset_of_max_timestamp=offset_of_max_ts,
            log_append_time=-1 if log_append_time is None else log_append_time,
            log_start_offset=self.log_start_offset,
            records_count=sum(h.records_count for _, h in batches),
            valid_bytes=size,
        )

    # ==== rolling =======================================================================================
    def roll(self) -> None:
        self._roll(self.log_end_offset, _now_ms())

    def _roll(self, new_base: int, now_ms: int) -> None:
        new_base = max(new_base, self.log_end_offset)
        with self._lock:
            active = self.active_segment
            if active.base_offset == new_base:
                if active.size == 0:
                    return  # an empty active segment already starts there
                raise InvalidRecordError(f"{self.topic_partition}: cannot roll to existing base {new_base}")
            if active.size == 0:
                # an empty segment would be shadowed by the new one; Kafka deletes it
                active.delete_files()
                self.segments.pop()
            else:
                active.on_become_inactive()
            self.producer_state.map_end_offset = self.log_end_offset
            self._unsynced_files.append(self.producer_state.take_snapshot(new_base, sync=False))
            self.segments.append(LogSegment.open(self.dir, new_base, self.config, now_ms=now_ms))
            # fsyncs wait for the flush (a worker thread): a roll must not block the event loop on the disk
            self._dir_needs_sync = True

    # ==== reads =========================================================================================
    def read(
        self,
        start_offset: int,
        max_bytes: int,
        *,
        max_offset: int | None = None,
        min_one_message: bool = True,
    ) -> FetchDataInfo:
        leo = self.log_end_offset
        if start_offset < self.log_start_offset or start_offset > leo:
            raise OffsetOutOfRangeError(
                f"{self.topic_partition}: offset {start_offset} outside [{self.log_start_offset}, {leo}]"
            )
        if start_offset == leo:
            return FetchDataInfo(start_offset, None, fetch_offset_metadata=self.log_end_offset_metadata)
        if max_offset is not None and start_offset >= max_offset:
            return FetchDataInfo(start_offset, None, fetch_offset_metadata=LogOffsetMetadata(start_offset))
        segments = self.segments
        i = max(0, bisect.bisect_right(segments, start_offset, key=lambda s: s.base_offset) - 1)
        for seg in segments[i:]:
            if max_offset is not None and seg.base_offset >= max_offset:
                break
            res = seg.read(start_offset, max_bytes, max_offset=max_offset, min_one_message=min_one_message)
            if res is None:
                continue
            records, incomplete = res
            metadata = LogOffsetMetadata(start_offset, seg.base_offset, records.position) if records is not None \
                else LogOffsetMetadata(start_offset)
            return FetchDataInfo(start_offset, records, incomplete, metadata)
        return FetchDataInfo(start_offset, None, fetch_offset_metadata=LogOffsetMetadata(start_offset))

    @property
    def log_end_offset_metadata(self) -> LogOffsetMetadata:
        """The log end offset with its place: the end of the active segment."""
        active = self.segments[-1]
        return LogOffsetMetadata(self.log_end_offset, active.base_offset, active.size)

    def convert_to_offset_metadata(self, offset: int) -> LogOffsetMetadata:
        """Where ``offset`` sits (Kafka's convertToOffsetMetadataOrThrow): an index lookup and a header walk
        in one segment, no data read. OffsetOutOfRangeError outside [log start offset, log end offset]."""
        leo = self.log_end_offset
        if offset < self.log_start_offset or offset > leo:
            raise OffsetOutOfRangeError(
                f"{self.topic_partition}: offset {offset} outside [{self.log_start_offset}, {leo}]"
            )
        if offset == leo:
            return self.log_end_offset_metadata
        segments = self.segments
        i = max(0, bisect.bisect_right(segments, offset, key=lambda s: s.base_offset) - 1)
        for seg in segments[i:]:
            found = seg.translate_offset(offset)
            if found is not None:
                return LogOffsetMetadata(offset, seg.base_offset, found[0])
        return self.log_end_offset_metadata

    def offset_for_timestamp(self, timestamp: int) -> tuple[int, int, int] | None:
        for seg in list(self.segments):
            if seg.max_timestamp_so_far >= timestamp and seg.next_offset > self.log_start_offset:
                found = seg.find_offset_by_timestamp(timestamp, self.log_start_offset)
                if found is not None:
                    return found
        return None

    def max_timestamp_and_offset(self) -> tuple[int, int]:
        best = (-1, -1)
        for seg in self.segments:
            if seg.max_timestamp_so_far > best[0]:
                best = (seg.max_timestamp_so_far, seg.offset_of_max_timestamp_so_far)
        return best

    def size_in_bytes(self) -> int:
        return sum(s.size for s in self.segments)

    # ==== truncation ======================================================================================
    def truncate_to(self, offset: int) -> None:
        if offset < 0:
            raise ValueError(f"cannot truncate to negative offset {offset}")
        if offset >= self.log_end_offset:
            # No data to drop, but an epoch that starts at or after `offset` (a leader epoch assigned at
            # our end with nothing appended under it) must still go, as in Kafka.
            self.leader_epoch_cache.truncate_from_end(offset)
            return
        if offset < self.log_start_offset or offset < self.segments[0].base_offset:
            # nothing below the log start offset may be served again: Kafka restarts the log there
            self.truncate_fully_and_start_at(offset)
            return
        log.info("%s: truncating from %d to %d", self.topic_partition, self.log_end_offset, offset)
        with self._lock:
            doomed = [s for s in self.segments if s.base_offset >= offset and s is not self.segments[0]]
            self._schedule_deletion(doomed, _now_ms())
            self.segments = [s for s in self.segments if s not in doomed]
            self.active_segment.truncate_to(offset)
            self.log_end_offset = self.active_segment.next_offset
            self.recovery_point = min(self.recovery_point, self.log_end_offset)
            self.log_start_offset = min(self.log_start_offset, self.log_end_offset)
        self.leader_epoch_cache.truncate_from_end(self.log_end_offset)
        rebuild_producer_state(self)

    def truncate_fully_and_start_at(self, offset: int) -> None:
        log.info("%s: truncating fully, restarting at %d", self.topic_partition, offset)
        now = _now_ms()
        with self._lock:
            self._schedule_deletion(list(self.segments), now)
            self.segments = [LogSegment.open(self.dir, offset, self.config, now_ms=now)]
            self.log_end_offset = self.log_start_offset = self.recovery_point = offset
        self.leader_epoch_cache.clear_and_flush()
        self.producer_state.truncate_fully(offset)

    # ==== log start offset, retention, deletion ========================================================
    def maybe_increment_log_start_offset(self, offset: int) -> bool:
        if offset > self.log_end_offset:
            raise OffsetOutOfRangeError(
                f"{self.topic_partition}: log start offset {offset} > log end offset {self.log_end_offset}"
            )
        if offset <= self.log_start_offset:
            return False
        self.log_start_offset = offset
        self.leader_epoch_cache.truncate_from_start(offset)
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

    # ==== flushing ========================================================================================
    def flush(self, up_to_offset: int | None = None) -> None:
        with self._lock:
            target = self.log_end_offset if up_to_offset is None else min(up_to_offset, self.log_end_offset)
            if target <= self.recovery_point:
                self.last_flush_ms = _now_ms()
                return
            segs = list(self.segments)
            start = self.recovery_point
        for i, seg in enumerate(segs):
            upper = segs[i + 1].base_offset if i + 1 < len(segs) else None
            if seg.base_offset < target and (upper is None or upper > start):
                seg.flush()
        self._sync_metadata()
        with self._lock:
            self.recovery_point = max(self.recovery_point, target)
            self.last_flush_ms = _now_ms()

    def _sync_metadata(self) -> None:
        with self._lock:
            pending, self._unsynced_files = self._unsynced_files, []
            dir_dirty, self._dir_needs_sync = self._dir_needs_sync, False
        for path in pending:
            try:
                fd = os.open(path, os.O_RDONLY)
            except FileNotFoundError:
                continue  # already deleted with its segment
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
        if dir_dirty or pending:
            fsync_dir(self.dir)

    def needs_flush(self) -> bool:
        unflushed = self.log_end_offset - self.recovery_point
        if unflushed <= 0:
            return False
        return unflushed >= self.config.flush_messages or _now_ms() - self.last_flush_ms >= self.config.flush_ms

    def update_config(self, config: LogConfig) -> None:
        self.config = config

    # ==== cleaner support =================================================================================
    def replace_segments(self, new_segments: list[LogSegment], old_segments: list[LogSegment]) -> None:
        """Swap cleaned segments in (Kafka's protocol): new files -> ``.swap`` (the commit point), old
        segments -> ``.deleted``, then ``.swap`` -> final names. ``open`` resolves a crash at any step."""
        if any(s is self.active_segment for s in old_segments):
            raise ValueError("the active segment cannot be replaced")
        new_sorted = sorted(new_segments, key=lambda s: s.base_offset)
        for seg in new_sorted:
            seg.flush()
            seg.on_become_inactive()
        for seg in reversed(new_sorted):
            seg.change_file_suffixes(seg.file_suffix, SWAP_SUFFIX)
        fsync_dir(self.dir)
        now = _now_ms()
        with self._lock:
            self._schedule_deletion(list(old_segments), now)
            fsync_dir(self.dir)
            for seg in new_sorted:
                seg.change_file_suffixes(SWAP_SUFFIX, "")
            fsync_dir(self.dir)
            kept = [s for s in self.segments if all(s is not o for o in old_segments)]
            self.segments = sorted(kept + new_sorted, key=lambda s: s.base_offset)

    # ==== lifecycle =======================================================================================
    def close(self) -> None:
        if self._closed:
            return
        self.flush()
        self.producer_state.map_end_offset = self.log_end_offset
        self.producer_state.take_snapshot(self.log_end_offset)
        for seg in self.segments:
            seg.close()
        for seg in self._pending_deletes:
            seg.close_handles()
        self._closed = True

    def close_handles(self) -> None:
        """Release fds without flushing (tests simulating a crash; the log must not be used afterwards)."""
        for seg in self.segments + self._pending_deletes:
            seg.close_handles()
        self._closed = True

    def delete(self) -> Path:
        """Close and rename the directory to ``<topic>-<p>.<uuidhex>-delete``; LogManager removes it later."""
        for seg in self.segments + self._pending_deletes:
            seg.close_handles()
        self._closed = True
        target = self.dir.with_name(f"{self.topic_partition}.{uuid.uuid4().hex}{DELETE_DIR_SUFFIX}")
        os.replace(self.dir, target)
        fsync_dir(target.parent)
        self.dir = target
        return target

    def remove_dir(self) -> None:
        shutil.rmtree(self.dir, ignore_errors=True)

    def __repr__(self) -> str:
        return (
            f"Log({self.topic_partition}, log_start_offset={self.log_start_offset}, "
            f"log_end_offset={self.log_end_offset}, segments={len(self.segments)})"
        )

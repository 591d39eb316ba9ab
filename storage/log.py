"""One partition's log: a directory ``<topic>-<partition>`` of segments, checkpoints and snapshots.

Contract: offsets are dense and increase across segments ordered by base offset; ``log_start_offset`` <=
every readable offset < ``log_end_offset``. Leader appends get offsets assigned in place (baseOffset and
partitionLeaderEpoch are outside the CRC) and pass the producer checks; follower appends keep the leader's
offsets and must start at or after the log end offset. Reads return ``FileSlice``s of whole batches (never
spanning two segments) for ``sendfile``; a read_committed read also collects the aborted transactions of
the range from the segments' ``.txnindex`` (``include_aborted_transactions``).

Every method is synchronous and called from one thread, except ``flush``, which may run in a worker thread
while appends continue (a lock guards the segment list and the recovery point). With a ``writer``
(``storage.log_writer``, a thread of its log dir) an append is reserved on the caller's thread (offsets, producer
state, indexes and ``appended_end_offset`` move at once) and written by the writer: ``log_end_offset``, the end
of what is written and therefore what reads, the high watermark and followers see, moves only when the writer's
completions are applied (``LogWriter.apply_completed``, on the same thread). Truncation, close and deletion first
wait for the log's writes; a failed write rolls every later reservation back. ``truncations`` counts every cut
(truncation or rollback): whoever waits for an offset to be written learns from it that it may never be.

``Log.open`` loads and recovers the directory through ``storage.log_loader`` (Kafka's LogLoader); a leader
append is checked once, and its offsets assigned, by ``storage.log_validator`` (Kafka's LogValidator).

Transactions (Kafka's UnifiedLog): every append (leader, follower, recovery) passes the producer state
(``storage.producer_append``); an end marker completes its producer's transaction, and an abort is indexed
in the active segment's ``.txnindex`` with the LSO of that moment. Control batches come only from
``AppendOrigin.COORDINATOR`` (the validator refuses them from clients). The high watermark the partition
reports, the first unstable and last stable offsets and the KIP-890 guards live in
``storage.log_transactions``; retention, the log start offset and delayed deletion of ``.deleted`` segments
(``file_delete_delay_ms``, as Kafka) in ``storage.log_retention``.
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
from storage.epoch_cache import LEADER_EPOCH_CHECKPOINT, LeaderEpochFileCache
from storage.errors import (
    CorruptLogError,
    DuplicateSequenceError,
    InvalidRecordError,
    OffsetOutOfRangeError,
    RecordTooLargeError,
    UnexpectedAppendOffsetError,
)
from storage.log_loader import SWAP_SUFFIX, LogLoader, rebuild_producer_state
from storage.log_retention import LogRetention
from storage.log_transactions import LogTransactions
from storage.log_validator import AppendOrigin, validate_and_assign_offsets
from storage.log_writer import LogWriter, PendingWrite
from storage.producer_append import analyze_producer_state, apply_producer_state
from storage.producer_state import ProducerStateManager, ProducerStateManagerConfig, VerificationGuard
from storage.segment import LogSegment, parse_batches
from storage.values import FetchDataInfo, LogAppendInfo, LogOffsetMetadata, TopicPartition

log = logging.getLogger(__name__)

PARTITION_METADATA = "partition.metadata"
DELETE_DIR_SUFFIX = "-delete"
LOG_APPEND_TIME = "LogAppendTime"


def _now_ms() -> int:
    return int(time.time() * 1000)


class Log(LogTransactions, LogRetention):
    def __init__(self, dir: Path, config: LogConfig, topic_partition: TopicPartition,
                 producer_state_config: ProducerStateManagerConfig | None = None) -> None:
        # The caller's Path when it is one: its log's, shared (Path(path) copies, ~450 bytes per partition each).
        self.dir = dir if isinstance(dir, Path) else Path(dir)
        self.config = config
        self.topic_partition = topic_partition
        self.segments: list[LogSegment] = []
        self.log_start_offset = 0
        self.log_end_offset = 0
        self.recovery_point = 0
        self.topic_id: uuid.UUID | None = None
        # Kafka's PartitionMetadataFile.record: a topic id not in partition.metadata yet (flush_metadata_files)
        self._unflushed_topic_id: uuid.UUID | None = None
        self._metadata_lock = threading.Lock()
        self.leader_epoch_cache = LeaderEpochFileCache(None)
        self.producer_state = ProducerStateManager(self.dir, topic_partition, producer_state_config)
        self._high_watermark: int | None = None  # reported by the partition; None: no partition yet
        # Kafka's firstUnstableOffsetMetadata: placed in the log when a read needs its position
        self._first_unstable: LogOffsetMetadata | None = None
        self.last_flush_ms = _now_ms()
        self._lock = threading.RLock()
        self._pending_deletes: list[LogSegment] = []
        self._unsynced_files: list[Path] = []
        self._dir_needs_sync = False
        self._closed = False
        self.writer: LogWriter | None = None
        self._unwritten_end: int | None = None  # end of the reserved appends the writer still holds
        self._write_failed = False
        self.truncations = 0  # times the log was cut back: a wait for an offset reserved before may never end

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
        topic_partition: TopicPartition | None = None,
        producer_state_config: ProducerStateManagerConfig | None = None,
    ) -> Log:
        """Open (or create) the log in ``dir``, named ``<topic>-<partition>`` unless ``topic_partition`` is
        given (a future log's directory, ``<topic>-<partition>.<uuid hex>-future``). ``producer_state_config``
        is the broker's shared one (producer.id.expiration.ms); without it, Kafka's defaults."""
        dir = Path(dir)
        dir.mkdir(parents=True, exist_ok=True)
        self = cls(dir, config, topic_partition or TopicPartition.from_dir_name(dir.name), producer_state_config)
        LogLoader(
            self,
            log_start_offset=log_start_offset,
            recovery_point=recovery_point,
            had_clean_shutdown=had_clean_shutdown,
            now_ms=_now_ms() if now_ms is None else now_ms,
        ).load()
        self._load_topic_id(topic_id)
        return self

    @classmethod
    def create(
        cls,
        dir: Path,
        config: LogConfig,
        *,
        topic_id: uuid.UUID | None = None,
        producer_state_config: ProducerStateManagerConfig | None = None,
    ) -> Log:
        """A new partition's log in ``dir`` (Kafka's LogManager.getOrCreateLog of a new log): the directory,
        one empty segment, nothing to load. A directory already there is opened and recovered (``open``). The
        topic id and the leader epoch a leader assigns are written by ``flush_metadata_files`` (off the
        caller's thread, and always before the first data)."""
        dir = Path(dir)
        try:
            dir.mkdir(parents=True)
        except FileExistsError:
            return cls.open(dir, config, had_clean_shutdown=True, topic_id=topic_id,
                            producer_state_config=producer_state_config)
        self = cls(dir, config, TopicPartition.from_dir_name(dir.name), producer_state_config)
        self.segments.append(LogSegment(dir, 0, config, now_ms=_now_ms(), new=True))
        self.leader_epoch_cache = LeaderEpochFileCache(dir / LEADER_EPOCH_CHECKPOINT)
        self.topic_id = self._unflushed_topic_id = topic_id
        return self

    @property
    def has_unflushed_metadata(self) -> bool:
        """partition.metadata or the leader-epoch checkpoint is behind (``flush_metadata_files``)."""
        return self._unflushed_topic_id is not None or self.leader_epoch_cache.dirty

    def flush_metadata_files(self) -> None:
        """Kafka's maybeFlushMetadataFile (its ``flush-metadata-file`` task), with the leader-epoch checkpoint:
        write what is behind, each file fsynced and renamed, then the directory fsynced once. Called off the
        event loop after a partition is created or becomes leader, and before any data is written (the writer
        thread's first write, an in-place append), so data on disk always has its topic id and epochs; on
        close. Any thread; a closed log (deleted, moved aside) is left alone."""
        if not self.has_unflushed_metadata:
            return
        with self._metadata_lock:
            if self._closed:
                return
            wrote = False
            topic_id = self._unflushed_topic_id
            if topic_id is not None:
                PartitionMetadataFile(self.dir / PARTITION_METADATA).write(topic_id, sync_dir=False)
                self._unflushed_topic_id = None
                wrote = True
            wrote = self.leader_epoch_cache.flush_if_dirty(sync_dir=False) or wrote
            if wrote:
                fsync_dir(self.dir)

    def maybe_assign_epoch_start_offset(self, leader_epoch: int, start_offset: int) -> None:
        """Kafka's maybeAssignEpochStartOffset (a new leader's epoch starts at its log end offset), written by
        ``flush_metadata_files`` (see ``storage.epoch_cache``: until data of the epoch is written, a crash
        leaves the same cache with or without the entry)."""
        self.leader_epoch_cache.assign(leader_epoch, start_offset, flush=False)

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
            # Kafka's initializeTopicId: recorded now, written by flush_metadata_files (a log whose file went
            # missing in a crash gets it back this way once the metadata names its topic id).
            self._unflushed_topic_id = topic_id

    def assign_topic_id(self, topic_id: uuid.UUID) -> None:
        """Kafka's assignTopicId: a log without a topic id takes it (recorded, written by
        ``flush_metadata_files``); one with another topic id refuses it."""
        if self.topic_id is not None:
            if self.topic_id != topic_id:
                raise ValueError(f"{self.topic_partition}: topic id {topic_id} does not match {self.topic_id}")
            return
        self._load_topic_id(topic_id)

    # ==== appends ========================================================================================
    @property
    def active_segment(self) -> LogSegment:
        return self.segments[-1]

    @property
    def appended_end_offset(self) -> int:
        """The offset the next append gets: the log end offset plus what the writer has not written yet."""
        return self.log_end_offset if self._unwritten_end is None else self._unwritten_end

    def append_as_leader(
        self,
        records: bytearray | memoryview,
        leader_epoch: int,
        *,
        now_ms: int,
        log_append_time: int | None = None,
        origin: AppendOrigin = AppendOrigin.CLIENT,
        verification_guard: VerificationGuard | None = None,
    ) -> LogAppendInfo:
        """Validate (``storage.log_validator``), assign offsets in place, check the producers' idempotent and
        transactional state and append; raises the typed errors of ``storage.errors``. Topics with
        ``message.timestamp.type=LogAppendTime`` get ``now_ms`` as log append time unless
        ``log_append_time`` is given. A duplicate of a producer's recent batch is not written: the result
        carries the original offsets and ``duplicate=True``. Transaction markers (control batches) need
        ``origin=AppendOrigin.COORDINATOR``; ``verification_guard`` is the KIP-890 guard of a verified
        transactional produce (``maybe_start_transaction_verification``)."""
        buf = records
        if isinstance(buf, memoryview) and buf.readonly or isinstance(buf, bytes):
            buf = bytearray(buf)
        if log_append_time is None and self.config.message_timestamp_type == LOG_APPEND_TIME:
            log_append_time = now_ms
        assigned = validate_and_assign_offsets(
            buf,
            self.topic_partition,
            self.config,
            first_offset=self.appended_end_offset,
            leader_epoch=leader_epoch,
            origin=origin,
            log_append_time=log_append_time,
        )
        updated = completed = duplicate = None
        for _, h in assigned:
            if h[9] >= 0:  # a producer id: only then is there producer state to check (Kafka's hasProducerId)
                updated, completed, duplicate = analyze_producer_state(
                    self.producer_state, buf, assigned, origin, verification_guard)
                break
        if duplicate is not None:
            if len(assigned) != 1:
                raise DuplicateSequenceError(
                    f"{self.topic_partition}: duplicate batch of producer {assigned[0][1].producer_id} among several"
                )
            return LogAppendInfo(
                duplicate.first_offset,
                duplicate.last_offset,
                duplicate.timestamp,
                duplicate.last_offset,
                -1,
                self.log_start_offset,
                assigned[0][1].records_count,
                0,
                duplicate=True,
            )
        info = self._append(buf, assigned, now_ms, log_append_time)
        if updated is not None:
            self._apply_producer_state(updated, completed)  # type: ignore[arg-type]
        else:
            self.producer_state.map_end_offset = self.appended_end_offset
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
            leo = self.appended_end_offset
            return LogAppendInfo(leo, leo - 1, -1, -1, -1, self.log_start_offset, 0, 0)
        if batches[-1][0] + batches[-1][1].size < len(records):
            records = memoryview(records)[: batches[-1][0] + batches[-1][1].size]
        self._check_sizes(batches)
        expected = self.appended_end_offset
        if batches[0][1].base_offset < expected:
            raise UnexpectedAppendOffsetError(
                f"{self.topic_partition}: follower append at offset {batches[0][1].base_offset} below {expected}",
                batches[0][1].base_offset, batches[-1][1].next_offset - 1)
        for _, h in batches:
            if h.base_offset < expected:
                raise InvalidRecordError(
                    f"{self.topic_partition}: follower append at offset {h.base_offset} below {expected}"
                )
            expected = h.next_offset
        updated = completed = None
        for _, h in batches:
            if h[9] >= 0:
                updated, completed, _ = analyze_producer_state(self.producer_state, records, batches,
                                                               AppendOrigin.REPLICATION)
                break
        info = self._append(records, batches, _now_ms(), None)
        if updated is not None:
            self._apply_producer_state(updated, completed)  # type: ignore[arg-type]
        else:
            self.producer_state.map_end_offset = self.appended_end_offset
        for _, h in batches:
            if h.partition_leader_epoch >= 0:
                self.leader_epoch_cache.assign(h.partition_leader_epoch, h.base_offset)
        return info

    def _apply_producer_state(self, updated: dict, completed: list) -> None:
        """After the bytes are written (Kafka's append): producers, aborts into the active segment's txn
        index, the first unstable offset. Without producer ids or transactions this is two cheap checks."""
        ps = self.producer_state
        if completed:
            apply_producer_state(ps, self.active_segment.txn_index, updated, completed)
        else:
            for info in updated.values():
                ps.update(info)
        ps.map_end_offset = self.appended_end_offset
        if ps.has_transactions or self._first_unstable is not None:
            self._update_first_unstable_offset()

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
        if self.writer is None:
            self.flush_metadata_files()  # the writer thread does it before its write
            seg.append(buf, batches)
            self.log_end_offset = last.next_offset
        else:
            position = seg.reserve(buf, batches)
            self._unwritten_end = last.next_offset
            self.writer.submit(PendingWrite(self, seg, position, buf, last.next_offset, self.truncations))
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
        self._roll(self.appended_end_offset, _now_ms())

    def _roll(self, new_base: int, now_ms: int) -> None:
        new_base = max(new_base, self.appended_end_offset)
        with self._lock:
            active = self.active_segment
            if active.base_offset == new_base:
                if active.appended_size == 0:
                    return  # an empty active segment already starts there
                raise InvalidRecordError(f"{self.topic_partition}: cannot roll to existing base {new_base}")
            if active.appended_size == 0:
                # an empty segment would be shadowed by the new one; Kafka deletes it
                active.delete_files()
                self.segments.pop()
            else:
                active.on_become_inactive()
            self.producer_state.map_end_offset = self.appended_end_offset
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
        include_aborted_transactions: bool = False,
    ) -> FetchDataInfo:
        """Whole batches from ``start_offset`` up to ``max_offset`` (exclusive; None: the log end). With
        ``include_aborted_transactions`` (read_committed) the result lists the aborted transactions that
        overlap what was read (Kafka's addAbortedTransactions), an empty list when nothing was."""
        leo = self.log_end_offset
        if start_offset < self.log_start_offset or start_offset > leo:
            raise OffsetOutOfRangeError(
                f"{self.topic_partition}: offset {start_offset} outside [{self.log_start_offset}, {leo}]"
            )
        aborted = [] if include_aborted_transactions else None
        if start_offset == leo:
            return FetchDataInfo(start_offset, None, fetch_offset_metadata=self.log_end_offset_metadata,
                                 aborted_transactions=aborted)
        if max_offset is not None and start_offset >= max_offset:
            return FetchDataInfo(start_offset, None, fetch_offset_metadata=LogOffsetMetadata(start_offset),
                                 aborted_transactions=aborted)
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
            if include_aborted_transactions and records is not None:
                aborted = self._aborted_transactions_of_read(start_offset, seg, records.position, records.length)
            return FetchDataInfo(start_offset, records, incomplete, metadata, aborted)
        return FetchDataInfo(start_offset, None, fetch_offset_metadata=LogOffsetMetadata(start_offset),
                             aborted_transactions=aborted)

    @property
    def log_end_offset_metadata(self) -> LogOffsetMetadata:
        """The log end offset with its place: the end of the written part of the segment holding it (the
        active segment unless the writer still holds appends past a roll)."""
        leo = self.log_end_offset
        segments = self.segments
        seg = segments[-1]
        if seg.base_offset > leo:
            seg = segments[max(0, bisect.bisect_right(segments, leo, key=lambda s: s.base_offset) - 1)]
        return LogOffsetMetadata(leo, seg.base_offset, seg.size)

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
        """(max timestamp, offset of the first record carrying it), (-1, -1) for an empty log."""
        best: LogSegment | None = None
        for seg in list(self.segments):
            if seg.max_timestamp_so_far > (best.max_timestamp_so_far if best is not None else -1):
                best = seg
        return (-1, -1) if best is None else (best.max_timestamp_so_far, best.offset_of_max_timestamp())

    def size_in_bytes(self) -> int:
        return sum(s.size for s in self.segments)

    # ==== truncation ======================================================================================
    def truncate_to(self, offset: int) -> None:
        if offset < 0:
            raise ValueError(f"cannot truncate to negative offset {offset}")
        self.wait_for_writes()
        self._truncate(offset)

    def _truncate(self, offset: int) -> None:
        if offset >= self.appended_end_offset:
            # No data to drop, but an epoch that starts at or after `offset` (a leader epoch assigned at
            # our end with nothing appended under it) must still go, as in Kafka.
            self.leader_epoch_cache.truncate_from_end(offset)
            return
        if offset < self.log_start_offset or offset < self.segments[0].base_offset:
            # nothing below the log start offset may be served again: Kafka restarts the log there
            self.truncate_fully_and_start_at(offset)
            return
        # From the appended end: a rolled-back write cuts appends the log end offset never reached.
        log.info("%s: truncating from %d to %d", self.topic_partition, self.appended_end_offset, offset)
        self.truncations += 1
        with self._lock:
            doomed = [s for s in self.segments if s.base_offset >= offset and s is not self.segments[0]]
            self._schedule_deletion(doomed, _now_ms())
            self.segments = [s for s in self.segments if s not in doomed]
            self.active_segment.truncate_to(offset)
            self.log_end_offset = self.active_segment.next_offset
            self._unwritten_end = None
            self.recovery_point = min(self.recovery_point, self.log_end_offset)
            self.log_start_offset = min(self.log_start_offset, self.log_end_offset)
        self.leader_epoch_cache.truncate_from_end(self.log_end_offset)
        rebuild_producer_state(self, _now_ms())
        self._update_first_unstable_offset()

    def starts_inside(self, refused: UnexpectedAppendOffsetError) -> bool:
        """Whether a refused follower append is this empty log's first batch, with the log start offset inside
        it (a leader's log start moved into a batch by DeleteRecords): the log may restart at the batch."""
        start = self.log_start_offset
        return self.log_end_offset == start and refused.first_offset < start <= refused.last_offset

    def truncate_fully_and_start_at(self, offset: int) -> None:
        log.info("%s: truncating fully, restarting at %d", self.topic_partition, offset)
        self.wait_for_writes()
        self.truncations += 1
        now = _now_ms()
        with self._lock:
            self._schedule_deletion(list(self.segments), now)
            self.segments = [LogSegment.open(self.dir, offset, self.config, now_ms=now)]
            self.log_end_offset = self.log_start_offset = self.recovery_point = offset
        self.leader_epoch_cache.clear_and_flush()
        self.producer_state.truncate_fully(offset)
        self._first_unstable = None

    # ==== the writer's completions ========================================================================
    def wait_for_writes(self) -> None:
        """Block until the writer holds none of this log's appends, and apply them (Kafka has nothing to wait
        for: its append writes in place). Truncation and close need the file as appended."""
        if self.writer is not None and self._unwritten_end is not None:
            self.writer.wait_idle(self)
            self.writer.apply_completed()

    def on_written(self, job: PendingWrite) -> None:
        """The writer is done with one append (``LogWriter.apply_completed`` calls this, in order)."""
        if job.truncations != self.truncations:
            return  # reserved before a rollback that already undid it
        if job.error is None and not self._write_failed:
            job.segment.mark_written(len(job.data))
            self.log_end_offset = job.end_offset
            if self._unwritten_end == job.end_offset:
                self._unwritten_end = None
            return
        self._write_failed = True
        if self.writer is not None and not self.writer.has_unwritten(self):
            self._roll_back_unwritten()

    def _roll_back_unwritten(self) -> None:
        """A write failed: forget every append after the last written one, as if none had been made."""
        log.error("%s: a write failed; appends from offset %d to %d are rolled back", self.topic_partition,
                  self.log_end_offset, self.appended_end_offset)
        self._write_failed = False
        self._truncate(self.log_end_offset)  # counts in `truncations`: stale jobs and waiters see it
        if self.writer is not None:
            self.writer.clear_failure(self)

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
        self.wait_for_writes()
        self.flush_metadata_files()
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
        self.wait_for_writes()
        for seg in self.segments + self._pending_deletes:
            seg.close_handles()
        with self._metadata_lock:
            self._closed = True

    def delete(self) -> Path:
        """Close and rename the directory to ``<topic>-<p>.<uuidhex>-delete``; LogManager removes it later."""
        self.wait_for_writes()
        for seg in self.segments + self._pending_deletes:
            seg.close_handles()
        with self._metadata_lock:  # a flush_metadata_files in a worker thread ends first, and none starts after
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

"""Log compaction (cleanup.policy=compact and compact,delete): Kafka's LogCleaner for one log at a time.

Contract:
- ``LogCleaner().clean(log, now_ms) -> CleanerStats`` runs off the hot path (a worker thread). It reads only
  non-active segments, writes cleaned copies as ``.cleaned`` segments and swaps each group in through
  ``log.replace_segments(new, old)`` (the Log's crash-safe ``.cleaned`` -> ``.swap`` -> live protocol), then
  records the first dirty offset in the log dir's ``cleaner-offset-checkpoint`` (Kafka's format).
- Cleanable range: ``[log_start_offset, first_uncleanable)`` where first_uncleanable is the smallest of the
  active segment's base offset, the log's last stable offset (``Log.last_stable_offset``: never past an open
  transaction nor the high watermark) and the base offset of the first segment younger than
  ``min.compaction.lag.ms``, rounded down to a segment boundary.
  The dirty part starts at the checkpointed offset. Nothing happens when the dirty ratio (dirty bytes over
  cleanable bytes) is below ``min.cleanable.dirty.ratio``.
- The offset map (key -> last offset) is built over the dirty part; every cleanable segment (clean and
  dirty) is then rewritten keeping a record when it has a key, no later offset exists for that key, and it
  is not a tombstone old enough to drop: tombstones are removed once their segment's last-modified time is
  ``delete.retention.ms`` in the past. The latest value of a key is never removed.
- Batches keep Kafka's shape: a batch whose records all survive is copied byte for byte; otherwise the
  survivors are re-encoded into one batch with the original base offset, last offset delta (so the producer's
  last sequence survives), producer id/epoch/base sequence, partition leader epoch, timestamp type and
  compression. A batch left without records is dropped, except that an idempotent producer's last batch is
  kept as an empty batch (Kafka's RETAIN_EMPTY) so its sequence state survives compaction.
- Transactions (Kafka's CleanedTransactionMetadata): the aborted transactions come from the segments'
  transaction indexes; their data batches are removed whatever their keys. A marker (control batch) stays
  while any batch of its transaction is still in the log; once none is, the marker is rewritten with a
  KIP-534 delete horizon (``now + delete.retention.ms`` in the header's base timestamp, attribute bit 6) and
  removed by a later clean after that horizon, except the one batch that carries a producer's state (its
  last data batch, or its last marker when it has no data left), which stays as a header-only batch. Each
  cleaned segment gets a transaction index listing the aborted transactions whose data it still holds.
Known gaps (Kafka does these, we do not): the delete horizon for tombstones (tombstones expire by segment
mtimes as pre-2.8 Kafka did), max.compaction.lag.ms, the cleaner's I/O throttle, and coordination with
retention/truncation (the broker must not run those on a log while it is being cleaned; Kafka's
LogCleanerManager pauses cleaning for them).
"""

from __future__ import annotations

import heapq
import logging
import os
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from records import BatchHeader, Record, RecordBatch, TimestampType, build_batch, control_record_type, parse_header
from storage.checkpoints import OffsetCheckpointFile
from storage.file_records import iter_file_entries
from storage.segment import LogSegment
from storage.transaction_index import AbortedTxn, TransactionIndex
from storage.values import TopicPartition

if TYPE_CHECKING:
    from storage.log import Log

log = logging.getLogger(__name__)

CLEANER_CHECKPOINT = "cleaner-offset-checkpoint"
CLEANED_SUFFIX = ".cleaned"
INT32_MAX = 2147483647
_WRITE_CHUNK = 4 * 1024 * 1024


@dataclass
class CleanerStats:
    """What one ``clean`` call did; ``skipped`` says why nothing was cleaned."""

    topic_partition: TopicPartition | None = None
    skipped: str | None = None
    first_dirty_offset: int = 0
    end_offset: int = 0  # first offset not cleaned (the new cleaner checkpoint)
    dirty_ratio: float = 0.0
    map_entries: int = 0
    segments_read: int = 0
    segments_written: int = 0
    bytes_read: int = 0
    bytes_written: int = 0
    records_read: int = 0
    records_retained: int = 0
    tombstones_removed: int = 0
    keyless_removed: int = 0
    aborted_removed: int = 0
    elapsed_ms: float = 0.0

    @property
    def cleaned(self) -> bool:
        return self.skipped is None


class CleanerError(Exception):
    """The log changed under the cleaner (segments removed or truncated) or a segment is unreadable."""


class CleanerAbortedError(CleanerError):
    """``abort_and_pause`` stopped a clean in progress; its partial output was discarded."""


def segment_batches(seg: LogSegment) -> Iterator[tuple[BatchHeader, memoryview]]:
    """Every complete v2 batch of a segment, read in large chunks through the segment's fd."""
    end = 0
    for pos, magic, batch in iter_file_entries(seg.fd, 0, seg.size, max_entry_bytes=max(seg.size, 1)):
        if magic != 2:
            raise CleanerError(f"{seg.log_path}: magic {magic} entry at position {pos}")
        yield parse_header(batch), batch
        end = pos + len(batch)
    if end != seg.size:
        # Never write a cleaned copy from a partial read: that would silently drop the rest of the segment.
        raise CleanerError(f"{seg.log_path}: unreadable batch at position {end} of {seg.size}")


def _last_modified_ms(seg: LogSegment) -> int:
    return int(os.stat(seg.log_path).st_mtime * 1000)


class CleanedTransactionMetadata:
    """The transactions the cleaner walks through, in offset order (Kafka's CleanedTransactionMetadata):
    which data batches belong to aborted transactions, and when a marker may go. ``add_aborted_transactions``
    feeds it the index entries of the range about to be read; ``cleaned_index`` receives the aborted
    transactions whose data the cleaned segment still holds."""

    def __init__(self) -> None:
        self._ongoing_committed: set[int] = set()  # producers whose committed data was seen since its marker
        self._ongoing_aborted: dict[int, list] = {}  # producer id -> [AbortedTxn, data of it seen]
        self._aborted: list[tuple[int, int, AbortedTxn]] = []  # heap by first offset
        self._seq = 0
        self.cleaned_index: TransactionIndex | None = None

    def add_aborted_transactions(self, txns: list[AbortedTxn]) -> None:
        for txn in txns:
            self._seq += 1
            heapq.heappush(self._aborted, (txn.first_offset, self._seq, txn))

    def _consume_aborted_up_to(self, offset: int) -> None:
        while self._aborted and self._aborted[0][0] <= offset:
            txn = heapq.heappop(self._aborted)[2]
            self._ongoing_aborted.setdefault(txn.producer_id, [txn, False])

    def on_control_batch_read(self, header: BatchHeader, batch: memoryview) -> bool:
        """A marker; True when no data of its transaction is left (the marker may go, after its horizon)."""
        self._consume_aborted_up_to(header.last_offset)
        first = next(RecordBatch(batch).records(), None)
        if first is None:
            return True  # already emptied by an earlier clean
        kind = control_record_type(first.key)
        pid = header.producer_id
        if kind == 0:  # ABORT
            txn = self._ongoing_aborted.pop(pid, None)
            if txn is not None and txn[1]:
                if self.cleaned_index is not None:
                    self.cleaned_index.append(txn[0])
                return False
            return True
        if kind == 1:  # COMMIT
            if pid in self._ongoing_committed:
                self._ongoing_committed.discard(pid)
                return False
            return True
        return False

    def on_batch_read(self, header: BatchHeader) -> bool:
        """A data batch; True when it belongs to an aborted transaction."""
        self._consume_aborted_up_to(header.last_offset)
        if not header.is_transactional:
            return False
        txn = self._ongoing_aborted.get(header.producer_id)
        if txn is not None:
            txn[1] = True
            return True
        self._ongoing_committed.add(header.producer_id)
        return False


def filter_batch(
    header: BatchHeader,
    batch: memoryview,
    offset_map: dict[bytes, int],
    *,
    drop_tombstones: bool,
    aborted: bool,
    retain_empty: bool,
    stats: CleanerStats,
    marker_horizon_ms: int | None = None,
) -> bytes | None:
    """The bytes to keep for one batch: the original, a re-encoded subset, an empty batch, or None.

    ``aborted`` drops every record (aborted data, or a marker past its delete horizon); a control batch is
    otherwise kept whole, rewritten with ``marker_horizon_ms`` as its delete horizon when given and it has
    none yet (its transaction's data is gone)."""
    view = RecordBatch(batch)
    if not view.is_valid():
        # Recovery validated these bytes once; a mismatch now means the file changed under us. Never copy it.
        raise CleanerError(f"CRC mismatch in the batch at offset {header.base_offset}")
    if header.is_control:
        if header.records_count == 0:  # emptied by an earlier clean
            return bytes(batch) if retain_empty else None
        if aborted:
            return _retained_batch(header, []) if retain_empty else None
        if marker_horizon_ms is None or header.has_delete_horizon:
            return bytes(batch)
        return _retained_batch(header, list(view.records()), delete_horizon_ms=marker_horizon_ms)
    records = list(view.records())
    stats.records_read += len(records)
    kept: list[Record] = []
    for r in records:
        if aborted:
            stats.aborted_removed += 1
        elif r.key is None:
            stats.keyless_removed += 1
        elif offset_map.get(r.key, -1) > r.offset:
            pass  # a later value of this key exists
        elif r.value is None and drop_tombstones:
            stats.tombstones_removed += 1
        else:
            kept.append(r)
    stats.records_retained += len(kept)
    if not kept:
        # Kafka's DELETE_EMPTY, or RETAIN_EMPTY for the batch that carries a producer's state
        if not records and retain_empty:
            return bytes(batch)
        return _retained_batch(header, []) if retain_empty else None
    if len(kept) == len(records):
        return bytes(batch)
    return _retained_batch(header, kept)


def _retained_batch(header: BatchHeader, records: list[Record], *, delete_horizon_ms: int | None = None) -> bytes:
    """``records`` of a batch re-encoded in Kafka's shape (buildRetainedRecordsInto): base offset, last offset
    delta (the producer's sequence range), producer fields, flags, partition leader epoch, timestamp type and
    codec stay. Without records it is Kafka's writeEmptyHeader (both timestamps the batch's max timestamp: a
    producer's state survives in it); ``delete_horizon_ms`` stamps a KIP-534 delete horizon."""
    return build_batch(
        [(r.key, r.value, r.headers, r.timestamp) for r in records],
        base_offset=header.base_offset,
        offset_deltas=[r.offset - header.base_offset for r in records],
        last_offset_delta=header.last_offset_delta,
        base_timestamp=None if records else header.max_timestamp,
        delete_horizon_ms=delete_horizon_ms,
        max_timestamp=header.max_timestamp if header.timestamp_type == TimestampType.LOG_APPEND_TIME else None,
        timestamp_type=header.timestamp_type,
        compression=header.compression,
        partition_leader_epoch=header.partition_leader_epoch,
        is_transactional=header.is_transactional,
        is_control=header.is_control,
        producer_id=header.producer_id,
        producer_epoch=header.producer_epoch,
        base_sequence=header.base_sequence,
    )


def _retains_producer_state(header: BatchHeader, last_records: dict[int, tuple[int, int]]) -> bool:
    """Kafka's isBatchLastRecordOfProducer: the batch holding an active producer's last data offset, or,
    for a producer without data left, its marker of the current epoch."""
    last = last_records.get(header.producer_id)
    if header.producer_id < 0 or last is None:
        return False
    last_data_offset, epoch = last
    if last_data_offset >= 0:
        return header.last_offset == last_data_offset
    return header.is_control and header.producer_epoch == epoch


def _group_segments(segments: list[LogSegment], max_size: int, max_index_size: int) -> list[list[LogSegment]]:
    """Kafka's groupSegmentsBySize: consecutive segments whose log bytes fit one segment, whose index entries
    fit one index, and whose offsets fit one relative-offset range, so each group cleans into one segment."""
    groups: list[list[LogSegment]] = []
    i = 0
    while i < len(segments):
        group = [segments[i]]
        total = segments[i].size
        index_bytes = segments[i].offset_index.size_in_bytes
        time_index_bytes = segments[i].time_index.size_in_bytes
        i += 1
        while i < len(segments):
            nxt = segments[i]
            last_offset = segments[i + 1].base_offset - 1 if i + 1 < len(segments) else nxt.next_offset - 1
            if (total + nxt.size > max_size
                    or index_bytes + nxt.offset_index.size_in_bytes > max_index_size
                    or time_index_bytes + nxt.time_index.size_in_bytes > max_index_size
                    or last_offset - group[0].base_offset > INT32_MAX):
                break
            group.append(nxt)
            total += nxt.size
            index_bytes += nxt.offset_index.size_in_bytes
            time_index_bytes += nxt.time_index.size_in_bytes
            i += 1
        groups.append(group)
    return groups


class LogCleaner:
    """Compacts logs one at a time; safe to share between threads (checkpoint writes are serialized)."""

    def __init__(self, *, max_map_entries: int = 1_000_000) -> None:
        # A soft bound: the map stops growing after the segment that reaches it (at least one dirty segment).
        self.max_map_entries = max_map_entries
        self._checkpoint_lock = threading.Lock()
        self._state = threading.Condition()
        self._in_progress: set[TopicPartition] = set()
        self._paused: dict[TopicPartition, int] = {}
        self._aborting: set[TopicPartition] = set()

    # -- pausing (Kafka's LogCleanerManager.abortAndPauseCleaning / resumeCleaning) ---------------------
    def abort_and_pause(self, tp: TopicPartition, timeout: float | None = None) -> bool:
        """Stop a running clean of ``tp`` and keep it from being cleaned until ``resume(tp)``.

        The broker calls this before truncating, deleting, or applying retention to a compacted log, then
        ``resume`` after. Blocks until a clean in progress has stopped (or swapped its current group in);
        returns False if ``timeout`` passed first. Pauses nest: each needs its own resume.
        """
        with self._state:
            self._paused[tp] = self._paused.get(tp, 0) + 1
            if tp in self._in_progress:
                self._aborting.add(tp)
            return self._state.wait_for(lambda: tp not in self._in_progress, timeout)

    def resume(self, tp: TopicPartition) -> None:
        with self._state:
            left = self._paused.get(tp, 0) - 1
            if left > 0:
                self._paused[tp] = left
            else:
                self._paused.pop(tp, None)

    def is_cleaning(self, tp: TopicPartition) -> bool:
        """A clean of ``tp`` is running (a paused one stops at its next abort check)."""
        with self._state:
            return tp in self._in_progress

    def is_paused(self, tp: TopicPartition) -> bool:
        with self._state:
            return tp in self._paused

    def _check_abort(self, tp: TopicPartition) -> None:
        if tp in self._aborting:  # a set read under the GIL; the flag is only ever added while we run
            raise CleanerAbortedError(f"cleaning of {tp} aborted")

    def dirtiest_log(self, logs: list[Log]) -> Log | None:
        """Kafka's grabFilthiestCompactedLog, by sizes only: the compacted, unpaused log with the highest
        dirty ratio at or above its min.cleanable.dirty.ratio (``clean`` re-checks transactions and lag)."""
        best: tuple[float, Log] | None = None
        for candidate in logs:
            if "compact" not in candidate.config.cleanup_policy.split(",") or self.is_paused(
                    candidate.topic_partition):
                continue
            segments = list(candidate.segments)
            if len(segments) < 2:
                continue
            first_dirty = self.first_dirty_offset(candidate)
            total = sum(seg.size for seg in segments[:-1])
            dirty = sum(seg.size for i, seg in enumerate(segments[:-1])
                        if segments[i + 1].base_offset > first_dirty)
            ratio = dirty / total if total else 0.0
            if not dirty or ratio < candidate.config.min_cleanable_dirty_ratio:
                continue
            if best is None or ratio > best[0]:
                best = (ratio, candidate)
        return None if best is None else best[1]

    # -- checkpoint -------------------------------------------------------------------------------------
    @staticmethod
    def checkpoint_file(log_dir: Path) -> OffsetCheckpointFile:
        return OffsetCheckpointFile(Path(log_dir) / CLEANER_CHECKPOINT)

    def first_dirty_offset(self, log: Log) -> int:
        checkpointed = self.checkpoint_file(log.dir.parent).read().get(log.topic_partition)
        if checkpointed is None or checkpointed < log.log_start_offset or checkpointed > log.log_end_offset:
            # Missing, below the log start (retention moved it) or past the end (truncation): restart.
            return log.log_start_offset
        return checkpointed

    def update_checkpoint(self, log_dir: Path, tp: TopicPartition, offset: int | None) -> None:
        """Set (or with None remove, e.g. on topic deletion) a partition's first dirty offset."""
        with self._checkpoint_lock:
            f = self.checkpoint_file(log_dir)
            offsets = f.read()
            if offset is None:
                offsets.pop(tp, None)
            else:
                offsets[tp] = offset
            f.write(offsets)

    # -- cleaning ---------------------------------------------------------------------------------------
    def clean(self, log: Log, now_ms: int) -> CleanerStats:
        """Compact ``log`` once (see the module contract). Raises CleanerError if the log is unreadable."""
        started = time.monotonic()
        tp = log.topic_partition
        stats = CleanerStats(topic_partition=tp)
        with self._state:
            if tp in self._paused:
                stats.skipped = "paused"
                return stats
            if tp in self._in_progress:
                stats.skipped = "already being cleaned"
                return stats
            self._in_progress.add(tp)
        try:
            self._clean(log, now_ms, stats)
        except CleanerAbortedError:
            stats.skipped = "aborted"
        finally:
            stats.elapsed_ms = (time.monotonic() - started) * 1000
            with self._state:
                self._in_progress.discard(tp)
                self._aborting.discard(tp)
                self._state.notify_all()
        return stats

    def _clean(self, log: Log, now_ms: int, stats: CleanerStats) -> None:
        config = log.config
        if "compact" not in config.cleanup_policy.split(","):
            stats.skipped = "cleanup.policy has no compact"
            return
        segments = list(log.segments)
        if len(segments) < 2:
            stats.skipped = "only the active segment"
            return
        first_dirty = self.first_dirty_offset(log)
        stats.first_dirty_offset = first_dirty
        # Never past the last stable offset: an open transaction's outcome (and what the HW has not reached)
        # is not known yet. The active segment is never cleaned.
        limit = min(segments[-1].base_offset, log.last_stable_offset)
        if config.min_compaction_lag_ms > 0:
            for seg in segments[:-1]:
                if seg.largest_timestamp() > now_ms - config.min_compaction_lag_ms:
                    limit = min(limit, seg.base_offset)
                    break
        # Cleanable segments end on a segment boundary at or below the limit.
        cleanable = [seg for i, seg in enumerate(segments[:-1]) if segments[i + 1].base_offset <= limit]
        dirty = [seg for i, seg in enumerate(cleanable) if segments[i + 1].base_offset > first_dirty]
        if not dirty:
            stats.skipped = "no dirty segments below the first uncleanable offset"
            stats.end_offset = first_dirty
            return
        dirty_bytes = sum(seg.size for seg in dirty)
        total_bytes = sum(seg.size for seg in cleanable)
        stats.dirty_ratio = dirty_bytes / total_bytes if total_bytes else 0.0
        if stats.dirty_ratio < config.min_cleanable_dirty_ratio:
            stats.skipped = f"dirty ratio {stats.dirty_ratio:.3f} < min.cleanable.dirty.ratio"
            return

        offset_map, end_offset = self._build_offset_map(log, dirty, segments, first_dirty, stats)
        stats.map_entries = len(offset_map)
        stats.end_offset = end_offset
        to_clean = [seg for seg in cleanable if seg.base_offset < end_offset]
        txns = CleanedTransactionMetadata()  # carried from group to group, as Kafka does
        last_records = log.producer_state.last_records_of_active_producers()
        for group in _group_segments(to_clean, config.segment_bytes, config.segment_index_bytes):
            self._clean_group(log, group, segments, offset_map, txns, last_records, now_ms, stats)
        self.update_checkpoint(log.dir.parent, log.topic_partition, end_offset)

    def _build_offset_map(
        self,
        log: Log,
        dirty: list[LogSegment],
        segments: list[LogSegment],
        first_dirty: int,
        stats: CleanerStats,
    ) -> tuple[dict[bytes, int], int]:
        """key -> latest offset over the dirty segments, without aborted data or markers."""
        tp = log.topic_partition
        end = segments[segments.index(dirty[-1]) + 1].base_offset
        txns = CleanedTransactionMetadata()
        txns.add_aborted_transactions(log.collect_aborted_transactions(first_dirty, end))
        offset_map: dict[bytes, int] = {}
        end_offset = first_dirty
        for seg in dirty:
            for header, batch in segment_batches(seg):
                self._check_abort(tp)
                if header.last_offset < first_dirty:
                    continue
                if header.is_control:
                    txns.on_control_batch_read(header, batch)
                    continue
                if txns.on_batch_read(header):
                    continue
                for r in RecordBatch(batch).records():
                    if r.key is not None and r.offset >= first_dirty:
                        offset_map[r.key] = r.offset
            stats.segments_read += 1
            stats.bytes_read += seg.size
            end_offset = segments[segments.index(seg) + 1].base_offset
            if len(offset_map) >= self.max_map_entries:
                break
        return offset_map, end_offset

    def _clean_group(
        self,
        log: Log,
        group: list[LogSegment],
        segments: list[LogSegment],
        offset_map: dict[bytes, int],
        txns: CleanedTransactionMetadata,
        last_records: dict[int, tuple[int, int]],
        now_ms: int,
        stats: CleanerStats,
    ) -> None:
        config = log.config
        drop_before_ms = now_ms - config.delete_retention_ms
        base = group[0].base_offset
        for suffix in (".log", ".index", ".timeindex", ".txnindex"):
            (log.dir / f"{base:020d}{suffix}{CLEANED_SUFFIX}").unlink(missing_ok=True)
        cleaned = LogSegment.open(log.dir, base, config, file_suffix=CLEANED_SUFFIX)
        txns.cleaned_index = cleaned.txn_index
        try:
            newest_mtime = 0
            for seg in group:
                modified = _last_modified_ms(seg)
                newest_mtime = max(newest_mtime, modified)
                drop_tombstones = modified <= drop_before_ms
                # the whole segment's aborted transactions: the cleaned index must list those still in it
                i = segments.index(seg)
                upper = segments[i + 1].base_offset if i + 1 < len(segments) else seg.next_offset
                txns.add_aborted_transactions(log.collect_aborted_transactions(seg.base_offset, upper))
                out = bytearray()
                for header, batch in segment_batches(seg):
                    self._check_abort(log.topic_partition)
                    if header.is_control:
                        # a marker whose transaction has no data left may go once its delete horizon passed
                        data_gone = txns.on_control_batch_read(header, batch)
                        discard = data_gone and header.has_delete_horizon and header.base_timestamp <= now_ms
                    else:
                        data_gone = False
                        discard = txns.on_batch_read(header)
                    kept = filter_batch(
                        header, batch, offset_map, drop_tombstones=drop_tombstones, aborted=discard,
                        retain_empty=_retains_producer_state(header, last_records), stats=stats,
                        marker_horizon_ms=now_ms + config.delete_retention_ms if data_gone else None,
                    )
                    if kept is not None:
                        out += kept
                    if len(out) >= _WRITE_CHUNK:
                        cleaned.append(bytes(out))
                        out.clear()
                if out:
                    cleaned.append(bytes(out))
            cleaned.on_become_inactive()
            cleaned.flush()
            # Keep the sources' age: tombstone expiry and time retention read the segment's mtime (as Kafka).
            os.utime(cleaned.log_path, ns=(newest_mtime * 1_000_000, newest_mtime * 1_000_000))
            stats.bytes_written += cleaned.size
            stats.segments_written += 1
            self._check_abort(log.topic_partition)
        except BaseException:
            cleaned.delete_files()
            raise
        finally:
            txns.cleaned_index = None
        log.replace_segments([cleaned], group)

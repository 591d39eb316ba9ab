"""Kafka's LogLoader: turn a partition directory into a consistent ``Log`` before it serves.

Contract: ``LogLoader(log, ...).load()`` fills a freshly constructed, empty ``Log`` from its directory, in
Kafka's order:
1. leftover ``.cleaned``, ``.deleted`` and ``.tmp`` files are removed;
2. ``.swap`` segments (the log cleaner's commit point) complete their interrupted swap: each replaces the
   segments whose base offsets it covers;
3. every ``<base>.log`` is opened with its indexes (orphan indexes are removed); an empty directory gets one
   empty segment at the log start offset;
4. recovery: unless the last shutdown was clean, every segment from the one holding the recovery point on
   (and any segment whose indexes failed their sanity check) is re-validated batch by batch (CRC32C, offsets,
   sizes), its indexes are rebuilt — the transaction index by replaying the segment into the producer state
   as of its base offset (the newest snapshot at or below it plus the batches in between), so aborts whose
   transaction began in an earlier segment are indexed again — and a torn or corrupt tail is truncated,
   later segments deleted, with one warning line naming file, offset and reason; a snapshot is taken at the
   end of each recovered segment (Kafka's recoverSegment);
5. log end offset, log start offset (the checkpoint, or the first segment's base), the leader-epoch cache
   (loaded, then truncated to the log's range; an unreadable checkpoint is replaced by an empty one), the
   recovery point; a log start offset beyond the end restarts the log there (Kafka does the same);
6. producer state: the newest snapshot at or below the log end offset, then the batches after it
   (``rebuild_producer_state``, which truncation uses too): open transactions come back from the snapshot's
   ``current_txn_first_offset`` and the replay, completed ones wait as unreplicated until the partition
   reports its high watermark.
"""

from __future__ import annotations

import bisect
import logging
from collections.abc import Iterator
from typing import TYPE_CHECKING

from records import BatchHeader
from storage.epoch_cache import LEADER_EPOCH_CHECKPOINT, LeaderEpochFileCache
from storage.errors import CorruptLogError
from storage.producer_append import load_producers
from storage.producer_state import ProducerStateManager
from storage.segment import LOG_SUFFIX, LogSegment
from storage.transaction_index import TXN_INDEX_SUFFIX

if TYPE_CHECKING:
    from storage.log import Log

log = logging.getLogger("storage.log")

CLEANED_SUFFIX = ".cleaned"
SWAP_SUFFIX = ".swap"
DELETED_SUFFIX = ".deleted"


def parse_base_offset(name: str, suffix: str) -> int | None:
    """The base offset in ``<20 digits><suffix>``, None for any other name."""
    if not name.endswith(suffix):
        return None
    stem = name[: -len(suffix)]
    return int(stem) if len(stem) == 20 and stem.isdigit() else None


class LogLoader:
    def __init__(
        self,
        log_: Log,
        *,
        log_start_offset: int,
        recovery_point: int,
        had_clean_shutdown: bool,
        now_ms: int,
    ) -> None:
        self.log = log_
        self.dir = log_.dir
        self.config = log_.config
        self.topic_partition = log_.topic_partition
        self.log_start_offset = log_start_offset
        self.recovery_point = recovery_point
        self.had_clean_shutdown = had_clean_shutdown
        self.now_ms = now_ms

    def load(self) -> None:
        lg = self.log
        self._remove_temporary_files()
        self._complete_swaps()
        self._load_segments()
        if not lg.segments:
            lg.segments.append(LogSegment.open(self.dir, self.log_start_offset, self.config, now_ms=self.now_ms))
        self._recover()
        lg.log_end_offset = lg.segments[-1].next_offset
        lg.log_start_offset = max(self.log_start_offset, lg.segments[0].base_offset)
        lg.leader_epoch_cache = self._load_leader_epoch_cache()
        if lg.log_start_offset > lg.log_end_offset:
            lg.truncate_fully_and_start_at(lg.log_start_offset)
        lg.leader_epoch_cache.truncate_from_end(lg.log_end_offset)
        lg.leader_epoch_cache.truncate_from_start(lg.log_start_offset)
        lg.recovery_point = min(max(self.recovery_point, lg.recovery_point), lg.log_end_offset)
        rebuild_producer_state(lg, self.now_ms)
        lg._update_first_unstable_offset()

    def _remove_temporary_files(self) -> None:
        for p in self.dir.iterdir():
            if p.name.endswith((CLEANED_SUFFIX, DELETED_SUFFIX, ".tmp")):
                log.info("removing leftover file %s", p)
                p.unlink(missing_ok=True)

    def _complete_swaps(self) -> None:
        """Finish a cleaner swap interrupted by a crash: a ``.swap`` segment replaces what it overlaps."""
        for p in sorted(self.dir.glob(f"*{LOG_SUFFIX}{SWAP_SUFFIX}")):
            base = parse_base_offset(p.name, LOG_SUFFIX + SWAP_SUFFIX)
            if base is None:
                continue
            swap = LogSegment(self.dir, base, self.config, file_suffix=SWAP_SUFFIX, now_ms=self.now_ms)
            swap.recover()
            end = swap.next_offset
            for q in list(self.dir.glob(f"*{LOG_SUFFIX}")):
                other = parse_base_offset(q.name, LOG_SUFFIX)
                if other is not None and base <= other < max(end, base + 1):
                    log.info("swap %s replaces %s", p.name, q.name)
                    for ext in (LOG_SUFFIX, ".index", ".timeindex", TXN_INDEX_SUFFIX):
                        (self.dir / f"{other:020d}{ext}").unlink(missing_ok=True)
            swap.change_file_suffixes(SWAP_SUFFIX, "")
            swap.on_become_inactive()
            swap.close_handles()
        for p in self.dir.glob(f"*{SWAP_SUFFIX}"):
            p.unlink(missing_ok=True)  # swapped index files whose .log was handled above

    def _load_segments(self) -> None:
        bases = set()
        for p in self.dir.iterdir():
            base = parse_base_offset(p.name, LOG_SUFFIX)
            if base is not None:
                bases.add(base)
        for p in self.dir.iterdir():
            for ext in (".index", ".timeindex", TXN_INDEX_SUFFIX):
                base = parse_base_offset(p.name, ext)
                if base is not None and base not in bases:
                    log.info("removing orphan index %s", p)
                    p.unlink(missing_ok=True)
        for base in sorted(bases):
            self.log.segments.append(LogSegment.open(self.dir, base, self.config, now_ms=self.now_ms))

    def _recover(self) -> None:
        segments = self.log.segments
        tp = self.topic_partition
        first_unflushed = len(segments)
        if not self.had_clean_shutdown:
            first_unflushed = max(
                0, bisect.bisect_right(segments, self.recovery_point, key=lambda s: s.base_offset) - 1
            )
        i = 0
        state: ProducerStateManager | None = None  # the producer state at the next segment to recover
        while i < len(segments):
            seg = segments[i]
            if i >= first_unflushed or seg.needs_recovery:
                if state is None or state.map_end_offset != seg.base_offset:
                    state = ProducerStateManager(self.dir, tp)
                    load_producer_state(state, segments[:i], self.log_start_offset, seg.base_offset)
                if seg.needs_recovery:
                    # after a crash the unflushed segments' indexes are expected to be stale: say so quietly
                    log.log(
                        logging.WARNING if i < first_unflushed else logging.INFO,
                        "%s: rebuilding indexes of %s: %s",
                        tp,
                        seg.log_path,
                        seg.index_problem,
                    )
                result = seg.recover(producer_state=state)
                seg.needs_recovery = False
                state.map_end_offset = seg.next_offset
                if seg.next_offset > seg.base_offset:
                    state.take_snapshot()
                if result.truncated_bytes:
                    log.warning(
                        "%s: truncated %d bytes of %s at offset %s (position %d): %s",
                        tp,
                        result.truncated_bytes,
                        seg.log_path,
                        result.bad_offset if result.bad_offset is not None else result.next_offset,
                        result.valid_bytes,
                        result.reason,
                    )
                    for later in segments[i + 1 :]:
                        log.warning("%s: deleting %s after the corrupt segment", tp, later.log_path)
                        later.delete_files()
                    del segments[i + 1 :]
                seg.flush()
            i += 1
        for seg in segments[:-1]:
            seg.on_become_inactive()
        if not self.had_clean_shutdown:
            self.log.recovery_point = segments[-1].next_offset

    def _load_leader_epoch_cache(self) -> LeaderEpochFileCache:
        try:
            return LeaderEpochFileCache.load(self.dir)
        except (CorruptLogError, OSError) as e:
            # the cache is advisory for truncation; starting empty beats refusing to serve the partition
            log.warning("%s: ignoring unreadable leader-epoch-checkpoint: %s", self.topic_partition, e)
            cache = LeaderEpochFileCache(self.dir / LEADER_EPOCH_CHECKPOINT)
            cache.clear_and_flush()
            return cache


def rebuild_producer_state(lg: Log, now_ms: int) -> None:
    """Kafka's rebuildProducerState: the newest snapshot at or below the log end offset (without the producers
    expired at ``now_ms``), then replay the batches from there (never below the log start offset)."""
    lg.producer_state.delete_snapshots_after(lg.log_end_offset)
    load_producer_state(lg.producer_state, lg.segments, lg.log_start_offset, lg.log_end_offset, now_ms)


def load_producer_state(state: ProducerStateManager, segments: list[LogSegment], log_start_offset: int,
                        end_offset: int, now_ms: int | None = None) -> None:
    """``state`` as of ``end_offset``: the newest readable snapshot at or below it (producers expired at
    ``now_ms`` left out), then the batches of ``segments`` from there up to ``end_offset`` (data batches by
    header, end markers read whole)."""
    start = state.load_latest_snapshot(end_offset, now_ms)
    start = log_start_offset if start is None else max(start, log_start_offset)
    state.map_end_offset = max(state.map_end_offset, start)
    load_producers(state, _batches_between(segments, start, end_offset))
    state.map_end_offset = end_offset


def _batches_between(segments: list[LogSegment], start: int, end: int
                     ) -> Iterator[tuple[BatchHeader, memoryview | None]]:
    i = max(0, bisect.bisect_right(segments, start, key=lambda s: s.base_offset) - 1)
    for seg in segments[i:]:
        if seg.base_offset >= end:
            return
        found = seg.translate_offset(start)
        if found is None:
            continue
        for pos, h in seg.batches_from(found[0]):
            if h.base_offset >= end:
                return
            yield h, memoryview(seg.read_batch(pos, h.size)) if h.is_control else None

"""The transactional side of a partition's ``Log`` (Kafka's UnifiedLog): the high watermark the partition
reports, the first unstable and last stable offsets, aborted-transaction lookups and KIP-890 guards.

Contract (a mixin of ``storage.log.Log``, whose state it reads: ``producer_state``, ``segments``,
``log_start_offset``, ``log_end_offset``):
- ``update_high_watermark(hw)``: the owner of the HW (the broker's Partition, leader or follower) reports
  every move; completed transactions whose marker is below it stop holding the LSO back.
- ``first_unstable_offset``: the first offset of the earliest transaction that is open, or completed with
  its marker at or above the HW; never below the log start offset; None when there is none. Kept up to date
  after every append, truncation, HW move and log start move (``_update_first_unstable_offset``).
- ``last_stable_offset``: the first unstable offset when it is below the HW, else the HW; never above the
  HW. ``high_watermark`` is the last HW reported; until one is, the log end offset (tools, tests, a log
  loaded before its partition exists), so completed transactions count as replicated.
- ``collect_aborted_transactions(start, upper_bound)``: the ``AbortedTxn`` entries of the segments'
  transaction indexes overlapping [start, upper_bound), from the segment holding ``start`` on.
- KIP-890: ``maybe_start_transaction_verification`` hands out the guard a verified transactional produce
  must carry (``append_as_leader(verification_guard=...)``), ``verification_guard``, ``has_ongoing_transaction``.
- ``remove_expired_producers(now_ms)`` (Kafka's UnifiedLog.removeExpiredProducers): the producers idle for
  producer.id.expiration.ms without an open transaction are forgotten; open transactions and the LSO stay.
"""

from __future__ import annotations

import bisect
import time
from collections.abc import Callable

from storage.producer_state import ProducerStateManager, VerificationGuard
from storage.segment import LogSegment
from storage.transaction_index import AbortedTxn
from storage.values import LogOffsetMetadata


class LogTransactions:
    producer_state: ProducerStateManager
    segments: list[LogSegment]
    log_start_offset: int
    log_end_offset: int
    _high_watermark: int | None
    _first_unstable: LogOffsetMetadata | None
    convert_to_offset_metadata: Callable[[int], LogOffsetMetadata]

    def update_high_watermark(self, high_watermark: int) -> None:
        """The partition's HW moved (leader or follower): completed transactions below it stop holding the
        LSO back (Kafka's updateHighWatermarkMetadata -> onHighWatermarkUpdated)."""
        self._high_watermark = high_watermark
        ps = self.producer_state
        if ps.unreplicated_txns:
            ps.on_high_watermark_updated(high_watermark)
            self._update_first_unstable_offset()

    @property
    def high_watermark(self) -> int:
        """The HW last reported, or the log end offset while no partition reports one."""
        hw = self._high_watermark
        return self.log_end_offset if hw is None else min(hw, self.log_end_offset)

    @property
    def first_unstable_offset(self) -> int | None:
        first = self._first_unstable
        return None if first is None else first.message_offset

    @property
    def last_stable_offset(self) -> int:
        """Kafka's lastStableOffset: the first unstable offset when below the HW, else the HW."""
        hw = self.high_watermark
        first = self._first_unstable
        return first.message_offset if first is not None and first.message_offset < hw else hw

    def first_unstable_offset_metadata(self) -> LogOffsetMetadata | None:
        """The first unstable offset placed in the log (index lookup once, then kept; Kafka's
        fetchLastStableOffsetMetadata); None when there is none."""
        first = self._first_unstable
        if first is not None and first.message_offset_only:
            first = self._first_unstable = self.convert_to_offset_metadata(first.message_offset)
        return first

    def _update_first_unstable_offset(self) -> None:
        """Kafka's maybeIncrementFirstUnstableOffset, bounded below by the log start offset."""
        ps = self.producer_state
        if self._high_watermark is None and ps.unreplicated_txns:
            ps.on_high_watermark_updated(self.log_end_offset)  # no partition yet: all of it counts as replicated
        offset = ps.first_unstable_offset()
        if offset is None:
            self._first_unstable = None
        else:
            offset = max(offset, self.log_start_offset)
            if self._first_unstable is None or self._first_unstable.message_offset != offset:
                self._first_unstable = LogOffsetMetadata(offset)

    def collect_aborted_transactions(self, start_offset: int, upper_bound_offset: int) -> list[AbortedTxn]:
        """The aborted transactions overlapping [start_offset, upper_bound_offset), from the segment holding
        ``start_offset`` on until an index entry's LSO shows no later segment can add any."""
        segments = self.segments
        i = max(0, bisect.bisect_right(segments, start_offset, key=lambda s: s.base_offset) - 1)
        found: list[AbortedTxn] = []
        for seg in segments[i:]:
            result = seg.collect_aborted_txns(start_offset, upper_bound_offset)
            found.extend(result.aborted_transactions)
            if result.is_complete:
                break
        return found

    def has_ongoing_transaction(self, producer_id: int, producer_epoch: int | None = None) -> bool:
        return self.producer_state.has_ongoing_txn(producer_id, producer_epoch)

    def maybe_start_transaction_verification(self, producer_id: int, sequence: int, epoch: int,
                                             supports_epoch_bump: bool = False) -> VerificationGuard:
        """KIP-890: the guard a transactional produce carries through its verification with the coordinator;
        ``VerificationGuard.SENTINEL`` when the producer's transaction is already open here at that epoch."""
        if self.has_ongoing_transaction(producer_id, epoch):
            return VerificationGuard.SENTINEL
        return self.producer_state.maybe_create_verification_state_entry(
            producer_id, sequence, epoch, time.time_ns() // 1_000_000, supports_epoch_bump).verification_guard

    def remove_expired_producers(self, now_ms: int) -> list[int]:
        """The producer ids forgotten now (see ``ProducerStateManager.remove_expired_producers``)."""
        return self.producer_state.remove_expired_producers(now_ms)

    def verification_guard(self, producer_id: int) -> VerificationGuard:
        entry = self.producer_state.verification_state_entry(producer_id)
        return entry.verification_guard if entry is not None else VerificationGuard.SENTINEL

    def _aborted_transactions_of_read(self, start_offset: int, seg: LogSegment, position: int, size: int
                                      ) -> list[AbortedTxn]:
        """Kafka's addAbortedTransactions: the upper bound is the first indexed offset past the read, else the
        next segment's base offset, else the log end offset."""
        upper = seg.fetch_upper_bound_offset(position, size)
        if upper is None:
            segments = self.segments
            i = bisect.bisect_right(segments, seg.base_offset, key=lambda s: s.base_offset)
            upper = segments[i].base_offset if i < len(segments) else self.log_end_offset
        return self.collect_aborted_transactions(start_offset, upper)


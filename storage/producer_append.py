"""The producer-state side of an append (Kafka's UnifiedLog.analyzeAndValidateProducerState / updateProducers /
loadProducersFromRecords and LogSegment.updateProducerState).

Contract:
- ``analyze_producer_state(state, buf, batches, origin, verification_guard)`` checks every batch that carries
  a producer id against the ``ProducerStateManager`` before anything is written and returns the per-producer
  ``ProducerAppendInfo``s, the transactions the end markers complete, and, for a client's duplicate batch,
  the original batch's metadata (the append then writes nothing). Raises what ``ProducerAppendInfo`` raises,
  and ``InvalidTxnStateError`` for a transactional batch that KIP-890 verification did not clear.
- ``apply_producer_state(state, txn_index, updated, completed)`` runs once the bytes are written: the
  producers' new entries, then for each completed transaction the transaction index entry (aborts, with the
  LSO at that moment) and its move to the completed-but-unreplicated set.
- ``replay_batch(state, txn_index, batch, header)`` is the same for one batch already in the log (segment
  recovery rebuilds the index with it); ``load_producers(state, batches)`` replays without touching any
  index (rebuilding state from a snapshot onwards).
- Batches without a producer id cost one integer comparison; only control batches are decoded (their one
  record: ABORT/COMMIT and the coordinator epoch).
"""

from __future__ import annotations

import logging
import struct
from collections.abc import Iterable

from records import RecordBatch
from records.errors import CorruptRecordError
from records.errors import InvalidRecordError as CodecInvalidRecordError
from records.header import CONTROL_MASK, LOG_OVERHEAD, TRANSACTIONAL_MASK, BatchHeader, last_sequence_of
from storage.errors import InvalidRecordError, InvalidTxnStateError
from storage.log_validator import AppendOrigin
from storage.producer_state import (
    BatchMetadata,
    CompletedTxn,
    ProducerAppendInfo,
    ProducerStateManager,
    VerificationGuard,
)
from storage.transaction_index import AbortedTxn, TransactionIndex

__all__ = ["analyze_producer_state", "apply_producer_state", "end_txn_marker", "load_producers", "replay_batch"]

log = logging.getLogger(__name__)

ABORT = 0
COMMIT = 1
_KEY = struct.Struct(">hh")
_VALUE = struct.Struct(">hi")


def end_txn_marker(batch: bytes | bytearray | memoryview) -> tuple[bool, int, int] | None:
    """(is_commit, coordinator_epoch, timestamp) of a control batch's first record (Kafka's
    EndTransactionMarker); None for a batch without records (the cleaner emptied it) or a control type other
    than ABORT/COMMIT. ``InvalidRecordError`` when the record is not a valid marker."""
    try:
        record = next(RecordBatch(batch).records(), None)
    except (CorruptRecordError, CodecInvalidRecordError) as e:
        raise InvalidRecordError(f"unreadable control batch: {e}") from None
    if record is None:
        return None
    key, value = record.key, record.value
    if key is None or len(key) < _KEY.size:
        raise InvalidRecordError("invalid control record key: fewer than 4 bytes")
    key_version, control_type = _KEY.unpack_from(key)
    if key_version < 0:
        raise InvalidRecordError(f"invalid version found for control record: {key_version}")
    if control_type not in (ABORT, COMMIT):
        return None
    if value is None or len(value) < _VALUE.size:
        raise InvalidRecordError("invalid value size found for end transaction marker: fewer than 6 bytes")
    value_version, coordinator_epoch = _VALUE.unpack_from(value)
    if value_version < 0:
        raise InvalidRecordError(f"invalid version found for end transaction marker: {value_version}")
    return control_type == COMMIT, coordinator_epoch, record.timestamp


def _append_batch(info: ProducerAppendInfo, batch: memoryview, h: BatchHeader) -> CompletedTxn | None:
    """One batch into ``info`` (Kafka's ProducerAppendInfo.append)."""
    if h[5] & CONTROL_MASK:
        try:
            marker = end_txn_marker(batch)
        except InvalidRecordError:
            if info.origin is not AppendOrigin.REPLICATION:
                raise
            log.warning("skipping an unreadable transaction marker of producer %d at offset %d in %s",
                        h[9], h[0], info.topic_partition)
            return None
        if marker is None:
            return None
        return info.append_end_txn_marker(marker[0], marker[1], h[10], h[0], marker[2])
    info.append_data_batch(h[10], h[11], last_sequence_of(h[11], h[6]), h[8], h[0], h[0] + h[6],
                           bool(h[5] & TRANSACTIONAL_MASK))
    return None


def analyze_producer_state(
    state: ProducerStateManager,
    buf: bytes | bytearray | memoryview,
    batches: list[tuple[int, BatchHeader]],
    origin: AppendOrigin,
    verification_guard: VerificationGuard | None = None,
) -> tuple[dict[int, ProducerAppendInfo], list[CompletedTxn], BatchMetadata | None]:
    updated: dict[int, ProducerAppendInfo] = {}
    completed: list[CompletedTxn] = []
    view = None
    for pos, h in batches:
        producer_id = h[9]
        if producer_id < 0:
            continue
        if origin is AppendOrigin.CLIENT:
            entry = state.producers.get(producer_id)
            if entry is not None:
                duplicate = entry.find_duplicate(h[10], h[11], last_sequence_of(h[11], h[6]))
                if duplicate is not None:
                    return updated, completed, duplicate
        transactional = h[5] & TRANSACTIONAL_MASK
        if transactional and origin is not AppendOrigin.REPLICATION and state.transaction_verification_enabled \
                and not h[5] & CONTROL_MASK and not state.has_ongoing_txn(producer_id, h[10]):
            entry_ = state.verification_state_entry(producer_id)
            guard = entry_.verification_guard if entry_ is not None else VerificationGuard.SENTINEL
            if not guard.verify(verification_guard):
                raise InvalidTxnStateError(f"record was not part of an ongoing transaction (producer {producer_id})")
        info = updated.get(producer_id)
        if info is None:
            info = updated[producer_id] = state.prepare_update(producer_id, origin)
        if h[5] & CONTROL_MASK:
            if view is None:
                view = memoryview(buf)
            done = _append_batch(info, view[pos:pos + h[1] + LOG_OVERHEAD], h)
            if done is not None:
                completed.append(done)
        else:
            info.append_data_batch(h[10], h[11], last_sequence_of(h[11], h[6]), h[8], h[0], h[0] + h[6],
                                   bool(transactional))
        if transactional:
            # the transaction is open (or closed) in the log now: the verification has served its purpose
            state.clear_verification_state_entry(producer_id)
    return updated, completed, None


def apply_producer_state(state: ProducerStateManager, txn_index: TransactionIndex,
                         updated: dict[int, ProducerAppendInfo], completed: list[CompletedTxn]) -> None:
    for info in updated.values():
        state.update(info)
    for txn in completed:
        if txn.is_aborted:
            txn_index.append(AbortedTxn(txn.producer_id, txn.first_offset, txn.last_offset,
                                        state.last_stable_offset(txn)))
        state.complete_txn(txn)


def replay_batch(state: ProducerStateManager, txn_index: TransactionIndex | None, batch: memoryview,
                 h: BatchHeader) -> None:
    """Apply one batch already in the log (origin REPLICATION); an abort goes into ``txn_index``."""
    if h[9] >= 0:
        info = state.prepare_update(h[9], AppendOrigin.REPLICATION)
        done = _append_batch(info, batch, h)
        state.update(info)
        if done is not None:
            if done.is_aborted and txn_index is not None:
                txn_index.append(AbortedTxn(done.producer_id, done.first_offset, done.last_offset,
                                            state.last_stable_offset(done)))
            state.complete_txn(done)
    state.map_end_offset = h.next_offset


def load_producers(state: ProducerStateManager, batches: Iterable[tuple[BatchHeader, memoryview | None]]) -> None:
    """Kafka's loadProducersFromRecords for batches already in the log: every producer's entry, then the
    completed transactions (into the unreplicated set; no index is written). A control batch comes with its
    bytes, a data batch may come without."""
    updated: dict[int, ProducerAppendInfo] = {}
    completed: list[CompletedTxn] = []
    for h, batch in batches:
        if h[9] < 0:
            continue
        info = updated.get(h[9])
        if info is None:
            info = updated[h[9]] = state.prepare_update(h[9], AppendOrigin.REPLICATION)
        done = _append_batch(info, batch, h)  # type: ignore[arg-type]
        if done is not None:
            completed.append(done)
    for info in updated.values():
        state.update(info)
    for txn in completed:
        state.complete_txn(txn)

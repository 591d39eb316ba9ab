"""Producer state with transactions (Kafka's ProducerStateManager/ProducerAppendInfo rules), without a log."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from records import batch_headers
from storage import (
    AppendOrigin,
    InvalidProducerEpochError,
    InvalidTxnStateError,
    OutOfOrderSequenceError,
    TransactionCoordinatorFencedError,
)
from storage.producer_append import analyze_producer_state, apply_producer_state
from storage.producer_state import CompletedTxn, ProducerStateManager, VerificationGuard, read_snapshot
from storage.transaction_index import TransactionIndex

from .txn_support import txn_batch


def data(ps: ProducerStateManager, pid: int, offset: int, seq: int, *, n: int = 1, epoch: int = 0,
         transactional: bool = True, origin: AppendOrigin = AppendOrigin.CLIENT) -> None:
    info = ps.prepare_update(pid, origin)
    info.append_data_batch(epoch, seq, seq + n - 1, 1000 + offset, offset, offset + n - 1, transactional)
    ps.update(info)


def end(ps: ProducerStateManager, pid: int, offset: int, *, commit: bool, epoch: int = 0, coordinator_epoch: int = 0,
        origin: AppendOrigin = AppendOrigin.COORDINATOR) -> CompletedTxn | None:
    info = ps.prepare_update(pid, origin)
    done = info.append_end_txn_marker(commit, coordinator_epoch, epoch, offset, 2000 + offset)
    ps.update(info)
    if done is not None:
        ps.complete_txn(done)
    return done


def test_open_commit_abort_and_the_first_unstable_offset(tmp_path: Path) -> None:
    ps = ProducerStateManager(tmp_path)
    data(ps, 1, 0, 0, n=2)  # producer 1 opens a transaction at 0
    data(ps, 2, 2, 0)  # producer 2 at 2
    data(ps, 1, 3, 2)  # more of producer 1's transaction
    assert sorted(ps.ongoing_txns) == [0, 2] and ps.first_unstable_offset() == 0
    assert ps.has_ongoing_txn(1) and ps.last_entry(1).current_txn_first_offset == 0
    # The abort's index entry records the LSO just after it: producer 2's transaction still holds it at 2.
    info = ps.prepare_update(1, AppendOrigin.COORDINATOR)
    done = info.append_end_txn_marker(False, 0, 0, 4, 5000)
    assert done == CompletedTxn(1, 0, 4, True)
    ps.update(info)
    assert ps.last_stable_offset(done) == 2
    ps.complete_txn(done)
    # completed but not replicated: still unstable until the HW passes the marker
    assert ps.first_unstable_offset() == 0 and ps.first_undecided_offset() == 2
    ps.on_high_watermark_updated(4)
    assert ps.first_unstable_offset() == 0
    ps.on_high_watermark_updated(5)
    assert ps.first_unstable_offset() == 2
    committed = end(ps, 2, 5, commit=True)
    assert committed == CompletedTxn(2, 2, 5, False) and ps.last_stable_offset(committed) == 6
    ps.on_high_watermark_updated(6)
    assert ps.first_unstable_offset() is None and not ps.has_transactions
    assert ps.last_entry(1).current_txn_first_offset == -1 and ps.last_entry(1).last_seq == 2


def test_marker_without_open_transaction_completes_nothing(tmp_path: Path) -> None:
    ps = ProducerStateManager(tmp_path)
    assert end(ps, 9, 0, commit=False, epoch=3, coordinator_epoch=5) is None
    entry = ps.last_entry(9)
    assert (entry.producer_epoch, entry.coordinator_epoch, entry.current_txn_first_offset) == (3, 5, -1)
    assert ps.first_unstable_offset() is None


def test_non_transactional_write_in_an_open_transaction(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    ps = ProducerStateManager(tmp_path)
    data(ps, 1, 0, 0)
    with pytest.raises(InvalidTxnStateError) as e:
        data(ps, 1, 1, 1, transactional=False)
    assert e.value.kafka_error == "INVALID_TXN_STATE"
    assert ps.last_entry(1).last_seq == 0  # nothing applied
    with caplog.at_level(logging.WARNING):
        data(ps, 1, 1, 1, transactional=False, origin=AppendOrigin.REPLICATION)  # the leader decided
    assert "while its transaction is open" in caplog.text


def test_coordinator_epoch_fencing(tmp_path: Path) -> None:
    ps = ProducerStateManager(tmp_path)
    data(ps, 1, 0, 0)
    end(ps, 1, 1, commit=True, coordinator_epoch=4)
    data(ps, 1, 2, 1)
    with pytest.raises(TransactionCoordinatorFencedError) as e:
        end(ps, 1, 3, commit=False, coordinator_epoch=3)
    assert e.value.kafka_error == "TRANSACTION_COORDINATOR_FENCED"
    assert ps.has_ongoing_txn(1)
    # a newer coordinator epoch is fine; replication takes whatever the leader wrote
    assert end(ps, 1, 3, commit=False, coordinator_epoch=3, origin=AppendOrigin.REPLICATION) is not None
    assert ps.last_entry(1).coordinator_epoch == 3


def test_markers_and_data_check_the_producer_epoch(tmp_path: Path) -> None:
    ps = ProducerStateManager(tmp_path)
    data(ps, 1, 0, 0, epoch=2)
    with pytest.raises(InvalidProducerEpochError):
        end(ps, 1, 1, commit=True, epoch=1)
    # A marker with a bumped epoch (the coordinator fenced the producer) aborts and resets the sequences:
    # the new epoch starts at sequence 0.
    end(ps, 1, 1, commit=False, epoch=3)
    assert ps.last_entry(1).producer_epoch == 3 and not ps.last_entry(1).batches
    with pytest.raises(OutOfOrderSequenceError):
        data(ps, 1, 2, 5, epoch=3)
    data(ps, 1, 2, 0, epoch=3)
    with pytest.raises(InvalidProducerEpochError):
        data(ps, 1, 3, 1, epoch=2)


def test_snapshot_keeps_open_transactions(tmp_path: Path) -> None:
    ps = ProducerStateManager(tmp_path)
    data(ps, 1, 0, 0, n=3)
    end(ps, 1, 3, commit=True, coordinator_epoch=7)
    data(ps, 1, 4, 3, n=2)  # open again at 4
    data(ps, 2, 6, 0, transactional=False)
    ps.map_end_offset = 7
    path = ps.take_snapshot()
    assert path.name == "00000000000000000007.snapshot"
    stored = {e.producer_id: e for e in read_snapshot(path)}
    assert stored[1].current_txn_first_offset == 4 and stored[1].coordinator_epoch == 7
    assert stored[2].current_txn_first_offset == -1
    loaded = ProducerStateManager(tmp_path)
    assert loaded.load_latest_snapshot(100) == 7
    assert sorted(loaded.ongoing_txns) == [4] and loaded.first_unstable_offset() == 4
    entry = loaded.last_entry(1)
    assert (entry.producer_epoch, entry.last_seq, entry.last_data_offset, entry.coordinator_epoch) == (0, 4, 5, 7)
    # the transaction can complete after the reload
    assert end(loaded, 1, 7, commit=False, coordinator_epoch=7) == CompletedTxn(1, 4, 7, True)


def test_kip_890_verification_guard(tmp_path: Path) -> None:
    ps = ProducerStateManager(tmp_path)
    ps.transaction_verification_enabled = True

    def append(guard: VerificationGuard | None, seq: int, offset: int) -> None:
        buf = txn_batch(1, seq)
        batches = [(pos, h._replace(base_offset=offset)) for pos, h in batch_headers(buf)]
        updated, completed, _ = analyze_producer_state(ps, buf, batches, AppendOrigin.CLIENT, guard)
        apply_producer_state(ps, TransactionIndex(0, tmp_path / "x.txnindex"), updated, completed)

    with pytest.raises(InvalidTxnStateError):
        append(None, 0, 0)
    entry = ps.maybe_create_verification_state_entry(1, 5, 0, now_ms=1)
    ps.maybe_create_verification_state_entry(1, 3, 0, now_ms=2)  # the lowest sequence is kept
    assert entry.lowest_sequence == 3
    with pytest.raises(InvalidTxnStateError):
        append(VerificationGuard(), 0, 0)  # somebody else's guard
    with pytest.raises(InvalidTxnStateError):
        append(VerificationGuard.SENTINEL, 0, 0)
    with pytest.raises(OutOfOrderSequenceError):
        append(entry.verification_guard, 4, 0)  # above the lowest sequence seen while verifying
    append(entry.verification_guard, 0, 0)
    assert ps.verification_state_entry(1) is None  # cleared by the first transactional append
    append(None, 1, 1)  # the transaction is open now: no guard needed


def test_kip_890_part_2_a_newer_epoch_is_not_part_of_the_open_transaction(tmp_path: Path) -> None:
    """Kafka 4.x: a transaction open at epoch 0 is not one open at epoch 1 (a TV2 producer's next transaction,
    whose previous marker has not reached this partition yet): that batch needs its own verification guard."""
    ps = ProducerStateManager(tmp_path)
    ps.transaction_verification_enabled = True
    data(ps, 1, 0, 0)  # open at epoch 0
    assert ps.has_ongoing_txn(1) and ps.has_ongoing_txn(1, 0) and not ps.has_ongoing_txn(1, 1)
    buf = txn_batch(1, 0, epoch=1)
    batches = [(pos, h._replace(base_offset=1)) for pos, h in batch_headers(buf)]
    with pytest.raises(InvalidTxnStateError):
        analyze_producer_state(ps, buf, batches, AppendOrigin.CLIENT, None)
    guard = ps.maybe_create_verification_state_entry(1, 0, 1, now_ms=1).verification_guard
    analyze_producer_state(ps, buf, batches, AppendOrigin.CLIENT, guard)  # verified: accepted


def test_kip_890_part_2_a_tv2_producer_without_state_starts_at_sequence_0(tmp_path: Path) -> None:
    """Kafka 4.1 (KAFKA-18202): verified for a transaction.version 2 produce, a producer this partition has no
    state for must start at sequence 0 (OUT_OF_ORDER_SEQUENCE_NUMBER, retriable, else); TV1 accepts any."""
    ps = ProducerStateManager(tmp_path)
    ps.transaction_verification_enabled = True

    def analyze(pid: int, seq: int, guard: VerificationGuard) -> None:
        buf = txn_batch(pid, seq)
        analyze_producer_state(ps, buf, [(pos, h._replace(base_offset=0)) for pos, h in batch_headers(buf)],
                               AppendOrigin.CLIENT, guard)

    tv2 = ps.maybe_create_verification_state_entry(1, 3, 0, now_ms=1, supports_epoch_bump=True)
    with pytest.raises(OutOfOrderSequenceError):
        analyze(1, 3, tv2.verification_guard)
    analyze(1, 0, ps.maybe_create_verification_state_entry(1, 0, 0, now_ms=1).verification_guard)
    tv1 = ps.maybe_create_verification_state_entry(2, 3, 0, now_ms=1)
    analyze(2, 3, tv1.verification_guard)

"""TransactionMetadata: Kafka's transition table and the two-step prepare / complete, without I/O."""

from __future__ import annotations

import pytest

from broker.coordinator.transaction.metadata import (
    MAX_PRODUCER_EPOCH,
    IllegalTransition,
    TransactionMetadata,
    TransactionState,
)
from protocol.errors import ErrorCode
from storage import TopicPartition

S = TransactionState
TP0, TP1 = TopicPartition("t", 0), TopicPartition("t", 1)


def fresh(epoch: int = -1, state: TransactionState = S.EMPTY) -> TransactionMetadata:
    return TransactionMetadata("tx", 1000, -1, epoch, -1, 60000, state, set(), -1, 0)


def test_state_names_and_ids_are_kafkas() -> None:
    assert [(s.value, s.state_name) for s in S] == [
        (0, "Empty"), (1, "Ongoing"), (2, "PrepareCommit"), (3, "PrepareAbort"), (4, "CompleteCommit"),
        (5, "CompleteAbort"), (6, "Dead"), (7, "PrepareEpochFence")]
    assert S.from_name("Ongoing") == S.ONGOING and S.from_name("ongoing") is None


def test_valid_previous_states() -> None:
    table = {s: {p.state_name for p in s.valid_previous} for s in S}
    assert table[S.ONGOING] == {"Ongoing", "Empty", "CompleteCommit", "CompleteAbort"}
    assert table[S.PREPARE_COMMIT] == {"Ongoing"}
    # TV2 (Kafka 4.x): an abort may start from Empty / Complete* (the coordinator refuses that to TV0/TV1 clients).
    assert table[S.PREPARE_ABORT] == {"Ongoing", "PrepareEpochFence", "Empty", "CompleteCommit", "CompleteAbort"}
    assert table[S.COMPLETE_COMMIT] == {"PrepareCommit"}
    assert table[S.COMPLETE_ABORT] == {"PrepareAbort"}
    assert table[S.DEAD] == {"Empty", "CompleteCommit", "CompleteAbort"}
    assert table[S.PREPARE_EPOCH_FENCE] == {"Ongoing"}
    assert table[S.EMPTY] == {"Empty", "CompleteCommit", "CompleteAbort"}


def test_a_whole_commit() -> None:
    md = fresh()
    init = md.prepare_increment_producer_epoch(30000, None, 10)
    assert not isinstance(init, ErrorCode) and (init.producer_epoch, init.last_producer_epoch) == (0, -1)
    assert md.pending_state == S.EMPTY
    md.complete_transition_to(init)
    assert (md.producer_epoch, md.txn_timeout_ms, md.pending_state) == (0, 30000, None)

    add = md.prepare_add_partitions(frozenset({TP0}), 20)
    assert add.txn_start_timestamp == 20  # the transaction starts with its first partition
    md.complete_transition_to(add)
    add2 = md.prepare_add_partitions(frozenset({TP1}), 25)
    assert add2.txn_start_timestamp == 20
    md.complete_transition_to(add2)
    assert md.state == S.ONGOING and md.topic_partitions == {TP0, TP1}

    prepare = md.prepare_abort_or_commit(S.PREPARE_COMMIT, 30)
    md.complete_transition_to(prepare)
    complete = md.prepare_complete(40)
    assert complete.txn_state == S.COMPLETE_COMMIT and complete.topic_partitions == frozenset()
    md.remove_partition(TP0)
    md.remove_partition(TP1)
    md.complete_transition_to(complete)
    assert (md.state, md.topic_partitions, md.txn_last_update_timestamp) == (S.COMPLETE_COMMIT, set(), 40)


def test_a_pending_transition_blocks_another() -> None:
    md = fresh(0)
    md.prepare_add_partitions(frozenset({TP0}), 1)
    with pytest.raises(IllegalTransition):
        md.prepare_add_partitions(frozenset({TP1}), 2)


def test_forbidden_transitions() -> None:
    with pytest.raises(IllegalTransition):
        fresh(0).prepare_abort_or_commit(S.PREPARE_COMMIT, 1)  # Empty -> PrepareCommit
    with pytest.raises(IllegalTransition):
        fresh(0, S.ONGOING).prepare_dead()
    md = fresh(0)
    target = md.prepare_add_partitions(frozenset({TP0}), 1)
    md.pending_state = S.PREPARE_COMMIT  # completing something else than what is pending
    with pytest.raises(IllegalTransition):
        md.complete_transition_to(target)


def test_kip_360_bump_and_its_retry() -> None:
    md = fresh(5)
    bump = md.prepare_increment_producer_epoch(60000, 5, 1)
    assert not isinstance(bump, ErrorCode) and (bump.producer_epoch, bump.last_producer_epoch) == (6, 5)
    md.complete_transition_to(bump)
    retry = md.prepare_increment_producer_epoch(60000, 5, 2)  # the answer was lost: same epoch again
    assert not isinstance(retry, ErrorCode) and (retry.producer_epoch, retry.last_producer_epoch) == (6, 5)
    md.pending_state = None
    assert md.prepare_increment_producer_epoch(60000, 3, 3) == ErrorCode.PRODUCER_FENCED
    assert md.pending_state is None


def test_fence_bumps_once_even_when_the_write_failed() -> None:
    md = fresh(3, S.ONGOING)
    assert md.prepare_fence_producer_epoch().producer_epoch == 4
    md.pending_state = None
    md.has_failed_epoch_fence = True
    assert md.prepare_fence_producer_epoch().producer_epoch == 3


def test_exhausted_epoch_rotates_the_producer_id() -> None:
    md = fresh(MAX_PRODUCER_EPOCH - 1)
    assert md.is_producer_epoch_exhausted
    with pytest.raises(IllegalTransition):
        md.prepare_increment_producer_epoch(60000, None, 1)
    rotation = md.prepare_producer_id_rotation(2000, 60000, 1, record_last_epoch=True)
    assert (rotation.producer_id, rotation.producer_epoch, rotation.last_producer_epoch,
            rotation.last_producer_id) == (2000, 0, MAX_PRODUCER_EPOCH - 1, 1000)
    md.complete_transition_to(rotation)
    assert (md.producer_id, md.producer_epoch, md.last_producer_id) == (2000, 0, 1000)


def test_remove_partition_only_while_preparing() -> None:
    md = fresh(0, S.ONGOING)
    md.topic_partitions = {TP0}
    with pytest.raises(IllegalTransition):
        md.remove_partition(TP0)


def test_tv2_commit_bumps_the_epoch_and_an_exhausted_one_moves_to_the_next_producer_id() -> None:
    md = fresh(5, S.EMPTY)
    md.complete_transition_to(md.prepare_add_partitions(frozenset({TP0}), 10, client_transaction_version=2))
    prepare = md.prepare_abort_or_commit(S.PREPARE_COMMIT, 20, client_transaction_version=2)
    assert (prepare.producer_id, prepare.producer_epoch, prepare.last_producer_epoch) == (1000, 6, 5)
    md.complete_transition_to(prepare)
    complete = md.prepare_complete(30)
    assert (complete.producer_id, complete.producer_epoch) == (1000, 6)
    md.remove_partition(TP0)
    md.complete_transition_to(complete)
    assert (md.state, md.producer_epoch, md.client_transaction_version) == (S.COMPLETE_COMMIT, 6, 2)

    # At the last usable epoch the bump reaches the maximum: Complete* continues under the next producer id.
    md = fresh(MAX_PRODUCER_EPOCH - 1, S.EMPTY)
    md.complete_transition_to(md.prepare_add_partitions(frozenset({TP0}), 10, client_transaction_version=2))
    assert md.is_producer_epoch_exhausted
    prepare = md.prepare_abort_or_commit(S.PREPARE_ABORT, 20, 2, next_producer_id=2000)
    assert (prepare.producer_epoch, prepare.next_producer_id) == (MAX_PRODUCER_EPOCH, 2000)
    md.complete_transition_to(prepare)
    complete = md.prepare_complete(30)
    assert (complete.producer_id, complete.producer_epoch, complete.last_producer_id) == (2000, 0, 1000)
    md.remove_partition(TP0)
    md.complete_transition_to(complete)
    assert (md.producer_id, md.producer_epoch, md.last_producer_id, md.next_producer_id) == (2000, 0, 1000, -1)
    assert md.last_producer_epoch == MAX_PRODUCER_EPOCH - 1  # what the client saw last


def test_tv2_abort_from_empty_starts_at_the_end() -> None:
    md = fresh(3, S.COMPLETE_COMMIT)
    md.txn_start_timestamp = 5
    prepare = md.prepare_abort_or_commit(S.PREPARE_ABORT, 50, 2, no_partition_added=True)
    assert (prepare.txn_start_timestamp, prepare.producer_epoch, prepare.topic_partitions) == (50, 4, frozenset())
    md.complete_transition_to(prepare)
    assert md.state == S.PREPARE_ABORT


def test_tv2_abort_of_a_fence_at_the_maximum_epoch_does_not_overflow() -> None:
    md = fresh(MAX_PRODUCER_EPOCH - 1, S.EMPTY)
    md.complete_transition_to(md.prepare_add_partitions(frozenset({TP0}), 10, client_transaction_version=2))
    fence = md.prepare_fence_producer_epoch()
    assert fence.producer_epoch == MAX_PRODUCER_EPOCH
    md.pending_state, md.producer_epoch = None, fence.producer_epoch  # the coordinator writes the fence with the abort
    prepare = md.prepare_abort_or_commit(S.PREPARE_ABORT, 20, 2)
    assert (prepare.producer_epoch, prepare.next_producer_id) == (MAX_PRODUCER_EPOCH, -1)
    md.complete_transition_to(prepare)
    assert md.producer_epoch == MAX_PRODUCER_EPOCH

"""A transactional id's state on its coordinator (Kafka's TransactionMetadata, TxnTransitMetadata and
TransactionState), pure: no I/O, no clock of its own.

Contract:
- `TransactionState`: Kafka's eight states with their wire ids (the `TransactionStatus` byte of the
  transaction log) and names (what DescribeTransactions and ListTransactions answer), the states each may be
  entered from (`valid_previous`), and which ones let an idle transactional id expire.
- `TransactionMetadata` is mutated in two steps, as Kafka's is: a `prepare_*` method checks the transition
  against the table, records `pending_state` and returns the target as an immutable `TxnTransitMetadata`
  (what gets written to `__transaction_state`); once that record is written, `complete_transition_to(target)`
  applies it, or the caller clears `pending_state` when the write failed. While a state is pending the
  transactional id answers CONCURRENT_TRANSACTIONS to anything that would change it.
- A transition the table forbids raises `IllegalTransition` (a bug, never a client error);
  `prepare_increment_producer_epoch` returns the client-visible PRODUCER_FENCED as an error code instead.
- Producer epochs stop at 32766 (`is_epoch_exhausted`): the coordinator must always be able to bump once more
  to fence a producer, so an exhausted epoch rotates to a new producer id instead.
- transaction.version 2 (KIP-890 part 2): each metadata records the `client_transaction_version` of the request
  that last moved it (Kafka's clientTransactionVersion: 2 for EndTxn v5+ and AddPartitionsToTxn v4+, else 0).
  A TV2 PrepareCommit/PrepareAbort bumps the producer epoch (the previous one kept as `last_producer_epoch`);
  when that bump reaches the exhausted epoch, `next_producer_id` carries the producer id the Complete* state
  switches to, at epoch 0. A TV2 abort may start from Empty/CompleteCommit/CompleteAbort (nothing added).
  `last_producer_id` is Kafka's previousProducerId: the producer id before the last transition.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from enum import IntEnum

from protocol.errors import ErrorCode
from storage import TopicPartition

log = logging.getLogger(__name__)

NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
MAX_PRODUCER_EPOCH = 32767  # Short.MaxValue


class TransactionState(IntEnum):
    EMPTY = 0
    ONGOING = 1
    PREPARE_COMMIT = 2
    PREPARE_ABORT = 3
    COMPLETE_COMMIT = 4
    COMPLETE_ABORT = 5
    DEAD = 6
    PREPARE_EPOCH_FENCE = 7

    @property
    def state_name(self) -> str:
        """Kafka's name of the state, as DescribeTransactions / ListTransactions report it."""
        return _NAMES[self]

    @property
    def valid_previous(self) -> frozenset[TransactionState]:
        return _VALID_PREVIOUS[self]

    @property
    def is_expiration_allowed(self) -> bool:
        return self in (TransactionState.EMPTY, TransactionState.COMPLETE_COMMIT, TransactionState.COMPLETE_ABORT)

    @classmethod
    def from_name(cls, name: str) -> TransactionState | None:
        return _BY_NAME.get(name)


S = TransactionState
_NAMES = {S.EMPTY: "Empty", S.ONGOING: "Ongoing", S.PREPARE_COMMIT: "PrepareCommit", S.PREPARE_ABORT: "PrepareAbort",
          S.COMPLETE_COMMIT: "CompleteCommit", S.COMPLETE_ABORT: "CompleteAbort", S.DEAD: "Dead",
          S.PREPARE_EPOCH_FENCE: "PrepareEpochFence"}
_BY_NAME = {name: state for state, name in _NAMES.items()}
_VALID_PREVIOUS: dict[TransactionState, frozenset[TransactionState]] = {
    S.EMPTY: frozenset({S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT}),
    S.ONGOING: frozenset({S.ONGOING, S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT}),
    S.PREPARE_COMMIT: frozenset({S.ONGOING}),
    # TV2: a client unsure of the state may abort from Empty / Complete* (Kafka's TransactionState).
    S.PREPARE_ABORT: frozenset({S.ONGOING, S.PREPARE_EPOCH_FENCE, S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT}),
    S.COMPLETE_COMMIT: frozenset({S.PREPARE_COMMIT}),
    S.COMPLETE_ABORT: frozenset({S.PREPARE_ABORT}),
    S.DEAD: frozenset({S.EMPTY, S.COMPLETE_ABORT, S.COMPLETE_COMMIT}),
    S.PREPARE_EPOCH_FENCE: frozenset({S.ONGOING}),
}


def is_epoch_exhausted(producer_epoch: int) -> bool:
    return producer_epoch >= MAX_PRODUCER_EPOCH - 1


class IllegalTransition(Exception):
    """A state change the transition table does not allow: a coordinator bug, logged and refused."""


@dataclass(frozen=True, slots=True)
class TxnTransitMetadata:
    """The target of a prepared transition: exactly what the transaction log record holds."""

    producer_id: int
    last_producer_id: int
    producer_epoch: int
    last_producer_epoch: int
    txn_timeout_ms: int
    txn_state: TransactionState
    topic_partitions: frozenset[TopicPartition]
    txn_start_timestamp: int
    txn_last_update_timestamp: int
    next_producer_id: int = NO_PRODUCER_ID
    client_transaction_version: int = 0


class TransactionMetadata:
    __slots__ = ("transactional_id", "producer_id", "last_producer_id", "producer_epoch", "last_producer_epoch",
                 "txn_timeout_ms", "state", "topic_partitions", "txn_start_timestamp", "txn_last_update_timestamp",
                 "pending_state", "has_failed_epoch_fence", "next_producer_id", "client_transaction_version")

    def __init__(self, transactional_id: str, producer_id: int, last_producer_id: int, producer_epoch: int,
                 last_producer_epoch: int, txn_timeout_ms: int, state: TransactionState,
                 topic_partitions: set[TopicPartition] | None = None, txn_start_timestamp: int = -1,
                 txn_last_update_timestamp: int = -1, next_producer_id: int = NO_PRODUCER_ID,
                 client_transaction_version: int = 0) -> None:
        self.transactional_id = transactional_id
        self.producer_id = producer_id
        self.last_producer_id = last_producer_id
        self.producer_epoch = producer_epoch
        self.last_producer_epoch = last_producer_epoch
        self.txn_timeout_ms = txn_timeout_ms
        self.state = state
        self.topic_partitions: set[TopicPartition] = set(topic_partitions or ())
        self.txn_start_timestamp = txn_start_timestamp
        self.txn_last_update_timestamp = txn_last_update_timestamp
        # The state a log write in flight will move to; blocks any other transition meanwhile.
        self.pending_state: TransactionState | None = None
        # A fencing epoch bump whose write failed: the next fence reuses that epoch instead of bumping again
        # (it was never returned to a client, so reusing it is safe).
        self.has_failed_epoch_fence = False
        self.next_producer_id = next_producer_id
        self.client_transaction_version = client_transaction_version

    def __repr__(self) -> str:
        return (f"TransactionMetadata(transactional_id={self.transactional_id!r}, producer_id={self.producer_id}, "
                f"producer_epoch={self.producer_epoch}, last_producer_epoch={self.last_producer_epoch}, "
                f"next_producer_id={self.next_producer_id}, "
                f"client_transaction_version={self.client_transaction_version}, txn_timeout_ms={self.txn_timeout_ms}, "
                f"state={self.state.state_name}, pending_state={self.pending_state}, "
                f"topic_partitions={sorted(map(str, self.topic_partitions))}, "
                f"txn_start_timestamp={self.txn_start_timestamp}, "
                f"txn_last_update_timestamp={self.txn_last_update_timestamp})")

    @property
    def pending_transition_in_progress(self) -> bool:
        return self.pending_state is not None

    @property
    def is_producer_epoch_exhausted(self) -> bool:
        return is_epoch_exhausted(self.producer_epoch)

    def add_partitions(self, partitions: set[TopicPartition] | frozenset[TopicPartition]) -> None:
        self.topic_partitions |= partitions

    def remove_partition(self, tp: TopicPartition) -> None:
        """A marker was written to `tp`: it no longer waits for one (only while Prepare*)."""
        if self.state not in (S.PREPARE_COMMIT, S.PREPARE_ABORT):
            raise IllegalTransition(f"{self.transactional_id}: removing {tp} whose marker was written while in "
                                    f"{self.state.state_name} (pending {self.pending_state})")
        self.topic_partitions.discard(tp)

    # ---- prepared transitions
    def prepare_no_transit(self) -> TxnTransitMetadata:
        """The current state as a target, without marking anything pending."""
        return TxnTransitMetadata(self.producer_id, self.last_producer_id, self.producer_epoch,
                                  self.last_producer_epoch, self.txn_timeout_ms, self.state,
                                  frozenset(self.topic_partitions), self.txn_start_timestamp,
                                  self.txn_last_update_timestamp, self.next_producer_id,
                                  self.client_transaction_version)

    def prepare_fence_producer_epoch(self) -> TxnTransitMetadata:
        if self.producer_epoch == MAX_PRODUCER_EPOCH:
            raise IllegalTransition(f"{self.transactional_id}: cannot fence producer epoch {self.producer_epoch}")
        bumped = self.producer_epoch if self.has_failed_epoch_fence else self.producer_epoch + 1
        return self._prepare(S.PREPARE_EPOCH_FENCE, self.producer_id, bumped, NO_PRODUCER_EPOCH, self.txn_timeout_ms,
                             frozenset(self.topic_partitions), self.txn_start_timestamp,
                             self.txn_last_update_timestamp)

    def prepare_increment_producer_epoch(self, new_txn_timeout_ms: int, expected_producer_epoch: int | None,
                                         update_timestamp: int) -> TxnTransitMetadata | ErrorCode:
        """InitProducerId's epoch bump; PRODUCER_FENCED when the caller's epoch is neither the current one nor
        (a retry of a bump that succeeded) the previous one."""
        if self.is_producer_epoch_exhausted:
            raise IllegalTransition(f"{self.transactional_id}: producer {self.producer_id} has no epochs left")
        bumped = self.producer_epoch + 1
        if expected_producer_epoch is None:
            # A new producer instance: bump and forget the previous epoch. A new id (epoch -1) gets epoch 0.
            next_epoch, last_epoch = bumped, NO_PRODUCER_EPOCH
        elif self.producer_epoch == NO_PRODUCER_EPOCH or expected_producer_epoch == self.producer_epoch:
            # The same instance recovering from an error (KIP-360): bump and remember where it came from.
            next_epoch, last_epoch = bumped, self.producer_epoch
        elif expected_producer_epoch == self.last_producer_epoch:
            # A retry of a bump that succeeded: answer the same epoch again.
            next_epoch, last_epoch = self.producer_epoch, self.last_producer_epoch
        else:
            log.info("%s: expected producer epoch %d is neither the current %d nor the previous %d",
                     self.transactional_id, expected_producer_epoch, self.producer_epoch, self.last_producer_epoch)
            return ErrorCode.PRODUCER_FENCED
        return self._prepare(S.EMPTY, self.producer_id, next_epoch, last_epoch, new_txn_timeout_ms, frozenset(), -1,
                             update_timestamp)

    def prepare_producer_id_rotation(self, new_producer_id: int, new_txn_timeout_ms: int, update_timestamp: int,
                                     record_last_epoch: bool) -> TxnTransitMetadata:
        if self.state in (S.ONGOING, S.PREPARE_ABORT, S.PREPARE_COMMIT):
            raise IllegalTransition(f"{self.transactional_id}: cannot rotate the producer id of a pending transaction")
        return self._prepare(S.EMPTY, new_producer_id, 0,
                             self.producer_epoch if record_last_epoch else NO_PRODUCER_EPOCH, new_txn_timeout_ms,
                             frozenset(), -1, update_timestamp)

    def prepare_add_partitions(self, added: frozenset[TopicPartition], update_timestamp: int,
                               client_transaction_version: int = 0) -> TxnTransitMetadata:
        starts = self.state in (S.EMPTY, S.COMPLETE_ABORT, S.COMPLETE_COMMIT)
        return self._prepare(S.ONGOING, self.producer_id, self.producer_epoch, self.last_producer_epoch,
                             self.txn_timeout_ms, frozenset(self.topic_partitions) | added,
                             update_timestamp if starts else self.txn_start_timestamp, update_timestamp,
                             client_transaction_version=client_transaction_version)

    def prepare_abort_or_commit(self, new_state: TransactionState, update_timestamp: int,
                                client_transaction_version: int = 0, next_producer_id: int = NO_PRODUCER_ID,
                                no_partition_added: bool = False) -> TxnTransitMetadata:
        if client_transaction_version >= 2:
            # TV2: every end bumps the epoch; the markers carry the bumped one. An abort at the maximum epoch (a
            # fence of a producer whose epoch could not be bumped further) goes through without overflowing.
            at_max = self.producer_epoch == MAX_PRODUCER_EPOCH and new_state == S.PREPARE_ABORT
            epoch = self.producer_epoch if at_max else self.producer_epoch + 1
            last_epoch = self.producer_epoch
        else:
            epoch, last_epoch = self.producer_epoch, self.last_producer_epoch
        # TV2 may abort a transaction that added nothing: its start is then this end.
        return self._prepare(new_state, self.producer_id, epoch, last_epoch, self.txn_timeout_ms,
                             frozenset(self.topic_partitions),
                             update_timestamp if no_partition_added else self.txn_start_timestamp, update_timestamp,
                             next_producer_id=next_producer_id, client_transaction_version=client_transaction_version)

    def prepare_complete(self, update_timestamp: int) -> TxnTransitMetadata:
        new_state = S.COMPLETE_COMMIT if self.state == S.PREPARE_COMMIT else S.COMPLETE_ABORT
        # The Prepare* record was written, so a fence that had failed before is behind us.
        self.has_failed_epoch_fence = False
        producer_id, epoch = self.producer_id, self.producer_epoch
        if self.client_transaction_version >= 2 and self.next_producer_id != NO_PRODUCER_ID:
            # The TV2 bump exhausted the epoch: the next transaction runs under the new producer id (the client
            # still saw the exhausted epoch last, which last_producer_epoch keeps).
            producer_id, epoch = self.next_producer_id, 0
        return self._prepare(new_state, producer_id, epoch, self.last_producer_epoch,
                             self.txn_timeout_ms, frozenset(), self.txn_start_timestamp, update_timestamp,
                             next_producer_id=NO_PRODUCER_ID)

    def prepare_dead(self) -> TxnTransitMetadata:
        return self._prepare(S.DEAD, self.producer_id, self.producer_epoch, self.last_producer_epoch,
                             self.txn_timeout_ms, frozenset(), self.txn_start_timestamp,
                             self.txn_last_update_timestamp)

    def _prepare(self, new_state: TransactionState, producer_id: int, epoch: int, last_epoch: int, timeout_ms: int,
                 partitions: frozenset[TopicPartition], start: int, update: int, *,
                 next_producer_id: int | None = None, client_transaction_version: int | None = None
                 ) -> TxnTransitMetadata:
        if self.pending_state is not None:
            raise IllegalTransition(f"{self.transactional_id}: preparing {new_state.state_name} while "
                                    f"{self.pending_state.state_name} is pending")
        if producer_id < 0:
            raise IllegalTransition(f"{self.transactional_id}: illegal producer id {producer_id}")
        if new_state != S.DEAD and epoch < 0:
            raise IllegalTransition(f"{self.transactional_id}: illegal producer epoch {epoch}")
        if self.state not in new_state.valid_previous:
            raise IllegalTransition(f"{self.transactional_id}: {new_state.state_name} cannot follow "
                                    f"{self.state.state_name}")
        self.pending_state = new_state
        return TxnTransitMetadata(
            producer_id, self.producer_id, epoch, last_epoch, timeout_ms, new_state, partitions, start, update,
            self.next_producer_id if next_producer_id is None else next_producer_id,
            self.client_transaction_version if client_transaction_version is None else client_transaction_version)

    # ---- completing a transition once its record is written
    def complete_transition_to(self, target: TxnTransitMetadata) -> None:
        to_state = self.pending_state
        if to_state is None or to_state != target.txn_state:
            self._fail(target, "it is not the pending state")
        if to_state == S.EMPTY:  # InitProducerId
            bump = (target.producer_epoch == self.producer_epoch + 1
                    or (target.producer_epoch == 0 and target.producer_id != self.producer_id))
            if (target.producer_epoch != self.producer_epoch and not bump) or target.topic_partitions \
                    or target.txn_start_timestamp != -1:
                self._fail(target, "not a valid epoch bump of an empty transaction")
        elif to_state == S.ONGOING:  # AddPartitionsToTxn / AddOffsetsToTxn
            if not self._valid_producer_epoch(target) or not self.topic_partitions <= target.topic_partitions \
                    or self.txn_timeout_ms != target.txn_timeout_ms:
                self._fail(target, "partitions or producer do not match")
        elif to_state in (S.PREPARE_COMMIT, S.PREPARE_ABORT):  # EndTxn
            # TV2 aborts from Empty / Complete* with the end as the start.
            empty_abort = (to_state == S.PREPARE_ABORT and target.client_transaction_version >= 2
                           and self.state in (S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT))
            if not self._valid_producer_epoch(target) or self.topic_partitions != target.topic_partitions \
                    or self.txn_timeout_ms != target.txn_timeout_ms \
                    or not (self.txn_start_timestamp == target.txn_start_timestamp or empty_abort):
                self._fail(target, "the transaction changed while ending")
        elif to_state in (S.COMPLETE_COMMIT, S.COMPLETE_ABORT):  # every marker written
            if not self._valid_producer_epoch(target) or self.txn_timeout_ms != target.txn_timeout_ms \
                    or target.txn_start_timestamp == -1:
                self._fail(target, "producer or timeout changed while writing markers")
        else:
            # PrepareEpochFence is never written (the fence is written as PrepareAbort), and Dead ends with the
            # transactional id removed from the cache, never completed.
            self._fail(target, f"{to_state.state_name} is never completed")
        self.producer_id = target.producer_id
        self.last_producer_id = target.last_producer_id
        self.next_producer_id = target.next_producer_id
        self.producer_epoch = target.producer_epoch
        self.last_producer_epoch = target.last_producer_epoch
        self.txn_timeout_ms = target.txn_timeout_ms
        self.topic_partitions = set(target.topic_partitions)
        self.txn_start_timestamp = target.txn_start_timestamp
        self.txn_last_update_timestamp = target.txn_last_update_timestamp
        self.client_transaction_version = target.client_transaction_version
        self.pending_state = None
        self.state = to_state

    def _valid_producer_epoch(self, target: TxnTransitMetadata) -> bool:
        """Kafka's validProducerEpoch: a TV2 end bumped the epoch (Prepare*) or moved to the next producer id at
        epoch 0 (Complete* after an exhausted epoch); anything else keeps the producer id and epoch."""
        tv2 = target.client_transaction_version >= 2
        if tv2 and target.txn_state in (S.COMPLETE_COMMIT, S.COMPLETE_ABORT) and target.producer_epoch == 0:
            return (target.last_producer_epoch == self.last_producer_epoch
                    and target.last_producer_id == self.producer_id)
        if tv2 and target.txn_state in (S.PREPARE_COMMIT, S.PREPARE_ABORT):
            return target.last_producer_epoch == self.producer_epoch and target.producer_id == self.producer_id
        return target.producer_epoch == self.producer_epoch and target.producer_id == self.producer_id

    def _fail(self, target: TxnTransitMetadata, why: str) -> None:
        raise IllegalTransition(f"{self!r} cannot complete the transition to {target}: {why}")

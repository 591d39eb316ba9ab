"""The transaction coordinator's request logic (Kafka's TransactionCoordinator), on the broker's event loop.

Contract:
- Each handler answers Kafka's error codes for Kafka's cases: NOT_COORDINATOR / COORDINATOR_LOAD_IN_PROGRESS
  from the state manager, INVALID_PRODUCER_ID_MAPPING for an unknown id or another producer id,
  PRODUCER_FENCED for an older epoch, CONCURRENT_TRANSACTIONS while a transition or the markers are pending,
  INVALID_TXN_STATE for an EndTxn the state does not allow. The API handlers translate PRODUCER_FENCED for old
  request versions.
- Every state change is prepared on the metadata (pending), written to `__transaction_state` (acks=all) and
  applied only once written (`TransactionStateManager.append`).
- InitProducerId: a new id gets a producer id from the broker's producer-id manager and epoch 0; a known id is
  bumped (KIP-360 when the caller gives its producer id/epoch); an exhausted epoch rotates to a new producer id;
  an Ongoing transaction is fenced (epoch bump written as PrepareAbort, markers sent) and the caller gets
  CONCURRENT_TRANSACTIONS, so it retries once the abort completed.
- EndTxn: PrepareCommit/PrepareAbort written, the client answered, then the marker channel writes the markers
  and the CompleteCommit/CompleteAbort record; an AddPartitionsToTxn / AddOffsetsToTxn arriving meanwhile waits
  for that (up to COMPLETION_WAIT_S) before it is judged, where Kafka answers CONCURRENT_TRANSACTIONS at once.
  The same for a loaded Prepare* transaction (`_on_loaded`).
- transaction.version 2 (KIP-890 part 2, Kafka 4.x): the client's request version decides (EndTxn v5+,
  AddPartitionsToTxn v4+ — the latter sent by partition leaders for Produce v12 / TxnOffsetCommit v5 — are TV2,
  AddOffsetsToTxn and older versions TV0); the coordinator's own aborts (a fence, a timeout) follow the
  cluster's finalized level (`TransactionStateManager.transaction_version_level`). A TV2 end bumps the epoch
  (the markers carry the bumped one) and answers the id/epoch to continue with; at the exhausted epoch it takes
  a new producer id, which Complete* switches to at epoch 0. Kafka's TV2 table: the epoch before the bump (or
  the previous producer id at the exhausted epoch) is a retry, answered NONE with the current id/epoch once
  complete; an abort is accepted from Empty/CompleteCommit/CompleteAbort (nothing to mark), a commit there is
  INVALID_TXN_STATE; Prepare* answers CONCURRENT_TRANSACTIONS to the retry and INVALID_TXN_STATE the other
  way; any other epoch PRODUCER_FENCED. A fence under TV2 bumps twice (the fence, then the abort), as Kafka.
- `abort_timed_out_transactions()` fences and aborts every Ongoing transaction past its timeout.
- `active` is False until `startup()` and after `shutdown()`: Describe/ListTransactions then answer
  COORDINATOR_NOT_AVAILABLE, as Kafka's.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING

from broker.coordinator.transaction.metadata import (
    MAX_PRODUCER_EPOCH,
    NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID,
    IllegalTransition,
    TransactionMetadata,
    TransactionState,
    TxnTransitMetadata,
    is_epoch_exhausted,
)
from broker.coordinator.transaction.producer_id_manager import ProducerIdsUnavailable
from broker.coordinator.transaction.state_manager import TransactionStateManager, now_ms
from protocol.errors import ErrorCode
from storage import TopicPartition

if TYPE_CHECKING:
    from broker.coordinator.transaction.markers import TransactionMarkerChannelManager

log = logging.getLogger("broker.coordinator.transaction")

S = TransactionState

# How long a request may wait for the transaction being completed before answering CONCURRENT_TRANSACTIONS:
# local markers take a few writes; remote ones a round trip to each leader.
COMPLETION_WAIT_S = 1.0


class TransactionCoordinator:
    def __init__(self, state: TransactionStateManager, generate_producer_id: Callable[[], int],
                 markers: TransactionMarkerChannelManager) -> None:
        self.state = state
        self.generate_producer_id = generate_producer_id
        self.markers = markers
        self.active = False
        state.on_loaded = self._on_loaded
        state.on_unloaded = markers.remove_markers_for_txn_partition

    def startup(self) -> None:
        self.active = True

    def shutdown(self) -> None:
        self.active = False

    # ---- InitProducerId
    async def handle_init_producer_id(self, transactional_id: str, timeout_ms: int,
                                      expected: tuple[int, int] | None) -> tuple[ErrorCode, int, int]:
        """(error, producer id, producer epoch) for a transactional InitProducerId."""
        if not transactional_id:
            return ErrorCode.INVALID_REQUEST, NO_PRODUCER_ID, NO_PRODUCER_EPOCH
        if not self.state.validate_timeout_ms(timeout_ms):
            return ErrorCode.INVALID_TRANSACTION_TIMEOUT, NO_PRODUCER_ID, NO_PRODUCER_EPOCH
        got = self.state.get_state(transactional_id)
        if got is None:
            try:
                producer_id = self.generate_producer_id()
            except ProducerIdsUnavailable:  # the controller's next block is on its way: the client retries
                return ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, NO_PRODUCER_ID, NO_PRODUCER_EPOCH
            except Exception as e:  # the block manager could not persist a block
                log.error("no producer id for %s: %s", transactional_id, e)
                return ErrorCode.COORDINATOR_NOT_AVAILABLE, NO_PRODUCER_ID, NO_PRODUCER_EPOCH
            got = self.state.put_if_not_exists(TransactionMetadata(
                transactional_id, producer_id, NO_PRODUCER_ID, NO_PRODUCER_EPOCH, NO_PRODUCER_EPOCH, timeout_ms,
                S.EMPTY, set(), -1, now_ms()))
        if isinstance(got, ErrorCode):
            return got, NO_PRODUCER_ID, NO_PRODUCER_EPOCH
        coordinator_epoch, md = got
        try:
            prepared = self._prepare_init_producer_id(md, timeout_ms, expected)
        except IllegalTransition as e:  # an exhausted epoch the caller does not hold: Kafka's IllegalStateException
            log.error("InitProducerId for %s: %s", transactional_id, e)
            return ErrorCode.UNKNOWN_SERVER_ERROR, NO_PRODUCER_ID, NO_PRODUCER_EPOCH
        if isinstance(prepared, ErrorCode):
            return prepared, NO_PRODUCER_ID, NO_PRODUCER_EPOCH
        if prepared.txn_state == S.PREPARE_EPOCH_FENCE:
            error, _, _ = await self._end_transaction(transactional_id, prepared.producer_id,
                                                      prepared.producer_epoch, commit=False, from_client=False)
            return (error if error != ErrorCode.NONE else ErrorCode.CONCURRENT_TRANSACTIONS,
                    NO_PRODUCER_ID, NO_PRODUCER_EPOCH)
        error = await self.state.append(transactional_id, coordinator_epoch, prepared)
        if error != ErrorCode.NONE:
            return error, NO_PRODUCER_ID, NO_PRODUCER_EPOCH
        log.info("initialized transactional id %s with producer id %d and epoch %d on partition %d",
                 transactional_id, prepared.producer_id, prepared.producer_epoch,
                 self.state.partition_for(transactional_id))
        return ErrorCode.NONE, prepared.producer_id, prepared.producer_epoch

    def _prepare_init_producer_id(self, md: TransactionMetadata, timeout_ms: int,
                                  expected: tuple[int, int] | None) -> TxnTransitMetadata | ErrorCode:
        if md.pending_transition_in_progress:
            return ErrorCode.CONCURRENT_TRANSACTIONS
        if expected is not None:
            pid, epoch = expected
            valid = (md.producer_epoch == NO_PRODUCER_EPOCH or pid == md.producer_id
                     or (pid == md.last_producer_id and is_epoch_exhausted(epoch)))
            if not valid:
                return ErrorCode.PRODUCER_FENCED
        if md.state in (S.PREPARE_ABORT, S.PREPARE_COMMIT):
            return ErrorCode.CONCURRENT_TRANSACTIONS
        if md.state in (S.COMPLETE_ABORT, S.COMPLETE_COMMIT, S.EMPTY):
            if md.is_producer_epoch_exhausted and (expected is None or expected[1] == md.producer_epoch):
                new_pid = self._new_producer_id(md)
                if isinstance(new_pid, ErrorCode):
                    return new_pid
                return md.prepare_producer_id_rotation(new_pid, timeout_ms, now_ms(), expected is not None)
            return md.prepare_increment_producer_epoch(timeout_ms, None if expected is None else expected[1],
                                                        now_ms())
        if md.state == S.ONGOING:
            return md.prepare_fence_producer_epoch()
        raise AssertionError(f"{md.transactional_id} found in state {md.state.state_name}")

    def _new_producer_id(self, md: TransactionMetadata) -> int | ErrorCode:
        """A fresh producer id for an exhausted epoch, or the error the request answers without one."""
        try:
            return self.generate_producer_id()
        except ProducerIdsUnavailable:
            return ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
        except Exception as e:  # noqa: BLE001 - whatever the source failed with, the client retries elsewhere
            log.error("no producer id for %s: %s", md.transactional_id, e)
            return ErrorCode.COORDINATOR_NOT_AVAILABLE

    def _existing(self, transactional_id: str, producer_id: int) -> ErrorCode | tuple[int, TransactionMetadata]:
        """The (coordinator epoch, metadata) of an id the caller's producer id owns, or the error Kafka answers."""
        if not transactional_id:
            return ErrorCode.INVALID_REQUEST
        got = self.state.get_state(transactional_id)
        if got is None:
            return ErrorCode.INVALID_PRODUCER_ID_MAPPING
        if isinstance(got, tuple) and got[1].producer_id != producer_id:
            return ErrorCode.INVALID_PRODUCER_ID_MAPPING
        return got

    async def _wait_for_completion(self, transactional_id: str) -> None:
        """A request arriving while the previous transaction's markers are being written waits for them (up to
        COMPLETION_WAIT_S) rather than answering CONCURRENT_TRANSACTIONS at once: the producer sends its next
        AddPartitionsToTxn as soon as EndTxn is answered, and would otherwise sleep its retry backoff."""
        got = self.state.get_state(transactional_id)
        if isinstance(got, tuple) and got[1].state in (S.PREPARE_COMMIT, S.PREPARE_ABORT):
            await self.markers.wait_for_completion(transactional_id, COMPLETION_WAIT_S)

    # ---- AddPartitionsToTxn / AddOffsetsToTxn
    async def handle_add_partitions(self, transactional_id: str, producer_id: int, producer_epoch: int,
                                    partitions: set[TopicPartition], client_transaction_version: int = 0
                                    ) -> ErrorCode:
        await self._wait_for_completion(transactional_id)
        got = self._existing(transactional_id, producer_id)
        if isinstance(got, ErrorCode):
            return got
        coordinator_epoch, md = got
        if md.producer_epoch != producer_epoch:
            return ErrorCode.PRODUCER_FENCED
        if md.pending_transition_in_progress or md.state in (S.PREPARE_COMMIT, S.PREPARE_ABORT):
            return ErrorCode.CONCURRENT_TRANSACTIONS
        if md.state == S.ONGOING and partitions <= md.topic_partitions:
            return ErrorCode.NONE
        target = md.prepare_add_partitions(frozenset(partitions), now_ms(), client_transaction_version)
        return await self.state.append(transactional_id, coordinator_epoch, target)

    def handle_verify_partitions(self, transactional_id: str, producer_id: int, producer_epoch: int,
                                 partitions: set[TopicPartition]) -> dict[TopicPartition, ErrorCode]:
        """KIP-890: which of `partitions` the transaction holds (AddPartitionsToTxn v4+ verify_only)."""
        got = self._existing(transactional_id, producer_id)
        if isinstance(got, ErrorCode):
            error = got
        else:
            md = got[1]
            if md.producer_epoch != producer_epoch:
                error = ErrorCode.PRODUCER_FENCED
            elif md.state in (S.PREPARE_COMMIT, S.PREPARE_ABORT):
                error = ErrorCode.CONCURRENT_TRANSACTIONS
            else:
                # Kafka (3.8+) answers TRANSACTION_ABORTABLE whatever the request version; the leader turns it
                # into INVALID_TXN_STATE for clients that do not know it.
                return {tp: ErrorCode.NONE if tp in md.topic_partitions else ErrorCode.TRANSACTION_ABORTABLE
                        for tp in partitions}
        return dict.fromkeys(partitions, error)

    # ---- EndTxn
    async def handle_end_transaction(self, transactional_id: str, producer_id: int, producer_epoch: int,
                                     commit: bool, client_transaction_version: int = 0
                                     ) -> tuple[ErrorCode, int, int]:
        """(error, producer id, producer epoch): the id/epoch the producer continues with (TV2, EndTxn v5+),
        -1/-1 on an error."""
        return await self._end_transaction(transactional_id, producer_id, producer_epoch, commit, from_client=True,
                                           client_transaction_version=client_transaction_version)

    async def _end_transaction(self, transactional_id: str, producer_id: int, producer_epoch: int, commit: bool,
                               from_client: bool, client_transaction_version: int | None = None
                               ) -> tuple[ErrorCode, int, int]:
        if client_transaction_version is None:  # the coordinator's own abort: the cluster's transaction.version
            client_transaction_version = self.state.transaction_version_level()
        tv2 = client_transaction_version >= 2
        if not transactional_id:
            return ErrorCode.INVALID_REQUEST, NO_PRODUCER_ID, NO_PRODUCER_EPOCH
        got = self.state.get_state(transactional_id)
        if got is None:
            return ErrorCode.INVALID_PRODUCER_ID_MAPPING, NO_PRODUCER_ID, NO_PRODUCER_EPOCH
        if isinstance(got, ErrorCode):
            return got, NO_PRODUCER_ID, NO_PRODUCER_EPOCH
        coordinator_epoch, md = got
        current = (md.producer_id, md.producer_epoch)
        prepared = (self._prepare_end_tv2(md, producer_id, producer_epoch, commit, from_client,
                                          client_transaction_version) if tv2
                    else self._prepare_end(md, producer_id, producer_epoch, commit, from_client))
        if isinstance(prepared, ErrorCode):
            if prepared == ErrorCode.NONE and tv2:  # a retry of an end that completed: the same answer again
                return ErrorCode.NONE, current[0], current[1]
            return prepared, NO_PRODUCER_ID, NO_PRODUCER_EPOCH
        target, is_epoch_fence = prepared

        error = await self.state.append(transactional_id, coordinator_epoch, target)
        if error != ErrorCode.NONE:
            if is_epoch_fence:
                again = self.state.get_state(transactional_id)
                if isinstance(again, tuple) and again[0] == coordinator_epoch:
                    # The bumped epoch was never handed out: the next fence reuses it.
                    again[1].has_failed_epoch_fence = True
                    log.warning("%s: writing the epoch fence failed (%s); epoch %d was not returned to a client",
                                transactional_id, error.name, target.producer_epoch)
            return error, NO_PRODUCER_ID, NO_PRODUCER_EPOCH
        # Written: from now on the transaction completes whatever happens to this request.
        again = self.state.get_state(transactional_id)
        if isinstance(again, ErrorCode):
            return again, NO_PRODUCER_ID, NO_PRODUCER_EPOCH
        if again is None or again[0] != coordinator_epoch:
            return ErrorCode.NOT_COORDINATOR, NO_PRODUCER_ID, NO_PRODUCER_EPOCH
        md = again[1]
        if md.producer_id != producer_id:
            return ErrorCode.INVALID_PRODUCER_ID_MAPPING, NO_PRODUCER_ID, NO_PRODUCER_EPOCH
        # TV2 wrote the bumped epoch.
        if md.producer_epoch != producer_epoch and not (tv2 and md.producer_epoch == producer_epoch + 1):
            return ErrorCode.PRODUCER_FENCED, NO_PRODUCER_ID, NO_PRODUCER_EPOCH
        if md.pending_transition_in_progress:
            return ErrorCode.CONCURRENT_TRANSACTIONS, NO_PRODUCER_ID, NO_PRODUCER_EPOCH
        if md.state != (S.PREPARE_COMMIT if commit else S.PREPARE_ABORT):
            return self._invalid_end(md, commit), NO_PRODUCER_ID, NO_PRODUCER_EPOCH
        complete = md.prepare_complete(now_ms())
        self.markers.add_txn_markers_to_send(coordinator_epoch, commit, md, complete)
        if not tv2:
            return ErrorCode.NONE, NO_PRODUCER_ID, NO_PRODUCER_EPOCH
        # What the producer continues with: the bumped epoch, or the next producer id at epoch 0 when the bump
        # exhausted the epoch.
        return ErrorCode.NONE, complete.producer_id, complete.producer_epoch

    def _prepare_end(self, md: TransactionMetadata, producer_id: int, producer_epoch: int, commit: bool,
                     from_client: bool) -> ErrorCode | tuple[TxnTransitMetadata, bool]:
        """TV0/TV1 (EndTxn v0-v4): the epoch must be the current one; nothing is bumped but a fence."""
        if md.producer_id != producer_id:
            return ErrorCode.INVALID_PRODUCER_ID_MAPPING
        if (from_client and producer_epoch != md.producer_epoch) or producer_epoch < md.producer_epoch:
            return ErrorCode.PRODUCER_FENCED
        if md.pending_state is not None and md.pending_state != S.PREPARE_EPOCH_FENCE:
            return ErrorCode.CONCURRENT_TRANSACTIONS
        if md.state == S.ONGOING:
            next_state = S.PREPARE_COMMIT if commit else S.PREPARE_ABORT
            is_epoch_fence = next_state == S.PREPARE_ABORT and md.pending_state == S.PREPARE_EPOCH_FENCE
            if is_epoch_fence:
                self._take_fence(md, producer_epoch)
            return md.prepare_abort_or_commit(next_state, now_ms()), is_epoch_fence
        return self._end_of_ended(md, commit)

    def _prepare_end_tv2(self, md: TransactionMetadata, producer_id: int, producer_epoch: int, commit: bool,
                         from_client: bool, client_transaction_version: int
                         ) -> ErrorCode | tuple[TxnTransitMetadata, bool]:
        """TV2 (EndTxn v5+, Kafka 4.x): every end bumps the epoch. A retry is recognised by the caller holding the
        epoch before the bump (or, after an exhausted epoch moved the transaction to the next producer id, the
        previous id at the exhausted epoch); abort is allowed from Empty/Complete* (the producer may not know
        the state), a retry of a completed end answers NONE, anything else of Kafka's table INVALID_TXN_STATE or
        PRODUCER_FENCED."""
        is_epoch_fence = md.pending_state == S.PREPARE_EPOCH_FENCE
        retry_on_overflow = (not is_epoch_fence and md.last_producer_id == producer_id
                             and producer_epoch == MAX_PRODUCER_EPOCH - 1 and md.producer_epoch == 0)
        retry_on_epoch_bump = not is_epoch_fence and md.producer_epoch == producer_epoch + 1
        if is_epoch_fence:
            valid_epoch = (not from_client or producer_epoch == md.producer_epoch) \
                and producer_epoch >= md.producer_epoch
        elif md.state in (S.PREPARE_COMMIT, S.PREPARE_ABORT):
            valid_epoch = retry_on_epoch_bump
        elif md.state in (S.COMPLETE_COMMIT, S.COMPLETE_ABORT):
            valid_epoch = retry_on_epoch_bump or retry_on_overflow or producer_epoch == md.producer_epoch
        else:
            valid_epoch = producer_epoch == md.producer_epoch
        is_retry = retry_on_epoch_bump or retry_on_overflow
        if md.producer_id != producer_id and not retry_on_overflow:
            return ErrorCode.INVALID_PRODUCER_ID_MAPPING
        if not valid_epoch:
            return ErrorCode.PRODUCER_FENCED
        if md.pending_state is not None and not is_epoch_fence:
            return ErrorCode.CONCURRENT_TRANSACTIONS

        def prepare(next_state: TransactionState, no_partition_added: bool) -> ErrorCode | tuple[
                TxnTransitMetadata, bool]:
            next_producer_id = NO_PRODUCER_ID
            if not is_epoch_fence and md.is_producer_epoch_exhausted:
                allocated = self._new_producer_id(md)
                if isinstance(allocated, ErrorCode):
                    return allocated
                next_producer_id = allocated
            if next_state == S.PREPARE_ABORT and is_epoch_fence:
                self._take_fence(md, producer_epoch)
            return md.prepare_abort_or_commit(next_state, now_ms(), client_transaction_version, next_producer_id,
                                              no_partition_added), is_epoch_fence

        if md.state == S.ONGOING:
            return prepare(S.PREPARE_COMMIT if commit else S.PREPARE_ABORT, False)
        if md.state == S.COMPLETE_COMMIT:
            if commit:
                return ErrorCode.NONE if is_retry else self._invalid_end(md, commit)
            return self._invalid_end(md, commit) if is_retry else prepare(S.PREPARE_ABORT, True)
        if md.state == S.COMPLETE_ABORT:
            if not commit:
                return ErrorCode.NONE if is_retry else prepare(S.PREPARE_ABORT, True)
            return self._invalid_end(md, commit)
        if md.state == S.EMPTY:
            return prepare(S.PREPARE_ABORT, True) if not commit else self._invalid_end(md, commit)
        return self._end_of_ended(md, commit)

    @staticmethod
    def _take_fence(md: TransactionMetadata, producer_epoch: int) -> None:
        """The fence's epoch bump is written with the abort itself (the pending PrepareEpochFence gives way)."""
        md.pending_state = None
        md.producer_epoch = producer_epoch
        md.last_producer_epoch = NO_PRODUCER_EPOCH

    def _end_of_ended(self, md: TransactionMetadata, commit: bool) -> ErrorCode:
        """The answers for a transaction already ending or ended (TV0/TV1 Complete*; both for Prepare*)."""
        if md.state == S.COMPLETE_COMMIT:
            return ErrorCode.NONE if commit else self._invalid_end(md, commit)
        if md.state == S.COMPLETE_ABORT:
            return ErrorCode.NONE if not commit else self._invalid_end(md, commit)
        if md.state == S.PREPARE_COMMIT:
            return ErrorCode.CONCURRENT_TRANSACTIONS if commit else self._invalid_end(md, commit)
        if md.state == S.PREPARE_ABORT:
            return ErrorCode.CONCURRENT_TRANSACTIONS if not commit else self._invalid_end(md, commit)
        if md.state == S.EMPTY:
            return self._invalid_end(md, commit)
        raise AssertionError(f"{md.transactional_id} found in state {md.state.state_name}")

    @staticmethod
    def _invalid_end(md: TransactionMetadata, commit: bool) -> ErrorCode:
        log.debug("%s is %s; an EndTxn(%s) is not valid there", md.transactional_id, md.state.state_name,
                  "COMMIT" if commit else "ABORT")
        return ErrorCode.INVALID_TXN_STATE

    def _on_loaded(self, partition: int, coordinator_epoch: int, pending: list[TransactionMetadata]) -> None:
        for md in pending:
            log.info("resuming the %s markers of %s after loading partition %d",
                     "COMMIT" if md.state == S.PREPARE_COMMIT else "ABORT", md.transactional_id, partition)
            complete = md.prepare_complete(now_ms())
            self.markers.add_txn_markers_to_send(coordinator_epoch, md.state == S.PREPARE_COMMIT, md, complete)

    # ---- the timer
    async def abort_timed_out_transactions(self) -> None:
        for txn_id, producer_id, _epoch in self.state.timed_out_transactions(now_ms()):
            got = self.state.get_state(txn_id)
            if not isinstance(got, tuple):
                continue
            md = got[1]
            if md.producer_id != producer_id or md.pending_transition_in_progress or md.state != S.ONGOING:
                continue
            fence = md.prepare_fence_producer_epoch()
            log.info("aborting transaction of %s (producer id %d): it exceeded its timeout of %d ms", txn_id,
                     producer_id, md.txn_timeout_ms)
            error, _, _ = await self._end_transaction(txn_id, fence.producer_id, fence.producer_epoch,
                                                      commit=False, from_client=False)
            if error not in (ErrorCode.NONE, ErrorCode.INVALID_PRODUCER_ID_MAPPING, ErrorCode.PRODUCER_FENCED,
                             ErrorCode.CONCURRENT_TRANSACTIONS):
                log.warning("rolling back the timed-out transaction of %s failed: %s", txn_id, error.name)

    # ---- DescribeTransactions / ListTransactions
    def describe(self, transactional_id: str) -> tuple[ErrorCode, TransactionMetadata | None]:
        if not self.active:
            return ErrorCode.COORDINATOR_NOT_AVAILABLE, None
        if not transactional_id:
            return ErrorCode.INVALID_REQUEST, None
        got = self.state.get_state(transactional_id)
        if isinstance(got, ErrorCode):
            return got, None
        if got is None or got[1].state == S.DEAD:
            return ErrorCode.TRANSACTIONAL_ID_NOT_FOUND, None
        return ErrorCode.NONE, got[1]

    def list_transactions(self, producer_ids: set[int], state_names: set[str], duration_ms: int
                          ) -> tuple[ErrorCode, list[str], list[TransactionMetadata]]:
        """(error, unknown state filters, matching transactions)."""
        if not self.active:
            return ErrorCode.COORDINATOR_NOT_AVAILABLE, [], []
        if self.state.is_loading:
            return ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, [], []
        states = {s for s in map(TransactionState.from_name, state_names) if s is not None}
        unknown = [n for n in state_names if TransactionState.from_name(n) is None]
        now = now_ms()
        out = [md for md in self.state.all_transactions()
               if md.state != S.DEAD
               and (not producer_ids or md.producer_id in producer_ids)
               and (not state_names or md.state in states)
               and (duration_ms < 0 or now - md.txn_start_timestamp > duration_ms)]
        return ErrorCode.NONE, unknown, out

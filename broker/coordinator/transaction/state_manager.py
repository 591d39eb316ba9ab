"""The transaction coordinator's cache of transactional ids per `__transaction_state` partition, and the only
writer of that topic (Kafka's TransactionStateManager).

Contract:
- It is the `CoordinatorShard` of the shared `CoordinatorRuntime`: `begin_loading(p)` marks p loading (requests
  for its ids answer COORDINATOR_LOAD_IN_PROGRESS) and fixes the coordinator epoch (the partition's leader epoch
  at that moment); `load_partition` replays TransactionLog records (last value per id wins, a tombstone
  removes it); `on_partition_loaded` makes the ids answerable and hands every transaction found in
  PrepareCommit/PrepareAbort to `on_loaded` (the coordinator resumes its markers); `unload_partition` drops the
  partition (NOT_COORDINATOR from then on) and tells `on_unloaded`.
- `get_state(id)` answers an error (COORDINATOR_LOAD_IN_PROGRESS / NOT_COORDINATOR), None (unknown id) or the
  `(coordinator_epoch, metadata)` pair, as Kafka's getTransactionState.
- `append(id, coordinator_epoch, target)` writes one record (key, value or tombstone for Dead) with acks=all
  and, once written, completes the metadata's pending transition — only if the partition is still owned at
  that coordinator epoch (else NOT_COORDINATOR). A failed write maps its error as Kafka does and clears the
  pending state unless `retry_on_error(error)` says the caller retries the same transition.
- `transaction_version_level()`: the cluster's finalized transaction.version (Kafka's transactionVersionLevel;
  set by the service). Values are written at version 1 when it is >= 1 (as Kafka) or when the transition comes
  from a TV2 client (its epoch-bump fields must survive a reload), else at version 0.
- Timed-out transactions: Ongoing, nothing pending, started more than their timeout ago.
- Expired ids: Empty/CompleteCommit/CompleteAbort, nothing pending, untouched for transactional.id.expiration.ms;
  `remove_expired_transactional_ids()` writes their tombstones (prepare_dead) and forgets them.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field

from broker.common.errors import KafkaApiError
from broker.coordinator.runtime import partition_for as java_hash_partition
from broker.coordinator.transaction.config import TransactionConfig
from broker.coordinator.transaction.log import TxnLogError, decode_key, decode_value, encode_key, encode_value
from broker.coordinator.transaction.metadata import (
    IllegalTransition,
    TransactionMetadata,
    TransactionState,
    TxnTransitMetadata,
)
from protocol.errors import ErrorCode

log = logging.getLogger("broker.coordinator.transaction")

TRANSACTION_STATE_TOPIC = "__transaction_state"

AppendRecords = Callable[[int, list[tuple[bytes, bytes | None]]], Awaitable[int]]
Record = tuple[bytes | memoryview, bytes | memoryview | None]
StateOrError = ErrorCode | tuple[int, TransactionMetadata] | None

# Kafka's TransactionStateManager.appendTransactionToLog error mapping (anything else passes through).
_APPEND_ERRORS = {
    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION: ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.NOT_ENOUGH_REPLICAS: ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND: ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.REQUEST_TIMED_OUT: ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.NOT_LEADER_OR_FOLLOWER: ErrorCode.NOT_COORDINATOR,
    ErrorCode.KAFKA_STORAGE_ERROR: ErrorCode.NOT_COORDINATOR,
    ErrorCode.MESSAGE_TOO_LARGE: ErrorCode.UNKNOWN_SERVER_ERROR,
    ErrorCode.RECORD_LIST_TOO_LARGE: ErrorCode.UNKNOWN_SERVER_ERROR,
}


def now_ms() -> int:
    return int(time.time() * 1000)


@dataclass(slots=True)
class _Loading:
    coordinator_epoch: int
    txns: dict[str, TransactionMetadata] = field(default_factory=dict)


@dataclass(slots=True)
class _Owned:
    coordinator_epoch: int
    txns: dict[str, TransactionMetadata]


class TransactionStateManager:
    def __init__(self, config: TransactionConfig, append_records: AppendRecords,
                 leader_epoch_of: Callable[[int], int]) -> None:
        self.config = config
        self._append_records = append_records
        self._leader_epoch_of = leader_epoch_of
        self._loading: dict[int, _Loading] = {}
        self._owned: dict[int, _Owned] = {}
        # Set by the coordinator: resume the markers of a loaded Prepare* transaction / forget a partition.
        self.on_loaded: Callable[[int, int, list[TransactionMetadata]], None] = lambda p, epoch, txns: None
        self.on_unloaded: Callable[[int], None] = lambda p: None
        self.transaction_version_level: Callable[[], int] = lambda: 0

    # ---- placement
    def partition_for(self, transactional_id: str) -> int:
        return java_hash_partition(transactional_id, self.config.transaction_state_log_num_partitions)

    def validate_timeout_ms(self, timeout_ms: int) -> bool:
        return 0 < timeout_ms <= self.config.transaction_max_timeout_ms

    @property
    def is_loading(self) -> bool:
        return bool(self._loading)

    def owned_partitions(self) -> dict[int, int]:
        """Partition -> coordinator epoch, for every loaded partition."""
        return {p: o.coordinator_epoch for p, o in self._owned.items()}

    # ---- the shard (CoordinatorRuntime)
    def begin_loading(self, partition: int) -> None:
        self._owned.pop(partition, None)
        self._loading[partition] = _Loading(self._leader_epoch_of(partition))

    def load_partition(self, partition: int, records: Iterable[Record]) -> None:
        state = self._loading.get(partition)
        if state is None:
            return
        for key, value in records:
            try:
                txn_id = decode_key(key)
                if txn_id is None:
                    log.warning("__transaction_state-%d: skipping a record with an unknown key version", partition)
                    continue
                md = decode_value(txn_id, value)
            except TxnLogError as e:
                log.error("__transaction_state-%d: undecodable record skipped: %s", partition, e)
                continue
            if md is None:
                state.txns.pop(txn_id, None)
            else:
                state.txns[txn_id] = md

    def on_partition_loaded(self, partition: int) -> None:
        state = self._loading.pop(partition, None)
        if state is None:
            return
        self._owned[partition] = _Owned(state.coordinator_epoch, state.txns)
        log.info("__transaction_state-%d loaded at coordinator epoch %d: %d transactional ids", partition,
                 state.coordinator_epoch, len(state.txns))
        pending = [md for md in state.txns.values()
                   if md.state in (TransactionState.PREPARE_COMMIT, TransactionState.PREPARE_ABORT)]
        self.on_loaded(partition, state.coordinator_epoch, pending)

    def unload_partition(self, partition: int) -> None:
        was_ours = self._loading.pop(partition, None) is not None
        was_ours = self._owned.pop(partition, None) is not None or was_ours
        if was_ours:
            log.info("__transaction_state-%d unloaded", partition)
        self.on_unloaded(partition)

    # ---- lookups
    def get_state(self, transactional_id: str) -> StateOrError:
        p = self.partition_for(transactional_id)
        if p in self._loading:
            return ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
        owned = self._owned.get(p)
        if owned is None:
            return ErrorCode.NOT_COORDINATOR
        md = owned.txns.get(transactional_id)
        return None if md is None else (owned.coordinator_epoch, md)

    def put_if_not_exists(self, md: TransactionMetadata) -> ErrorCode | tuple[int, TransactionMetadata]:
        got = self.get_state(md.transactional_id)
        if isinstance(got, ErrorCode):
            return got
        if got is not None:
            return got
        owned = self._owned[self.partition_for(md.transactional_id)]
        owned.txns[md.transactional_id] = md
        return owned.coordinator_epoch, md

    def all_transactions(self) -> Iterable[TransactionMetadata]:
        for owned in self._owned.values():
            yield from owned.txns.values()

    def timed_out_transactions(self, now: int) -> list[tuple[str, int, int]]:
        """(transactional id, producer id, producer epoch) of each Ongoing transaction past its timeout."""
        return [(md.transactional_id, md.producer_id, md.producer_epoch) for md in self.all_transactions()
                if md.pending_state is None and md.state == TransactionState.ONGOING
                and md.txn_start_timestamp + md.txn_timeout_ms < now]

    # ---- writes
    async def append(self, transactional_id: str, coordinator_epoch: int, target: TxnTransitMetadata,
                     retry_on_error: Callable[[ErrorCode], bool] = lambda e: False) -> ErrorCode:
        key = encode_key(transactional_id)
        flexible = self.transaction_version_level() >= 1 or target.client_transaction_version >= 2
        value = None if target.txn_state == TransactionState.DEAD else encode_value(target, 1 if flexible else 0)
        partition = self.partition_for(transactional_id)
        try:
            await self._append_records(partition, [(key, value)])
            error = ErrorCode.NONE
        except KafkaApiError as e:
            error = _APPEND_ERRORS.get(e.code, e.code)
            log.info("%s: writing %s to the transaction log failed: %s (answering %s)", transactional_id,
                     target.txn_state.state_name, e.code.name, error.name)
        except Exception:
            log.exception("%s: writing %s to the transaction log failed", transactional_id,
                          target.txn_state.state_name)
            error = ErrorCode.UNKNOWN_SERVER_ERROR
        got = self.get_state(transactional_id)
        if error == ErrorCode.NONE:
            if isinstance(got, ErrorCode):
                return got
            if got is None or got[0] != coordinator_epoch:
                return ErrorCode.NOT_COORDINATOR
            md = got[1]
            if target.txn_state == TransactionState.DEAD:
                self._owned[partition].txns.pop(transactional_id, None)
                return ErrorCode.NONE
            try:
                md.complete_transition_to(target)
            except IllegalTransition as e:
                log.error("%s", e)
                md.pending_state = None
                return ErrorCode.UNKNOWN_SERVER_ERROR
            return ErrorCode.NONE
        if isinstance(got, tuple) and got[0] == coordinator_epoch and not retry_on_error(error):
            got[1].pending_state = None
        return error

    async def remove_expired_transactional_ids(self, now: int) -> int:
        """Tombstones for idle ids (Kafka's removeExpiredTransactionalIds); how many were removed."""
        expired: list[tuple[str, int, TxnTransitMetadata]] = []
        for owned in self._owned.values():
            for md in owned.txns.values():
                if (md.pending_state is None and md.state.is_expiration_allowed
                        and md.txn_last_update_timestamp + self.config.transactional_id_expiration_ms <= now):
                    expired.append((md.transactional_id, owned.coordinator_epoch, md.prepare_dead()))
        removed = 0
        for txn_id, epoch, target in expired:
            if await self.append(txn_id, epoch, target) == ErrorCode.NONE:
                removed += 1
        if removed:
            log.info("removed %d expired transactional ids", removed)
        return removed

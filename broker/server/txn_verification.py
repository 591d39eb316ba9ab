"""KIP-890 on the partition leader: before the first transactional append of a producer to a partition, ask
the transaction coordinator whether the partition is in the transaction (part 1, verify only) or, for a
transaction.version 2 client (Produce v12+, TxnOffsetCommit v5+: part 2), have it added (Kafka's
AddPartitionsToTxnManager and ReplicaManager's verification steps).

Contract:
- `TransactionSupportedOperation` (Kafka's, from the client's request version: Produce v0-10 / TxnOffsetCommit
  v0-3 DEFAULT_ERROR, Produce v11 / TxnOffsetCommit v4 GENERIC_ERROR_SUPPORTED, Produce v12+ / TxnOffsetCommit
  v5+ ADD_PARTITION): DEFAULT_ERROR clients hear a coordinator's TRANSACTION_ABORTABLE (partition not in the
  transaction) as INVALID_TXN_STATE; ADD_PARTITION (transaction.version 2) goes with `verify_only` false, so the
  coordinator adds the partitions (client transaction version 2) and answers per partition; this broker's own
  coordinator is then asked in-process through `add_local` (async). It runs even when
  transaction.partition.verification.enable is off, as Kafka's (the partition would otherwise never be in the
  transaction).
- `AddPartitionsToTxnManager.verify_transaction(transactional_id, producer_id, producer_epoch, tps)` resolves
  to the errors of the partitions that are NOT verified (an empty dict: all are in the transaction). The
  coordinator is the leader of `__transaction_state` partition `partition_for(transactional_id)`; no such
  topic, partition or live leader: COORDINATOR_NOT_AVAILABLE for all. Requests are AddPartitionsToTxn v4
  with `verify_only`, batched per coordinator broker: the transactions queued for a broker while a request
  to it is in flight go out together in the next one, one request in flight per broker, over the wire. When
  the coordinator is this broker and `verify_local` is set (the server hands over the AddPartitionsToTxn
  handler's own verify_only work), it is asked in-process and the future is resolved at once. The same
  transactional id queued twice: the older epoch's caller hears INVALID_PRODUCER_EPOCH, an equal epoch's
  earlier caller NETWORK_EXCEPTION (Kafka's rules).
- Answers mapped as Kafka: a connection failure or timeout is NETWORK_EXCEPTION for all; a coordinator that
  does not serve v4 verifies nothing and everything passes ("verification not supported"); a top-level error
  applies to all (CLUSTER_AUTHORIZATION_FAILED becomes INVALID_TXN_STATE); a partition's PRODUCER_FENCED
  becomes INVALID_PRODUCER_EPOCH.
- `retry_concurrent=True` (a TV2 Produce's add, not a TxnOffsetCommit's): CONCURRENT_TRANSACTIONS is asked
  again every 20 ms for up to 100 ms (Kafka's add.partitions.to.txn.retry.backoff[.max].ms defaults; the
  properties are not read).
- `split_for_verification(replica_manager, entries)` (Kafka's partitionEntriesForVerification) starts a
  verification on each partition whose first batch is transactional and has no ongoing transaction there
  (the log's VerificationGuard), and `produce_error(code, operation)` maps a failed verification to what a
  Produce answers (Kafka's handleProduceAppend: retriable coordinator errors become NOT_ENOUGH_REPLICAS, but
  CONCURRENT_TRANSACTIONS stays itself for ADD_PARTITION).
- `shutdown()` cancels the senders and answers every waiting caller NETWORK_EXCEPTION.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from enum import IntEnum
from typing import TYPE_CHECKING, Any

from broker.common.errors import KafkaApiError
from broker.network.inter_broker import BrokerConnection, BrokerUnavailable, UnsupportedApi
from broker.security.client import PLAINTEXT_CLIENT, ClientSecurity
from protocol import ApiKey, request_class
from protocol.errors import ErrorCode
from protocol.records import CorruptRecordError, InvalidRecordError, iter_batches
from storage import StorageError, TopicPartition, VerificationGuard

if TYPE_CHECKING:
    from broker.metadata.metadata_cache import MetadataCache
    from broker.server.replica_manager import ReplicaManager

log = logging.getLogger("broker.txn_verification")

TRANSACTION_STATE_TOPIC = "__transaction_state"
VERIFY_VERSION = 4
# Kafka's add.partitions.to.txn.retry.backoff.max.ms / add.partitions.to.txn.retry.backoff.ms defaults (the
# properties themselves are not read).
ADD_RETRY_BACKOFF_MAX_MS = 100
ADD_RETRY_BACKOFF_MS = 20

Errors = dict[TopicPartition, ErrorCode]


class TransactionSupportedOperation(IntEnum):
    """What the client's request version lets the leader do for it (Kafka's AddPartitionsToTxnManager enum)."""

    DEFAULT_ERROR = 0
    GENERIC_ERROR_SUPPORTED = 1  # the client knows TRANSACTION_ABORTABLE
    ADD_PARTITION = 2  # transaction.version 2: the leader adds the partition

    @property
    def supports_epoch_bump(self) -> bool:
        return self is TransactionSupportedOperation.ADD_PARTITION

    @classmethod
    def for_produce(cls, version: int) -> TransactionSupportedOperation:
        return cls.ADD_PARTITION if version > 11 else cls.GENERIC_ERROR_SUPPORTED if version > 10 \
            else cls.DEFAULT_ERROR

    @classmethod
    def for_txn_offset_commit(cls, version: int) -> TransactionSupportedOperation:
        return cls.ADD_PARTITION if version > 4 else cls.GENERIC_ERROR_SUPPORTED if version > 3 \
            else cls.DEFAULT_ERROR


Op = TransactionSupportedOperation
# (transactional id, producer id, producer epoch, partitions) -> each partition's verify_only answer
# (`broker.apis.add_partitions_to_txn.verify_partitions`).
LocalVerifier = Callable[[str, int, int, set[TopicPartition]], Errors]
# The same for adding the partitions (`broker.apis.add_partitions_to_txn.add_partitions`).
LocalAdder = Callable[[str, int, int, set[TopicPartition]], Awaitable[Errors]]


@dataclass
class _Pending:
    producer_id: int
    producer_epoch: int
    partitions: list[TopicPartition]
    future: asyncio.Future[Errors]
    operation: TransactionSupportedOperation = TransactionSupportedOperation.DEFAULT_ERROR


@dataclass
class _NodeQueue:
    waiting: dict[str, _Pending] = field(default_factory=dict)  # transactional id -> its verification
    sender: asyncio.Task[None] | None = None


class _VersionMismatch(Exception):
    pass


class AddPartitionsToTxnManager:
    def __init__(self, broker_id: int, metadata_cache: MetadataCache, partition_for: Callable[[str], int], *,
                 request_timeout_ms: int = 30000, security: ClientSecurity = PLAINTEXT_CLIENT) -> None:
        self.broker_id = broker_id
        self.security = security
        self.metadata_cache = metadata_cache
        self.partition_for = partition_for
        self.timeout_s = request_timeout_ms / 1000
        self._queues: dict[int, _NodeQueue] = {}
        self._connections: dict[int, BrokerConnection] = {}
        self.verify_local: LocalVerifier | None = None  # set by the server
        self.add_local: LocalAdder | None = None  # set by the server

    # ---- the caller's side
    def verify_transaction(self, transactional_id: str, producer_id: int, producer_epoch: int,
                           tps: list[TopicPartition], operation: Op = Op.DEFAULT_ERROR,
                           retry_concurrent: bool = False) -> asyncio.Future[Errors]:
        if operation.supports_epoch_bump and retry_concurrent:
            return asyncio.ensure_future(self._add_retrying(transactional_id, producer_id, producer_epoch, tps))
        return self._verify_once(transactional_id, producer_id, producer_epoch, tps, operation)

    async def _add_retrying(self, transactional_id: str, producer_id: int, producer_epoch: int,
                            tps: list[TopicPartition]) -> Errors:
        """Kafka's handleProduceAppend for a TV2 produce: CONCURRENT_TRANSACTIONS (the previous transaction's
        markers still being written, common right after EndTxn) is retried every ADD_RETRY_BACKOFF_MS for up to
        ADD_RETRY_BACKOFF_MAX_MS (capped at request.timeout.ms), cheaper than the producer retrying its batch."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + min(ADD_RETRY_BACKOFF_MAX_MS / 1000, self.timeout_s)
        while True:
            errors = await self._verify_once(transactional_id, producer_id, producer_epoch, tps, Op.ADD_PARTITION)
            if ErrorCode.CONCURRENT_TRANSACTIONS not in errors.values() or loop.time() >= deadline:
                return errors
            await asyncio.sleep(ADD_RETRY_BACKOFF_MS / 1000)

    def _verify_once(self, transactional_id: str, producer_id: int, producer_epoch: int,
                     tps: list[TopicPartition], operation: Op) -> asyncio.Future[Errors]:
        future: asyncio.Future[Errors] = asyncio.get_running_loop().create_future()
        node = self._coordinator(transactional_id)
        if node is None:
            future.set_result(dict.fromkeys(tps, ErrorCode.COORDINATOR_NOT_AVAILABLE))
            return future
        if operation.supports_epoch_bump and node == self.broker_id and self.add_local is not None:
            return asyncio.ensure_future(self._add_local(self.add_local, transactional_id, producer_id,
                                                         producer_epoch, tps))
        if node == self.broker_id and self.verify_local is not None:
            try:
                future.set_result(_unverified(self.verify_local(transactional_id, producer_id, producer_epoch,
                                                                set(tps)), operation))
            except Exception:
                log.exception("verifying %s with this broker's transaction coordinator failed", transactional_id)
                future.set_result(dict.fromkeys(tps, ErrorCode.NETWORK_EXCEPTION))
            return future
        queue = self._queues.setdefault(node, _NodeQueue())
        existing = queue.waiting.get(transactional_id)
        if existing is not None:
            if existing.producer_epoch > producer_epoch:
                future.set_result(dict.fromkeys(tps, ErrorCode.INVALID_PRODUCER_EPOCH))
                return future
            error = (ErrorCode.INVALID_PRODUCER_EPOCH if existing.producer_epoch < producer_epoch
                     else ErrorCode.NETWORK_EXCEPTION)
            _answer(existing, dict.fromkeys(existing.partitions, error))
        queue.waiting[transactional_id] = _Pending(producer_id, producer_epoch, list(tps), future, operation)
        if queue.sender is None or queue.sender.done():
            queue.sender = asyncio.get_running_loop().create_task(self._send_loop(node, queue))
        return future

    @staticmethod
    async def _add_local(add_local: LocalAdder, transactional_id: str, producer_id: int, producer_epoch: int,
                         tps: list[TopicPartition]) -> Errors:
        try:
            return _unverified(await add_local(transactional_id, producer_id, producer_epoch, set(tps)),
                               Op.ADD_PARTITION)
        except Exception:
            log.exception("adding partitions to %s with this broker's transaction coordinator failed",
                          transactional_id)
            return dict.fromkeys(tps, ErrorCode.NETWORK_EXCEPTION)

    def _coordinator(self, transactional_id: str) -> int | None:
        pm = self.metadata_cache.partition(TRANSACTION_STATE_TOPIC, self.partition_for(transactional_id))
        if pm is None:
            return None
        leader = self.metadata_cache.live_leader(pm)
        return leader if leader >= 0 and self.metadata_cache.alive_broker(leader) is not None else None

    # ---- the sender, one per coordinator broker
    async def _send_loop(self, node: int, queue: _NodeQueue) -> None:
        while queue.waiting:
            batch, queue.waiting = queue.waiting, {}
            try:
                results = await self._send(node, batch)
            except asyncio.CancelledError:
                for pending in batch.values():
                    _answer(pending, dict.fromkeys(pending.partitions, ErrorCode.NETWORK_EXCEPTION))
                raise
            for txn_id, pending in batch.items():
                _answer(pending, results.get(txn_id, {}))

    async def _send(self, node: int, batch: dict[str, _Pending]) -> dict[str, Errors]:
        endpoint = self.metadata_cache.alive_broker(node)
        if endpoint is None:
            return {t: dict.fromkeys(p.partitions, ErrorCode.COORDINATOR_NOT_AVAILABLE) for t, p in batch.items()}
        conn = self._connections.get(node)
        if conn is None or (conn.host, conn.port) != (endpoint.host, endpoint.port):
            if conn is not None:
                conn.close()
            conn = self._connections[node] = BrokerConnection(
                endpoint.host, endpoint.port, f"broker-{self.broker_id}-txn-verification", timeout_s=self.timeout_s,
                security=self.security)
        try:
            response = await conn.send(lambda version: _verify_request(version, batch), ApiKey.ADD_PARTITIONS_TO_TXN)
        except (_VersionMismatch, UnsupportedApi):
            log.warning("broker %d does not serve AddPartitionsToTxn v4: transactions are not verified", node)
            return {}
        except BrokerUnavailable as e:
            log.warning("AddPartitionsToTxn to broker %d failed: %s", node, e)
            return {t: dict.fromkeys(p.partitions, ErrorCode.NETWORK_EXCEPTION) for t, p in batch.items()}
        return _results(response, batch)

    def shutdown(self) -> None:
        for queue in self._queues.values():
            if queue.sender is not None:
                queue.sender.cancel()
            for pending in queue.waiting.values():
                _answer(pending, dict.fromkeys(pending.partitions, ErrorCode.NETWORK_EXCEPTION))
            queue.waiting.clear()
        for conn in self._connections.values():
            conn.close()


def _verify_request(version: int, batch: dict[str, _Pending]) -> Any:
    if version < VERIFY_VERSION:
        raise _VersionMismatch
    Req = request_class(ApiKey.ADD_PARTITIONS_TO_TXN)[VERIFY_VERSION]
    Txn = Req.AddPartitionsToTxnTransaction
    transactions = []
    for txn_id, pending in batch.items():
        by_topic: dict[str, list[int]] = {}
        for tp in pending.partitions:
            by_topic.setdefault(tp.topic, []).append(tp.partition)
        transactions.append(Txn(transactional_id=txn_id, producer_id=pending.producer_id,
                                producer_epoch=pending.producer_epoch,
                                verify_only=not pending.operation.supports_epoch_bump,
                                topics=[Txn.AddPartitionsToTxnTopic(name=t, partitions=ps)
                                        for t, ps in by_topic.items()]))
    return Req(transactions=transactions)


def _results(response: Any, batch: dict[str, _Pending]) -> dict[str, Errors]:
    if response.error_code != ErrorCode.NONE:
        code = ErrorCode(response.error_code)
        if code == ErrorCode.CLUSTER_AUTHORIZATION_FAILED:
            code = ErrorCode.INVALID_TXN_STATE
        log.error("AddPartitionsToTxn verification answered %s", code.name)
        return {t: dict.fromkeys(p.partitions, code) for t, p in batch.items()}
    return {result.transactional_id: _unverified({
        TopicPartition(topic.name, p.partition_index): ErrorCode(p.partition_error_code)
        for topic in result.topic_results or [] for p in topic.results_by_partition or []},
        batch[result.transactional_id].operation if result.transactional_id in batch else Op.DEFAULT_ERROR)
        for result in response.results_by_transaction or []}


def _unverified(answers: Errors, operation: Op) -> Errors:
    """The partitions a coordinator did not verify, with the error the produce hears (a fenced producer's
    PRODUCER_FENCED is INVALID_PRODUCER_EPOCH there; TRANSACTION_ABORTABLE is INVALID_TXN_STATE to a client
    that does not know it)."""
    def mapped(code: ErrorCode) -> ErrorCode:
        if code == ErrorCode.PRODUCER_FENCED:
            return ErrorCode.INVALID_PRODUCER_EPOCH
        if code == ErrorCode.TRANSACTION_ABORTABLE and operation is Op.DEFAULT_ERROR:
            return ErrorCode.INVALID_TXN_STATE
        return code
    return {tp: mapped(code) for tp, code in answers.items() if code != ErrorCode.NONE}


def _answer(pending: _Pending, errors: Errors) -> None:
    if not pending.future.done():
        pending.future.set_result(errors)


# ---- the leader's side of a transactional produce
@dataclass
class VerificationSplit:
    guards: dict[TopicPartition, VerificationGuard] = field(default_factory=dict)  # to verify first
    errors: dict[TopicPartition, ErrorCode] = field(default_factory=dict)
    producer_id: int = -1
    producer_epoch: int = -1


def split_for_verification(replica_manager: ReplicaManager, entries: dict[TopicPartition, memoryview],
                           operation: Op = Op.DEFAULT_ERROR) -> VerificationSplit:
    """Which partitions of a transactional produce need the coordinator's word first (Kafka's
    partitionEntriesForVerification): those whose first batch is transactional and whose producer has
    no ongoing transaction there. Raises KafkaApiError(INVALID_PRODUCER_ID_MAPPING) when the transactional
    batches carry more than one producer id."""
    split = VerificationSplit()
    producer_ids: set[int] = set()
    for tp, records in entries.items():
        try:
            batches = [b for b in iter_batches(records) if b.producer_id >= 0 and b.is_transactional]
        except (CorruptRecordError, InvalidRecordError):
            continue  # the append reports it
        if not batches:
            continue
        producer_ids.update(b.producer_id for b in batches)
        first = next(iter_batches(records))
        try:
            partition = replica_manager.get_partition_or_error(tp)
            guard = partition.maybe_start_transaction_verification(first.producer_id, first.base_sequence,
                                                                   first.producer_epoch,
                                                                   operation.supports_epoch_bump)
        except KafkaApiError as e:
            split.errors[tp] = e.code
            continue
        except StorageError as e:
            split.errors[tp] = ErrorCode[e.kafka_error]
            continue
        if guard is not VerificationGuard.SENTINEL:
            split.guards[tp] = guard
            split.producer_id, split.producer_epoch = first.producer_id, first.producer_epoch
    if len(producer_ids) > 1:
        raise KafkaApiError(ErrorCode.INVALID_PRODUCER_ID_MAPPING,
                            "Transactional records contained more than one producer ID")
    return split


_NOT_VERIFIED = (ErrorCode.CONCURRENT_TRANSACTIONS, ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
                 ErrorCode.COORDINATOR_NOT_AVAILABLE, ErrorCode.NETWORK_EXCEPTION, ErrorCode.NOT_COORDINATOR)


def produce_error(code: ErrorCode, operation: Op = Op.DEFAULT_ERROR) -> tuple[ErrorCode, str | None]:
    """What a Produce answers for a partition whose verification failed (Kafka's appendEntries): retriable
    coordinator errors become NOT_ENOUGH_REPLICAS, which older clients retry without a metadata refresh; a TV2
    produce (ADD_PARTITION) hears CONCURRENT_TRANSACTIONS itself (Kafka: common while the previous commit completes,
    and clearer to that client)."""
    if code == ErrorCode.INVALID_TXN_STATE:
        return code, "Partition was not added to the transaction"
    if operation.supports_epoch_bump and code == ErrorCode.CONCURRENT_TRANSACTIONS:
        return code, None
    if code in _NOT_VERIFIED:
        return (ErrorCode.NOT_ENOUGH_REPLICAS,
                f"Unable to verify the partition has been added to the transaction. Underlying error: {code.name}")
    return code, None


async def verify_partition(replica_manager: ReplicaManager, tp: TopicPartition, transactional_id: str,
                           producer_id: int, producer_epoch: int, base_sequence: int = -1,
                           operation: Op = Op.DEFAULT_ERROR) -> tuple[ErrorCode, VerificationGuard | None]:
    """One partition's verification before a coordinator's transactional append (a TxnOffsetCommit to
    __consumer_offsets; Kafka's maybeStartTransactionVerificationForPartition): (NONE, guard) when it may
    be appended with that guard (None: nothing to verify), else the error, retriable coordinator errors
    as NOT_ENOUGH_REPLICAS (Kafka's mapping before the caller's own). `operation` from the TxnOffsetCommit's
    version: ADD_PARTITION (v5+, TV2) has the coordinator add the partition instead of checking it."""
    manager = replica_manager.add_partitions_to_txn
    if manager is None or not (operation.supports_epoch_bump or replica_manager.transaction_verification_enabled()):
        replica_manager.disable_transaction_verification([tp])
        return ErrorCode.NONE, None
    try:
        partition = replica_manager.get_partition_or_error(tp)
        guard = partition.maybe_start_transaction_verification(producer_id, base_sequence, producer_epoch,
                                                               operation.supports_epoch_bump)
    except KafkaApiError as e:
        return e.code, None
    if guard is VerificationGuard.SENTINEL:
        return ErrorCode.NONE, None
    errors = await manager.verify_transaction(transactional_id, producer_id, producer_epoch, [tp], operation)
    error = errors.get(tp, ErrorCode.NONE)
    if error in (ErrorCode.CONCURRENT_TRANSACTIONS, ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
                 ErrorCode.COORDINATOR_NOT_AVAILABLE, ErrorCode.NOT_COORDINATOR):
        error = ErrorCode.NOT_ENOUGH_REPLICAS
    return error, guard

"""Sending the COMMIT/ABORT markers of ended transactions to the partition leaders, then writing the
transaction's CompleteCommit/CompleteAbort (Kafka's TransactionMarkerChannelManager and
TransactionMarkerRequestCompletionHandler).

Contract:
- `add_txn_markers_to_send(coordinator_epoch, commit, metadata, complete)` is called once PrepareCommit /
  PrepareAbort is written (or found when loading) and `complete` (the Complete* target) is pending on the
  metadata. One task per transaction then, until every partition of the transaction has its marker:
  groups the partitions by their leader in the metadata cache. The partitions this broker leads are written
  in-process by `write_local` (the WriteTxnMarkers handler's own work, which the server hands over; origin
  COORDINATOR, acks=-1), those of other leaders are queued for that leader; one sender per broker sends what
  its queue holds as one WriteTxnMarkers, one request in flight at a time (Kafka's marker channel). Without
  `write_local` this broker is sent WriteTxnMarkers too. It drops a partition whose topic is gone from the
  metadata, waits and resends for a partition without a live leader or answering a retriable error (the leader
  moved, not enough replicas, timed out, broker unreachable). Each written marker removes its partition from
  the metadata. Once none is left it writes `complete`, retrying while the write answers
  COORDINATOR_NOT_AVAILABLE.
- Timing: the task lets EndTxn's answer go out first (Kafka answers once Prepare* is written), then writes the
  local markers and `complete` without another hop than their writes when nothing has to wait for another
  broker or for followers. `wait_for_completion(transactional_id, timeout_s)` lets a request that meets the
  transaction still completing (the producer's next AddPartitionsToTxn, sent right after EndTxn's answer)
  wait for that instead of answering CONCURRENT_TRANSACTIONS at once (Kafka answers it, and the client
  retries after its backoff).
- The task stops without writing anything once this broker is no longer the coordinator of the transactional
  id at that coordinator epoch (unloaded, reloaded, another metadata object), or when a leader answers
  INVALID_PRODUCER_EPOCH / TRANSACTION_COORDINATOR_FENCED (a newer producer or coordinator took over), as Kafka.
- `shutdown()` cancels and waits for every task and closes the connections.
"""

from __future__ import annotations

import asyncio
import logging
from collections import defaultdict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from broker.coordinator.transaction.metadata import TransactionMetadata, TxnTransitMetadata
from broker.coordinator.transaction.state_manager import TransactionStateManager
from broker.network.inter_broker import BrokerConnection, BrokerUnavailable
from broker.security.client import PLAINTEXT_CLIENT, ClientSecurity
from protocol import ApiKey, request_class
from protocol.errors import ErrorCode
from storage import TopicPartition

if TYPE_CHECKING:
    from broker.metadata.metadata_cache import MetadataCache

log = logging.getLogger("broker.coordinator.transaction")

RETRY_BACKOFF_S = 0.1

_RETRIABLE = frozenset({
    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.NOT_ENOUGH_REPLICAS,
    ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND, ErrorCode.REQUEST_TIMED_OUT, ErrorCode.KAFKA_STORAGE_ERROR,
})
_STOP = frozenset({ErrorCode.INVALID_PRODUCER_EPOCH, ErrorCode.TRANSACTION_COORDINATOR_FENCED})
_DROP = frozenset({ErrorCode.UNSUPPORTED_FOR_MESSAGE_FORMAT, ErrorCode.UNSUPPORTED_VERSION})

MarkerErrors = dict[TopicPartition, ErrorCode]
# (producer id, producer epoch, commit, coordinator epoch, partitions this broker leads) -> each partition's
# error, at once or once the appends are acknowledged (`broker.apis.write_txn_markers.write_marker`).
LocalMarkerWriter = Callable[[int, int, bool, int, list[TopicPartition]], MarkerErrors | Awaitable[MarkerErrors]]


@dataclass(slots=True)
class _Marker:
    """One transaction's marker for the partitions one broker leads, waiting in that broker's queue."""

    producer_id: int
    producer_epoch: int
    commit: bool
    coordinator_epoch: int
    partitions: list[TopicPartition]
    answer: asyncio.Future[dict[TopicPartition, ErrorCode]]
    transaction_version: int = 0


class _Stop(Exception):
    """The transaction is no longer this coordinator's to complete."""


class TransactionMarkerChannelManager:
    def __init__(self, broker_id: int, metadata_cache: MetadataCache, state: TransactionStateManager,
                 request_timeout_ms: int, security: ClientSecurity = PLAINTEXT_CLIENT) -> None:
        self.broker_id = broker_id
        self.security = security
        self.metadata_cache = metadata_cache
        self.state = state
        self.request_timeout_ms = request_timeout_ms
        self._connections: dict[int, BrokerConnection] = {}
        self._queues: dict[int, list[_Marker]] = {}  # per broker: markers waiting for the next request
        self._senders: dict[int, asyncio.Task] = {}  # per broker: the task sending its queue
        self._tasks: set[asyncio.Task] = set()
        self._completing: dict[str, asyncio.Task] = {}  # per transactional id: the task completing it
        self.write_local: LocalMarkerWriter | None = None  # set by the server

    def add_txn_markers_to_send(self, coordinator_epoch: int, commit: bool, md: TransactionMetadata,
                                complete: TxnTransitMetadata) -> None:
        task = asyncio.get_running_loop().create_task(self._complete(coordinator_epoch, commit, md, complete))
        self._tasks.add(task)
        self._completing[md.transactional_id] = task
        task.add_done_callback(lambda t: self._done(md.transactional_id, t))

    async def wait_for_completion(self, transactional_id: str, timeout_s: float) -> None:
        """Until the markers and the Complete* record of the transaction being completed are written, or
        `timeout_s`; at once when none is being completed."""
        task = self._completing.get(transactional_id)
        if task is not None and not task.done():
            await asyncio.wait([task], timeout=timeout_s)

    def _done(self, transactional_id: str, task: asyncio.Task) -> None:
        self._tasks.discard(task)
        if self._completing.get(transactional_id) is task:
            del self._completing[transactional_id]
        if not task.cancelled() and task.exception() is not None:
            log.error("sending transaction markers failed", exc_info=task.exception())

    def remove_markers_for_txn_partition(self, partition: int) -> None:
        # Nothing to cancel: every task checks, before each step, that it still owns its transaction.
        log.debug("__transaction_state-%d: pending markers stop at their next step", partition)

    async def shutdown(self) -> None:
        tasks = set(self._tasks) | set(self._senders.values())
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.wait(tasks)
        for conn in self._connections.values():
            conn.close()
        self._connections.clear()

    # ---- one transaction
    def _check_owner(self, md: TransactionMetadata, coordinator_epoch: int) -> None:
        got = self.state.get_state(md.transactional_id)
        if not isinstance(got, tuple) or got[0] != coordinator_epoch or got[1] is not md:
            raise _Stop(f"no longer the coordinator of {md.transactional_id} at epoch {coordinator_epoch}")

    async def _complete(self, coordinator_epoch: int, commit: bool, md: TransactionMetadata,
                        complete: TxnTransitMetadata) -> None:
        txn_id = md.transactional_id
        try:
            await asyncio.sleep(0)  # EndTxn's answer is sent first; from here on no hop unless something waits
            while True:
                self._check_owner(md, coordinator_epoch)
                if not md.topic_partitions:
                    break
                by_broker: dict[int, list[TopicPartition]] = defaultdict(list)
                for tp in list(md.topic_partitions):
                    pm = self.metadata_cache.partition(tp.topic, tp.partition)
                    if pm is None:
                        log.info("%s: %s no longer exists; no marker for it", txn_id, tp)
                        md.remove_partition(tp)
                    elif pm.leader >= 0 and self.metadata_cache.alive_broker(pm.leader) is not None:
                        by_broker[pm.leader].append(tp)
                if by_broker:
                    # Every leader is asked before any answer is awaited.
                    # The Prepare* state's producer id and epoch: under TV2 the bumped epoch (Complete* may move
                    # to the next producer id at epoch 0, which the partitions never saw).
                    sent = [self._send(broker, coordinator_epoch, commit, md.producer_id, md.producer_epoch, tps,
                                       md.client_transaction_version) for broker, tps in by_broker.items()]
                    results = [await self._answer(broker, s) for broker, s in zip(by_broker, sent, strict=True)]
                    self._check_owner(md, coordinator_epoch)
                    for errors in results:
                        for tp, error in errors.items():
                            self._handle(md, tp, error)
                if md.topic_partitions:
                    await asyncio.sleep(RETRY_BACKOFF_S)
            while True:
                error = await self.state.append(txn_id, coordinator_epoch, complete,
                                                retry_on_error=lambda e: e == ErrorCode.COORDINATOR_NOT_AVAILABLE)
                if error != ErrorCode.COORDINATOR_NOT_AVAILABLE:
                    break
                await asyncio.sleep(RETRY_BACKOFF_S)
                self._check_owner(md, coordinator_epoch)
            if error != ErrorCode.NONE:
                log.info("%s: writing %s failed with %s; the new coordinator completes it", txn_id,
                         complete.txn_state.state_name, error.name)
                return
            log.debug("%s: transaction completed as %s", txn_id, complete.txn_state.state_name)
        except _Stop as e:
            log.info("%s; stopped sending its markers", e)

    def _handle(self, md: TransactionMetadata, tp: TopicPartition, error: ErrorCode) -> None:
        if error == ErrorCode.NONE:
            md.remove_partition(tp)
        elif error in _RETRIABLE:
            log.debug("%s: the marker for %s failed with %s; retrying", md.transactional_id, tp, error.name)
        elif error in _STOP:
            raise _Stop(f"the marker for {tp} of {md.transactional_id} was refused with {error.name}")
        elif error in _DROP:
            log.info("%s: the marker for %s failed with %s; the partition no longer waits for it",
                     md.transactional_id, tp, error.name)
            md.remove_partition(tp)
        else:
            log.warning("%s: unexpected %s writing the marker for %s; retrying", md.transactional_id, error.name,
                        tp)

    def _send(self, broker_id: int, coordinator_epoch: int, commit: bool, producer_id: int, producer_epoch: int,
              tps: list[TopicPartition], transaction_version: int = 0) -> MarkerErrors | Awaitable[MarkerErrors]:
        """Write the marker for `tps` on this broker, or queue it for `broker_id`: each partition's answer, at once
        or to await (none when the request failed)."""
        if broker_id == self.broker_id and self.write_local is not None:
            try:
                return self.write_local(producer_id, producer_epoch, commit, coordinator_epoch, tps)
            except Exception:
                log.exception("writing the markers of producer %d on this broker failed; retrying", producer_id)
                return {}
        marker = _Marker(producer_id, producer_epoch, commit, coordinator_epoch, tps,
                         asyncio.get_running_loop().create_future(), transaction_version)
        queue = self._queues.setdefault(broker_id, [])
        queue.append(marker)
        if broker_id not in self._senders:
            self._senders[broker_id] = asyncio.get_running_loop().create_task(self._drain(broker_id))
        return marker.answer

    @staticmethod
    async def _answer(broker_id: int, sent: MarkerErrors | Awaitable[MarkerErrors]) -> MarkerErrors:
        if isinstance(sent, dict):
            return sent
        try:
            return await sent
        except Exception:
            log.exception("writing transaction markers on broker %d failed; retrying", broker_id)
            return {}

    async def _drain(self, broker_id: int) -> None:
        """Send every queued marker for `broker_id`, all of them in one WriteTxnMarkers, one request at a time
        (Kafka's marker channel: one in-flight request per broker, batching what waits meanwhile)."""
        queue = self._queues.setdefault(broker_id, [])
        try:
            while queue:
                batch = list(queue)
                queue.clear()
                try:
                    answers = await self._write(broker_id, batch)
                except Exception:
                    log.exception("WriteTxnMarkers to broker %d failed; retrying", broker_id)
                    answers = {}
                for marker in batch:
                    if not marker.answer.done():
                        got = answers.get(marker.producer_id, {})
                        marker.answer.set_result({tp: got[tp] for tp in marker.partitions if tp in got})
        finally:
            # Synchronously after the last look at the queue: a marker queued from now on starts a new sender.
            if self._senders.get(broker_id) is asyncio.current_task():
                del self._senders[broker_id]

    async def _write(self, broker_id: int, batch: list[_Marker]) -> dict[int, dict[TopicPartition, ErrorCode]]:
        def build(version: int) -> Any:
            Req = request_class(ApiKey.WRITE_TXN_MARKERS)
            M = Req.WritableTxnMarker
            markers = []
            for m in batch:
                by_topic: dict[str, list[int]] = defaultdict(list)
                for tp in m.partitions:
                    by_topic[tp.topic].append(tp.partition)
                # v2 (KIP-1228) tells the leader the marker's transaction version.
                tv = {"transaction_version": m.transaction_version} if version >= 2 else {}
                markers.append(M(producer_id=m.producer_id, producer_epoch=m.producer_epoch,
                                 transaction_result=m.commit, coordinator_epoch=m.coordinator_epoch,
                                 topics=[M.WritableTxnMarkerTopic(name=t, partition_indexes=ps)
                                         for t, ps in by_topic.items()], **tv))
            return Req[version](markers=markers)

        conn = self._connection(broker_id)
        if conn is None:
            return {}
        try:
            response = await conn.send(build, ApiKey.WRITE_TXN_MARKERS)
        except BrokerUnavailable as e:
            log.debug("WriteTxnMarkers to broker %d failed: %s; retrying", broker_id, e)
            return {}
        out: dict[int, dict[TopicPartition, ErrorCode]] = {}
        for result in response.markers:
            errors = out.setdefault(result.producer_id, {})
            for topic in result.topics:
                for p in topic.partitions:
                    errors[TopicPartition(topic.name, p.partition_index)] = ErrorCode(p.error_code)
        return out

    def _connection(self, broker_id: int) -> BrokerConnection | None:
        ep = self.metadata_cache.alive_broker(broker_id)
        if ep is None:
            return None
        conn = self._connections.get(broker_id)
        if conn is not None and (conn.host, conn.port) != (ep.host, ep.port):
            conn.close()
            conn = None
        if conn is None:
            conn = self._connections[broker_id] = BrokerConnection(
                ep.host, ep.port, f"broker-{self.broker_id}-txn-marker-sender",
                timeout_s=self.request_timeout_ms / 1000, security=self.security)
        return conn

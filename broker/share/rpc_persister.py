"""The `Persister` over the share-group state RPCs (Kafka's DefaultStatePersister and PersisterStateManager):
a share-partition leader's way to its share coordinator, wherever that is.

Contract:
- `RpcPersister(server, local_answer)` serves the `Persister` protocol (broker/coordinator/share/persister.py) for
  this broker. Each call concerns one share partition (group, topic id, partition), whose share coordinator is the
  leader of `__share_group_state` partition abs(hash("group:topicId:partition")) %
  share.coordinator.state.topic.num.partitions.
- Finding it, as Kafka's persister: from this broker's metadata when `__share_group_state` exists and the
  partition has a live leader; otherwise with FindCoordinator v6 (key type 2) to a live broker (which creates
  the topic on first use and answers COORDINATOR_NOT_AVAILABLE meanwhile).
- Sending: to this very broker in-process (the handler's `answer`, given as `local_answer`; no socket: the
  share-partition leader and its coordinator are often one broker), to another broker as the RPC over an
  inter-broker connection (one per broker, one request in flight on it). Calls for one coordinator broker that wait
  meanwhile are batched, as Kafka's persister batches them: one request per API and group carries them all, a share
  partition at most once (a second call for it waits for the next request, so calls for one share partition keep
  their order).
- Retries, as Kafka's: the lookup and the RPC are each retried while they answer NOT_COORDINATOR,
  COORDINATOR_NOT_AVAILABLE, COORDINATOR_LOAD_IN_PROGRESS or UNKNOWN_TOPIC_OR_PARTITION, finding the coordinator
  again each time, after an exponential backoff (1 s doubling up to 30 s, 20% jitter) and at most 5 attempts
  each; then the last error is raised as `PersisterError`. Unlike Kafka (which answers NETWORK_EXCEPTION at
  once), a coordinator that cannot be reached counts as COORDINATOR_NOT_AVAILABLE and is retried the same way:
  after a coordinator's broker dies its old address stays in the metadata until the controller moves leadership.
  Every other error is raised at once as `PersisterError(code)`.
- `read` of a share partition never initialized: Kafka's coordinator answers INVALID_REQUEST; the persister then
  asks ReadShareGroupStateSummary and, when that says uninitialized (start offset -1), returns state epoch 0,
  start offset -1 and no batches, as the Persister contract wants.
- `close()` (at broker shutdown) fails waiting and later calls with COORDINATOR_NOT_AVAILABLE and closes the
  connections.
"""

from __future__ import annotations

import asyncio
import logging
import random
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from broker.coordinator.share.persister import PersisterError, PersisterStateBatch, SharePartitionState
from broker.coordinator.share.records import ShareKey
from broker.coordinator.share.state import SHARE_GROUP_STATE_TOPIC
from broker.network.inter_broker import BrokerConnection, BrokerUnavailable
from protocol import ApiKey, request_class
from protocol.errors import ErrorCode

if TYPE_CHECKING:
    from broker.config.kafka_config import KafkaConfig
    from broker.coordinator.share.service import ShareCoordinatorService
    from broker.metadata.metadata_cache import MetadataCache
    from broker.security.client import ClientSecurity

log = logging.getLogger("broker.share.persister")

RETRIABLE = frozenset({ErrorCode.NOT_COORDINATOR, ErrorCode.COORDINATOR_NOT_AVAILABLE,
                       ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION})
SHARE_KEY_TYPE = 2


class _Retry(Exception):
    def __init__(self, code: ErrorCode, message: str | None = None) -> None:
        super().__init__(message or code.name)
        self.code = code
        self.message = message


@dataclass(slots=True)
class _Queued:
    """One call waiting for its coordinator's next request."""
    api_key: int
    key: ShareKey
    request: Any  # the call's own request: one topic, one partition
    answer: asyncio.Future[Any]  # its partition's result (None: not in the answer), or _Retry


class _Backoff:
    """Kafka's ExponentialBackoff as its persister uses it: initial, doubling, capped, with jitter."""

    def __init__(self, initial_ms: int, max_ms: int, max_attempts: int) -> None:
        self.initial_ms = initial_ms
        self.max_ms = max_ms
        self.max_attempts = max_attempts
        self.attempts = 0

    def can_attempt(self) -> bool:
        return self.attempts < self.max_attempts

    async def wait(self) -> None:
        ms = min(self.max_ms, self.initial_ms * 2 ** self.attempts) * random.uniform(0.8, 1.2)
        self.attempts += 1
        await asyncio.sleep(ms / 1000)


class RpcPersisterServer(Protocol):
    """The broker as its persister sees it (KafkaServer): its id, config and inter-broker security, the metadata
    cache (where the share coordinators are) and its own share coordinator (which partition a key is on)."""

    broker_id: int
    config: KafkaConfig
    inter_broker_security: ClientSecurity
    metadata_cache: MetadataCache
    share_coordinator: ShareCoordinatorService


LocalAnswer = Callable[[int], Callable[[Any, Any], Any]]


class RpcPersister:
    def __init__(self, server: RpcPersisterServer, local_answer: LocalAnswer, *, backoff_ms: int = 1000,
                 backoff_max_ms: int = 30_000, max_attempts: int = 5) -> None:
        """`local_answer(api_key)`: the `answer(server, request)` of that state RPC's handler, for a share coordinator
        on this very broker (the handlers sit above this room, so the broker hands it in)."""
        self.server = server
        self.local_answer = local_answer
        self.backoff_ms = backoff_ms
        self.backoff_max_ms = backoff_max_ms
        self.max_attempts = max_attempts
        self._connections: dict[int, BrokerConnection] = {}
        self._queues: dict[int, list[_Queued]] = {}  # per coordinator broker: calls waiting for the next request
        self._senders: dict[int, asyncio.Task] = {}  # per coordinator broker: the task sending its queue
        self._closed = False

    # ---- the Persister protocol
    async def initialize(self, group_id: str, topic_id: bytes, partition: int, state_epoch: int,
                         start_offset: int) -> None:
        Req = request_class(ApiKey.INITIALIZE_SHARE_GROUP_STATE)
        T = Req.InitializeStateData
        tid = _topic_id(topic_id)
        await self._call(ShareKey(group_id, tid, partition), ApiKey.INITIALIZE_SHARE_GROUP_STATE, lambda: Req[0](
            group_id=group_id, topics=[T(topic_id=tid, partitions=[T.PartitionData(
                partition=partition, state_epoch=state_epoch, start_offset=start_offset)])]))

    async def read(self, group_id: str, topic_id: bytes, partition: int, leader_epoch: int) -> SharePartitionState:
        Req = request_class(ApiKey.READ_SHARE_GROUP_STATE)
        T = Req.ReadStateData
        tid = _topic_id(topic_id)
        try:
            p = await self._call(ShareKey(group_id, tid, partition), ApiKey.READ_SHARE_GROUP_STATE, lambda: Req[0](
                group_id=group_id, topics=[T(topic_id=tid, partitions=[T.PartitionData(
                    partition=partition, leader_epoch=leader_epoch)])]))
        except PersisterError as e:
            if e.error_code != ErrorCode.INVALID_REQUEST:
                raise
            summary = await self.read_summary(group_id, topic_id, partition, leader_epoch)
            if summary.start_offset != -1:
                raise
            return SharePartitionState(0, -1, [], leader_epoch)
        return SharePartitionState(p.state_epoch, p.start_offset, [
            PersisterStateBatch(b.first_offset, b.last_offset, b.delivery_state, b.delivery_count)
            for b in p.state_batches], leader_epoch)

    async def write(self, group_id: str, topic_id: bytes, partition: int, state: SharePartitionState) -> None:
        Req = request_class(ApiKey.WRITE_SHARE_GROUP_STATE)
        T = Req.WriteStateData
        P = T.PartitionData
        tid = _topic_id(topic_id)
        await self._call(ShareKey(group_id, tid, partition), ApiKey.WRITE_SHARE_GROUP_STATE, lambda: Req[0](
            group_id=group_id, topics=[T(topic_id=tid, partitions=[P(
                partition=partition, state_epoch=state.state_epoch, leader_epoch=state.leader_epoch,
                start_offset=state.start_offset,
                state_batches=[P.StateBatch(first_offset=b.first_offset, last_offset=b.last_offset,
                                            delivery_state=b.delivery_state, delivery_count=b.delivery_count)
                               for b in state.batches])])]))

    async def delete(self, group_id: str, topic_id: bytes, partition: int) -> None:
        Req = request_class(ApiKey.DELETE_SHARE_GROUP_STATE)
        T = Req.DeleteStateData
        tid = _topic_id(topic_id)
        await self._call(ShareKey(group_id, tid, partition), ApiKey.DELETE_SHARE_GROUP_STATE, lambda: Req[0](
            group_id=group_id, topics=[T(topic_id=tid, partitions=[T.PartitionData(partition=partition)])]))

    async def read_summary(self, group_id: str, topic_id: bytes, partition: int,
                           leader_epoch: int) -> SharePartitionState:
        Req = request_class(ApiKey.READ_SHARE_GROUP_STATE_SUMMARY)
        T = Req.ReadStateSummaryData
        tid = _topic_id(topic_id)
        p = await self._call(ShareKey(group_id, tid, partition), ApiKey.READ_SHARE_GROUP_STATE_SUMMARY,
                             lambda: Req[1](group_id=group_id, topics=[T(topic_id=tid, partitions=[
                                 T.PartitionData(partition=partition, leader_epoch=leader_epoch)])]))
        return SharePartitionState(p.state_epoch, p.start_offset, [], p.leader_epoch,
                                   getattr(p, "delivery_complete_count", -1))

    def close(self) -> None:
        self._closed = True
        for queue in self._queues.values():
            for item in queue:
                if not item.answer.done():
                    item.answer.set_exception(PersisterError(ErrorCode.COORDINATOR_NOT_AVAILABLE,
                                                             "the persister closed"))
            queue.clear()
        for task in self._senders.values():
            task.cancel()
        for conn in self._connections.values():
            conn.close()
        self._connections.clear()

    # ---- one call: find the coordinator, send, retry
    async def _call(self, key: ShareKey, api_key: int, build: Callable[[], Any]) -> Any:
        lookup = _Backoff(self.backoff_ms, self.backoff_max_ms, self.max_attempts)
        rpc = _Backoff(self.backoff_ms, self.backoff_max_ms, self.max_attempts)
        while True:
            if self._closed:
                raise PersisterError(ErrorCode.COORDINATOR_NOT_AVAILABLE, "the persister is closed")
            try:
                node = await self._coordinator(key)
            except _Retry as e:
                if not lookup.can_attempt():
                    raise PersisterError(e.code, f"finding the share coordinator of {key}: {e}") from None
                log.debug("%s: no share coordinator yet (%s); retrying", key, e.code.name)
                await lookup.wait()
                continue
            lookup.attempts = 0
            try:
                return await self._send(node, key, api_key, build())
            except _Retry as e:
                if not rpc.can_attempt():
                    raise PersisterError(e.code, f"{ApiKey(api_key).name} for {key}: {e}") from None
                log.debug("%s: %s answered %s by broker %d; retrying", key, ApiKey(api_key).name, e.code.name,
                          node)
                await rpc.wait()

    async def _coordinator(self, key: ShareKey) -> int:
        server = self.server
        cache = server.metadata_cache
        if SHARE_GROUP_STATE_TOPIC in cache.topics:
            pm = cache.partition(SHARE_GROUP_STATE_TOPIC, server.share_coordinator.partition_for(key))
            if pm is not None and pm.leader >= 0 and cache.alive_broker(pm.leader) is not None:
                return pm.leader
        return await self._find_coordinator(key)

    async def _find_coordinator(self, key: ShareKey) -> int:
        brokers = list(self.server.metadata_cache.brokers)
        if not brokers:
            raise _Retry(ErrorCode.COORDINATOR_NOT_AVAILABLE, "no live broker known")
        target = random.choice(brokers)
        Req = request_class(ApiKey.FIND_COORDINATOR)
        conn = self._connection(target)
        if conn is None:
            raise _Retry(ErrorCode.COORDINATOR_NOT_AVAILABLE, f"broker {target} is not alive")
        try:
            resp = await conn.send(lambda v: Req[v](key_type=SHARE_KEY_TYPE, coordinator_keys=[
                key.coordinator_key()]), ApiKey.FIND_COORDINATOR)
        except BrokerUnavailable as e:
            raise _Retry(ErrorCode.COORDINATOR_NOT_AVAILABLE, str(e)) from None
        c = resp.coordinators[0]
        code = ErrorCode(c.error_code)
        if code in RETRIABLE:
            raise _Retry(code, c.error_message)
        if code != ErrorCode.NONE:
            raise PersisterError(code, f"FindCoordinator for {key}: {c.error_message or code.name}")
        return c.node_id

    async def _send(self, node: int, key: ShareKey, api_key: int, request: Any) -> Any:
        if node == self.server.broker_id:
            p = _partition_result(await self.local_answer(api_key)(self.server, request), key)
        else:
            if self.server.metadata_cache.alive_broker(node) is None:
                raise _Retry(ErrorCode.COORDINATOR_NOT_AVAILABLE, f"broker {node} is not alive")
            answer: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
            self._queues.setdefault(node, []).append(_Queued(api_key, key, request, answer))
            if node not in self._senders:
                self._senders[node] = asyncio.get_running_loop().create_task(self._drain(node))
            p = await answer
        if p is None:
            raise PersisterError(ErrorCode.UNKNOWN_SERVER_ERROR, f"no answer for {key} in {ApiKey(api_key).name}")
        code = ErrorCode(p.error_code)
        if code in RETRIABLE:
            raise _Retry(code, p.error_message)
        if code != ErrorCode.NONE:
            raise PersisterError(code, p.error_message or code.name)
        return p

    async def _drain(self, node: int) -> None:
        """Send what waits for `node`: the calls of one API and one group in one request (one share partition
        at most once in it, so calls for the same share partition keep their order), one request at a time."""
        queue = self._queues.setdefault(node, [])
        try:
            while queue:
                batch: dict[tuple[int, str], list[_Queued]] = {}
                keys: set[tuple[int, ShareKey]] = set()
                later: list[_Queued] = []
                for item in queue:
                    if (item.api_key, item.key) in keys:
                        later.append(item)
                        continue
                    keys.add((item.api_key, item.key))
                    batch.setdefault((item.api_key, item.key.group_id), []).append(item)
                queue[:] = later
                for (api_key, _), items in batch.items():
                    await self._send_batch(node, api_key, items)
        finally:
            # Synchronously after the last look at the queue: a call queued from now on starts a new sender.
            if self._senders.get(node) is asyncio.current_task():
                del self._senders[node]

    async def _send_batch(self, node: int, api_key: int, items: list[_Queued]) -> None:
        first = items[0].request
        topics: dict[Any, Any] = {}
        for item in items:
            t = item.request.topics[0]
            merged = topics.get(t.topic_id)
            if merged is None:
                topics[t.topic_id] = type(t)(topic_id=t.topic_id, partitions=list(t.partitions))
            else:
                merged.partitions.extend(t.partitions)
        Req = request_class(api_key)
        log.debug("%s to broker %d for %d share partitions", ApiKey(api_key).name, node, len(items))
        conn = self._connection(node)
        try:
            if conn is None:
                raise BrokerUnavailable(f"broker {node} is not alive")
            response = await conn.send(lambda v: Req[v](group_id=first.group_id, topics=list(topics.values())),
                                       api_key)
        except BrokerUnavailable as e:
            for item in items:
                if not item.answer.done():
                    item.answer.set_exception(_Retry(ErrorCode.COORDINATOR_NOT_AVAILABLE, str(e)))
            return
        except BaseException as e:  # handed to each waiting call (a cancelled sender too), then ours to raise
            for item in items:
                if not item.answer.done():
                    item.answer.set_exception(e if isinstance(e, Exception) else PersisterError(
                        ErrorCode.COORDINATOR_NOT_AVAILABLE, "the persister closed"))
            if not isinstance(e, Exception):
                raise
            return
        for item in items:
            if not item.answer.done():
                item.answer.set_result(_partition_result(response, item.key))

    def _connection(self, broker_id: int) -> BrokerConnection | None:
        ep = self.server.metadata_cache.alive_broker(broker_id)
        if ep is None:
            return None
        conn = self._connections.get(broker_id)
        if conn is not None and (conn.host, conn.port) != (ep.host, ep.port):
            conn.close()
            conn = None
        if conn is None:
            conn = self._connections[broker_id] = BrokerConnection(
                ep.host, ep.port, f"broker-{self.server.broker_id}-share-persister",
                timeout_s=self.server.config["request.timeout.ms"] / 1000,
                security=self.server.inter_broker_security)
        return conn


def _partition_result(response: Any, key: ShareKey) -> Any:
    for topic in response.results:
        if topic.topic_id == key.topic_id:
            for p in topic.partitions:
                if p.partition == key.partition:
                    return p
    return None


def _topic_id(topic_id: bytes | uuid.UUID) -> uuid.UUID:
    return topic_id if isinstance(topic_id, uuid.UUID) else uuid.UUID(bytes=bytes(topic_id))

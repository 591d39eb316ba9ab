"""The controller's channel to another broker: LeaderAndIsr, UpdateMetadata and StopReplica requests
over the wire — the same frames Kafka's ZooKeeper-mode controller sends — and the conversions between
those messages and the broker's own values (used by the receiving handlers too). `RemoteChannel` queues
requests per broker and retries them until they are answered or the broker is gone.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Callable
from typing import Any

from broker.inter_broker import BrokerConnection, BrokerUnavailable
from broker.metadata_cache import BrokerEndpoint, PartitionMetadata
from broker.partition import PartitionState
from protocol import ApiKey, request_class
from protocol.errors import ErrorCode
from storage import TopicPartition

ZERO_UUID = uuid.UUID(int=0)
PLAINTEXT = 0  # SecurityProtocol id
RETRY_BACKOFF_S = 0.1
MAX_RETRY_BACKOFF_S = 2.0

log = logging.getLogger("broker.controller_channel")


# ---------------------------------------------------------------- LeaderAndIsr
def build_leader_and_isr(version: int, controller_id: int, controller_epoch: int,
                         states: dict[TopicPartition, PartitionState], topic_ids: dict[str, uuid.UUID],
                         leaders: list[BrokerEndpoint]) -> Any:
    Req = request_class(ApiKey.LEADER_AND_ISR)
    PS = Req.LeaderAndIsrPartitionState

    def ps(tp: TopicPartition, s: PartitionState) -> Any:
        return PS(topic_name=tp.topic, partition_index=tp.partition, controller_epoch=s.controller_epoch,
                  leader=s.leader, leader_epoch=s.leader_epoch, isr=list(s.isr), partition_epoch=s.partition_epoch,
                  replicas=list(s.replicas), adding_replicas=list(s.adding_replicas),
                  removing_replicas=list(s.removing_replicas), is_new=s.is_new, leader_recovery_state=0)

    live = [Req.LeaderAndIsrLiveLeader(broker_id=b.broker_id, host_name=b.host, port=b.port) for b in leaders]
    fields: dict[str, Any] = dict(controller_id=controller_id,
                                  controller_epoch=controller_epoch, broker_epoch=-1, request_type=0,
                                  live_leaders=live)
    if version < 2:
        fields["ungrouped_partition_states"] = [ps(tp, s) for tp, s in states.items()]
    else:
        by_topic: dict[str, list] = {}
        for tp, s in states.items():
            by_topic.setdefault(tp.topic, []).append(ps(tp, s))
        fields["topic_states"] = [Req.LeaderAndIsrTopicState(topic_name=t, topic_id=topic_ids.get(t, ZERO_UUID),
                                                             partition_states=p) for t, p in by_topic.items()]
    return Req[version](**fields)


def parse_leader_and_isr(request: Any) -> tuple[dict[TopicPartition, PartitionState], dict[str, uuid.UUID],
                                                list[BrokerEndpoint]]:
    states: dict[TopicPartition, PartitionState] = {}
    topic_ids: dict[str, uuid.UUID] = {}
    if request.API_VERSION < 2:
        entries = [(p.topic_name, p) for p in request.ungrouped_partition_states]
    else:
        entries = []
        for t in request.topic_states:
            if request.API_VERSION >= 5 and t.topic_id is not None and t.topic_id != ZERO_UUID:
                topic_ids[t.topic_name] = t.topic_id
            entries.extend((t.topic_name, p) for p in t.partition_states)
    for topic, p in entries:
        states[TopicPartition(topic, p.partition_index)] = PartitionState(
            leader=p.leader, leader_epoch=p.leader_epoch, isr=list(p.isr), replicas=list(p.replicas),
            partition_epoch=p.partition_epoch, controller_epoch=p.controller_epoch,
            adding_replicas=list(p.adding_replicas or []), removing_replicas=list(p.removing_replicas or []),
            is_new=bool(p.is_new))
    leaders = [BrokerEndpoint(b.broker_id, b.host_name, b.port) for b in request.live_leaders]
    return states, topic_ids, leaders


# ---------------------------------------------------------------- UpdateMetadata
def build_update_metadata(version: int, controller_id: int, controller_epoch: int, brokers: list[BrokerEndpoint],
                          partitions: list[tuple[TopicPartition, uuid.UUID, PartitionMetadata]]) -> Any:
    Req = request_class(ApiKey.UPDATE_METADATA)
    PS = Req.UpdateMetadataPartitionState
    B = Req.UpdateMetadataBroker

    def ps(tp: TopicPartition, pm: PartitionMetadata) -> Any:
        return PS(topic_name=tp.topic, partition_index=tp.partition, controller_epoch=controller_epoch,
                  leader=pm.leader, leader_epoch=pm.leader_epoch, isr=list(pm.isr), zk_version=0,
                  replicas=list(pm.replicas), offline_replicas=list(pm.offline_replicas))

    live = []
    for b in brokers:
        if version == 0:
            live.append(B(id=b.broker_id, v0_host=b.host, v0_port=b.port))
        else:
            live.append(B(id=b.broker_id, endpoints=[B.UpdateMetadataEndpoint(
                port=b.port, host=b.host, listener="PLAINTEXT", security_protocol=PLAINTEXT)], rack=b.rack))
    fields: dict[str, Any] = dict(controller_id=controller_id, request_type=0,
                                  controller_epoch=controller_epoch, broker_epoch=-1, live_brokers=live)
    if version < 5:
        fields["ungrouped_partition_states"] = [ps(tp, pm) for tp, _, pm in partitions]
    else:
        by_topic: dict[str, tuple[uuid.UUID, list]] = {}
        for tp, tid, pm in partitions:
            by_topic.setdefault(tp.topic, (tid, []))[1].append(ps(tp, pm))
        fields["topic_states"] = [Req.UpdateMetadataTopicState(topic_name=t, topic_id=tid, partition_states=p)
                                  for t, (tid, p) in by_topic.items()]
    return Req[version](**fields)


def parse_update_metadata(request: Any) -> tuple[list[BrokerEndpoint],
                                                 list[tuple[TopicPartition, uuid.UUID, PartitionMetadata]]]:
    brokers = []
    for b in request.live_brokers:
        if request.API_VERSION == 0:
            brokers.append(BrokerEndpoint(b.id, b.v0_host, b.v0_port))
            continue
        ep = next((e for e in b.endpoints if (e.listener or "PLAINTEXT") == "PLAINTEXT"), None)
        if ep is not None:
            brokers.append(BrokerEndpoint(b.id, ep.host, ep.port, b.rack if request.API_VERSION >= 2 else None))
    if request.API_VERSION < 5:
        entries = [(p.topic_name, ZERO_UUID, p) for p in request.ungrouped_partition_states]
    else:
        entries = [(t.topic_name, t.topic_id if request.API_VERSION >= 7 and t.topic_id else ZERO_UUID, p)
                   for t in request.topic_states for p in t.partition_states]
    partitions = []
    for topic, tid, p in entries:
        partitions.append((TopicPartition(topic, p.partition_index), tid, PartitionMetadata(
            p.partition_index, p.leader, p.leader_epoch, tuple(p.replicas), tuple(p.isr),
            tuple(p.offline_replicas or ()) if request.API_VERSION >= 4 else ())))
    return brokers, partitions


# ---------------------------------------------------------------- StopReplica
def build_stop_replica(version: int, controller_id: int, controller_epoch: int, partitions: list[TopicPartition],
                       delete: bool) -> Any:
    Req = request_class(ApiKey.STOP_REPLICA)
    fields: dict[str, Any] = dict(controller_id=controller_id,
                                  controller_epoch=controller_epoch, broker_epoch=-1)
    by_topic: dict[str, list[int]] = {}
    for tp in partitions:
        by_topic.setdefault(tp.topic, []).append(tp.partition)
    if version == 0:
        fields.update(delete_partitions=delete, ungrouped_partitions=[
            Req.StopReplicaPartitionV0(topic_name=tp.topic, partition_index=tp.partition) for tp in partitions])
    elif version <= 2:
        fields.update(delete_partitions=delete, topics=[
            Req.StopReplicaTopicV1(name=t, partition_indexes=ps) for t, ps in by_topic.items()])
    else:
        TS = Req.StopReplicaTopicState
        fields["topic_states"] = [TS(topic_name=t, partition_states=[
            TS.StopReplicaPartitionState(partition_index=p, leader_epoch=-2 if delete else -1, delete_partition=delete)
            for p in ps]) for t, ps in by_topic.items()]
    return Req[version](**fields)


def parse_stop_replica(request: Any) -> list[tuple[TopicPartition, bool]]:
    v = request.API_VERSION
    if v == 0:
        return [(TopicPartition(p.topic_name, p.partition_index), bool(request.delete_partitions))
                for p in request.ungrouped_partitions]
    if v <= 2:
        return [(TopicPartition(t.name, p), bool(request.delete_partitions))
                for t in request.topics for p in t.partition_indexes]
    return [(TopicPartition(t.topic_name, p.partition_index), bool(p.delete_partition))
            for t in request.topic_states for p in t.partition_states]


# ---------------------------------------------------------------- the channel
class RemoteChannel:
    """The controller's requests to one other broker (Kafka's ControllerChannelManager: one queue and one
    sending task per broker). Requests are queued and sent in order; a failed send is retried with backoff
    until it succeeds or the channel is closed (the controller closes it when the broker dies), so a slow,
    paused or briefly unreachable broker neither stalls the controller nor misses a request. The methods
    return once the request is queued; `drain(timeout)` waits for everything queued so far to be answered."""

    def __init__(self, controller_id: int, endpoint: BrokerEndpoint, config: Any) -> None:
        self.controller_id = controller_id
        self.endpoint = endpoint
        self.conn = BrokerConnection(endpoint.host, endpoint.port, f"controller-{controller_id}",
                                     timeout_s=config["controller.socket.timeout.ms"] / 1000)
        self._queue: asyncio.Queue[tuple[Callable[[int], Any], int, asyncio.Future]] = asyncio.Queue()
        self._last: asyncio.Future | None = None
        self._task = asyncio.ensure_future(self._run())

    def _submit(self, build: Callable[[int], Any], api_key: int) -> asyncio.Future:
        fut = asyncio.get_running_loop().create_future()
        self._queue.put_nowait((build, api_key, fut))
        self._last = fut
        return fut

    async def _run(self) -> None:
        while True:
            build, api_key, fut = await self._queue.get()
            backoff = RETRY_BACKOFF_S
            failing = False
            while not fut.done():
                try:
                    response = await self.conn.send(build, api_key)
                except BrokerUnavailable as e:
                    if not failing:
                        log.warning("controller request %s to broker %d failed: %s; retrying", ApiKey(api_key).name,
                                    self.endpoint.broker_id, e)
                        failing = True
                    await asyncio.sleep(backoff)
                    backoff = min(backoff * 2, MAX_RETRY_BACKOFF_S)
                    continue
                except Exception as e:  # an unusable request or response: retrying would not help
                    log.error("controller request %s to broker %d failed: %s", ApiKey(api_key).name,
                              self.endpoint.broker_id, e)
                    fut.set_exception(e)
                    break
                error = getattr(response, "error_code", 0)
                if error:
                    log.warning("broker %d answered %s with %s", self.endpoint.broker_id, ApiKey(api_key).name,
                                ErrorCode(error).name)
                fut.set_result(response)

    async def drain(self, timeout: float) -> bool:
        """Wait until every request queued so far was answered (or gave up); False on timeout."""
        if self._last is None or self._last.done():
            return True
        try:
            await asyncio.wait_for(asyncio.shield(self._last), timeout)
        except TimeoutError:
            return False
        except Exception:
            pass
        return True

    async def leader_and_isr(self, controller_id: int, controller_epoch: int,
                             states: dict[TopicPartition, PartitionState], topic_ids: dict[str, uuid.UUID],
                             leaders: list[BrokerEndpoint]) -> dict[TopicPartition, ErrorCode]:
        self._submit(lambda v: build_leader_and_isr(v, controller_id, controller_epoch, states, topic_ids, leaders),
                     ApiKey.LEADER_AND_ISR)
        return {}

    async def update_metadata(self, controller_id: int, controller_epoch: int, brokers: list[BrokerEndpoint],
                              partitions: list[tuple[TopicPartition, uuid.UUID, PartitionMetadata]]) -> None:
        self._submit(lambda v: build_update_metadata(v, controller_id, controller_epoch, brokers, partitions),
                     ApiKey.UPDATE_METADATA)

    async def stop_replica(self, controller_id: int, controller_epoch: int, partitions: list[TopicPartition],
                           delete: bool) -> None:
        self._submit(lambda v: build_stop_replica(v, controller_id, controller_epoch, partitions, delete),
                     ApiKey.STOP_REPLICA)

    async def close(self) -> None:
        self._task.cancel()
        while not self._queue.empty():
            _, _, fut = self._queue.get_nowait()
            fut.cancel()
        if self._last is not None and not self._last.done():
            self._last.cancel()
        self.conn.close()

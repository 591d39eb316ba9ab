"""The controller's channels to brokers and the batches it sends them (Kafka's ControllerChannelManager and
ControllerBrokerRequestBatch).

Contract:
- One `BrokerChannel` per live broker: `LocalChannel` applies a request to this broker without a socket,
  `RemoteChannel` sends the request frames (requests.py) over the wire. A channel is created on first use
  and closed when its broker dies or restarts (`remove`), or when the controller shuts down (`close`).
- A `RemoteChannel` stamps every request with the receiving broker's epoch (KIP-380) and sends each API at
  the version inter.broker.protocol.version allows (metadata_version.request_versions), as Kafka's controller does.
- `RemoteChannel` has one queue and one sending task per broker: requests go out in order; a failed send is
  retried with backoff until it is answered or the channel is closed, so a slow, paused or briefly
  unreachable broker neither stalls the controller nor misses a request. Its methods return once the request
  is queued; `drain(timeout)` waits until everything queued so far was answered. Closing cancels the sending
  task and waits for it.
- `send_partition_states(only, exclude)`: LeaderAndIsr with each partition's state to its live replicas
  (except `exclude`), then UpdateMetadata for the same partitions to every live broker.
  `send_update_metadata(tps, deleted, to)`: UpdateMetadata alone (to the brokers `to`, default all); a
  deleted partition goes out with leader LEADER_DURING_DELETE, which makes brokers drop the topic from their
  metadata. Send failures are logged, never raised: the controller carries on and the broker catches up on
  its next request.
- `metadata_changed` is set after every UpdateMetadata round, for admin requests waiting to see their result.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Callable, Collection, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from broker.cluster.partition import PartitionState
from broker.common.metadata_version import request_versions
from broker.controller.context import ControllerContext
from broker.controller.requests import (
    build_leader_and_isr,
    build_stop_replica,
    build_update_metadata,
)
from broker.metadata.metadata_cache import BrokerEndpoint, PartitionMetadata
from broker.network.inter_broker import BrokerConnection, BrokerUnavailable
from broker.security.client import PLAINTEXT_CLIENT, ClientSecurity
from protocol import ApiKey
from protocol.errors import ErrorCode
from storage import TopicPartition

if TYPE_CHECKING:
    from broker.controller.controller import ControllerServer

log = logging.getLogger("broker.controller_channel")

LEADER_DURING_DELETE = -2
RETRY_BACKOFF_S = 0.1
MAX_RETRY_BACKOFF_S = 2.0


class BrokerChannel(Protocol):
    async def leader_and_isr(self, controller_id: int, controller_epoch: int,
                             states: dict[TopicPartition, PartitionState], topic_ids: dict[str, uuid.UUID],
                             leaders: list[BrokerEndpoint]) -> dict[TopicPartition, ErrorCode]: ...

    async def update_metadata(self, controller_id: int, controller_epoch: int, brokers: list[BrokerEndpoint],
                              partitions: list[tuple[TopicPartition, uuid.UUID, PartitionMetadata]]) -> None: ...

    async def stop_replica(self, controller_id: int, controller_epoch: int, partitions: list[TopicPartition],
                           delete: bool) -> None: ...

    async def drain(self, timeout: float) -> bool: ...

    async def close(self) -> None: ...


class LocalChannel:
    """This broker, reached without a socket."""

    def __init__(self, server: ControllerServer) -> None:
        self.server = server

    async def leader_and_isr(self, controller_id: int, controller_epoch: int,
                             states: dict[TopicPartition, PartitionState], topic_ids: dict[str, uuid.UUID],
                             leaders: list[BrokerEndpoint]) -> dict[TopicPartition, ErrorCode]:
        # Applied in chunks with the loop's other work in between: a topic of 10,000 new partitions takes seconds
        # of log creation, which would otherwise silence every client meanwhile.
        results: dict[TopicPartition, ErrorCode] = {}
        for chunk in _chunks(list(states.items())):
            results.update(self.server.apply_leader_and_isr(controller_id, controller_epoch, dict(chunk), topic_ids,
                                                            leaders))
            if len(chunk) == _LOCAL_CHUNK:
                await asyncio.sleep(0)
        return results

    async def update_metadata(self, controller_id: int, controller_epoch: int, brokers: list[BrokerEndpoint],
                              partitions: list[tuple[TopicPartition, uuid.UUID, PartitionMetadata]]) -> None:
        self.server.apply_update_metadata(controller_id, controller_epoch, brokers, partitions)

    async def stop_replica(self, controller_id: int, controller_epoch: int, partitions: list[TopicPartition],
                           delete: bool) -> None:
        for chunk in _chunks(partitions):  # as leader_and_isr
            self.server.apply_stop_replica(controller_id, controller_epoch, chunk, delete)
            if len(chunk) == _LOCAL_CHUNK:
                await asyncio.sleep(0)

    async def drain(self, timeout: float) -> bool:
        return True  # applied synchronously

    async def close(self) -> None:
        pass


# Partitions the controller applies to itself between two turns of the event loop (LocalChannel): creating a
# partition takes 0.2-1 ms on the loop (its directory and empty .log file; its partition.metadata and epoch
# checkpoint are written by a worker thread, issue 35), so 32 keep every other client waiting at most ~30 ms.
_LOCAL_CHUNK = 32


def _chunks(items: list[Any]) -> list[list[Any]]:
    return [items[i:i + _LOCAL_CHUNK] for i in range(0, len(items), _LOCAL_CHUNK)] or [[]]


class RemoteChannel:
    """The controller's requests to one other broker; see the module docstring."""

    def __init__(self, controller_id: int, endpoint: BrokerEndpoint, config: Any, broker_epoch: int = -1,
                 security: ClientSecurity = PLAINTEXT_CLIENT) -> None:
        self.controller_id = controller_id
        self.endpoint = endpoint
        # The receiving broker's epoch, stamped on every request (a bounced broker gets a new channel).
        self.broker_epoch = broker_epoch
        self.conn = BrokerConnection(endpoint.host, endpoint.port, f"controller-{controller_id}",
                                     timeout_s=config["controller.socket.timeout.ms"] / 1000,
                                     version_caps=request_versions(config.inter_broker_protocol_version),
                                     security=security)
        self._queue: asyncio.Queue[tuple[Callable[[int], Any], int, asyncio.Future]] = asyncio.Queue()
        self._last: asyncio.Future | None = None
        self._task = asyncio.get_running_loop().create_task(self._run())

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
            async with asyncio.timeout(timeout):  # not wait_for: it can swallow a cancellation on 3.11
                await asyncio.shield(self._last)
        except TimeoutError:
            return False
        except Exception:
            pass
        return True

    async def leader_and_isr(self, controller_id: int, controller_epoch: int,
                             states: dict[TopicPartition, PartitionState], topic_ids: dict[str, uuid.UUID],
                             leaders: list[BrokerEndpoint]) -> dict[TopicPartition, ErrorCode]:
        self._submit(lambda v: build_leader_and_isr(v, controller_id, controller_epoch, states, topic_ids, leaders,
                                                    self.broker_epoch), ApiKey.LEADER_AND_ISR)
        return {}

    async def update_metadata(self, controller_id: int, controller_epoch: int, brokers: list[BrokerEndpoint],
                              partitions: list[tuple[TopicPartition, uuid.UUID, PartitionMetadata]]) -> None:
        self._submit(lambda v: build_update_metadata(v, controller_id, controller_epoch, brokers, partitions,
                                                     self.broker_epoch), ApiKey.UPDATE_METADATA)

    async def stop_replica(self, controller_id: int, controller_epoch: int, partitions: list[TopicPartition],
                           delete: bool) -> None:
        self._submit(lambda v: build_stop_replica(v, controller_id, controller_epoch, partitions, delete,
                                                  self.broker_epoch), ApiKey.STOP_REPLICA)

    async def close(self) -> None:
        self._task.cancel()
        while not self._queue.empty():
            _, _, fut = self._queue.get_nowait()
            fut.cancel()
        if self._last is not None and not self._last.done():
            self._last.cancel()
        self.conn.close()
        await asyncio.wait({self._task})


class ControllerChannelManager:
    """The active controller's channels and request batches; see the module docstring."""

    def __init__(self, server: ControllerServer, ctx: ControllerContext) -> None:
        self.server = server
        self.ctx = ctx
        self.broker_id = server.broker_id
        self._channels: dict[int, BrokerChannel] = {}
        self.metadata_changed = asyncio.Event()

    def channel(self, broker_id: int) -> BrokerChannel:
        ch = self._channels.get(broker_id)
        if ch is None:
            if broker_id == self.broker_id:
                ch = LocalChannel(self.server)
            else:
                ch = RemoteChannel(self.broker_id, self.ctx.live_brokers[broker_id], self.server.config,
                                   self.ctx.broker_epochs.get(broker_id, -1), self.server.inter_broker_security)
            self._channels[broker_id] = ch
        return ch

    async def remove(self, broker_id: int) -> None:
        """Close the channel of a broker that died or restarted (a new one is made on next use)."""
        ch = self._channels.pop(broker_id, None)
        if ch is not None:
            await ch.close()

    async def close(self) -> None:
        channels, self._channels = list(self._channels.values()), {}
        for ch in channels:
            try:
                await ch.close()
            except Exception:
                log.exception("closing a controller channel failed")

    async def stop_replica(self, broker_id: int, partitions: list[TopicPartition], delete: bool) -> None:
        """StopReplica to a live broker; a failure is logged."""
        try:
            await self.channel(broker_id).stop_replica(self.broker_id, self.ctx.epoch, partitions, delete)
        except Exception as e:
            log.warning("StopReplica to broker %d failed: %s", broker_id, e)

    async def send_partition_states(self, only: Sequence[TopicPartition] | None = None,
                                    exclude: set[int] | frozenset[int] = frozenset()) -> None:
        """LeaderAndIsr to the replicas of `only` (all partitions when None) except `exclude`, UpdateMetadata
        to every broker."""
        ctx = self.ctx
        tps = list(ctx.states) if only is None else list(only)
        by_broker: dict[int, dict[TopicPartition, PartitionState]] = {}
        topic_ids: dict[str, uuid.UUID] = {}
        for tp in tps:
            info = ctx.topics.get(tp.topic)
            st = ctx.states.get(tp)
            if info is None or st is None:
                continue
            if info.topic_id is not None:
                topic_ids[tp.topic] = info.topic_id
            replicas = list(info.assignment.get(tp.partition, ()))
            ps = PartitionState(st.leader, st.leader_epoch, list(st.isr), replicas, ctx.versions.get(tp, 0),
                                st.controller_epoch, list(info.adding_replicas.get(tp.partition, ())),
                                list(info.removing_replicas.get(tp.partition, ())),
                                leader_recovery_state=st.leader_recovery_state)
            for r in replicas:
                if r in ctx.live_brokers and r not in exclude:
                    by_broker.setdefault(r, {})[tp] = ps
        leaders = list(ctx.live_brokers.values())
        for bid, states in by_broker.items():
            try:
                await self.channel(bid).leader_and_isr(self.broker_id, ctx.epoch, states, topic_ids, leaders)
            except Exception as e:
                log.warning("LeaderAndIsr to broker %d failed: %s", bid, e)
        await self.send_update_metadata(tps)

    async def send_update_metadata(self, tps: Sequence[TopicPartition],
                                   deleted: Sequence[tuple[TopicPartition, uuid.UUID]] = (),
                                   to: Collection[int] | None = None) -> None:
        """UpdateMetadata with every live broker and the states of `tps` to the brokers `to` (all live
        brokers when None); with no partitions it tells brokers who is alive (Kafka's first step on broker
        start-up and controller failover, so a broker knows its leaders before any LeaderAndIsr)."""
        ctx = self.ctx
        parts = []
        for tp in tps:
            info = ctx.topics.get(tp.topic)
            st = ctx.states.get(tp)
            if info is None or st is None:
                continue
            replicas = tuple(info.assignment.get(tp.partition, ()))
            offline = tuple(r for r in replicas if r not in ctx.live_brokers)
            parts.append((tp, info.topic_id or uuid.UUID(int=0),
                          PartitionMetadata(tp.partition, st.leader, st.leader_epoch, replicas, st.isr, offline,
                                            ctx.versions.get(tp, 0))))
        for tp, tid in deleted:
            parts.append((tp, tid, PartitionMetadata(tp.partition, LEADER_DURING_DELETE, 0, (), ())))
        brokers = list(ctx.live_brokers.values())
        for bid in [b for b in ctx.live_brokers if to is None or b in to]:
            try:
                await self.channel(bid).update_metadata(self.broker_id, ctx.epoch, brokers, parts)
            except Exception as e:
                log.warning("UpdateMetadata to broker %d failed: %s", bid, e)
        self.metadata_changed.set()

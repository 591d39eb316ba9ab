"""The controller (Kafka's ZooKeeper-mode KafkaController) and the broker's admin entry points to it.

Every broker runs a `Controller`; the one that wins `/controller` in the metadata store is *active*.
The embedded default uses the local store (one node, always active); `zookeeper.connect` selects the
ZooKeeper store — the same code either way.

Active controller duties (events are processed one at a time, in order, like Kafka's event manager):
- On election: read topics, assignments and partition states; create missing states; elect leaders for
  partitions whose leader is not alive; send LeaderAndIsr to every replica and UpdateMetadata to every
  live broker.
- New topics / partitions: leader = first live replica of the assignment, ISR = live replicas, epoch 0.
- Deleted topics: StopReplica(delete) to the replicas, remove the topic from the store and the metadata.
- Partition reassignment (Kafka's onPartitionReassignment, KIP-455 sets): `/admin/reassign_partitions` asks
  for target replicas TRS; the assignment becomes ORS ∪ TRS with adding (TRS − ORS) and removing (ORS − TRS)
  replicas on the topic znode and a leader epoch bump so the new replicas fetch. Once TRS is in the ISR
  (ISR change notifications), a leader from TRS is elected if needed, the ISR becomes ISR ∩ TRS, the removed
  replicas get StopReplica(delete), the assignment becomes TRS and the partition leaves the request znode
  (deleted when empty). A new controller resumes from the znode and the topics' adding/removing sets.
- Broker changes: partitions led by a dead broker get a new leader from the live ISR (unclean only if
  `unclean.leader.election.enable`), the dead broker leaves the ISR, leader epochs are bumped, partition
  states are written with version checks (and a controller-epoch fence), then LeaderAndIsr/UpdateMetadata.
Broker-side entry points (any broker): `create_topics`, `delete_topics`, `create_partitions`,
`alter_topic_configs` write to the store and wait (bounded) until this broker's metadata shows the result.

Messages to brokers go through a `BrokerChannel`: in-process for this broker, over the wire
(LeaderAndIsr, UpdateMetadata, StopReplica requests) for others.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import dataclasses
import logging
import time
import uuid
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from broker.metadata import (
    BadVersionError,
    InvalidPartitionsError,
    InvalidReplicaAssignmentError,
    InvalidReplicationFactorError,
    LeaderAndIsr,
    LocalMetadataStore,
    MetadataError,
    TopicExistsError,
    TopicInfo,
    UnknownTopicError,
    ZkMetadataStore,
)
from broker.metadata.assignment import (
    assign_additional_partitions,
    assign_replicas_to_brokers,
    validate_manual_assignment,
)
from broker.metadata_cache import BrokerEndpoint, PartitionMetadata
from broker.partition import PartitionState
from broker.topics import topic_name_error
from protocol.errors import ErrorCode
from storage import TopicPartition

if TYPE_CHECKING:
    from broker.server import KafkaServer

log = logging.getLogger("broker.controller")

LEADER_DURING_DELETE = -2
NO_LEADER = -1


@dataclass
class NewTopic:
    name: str
    num_partitions: int = -1
    replication_factor: int = -1
    assignment: dict[int, list[int]] = field(default_factory=dict)
    configs: dict[str, str] = field(default_factory=dict)


@dataclass
class TopicResult:
    error: ErrorCode = ErrorCode.NONE
    message: str | None = None
    topic_id: uuid.UUID | None = None
    num_partitions: int = -1
    replication_factor: int = -1
    configs: dict[str, str] = field(default_factory=dict)


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

    def __init__(self, server: KafkaServer) -> None:
        self.server = server

    async def leader_and_isr(self, controller_id: int, controller_epoch: int,
                             states: dict[TopicPartition, PartitionState], topic_ids: dict[str, uuid.UUID],
                             leaders: list[BrokerEndpoint]) -> dict[TopicPartition, ErrorCode]:
        return self.server.apply_leader_and_isr(controller_id, controller_epoch, states, topic_ids, leaders)

    async def update_metadata(self, controller_id: int, controller_epoch: int, brokers: list[BrokerEndpoint],
                              partitions: list[tuple[TopicPartition, uuid.UUID, PartitionMetadata]]) -> None:
        self.server.apply_update_metadata(controller_id, controller_epoch, brokers, partitions)

    async def stop_replica(self, controller_id: int, controller_epoch: int, partitions: list[TopicPartition],
                           delete: bool) -> None:
        self.server.apply_stop_replica(controller_id, controller_epoch, partitions, delete)

    async def drain(self, timeout: float) -> bool:
        return True  # applied synchronously

    async def close(self) -> None:
        pass


class StoreProducerIdManager:
    """Producer ids from cluster-wide blocks of the metadata store (Kafka's ZkProducerIdManager): with a
    per-broker counter two brokers would hand the same id to two idempotent producers, whose sequence
    numbers then clash on a shared partition (OUT_OF_ORDER_SEQUENCE_NUMBER, fatal in the client).
    `generate()` is synchronous like ProducerIdManager's; the next block is claimed in the background when
    the current one is 90% used, so the event loop waits on ZooKeeper only if that has not finished."""

    def __init__(self, store: Any, broker_id: int, executor: concurrent.futures.Executor) -> None:
        self.store = store
        self.broker_id = broker_id
        self.executor = executor
        self._next = 0
        self._last = -1
        self._block_size = 1
        self._pending: concurrent.futures.Future | None = None

    def _claim(self) -> tuple[int, int]:
        return self.store.allocate_producer_id_block(self.broker_id)

    def start(self) -> None:
        self._use(self._claim())

    def _use(self, block: tuple[int, int]) -> None:
        self._next, self._last = block
        self._block_size = max(1, self._last - self._next + 1)

    def generate(self) -> int:
        if self._next > self._last:
            pending, self._pending = self._pending, None
            self._use(pending.result(30) if pending is not None else self._claim())
        pid = self._next
        self._next += 1
        if self._pending is None and self._last - self._next < self._block_size // 10:
            self._pending = self.executor.submit(self._claim)
        return pid


def elect_leader(assignment: Sequence[int], isr: Sequence[int], live: set[int], unclean: bool) -> int:
    """Kafka's OfflinePartitionLeaderElection: first live replica (assignment order) in the ISR."""
    for r in assignment:
        if r in live and r in isr:
            return r
    if unclean:
        for r in assignment:
            if r in live:
                return r
    return NO_LEADER


class Controller:
    def __init__(self, server: KafkaServer, store: Any) -> None:
        self.server = server
        self.store = store
        self.broker_id = server.broker_id
        self.cluster_id = ""
        self.active = False
        self.epoch = 0
        self.live_brokers: dict[int, BrokerEndpoint] = {}
        self.topics: dict[str, TopicInfo] = {}
        self.states: dict[TopicPartition, LeaderAndIsr] = {}
        self.versions: dict[TopicPartition, int] = {}
        self._executor = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="metadata")
        self._events: asyncio.Queue[tuple[Callable[[], Awaitable[Any]], asyncio.Future]] = asyncio.Queue()
        self._worker: asyncio.Task | None = None
        self._channels: dict[int, BrokerChannel] = {}
        self._metadata_changed = asyncio.Event()
        self._auto_creating: set[str] = set()
        self.shutting_down: set[int] = set()
        self._configs_seen: set[str] = set()
        self._watching_isr_changes = False
        self._rebalance_task: asyncio.Task | None = None
        self._registrations: dict[int, int] = {}  # broker id -> registration timestamp, to spot restarts
        self.reassigning: dict[TopicPartition, tuple[int, ...]] = {}  # partition -> target replicas (TRS)

    @classmethod
    def create(cls, server: KafkaServer) -> Controller:
        loop = asyncio.get_running_loop()
        connect = server.config.get("zookeeper.connect")
        if connect:
            store: Any = ZkMetadataStore(connect, session_timeout_ms=server.config["zookeeper.session.timeout.ms"],
                                         dispatch=loop.call_soon_threadsafe)
        else:
            store = LocalMetadataStore(server.config.log_dirs[0], dispatch=loop.call_soon_threadsafe)
        return cls(server, store)

    # ------------------------------------------------------------------ plumbing
    async def _call(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """Run a (blocking) store call on the metadata thread."""
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._executor, lambda: fn(*args, **kwargs))

    def _enqueue(self, fn: Callable[[], Awaitable[Any]]) -> asyncio.Future:
        fut = asyncio.get_running_loop().create_future()
        self._events.put_nowait((fn, fut))
        return fut

    async def _process_events(self) -> None:
        while True:
            fn, fut = await self._events.get()
            try:
                result = await fn()
            except Exception as e:
                if not isinstance(e, MetadataError):
                    log.exception("controller event failed")
                if not fut.done():
                    fut.set_exception(e)
            else:
                if not fut.done():
                    fut.set_result(result)

    def channel(self, broker_id: int) -> BrokerChannel:
        ch = self._channels.get(broker_id)
        if ch is None:
            if broker_id == self.broker_id:
                ch = LocalChannel(self.server)
            else:
                from broker.controller_channel import RemoteChannel

                ep = self.live_brokers[broker_id]
                ch = RemoteChannel(self.broker_id, ep, self.server.config)
            self._channels[broker_id] = ch
        return ch

    # ------------------------------------------------------------------ lifecycle
    async def startup(self) -> None:
        self._worker = asyncio.ensure_future(self._process_events())
        self.cluster_id = await self._call(self.store.get_or_create_cluster_id)
        configured = self.server.config.get("cluster.id")
        if configured and configured != self.cluster_id:
            raise MetadataError(f"cluster.id {configured} does not match the stored cluster id {self.cluster_id}")
        if self.server.config.get("zookeeper.connect"):
            ids = StoreProducerIdManager(self.store, self.broker_id, self._executor)
            await self._call(ids.start)
            self.server.producer_ids = ids  # type: ignore[assignment]
        ep = self.server.endpoint
        # After a kill -9 our previous session's registration lingers until it expires: wait it out rather
        # than fail the start (Kafka fails; a restarting supervisor would retry the same way).
        linger_s = self.server.config["zookeeper.session.timeout.ms"] / 1000 + 2 \
            if self.server.config.get("zookeeper.connect") else 0.0
        await self._call(self.store.register_broker, self.broker_id, [f"PLAINTEXT://{ep.host}:{ep.port}"], ep.rack,
                         wait_for_previous_session_s=linger_s)
        # Our own endpoint is not put into the metadata cache here: the controller may already have sent
        # its UpdateMetadata while we registered, and overwriting its broker list with ours alone left a
        # joining broker naming a controller it did not list (clients then waited for a controller forever).
        self.store.watch_controller(lambda cid: self._enqueue(lambda: self._on_controller_change(cid)))
        self.store.watch_brokers(lambda ids: self._enqueue(lambda: self._on_brokers_change(ids)))
        self.store.watch_topics(lambda names: self._enqueue(lambda: self._on_topics_change(names)))
        self.store.watch_deletions(lambda names: self._enqueue(lambda: self._on_deletions(names)))
        self.store.watch_config_changes(lambda names: self._enqueue(lambda: self._on_config_changes(names)))
        self.store.watch_preferred_replica_election_request(
            lambda tps: self._enqueue(lambda: self._on_preferred_election_request(tps)))
        self.store.watch_partition_reassignment_request(
            lambda r: self._enqueue(lambda: self._on_reassignment_request(r)))
        for name in await self._call(lambda: list(self.store.topics())):
            self._configs_seen.add(name)
            try:
                self.server.topic_configs.set_overrides(name, await self._call(self.store.topic_configs, name))
            except ValueError as e:
                log.warning("topic %s has an invalid stored config: %s", name, e)
        # Wait for our own election attempt (the embedded default always wins it) to be processed.
        await self._enqueue(lambda: self._on_controller_change(None))

    async def shutdown(self) -> None:
        if self._worker is not None:
            self._worker.cancel()
        if self._rebalance_task is not None:
            self._rebalance_task.cancel()
        for ch in self._channels.values():
            try:
                await ch.close()
            except Exception:
                pass
        try:
            await self._call(self.store.close)
        except Exception:
            log.exception("closing the metadata store failed")
        self._executor.shutdown(wait=False)

    async def controlled_shutdown(self) -> None:
        """Ask the controller to move leadership away from this broker before it stops (Kafka's
        controlled shutdown). The single-node default has nowhere to move it."""
        cfg = self.server.config
        if not cfg.get("zookeeper.connect") or not cfg["controlled.shutdown.enable"]:
            return
        for attempt in range(cfg["controlled.shutdown.max.retries"]):
            try:
                remaining = await self._request_controlled_shutdown()
            except Exception as e:
                log.warning("controlled shutdown attempt %d failed: %s", attempt + 1, e)
                remaining = None
            if remaining == []:
                log.info("controlled shutdown complete: leadership moved away")
                return
            if remaining:
                log.info("controlled shutdown: %d partitions could not move yet", len(remaining))
            await asyncio.sleep(min(cfg["controlled.shutdown.retry.backoff.ms"], 2000) / 1000)
        log.warning("controlled shutdown did not complete; shutting down anyway")

    async def _request_controlled_shutdown(self) -> list[TopicPartition] | None:
        if self.active:
            return await self.handle_controlled_shutdown(self.broker_id)
        cid = await self._call(self.store.current_controller)
        ep = self.server.metadata_cache.alive_broker(cid) if cid is not None else None
        if ep is None:
            return None
        from broker.inter_broker import BrokerConnection
        from protocol import ApiKey, request_class

        conn = BrokerConnection(ep.host, ep.port, f"broker-{self.broker_id}-shutdown", timeout_s=10)
        try:
            resp = await conn.send(lambda v: request_class(ApiKey.CONTROLLED_SHUTDOWN)[v](
                broker_id=self.broker_id, broker_epoch=-1), ApiKey.CONTROLLED_SHUTDOWN)
        finally:
            conn.close()
        if resp.error_code != ErrorCode.NONE:
            log.info("controlled shutdown: controller answered %s", ErrorCode(resp.error_code).name)
            return None
        return [TopicPartition(p.topic_name, p.partition_index) for p in resp.remaining_partitions]

    async def handle_controlled_shutdown(self, broker_id: int) -> list[TopicPartition]:
        return await self._enqueue(lambda: self._controlled_shutdown(broker_id))

    async def _controlled_shutdown(self, broker_id: int) -> list[TopicPartition]:
        """Move leadership off `broker_id` and take it out of every ISR (Kafka's ControlledShutdown)."""
        self.shutting_down.add(broker_id)
        remaining: list[TopicPartition] = []
        changed: list[TopicPartition] = []
        for tp in list(self.states):
            for _ in range(3):
                st = self.states[tp]
                info = self.topics.get(tp.topic)
                replicas = list(info.assignment.get(tp.partition, ())) if info else []
                if broker_id not in replicas:
                    break
                new_isr = tuple(r for r in st.isr if r != broker_id)
                if st.leader == broker_id:
                    candidates = [r for r in replicas if r in new_isr and r in self.live_brokers
                                  and r not in self.shutting_down]
                    if not candidates:
                        remaining.append(tp)
                        break
                    new = LeaderAndIsr(candidates[0], st.leader_epoch + 1, new_isr, self.epoch, st.partition_epoch)
                elif broker_id in st.isr and new_isr:
                    new = LeaderAndIsr(st.leader, st.leader_epoch + 1, new_isr, self.epoch, st.partition_epoch)
                else:
                    break
                if await self._write_state(tp, new):
                    changed.append(tp)
                    break
            else:
                remaining.append(tp)
        # Kafka's OfflineReplica transition for the shutting-down broker: it stops fetching (so no leader
        # takes it back into the ISR) and gives up leadership of what moved, before the new leaders hear.
        stopped = [tp for tp, info in ((tp, self.topics.get(tp.topic)) for tp in self.states)
                   if info is not None and broker_id in info.assignment.get(tp.partition, ()) and tp not in remaining]
        if stopped and broker_id in self.live_brokers:
            try:
                ch = self.channel(broker_id)
                await ch.stop_replica(self.broker_id, self.epoch, stopped, False)
                if not await ch.drain(5.0):
                    log.warning("StopReplica to shutting-down broker %d not answered yet", broker_id)
            except Exception as e:
                log.warning("StopReplica to shutting-down broker %d failed: %s", broker_id, e)
        if changed:
            log.info("controller: controlled shutdown of broker %d moved %d partitions", broker_id, len(changed))
            # Metadata first: the shutting-down broker now answers NOT_LEADER_OR_FOLLOWER, and the clients it
            # sends to refresh must learn the new leaders there, not the old ones (which they would keep
            # until their next periodic refresh once it is gone).
            await self._send_update_metadata(changed)
            await self._send_all(changed, exclude={broker_id})
        return remaining

    async def record_isr_change(self, partition: Any, new_isr: list[int], partition_epoch: int
                                ) -> tuple[list[int], int] | None:
        tp = partition.topic_partition
        state = LeaderAndIsr(self.broker_id, partition.leader_epoch, tuple(new_isr), partition.controller_epoch,
                             partition_epoch)
        try:
            version = await self._call(self.store.update_partition_state, tp.topic, tp.partition, state,
                                       partition_epoch)
        except BadVersionError:
            current = await self._call(self.store.partition_state, tp.topic, tp.partition)
            if current is None:
                return None
            st, version = current
            if st.leader != self.broker_id or st.leader_epoch != partition.leader_epoch:
                return None  # the controller moved on; its LeaderAndIsr will tell us
            log.info("%s: ISR update lost a race (partition epoch %d is stale); now %s at %d", tp,
                     partition_epoch, list(st.isr), version)
            return list(st.isr), version
        await self._call(self.store.propagate_isr_change, [tp])
        return list(new_isr), version

    async def _on_isr_changes(self, tps: list[Any]) -> None:
        if not self.active:
            # A former controller (session expired while paused) still watches — the store's watches cannot
            # be withdrawn — and its read deleted the notification: the metadata caches miss this change
            # until the controller handles the next notification for the same topic (which also resends
            # what drifted). Handing it back on was tried: the former controller, being quickest to see
            # its own re-creation, kept winning the race.
            log.warning("controller: ISR change notification for %s reached a former controller", tps)
            return
        changed = set(tps)
        for t in {tp.topic for tp in tps}:
            before = {tp: st for tp, st in self.states.items() if tp.topic == t}
            await self._load_states(t)
            # Also any other partition of the topic whose state moved without our knowing: its notification
            # was lost (see above), and this is the earliest we can tell.
            changed |= {tp for tp, st in self.states.items() if tp.topic == t and before.get(tp) != st}
        await self._send_update_metadata(sorted(changed))
        done = [tp for tp in sorted(changed) if tp in self.reassigning and await self._maybe_complete_reassignment(tp)]
        if done:
            await self._remove_from_reassignment_request(done)

    # ------------------------------------------------------------------ controller events
    async def _on_controller_change(self, controller_id: int | None) -> None:
        if controller_id is None or controller_id == -1:
            epoch = await self._call(self.store.elect_controller, self.broker_id)
            if epoch is not None:
                await self._become_active(epoch)
                return
            controller_id = await self._call(self.store.current_controller)
        if controller_id != self.broker_id and self.active:
            log.info("broker %d resigns as controller (controller is now %s)", self.broker_id, controller_id)
            self.active = False
        self.server.metadata_cache.controller_id = controller_id if controller_id is not None else -1

    async def _become_active(self, epoch: int) -> None:
        self.active = True
        if not self._watching_isr_changes:
            # Reading an ISR change notification deletes it, so only a controller may watch them (Kafka
            # registers the handler on election); a broker that never led would swallow the controller's.
            self._watching_isr_changes = True
            self.store.watch_isr_changes(lambda tps: self._enqueue(lambda: self._on_isr_changes(tps)))
        self.epoch = epoch
        log.info("broker %d is the controller (controller epoch %d)", self.broker_id, epoch)
        self.server.metadata_cache.controller_id = self.broker_id
        await self._refresh_brokers()
        self.topics = await self._call(self.store.topics)
        for name in list(self.topics):
            await self._load_states(name)
        await self._create_missing_states(list(self.topics))
        await self._elect_offline_leaders()
        pending = await self._call(self.store.topics_pending_deletion)
        await self._send_all()
        if pending:
            await self._delete_topics(pending)
        await self._on_preferred_election_request(await self._call(self.store.preferred_replica_election_request))
        await self._resume_reassignments()
        if self._rebalance_task is None and self.server.config["auto.leader.rebalance.enable"]:
            self._rebalance_task = asyncio.ensure_future(self._rebalance_periodically())

    async def _refresh_brokers(self) -> None:
        infos = await self._call(self.store.live_brokers)
        live = {}
        for bid, info in infos.items():
            hp = info.endpoint("PLAINTEXT") or info.endpoint()
            if hp is not None:
                live[bid] = BrokerEndpoint(bid, hp[0], hp[1], info.rack)
        self.live_brokers = live
        self._registrations = {bid: info.timestamp_ms for bid, info in infos.items()}

    async def _load_states(self, topic: str) -> None:
        states = await self._call(self.store.partition_states, topic)
        for p, (state, version) in states.items():
            tp = TopicPartition(topic, p)
            self.states[tp] = state
            self.versions[tp] = version

    async def _create_missing_states(self, topics: list[str]) -> list[TopicPartition]:
        """New partitions: leader = first live replica, ISR = live replicas, epoch 0 — written in one
        pipelined batch (a 1,000-partition topic is one round of store writes, not 1,000)."""
        live = set(self.live_brokers)
        pending: dict[TopicPartition, LeaderAndIsr] = {}
        for name in topics:
            info = self.topics.get(name)
            if info is None:
                continue
            for p, replicas in sorted(info.assignment.items()):
                if TopicPartition(name, p) in self.states:
                    continue
                live_replicas = [r for r in replicas if r in live]
                leader = live_replicas[0] if live_replicas else NO_LEADER
                pending[TopicPartition(name, p)] = LeaderAndIsr(leader, 0, tuple(live_replicas), self.epoch)
        if not pending:
            return []
        results = await self._call(self.store.create_partition_states, pending,
                                   controller_epoch_zk_version=self.store.controller_epoch_zk_version)
        created = []
        reload: set[str] = set()
        for tp, result in results.items():
            if isinstance(result, MetadataError):
                log.warning("%s: cannot create partition state: %s", tp, result)
                reload.add(tp.topic)
                continue
            self.states[tp] = pending[tp]
            self.versions[tp] = result
            created.append(tp)
        for name in sorted(reload):
            await self._load_states(name)
        return sorted(created, key=lambda tp: (tp.topic, tp.partition))

    async def _elect_offline_leaders(self, exclude: set[int] | frozenset[int] = frozenset()) -> list[TopicPartition]:
        """Partitions whose leader or ISR members are not live (or in `exclude`) get a new leader and ISR."""
        changed: list[TopicPartition] = []
        for _ in range(3):  # a lost version race re-reads the state and tries again
            if not await self._elect_offline_leaders_once(changed, exclude):
                break
        return changed

    async def _elect_offline_leaders_once(self, changed: list[TopicPartition], exclude: set[int] | frozenset[int]
                                          ) -> bool:
        """One pass; returns True if some write lost a race and another pass is needed."""
        retry = False
        live = set(self.live_brokers) - self.shutting_down - set(exclude)
        unclean = self.server.config["unclean.leader.election.enable"]
        for tp, state in list(self.states.items()):
            info = self.topics.get(tp.topic)
            if info is None or (state.leader in live and all(r in live for r in state.isr)):
                continue
            replicas = info.assignment.get(tp.partition, ())
            new_isr = tuple(r for r in state.isr if r in live)
            leader = state.leader if state.leader in live else elect_leader(
                replicas, state.isr, live, unclean or self._topic_unclean(tp.topic))
            if leader != NO_LEADER and leader not in new_isr:
                new_isr = (leader,)  # unclean election: the new leader alone is in sync
            if not new_isr and state.isr:
                new_isr = state.isr[:1]  # Kafka keeps the last ISR member when no replica is live
            epoch = state.leader_epoch + 1 if leader != state.leader or new_isr != state.isr else state.leader_epoch
            new_state = LeaderAndIsr(leader, epoch, new_isr, self.epoch, state.partition_epoch)
            if await self._write_state(tp, new_state):
                if tp not in changed:
                    changed.append(tp)
                if leader == NO_LEADER:
                    log.warning("%s: no live in-sync replica can lead (ISR %s); partition offline", tp,
                                list(state.isr))
                else:
                    log.info("%s: leader %d at epoch %d, ISR %s", tp, leader, epoch, list(new_isr))
            else:
                retry = True
        return retry

    # ------------------------------------------------------------------ preferred leaders
    async def _rebalance_periodically(self) -> None:
        """Kafka's auto leader rebalance task: every leader.imbalance.check.interval.seconds, while active."""
        interval = self.server.config["leader.imbalance.check.interval.seconds"]
        while True:
            await asyncio.sleep(interval)
            if not self.active:
                continue
            try:
                await self._enqueue(self._auto_rebalance)
            except Exception:
                log.exception("controller: preferred leader check failed")

    def imbalanced_partitions(self) -> dict[int, list[TopicPartition]]:
        """Per preferred replica (first in the assignment) over leader.imbalance.per.broker.percentage: the
        partitions it should lead and does not (Kafka's checkAndTriggerAutoLeaderRebalance)."""
        preferred_of: dict[int, int] = {}
        not_leading: dict[int, list[TopicPartition]] = {}
        for tp, st in self.states.items():
            info = self.topics.get(tp.topic)
            replicas = info.assignment.get(tp.partition, ()) if info else ()
            if not replicas:
                continue
            preferred = replicas[0]
            preferred_of[preferred] = preferred_of.get(preferred, 0) + 1
            if st.leader != preferred:
                not_leading.setdefault(preferred, []).append(tp)
        limit = self.server.config["leader.imbalance.per.broker.percentage"] / 100
        return {b: tps for b, tps in not_leading.items() if len(tps) / preferred_of[b] > limit}

    async def _auto_rebalance(self) -> None:
        if not self.active:
            return
        live = set(self.live_brokers) - self.shutting_down
        candidates = [tp for b, tps in self.imbalanced_partitions().items() if b in live for tp in tps]
        if candidates:
            await self.elect_preferred_leaders(candidates)

    async def elect_preferred_leaders(self, tps: Sequence[TopicPartition]) -> list[TopicPartition]:
        """Kafka's PreferredReplicaPartitionLeaderElection: the first replica of the assignment leads again
        if it is alive, not shutting down and in the ISR. Returns the partitions that moved."""
        live = set(self.live_brokers) - self.shutting_down
        moved: list[TopicPartition] = []
        for tp in tps:
            for _ in range(3):  # a lost version race re-reads the state
                st = self.states.get(tp)
                info = self.topics.get(tp.topic)
                replicas = info.assignment.get(tp.partition, ()) if info else ()
                if st is None or not replicas:
                    break
                preferred = replicas[0]
                if st.leader == preferred or preferred not in live or preferred not in st.isr:
                    break
                new = LeaderAndIsr(preferred, st.leader_epoch + 1, st.isr, self.epoch, st.partition_epoch)
                if await self._write_state(tp, new):
                    moved.append(tp)
                    break
        if moved:
            log.info("controller: preferred leader election moved %s", ", ".join(str(tp) for tp in moved))
            await self._send_all(moved)
        return moved

    async def _on_preferred_election_request(self, tps: list[Any] | None) -> None:
        """/admin/preferred_replica_election (Kafka's kafka-preferred-replica-election tool in ZooKeeper
        mode): elect the preferred leaders of the listed partitions, then delete the request."""
        if not self.active or not tps:
            return
        wanted = list(tps)
        log.info("controller: preferred replica election requested for %s", ", ".join(str(tp) for tp in wanted))
        await self.elect_preferred_leaders(wanted)
        await self._call(self.store.clear_preferred_replica_election_request)

    # ------------------------------------------------------------------ partition reassignment
    async def _resume_reassignments(self) -> None:
        """On election: partitions whose topic znode carries adding/removing replicas are mid-reassignment
        (their target is the assignment without the removing replicas); the request znode may add more."""
        self.reassigning = {}
        for name, info in self.topics.items():
            for p, replicas in info.assignment.items():
                if info.adding_replicas.get(p) or info.removing_replicas.get(p):
                    removing = info.removing_replicas.get(p, ())
                    self.reassigning[TopicPartition(name, p)] = tuple(r for r in replicas if r not in removing)
        request = await self._call(self.store.partition_reassignment_request)
        await self._on_reassignment_request(request)

    async def _on_reassignment_request(self, request: Mapping[Any, Sequence[int]] | None) -> None:
        if not self.active:
            return
        wanted = {tp: tuple(r) for tp, r in (request or {}).items()}
        finished: list[TopicPartition] = []
        for tp, target in sorted(wanted.items()):
            error = self._reassignment_error(tp, target)
            if error is not None:
                log.warning("controller: reassignment of %s to %s rejected: %s", tp, list(target), error)
                finished.append(tp)
            elif self.reassigning.get(tp) != target:
                if await self._start_reassignment(tp, target):
                    finished.append(tp)
        for tp in sorted(self.reassigning):
            if await self._maybe_complete_reassignment(tp):
                finished.append(tp)
        if finished and request is not None:
            await self._remove_from_reassignment_request(finished)

    def _reassignment_error(self, tp: TopicPartition, target: tuple[int, ...]) -> str | None:
        info = self.topics.get(tp.topic)
        if info is None or tp.partition not in info.assignment or tp not in self.states:
            return "unknown topic or partition"
        if not target or len(set(target)) != len(target):
            return "the target replicas are empty or repeat a broker"
        if any(r < 0 for r in target):
            return "negative broker id"
        return None

    async def _start_reassignment(self, tp: TopicPartition, target: tuple[int, ...]) -> bool:
        """Phase one: RS = ORS ∪ TRS on the topic znode with the adding/removing sets, a leader epoch bump,
        LeaderAndIsr to RS. Returns True if there was nothing to do (the assignment already is TRS)."""
        for _ in range(3):  # a lost version race (CreatePartitions, another partition) re-reads the topic
            info = self.topics[tp.topic]
            current = info.assignment[tp.partition]
            # A reassignment replacing one in progress starts from the original replicas, not the union.
            adding_now = info.adding_replicas.get(tp.partition, ())
            original = tuple(r for r in current if r not in adding_now)
            if target == current and not adding_now and not info.removing_replicas.get(tp.partition):
                self.reassigning.pop(tp, None)
                return True
            union = tuple(dict.fromkeys(target + original))
            adding = tuple(r for r in target if r not in original)
            removing = tuple(r for r in original if r not in target)
            assignment = dict(info.assignment)
            assignment[tp.partition] = union
            adding_map = {p: r for p, r in info.adding_replicas.items() if p != tp.partition}
            removing_map = {p: r for p, r in info.removing_replicas.items() if p != tp.partition}
            adding_map[tp.partition] = adding
            removing_map[tp.partition] = removing
            if await self._write_assignment(info, assignment, adding_map, removing_map):
                break
        else:
            log.warning("controller: cannot start the reassignment of %s (assignment kept changing)", tp)
            return False
        self.reassigning[tp] = target
        log.info("controller: reassigning %s from %s to %s (replicas now %s, adding %s, removing %s)", tp,
                 list(original), list(target), list(union), list(adding), list(removing))
        for _ in range(3):
            st = self.states[tp]
            bumped = LeaderAndIsr(st.leader, st.leader_epoch + 1, st.isr, self.epoch, st.partition_epoch)
            if await self._write_state(tp, bumped):
                break
        await self._send_all([tp])
        return False

    async def _write_assignment(self, info: TopicInfo, assignment: dict[int, tuple[int, ...]],
                                adding: dict[int, tuple[int, ...]], removing: dict[int, tuple[int, ...]]) -> bool:
        try:
            version = await self._call(self.store.set_assignment, info.name, assignment, adding_replicas=adding,
                                       removing_replicas=removing, expected_version=info.zk_version,
                                       controller_epoch_zk_version=self.store.controller_epoch_zk_version)
        except BadVersionError:
            fresh = await self._call(self.store.topic, info.name)
            if fresh is not None:
                self.topics[info.name] = fresh
            return False
        self.topics[info.name] = dataclasses.replace(
            info, assignment=assignment, adding_replicas={p: r for p, r in adding.items() if r},
            removing_replicas={p: r for p, r in removing.items() if r}, zk_version=version)
        return True

    async def _maybe_complete_reassignment(self, tp: TopicPartition) -> bool:
        """Phase two, once every target replica is in the ISR. Returns True when the partition is done."""
        target = self.reassigning.get(tp)
        info = self.topics.get(tp.topic)
        if target is None or info is None or tp not in self.states:
            self.reassigning.pop(tp, None)
            return target is not None
        if not all(r in self.states[tp].isr for r in target):
            return False
        live = set(self.live_brokers) - self.shutting_down
        for _ in range(3):
            st = self.states[tp]
            new_isr = tuple(r for r in st.isr if r in target)
            leader = st.leader
            if leader not in target or leader not in live:
                leader = next((r for r in target if r in live and r in new_isr), NO_LEADER)
                if leader == NO_LEADER:
                    log.warning("controller: reassignment of %s waits for a live target replica in the ISR", tp)
                    return False
            new = LeaderAndIsr(leader, st.leader_epoch + 1, new_isr, self.epoch, st.partition_epoch)
            if await self._write_state(tp, new):
                break
            if not all(r in self.states[tp].isr for r in target):
                return False
        else:
            return False
        removed = [r for r in info.assignment[tp.partition] if r not in target]
        for _ in range(3):
            info = self.topics[tp.topic]
            assignment = dict(info.assignment)
            assignment[tp.partition] = target
            adding = {p: r for p, r in info.adding_replicas.items() if p != tp.partition}
            removing = {p: r for p, r in info.removing_replicas.items() if p != tp.partition}
            if await self._write_assignment(info, assignment, adding, removing):
                break
        else:
            log.warning("controller: cannot record the new assignment of %s (topic znode kept changing)", tp)
            return False
        # The new leader and followers learn RS = TRS before the removed replicas stop, so no leader keeps
        # waiting for (or takes back into the ISR) a replica that is going away.
        await self._send_all([tp])
        live_removed = [r for r in removed if r in self.live_brokers]
        for r in live_removed:
            try:
                await self.channel(r).stop_replica(self.broker_id, self.epoch, [tp], True)
            except Exception as e:
                log.warning("StopReplica to broker %d failed: %s", r, e)
        del self.reassigning[tp]
        log.info("controller: reassignment of %s complete: replicas %s, leader %d, ISR %s", tp, list(target),
                 self.states[tp].leader, list(self.states[tp].isr))
        return True

    async def _remove_from_reassignment_request(self, done: Sequence[TopicPartition]) -> None:
        request = await self._call(self.store.partition_reassignment_request)
        if request is None:
            return
        remaining = {tp: r for tp, r in request.items() if tp not in done}
        await self._call(self.store.update_partition_reassignment_request, remaining)

    def _topic_unclean(self, topic: str) -> bool:
        v = self.server.topic_configs.overrides(topic).get("unclean.leader.election.enable")
        return v is not None and v.lower() == "true"

    async def _write_state(self, tp: TopicPartition, state: LeaderAndIsr) -> bool:
        try:
            version = await self._call(self.store.update_partition_state, tp.topic, tp.partition, state,
                                       self.versions.get(tp, 0),
                                       controller_epoch_zk_version=self.store.controller_epoch_zk_version)
        except BadVersionError:
            await self._load_states(tp.topic)
            return False
        self.states[tp] = state
        self.versions[tp] = version
        return True

    async def _send_all(self, only: Sequence[TopicPartition] | None = None,
                        exclude: set[int] | frozenset[int] = frozenset()) -> None:
        """LeaderAndIsr to the replicas of `only` (all partitions when None) except `exclude`, UpdateMetadata
        to every broker."""
        tps = list(self.states) if only is None else list(only)
        by_broker: dict[int, dict[TopicPartition, PartitionState]] = {}
        topic_ids: dict[str, uuid.UUID] = {}
        for tp in tps:
            info = self.topics.get(tp.topic)
            st = self.states.get(tp)
            if info is None or st is None:
                continue
            if info.topic_id is not None:
                topic_ids[tp.topic] = info.topic_id
            replicas = list(info.assignment.get(tp.partition, ()))
            ps = PartitionState(st.leader, st.leader_epoch, list(st.isr), replicas, self.versions.get(tp, 0),
                                st.controller_epoch, list(info.adding_replicas.get(tp.partition, ())),
                                list(info.removing_replicas.get(tp.partition, ())))
            for r in replicas:
                if r in self.live_brokers and r not in exclude:
                    by_broker.setdefault(r, {})[tp] = ps
        leaders = list(self.live_brokers.values())
        for bid, states in by_broker.items():
            try:
                await self.channel(bid).leader_and_isr(self.broker_id, self.epoch, states, topic_ids, leaders)
            except Exception as e:
                log.warning("LeaderAndIsr to broker %d failed: %s", bid, e)
        await self._send_update_metadata(tps)

    async def _send_update_metadata(self, tps: Sequence[TopicPartition],
                                    deleted: Sequence[tuple[TopicPartition, uuid.UUID]] = ()) -> None:
        parts = []
        for tp in tps:
            info = self.topics.get(tp.topic)
            st = self.states.get(tp)
            if info is None or st is None:
                continue
            replicas = tuple(info.assignment.get(tp.partition, ()))
            offline = tuple(r for r in replicas if r not in self.live_brokers)
            parts.append((tp, info.topic_id or uuid.UUID(int=0),
                          PartitionMetadata(tp.partition, st.leader, st.leader_epoch, replicas, st.isr, offline)))
        for tp, tid in deleted:
            parts.append((tp, tid, PartitionMetadata(tp.partition, LEADER_DURING_DELETE, 0, (), ())))
        brokers = list(self.live_brokers.values())
        log.info("DBG send UpdateMetadata to %s", list(self.live_brokers))
        for bid in list(self.live_brokers):
            try:
                await self.channel(bid).update_metadata(self.broker_id, self.epoch, brokers, parts)
            except Exception as e:
                log.warning("UpdateMetadata to broker %d failed: %s", bid, e)
        self._metadata_changed.set()

    async def _on_brokers_change(self, ids: frozenset[int]) -> None:
        if not self.active:
            return
        before = set(self.live_brokers)
        registered_before = dict(self._registrations)
        await self._refresh_brokers()
        after = set(self.live_brokers)
        # A broker that died and registered again between two watch events (they coalesce) shows up with a
        # new registration only: Kafka's bounced brokers, handled as a failure followed by a start-up.
        bounced = {b for b in before & after if self._registrations.get(b) != registered_before.get(b)}
        if bounced:
            log.info("controller: brokers %s restarted", sorted(bounced))
            for bid in bounced:
                ch = self._channels.pop(bid, None)
                if ch is not None:
                    await ch.close()
            await self._elect_offline_leaders(exclude=bounced)
        dead = before - after
        born = (after - before) | bounced
        # A broker that finished (or never finished) its controlled shutdown is no longer shutting down once
        # it is gone; when it comes back it may lead again (Kafka's shuttingDownBrokerIds).
        self.shutting_down -= dead | born
        for bid in dead:
            ch = self._channels.pop(bid, None)
            if ch is not None:
                await ch.close()
        if dead:
            log.info("controller: brokers %s are gone", sorted(dead))
        if born:
            log.info("controller: brokers %s joined", sorted(born))
        changed = await self._elect_offline_leaders() if dead or born else []
        if born:
            await self._create_missing_states(list(self.topics))
            await self._send_all()
        elif changed:
            await self._send_all(changed)

    async def _on_topics_change(self, names: frozenset[str]) -> None:
        if not self.active:
            # Every broker needs a new topic's overrides (min.insync.replicas, retention...) for the
            # partitions it will lead or follow; Kafka's brokers read them from ZooKeeper too.
            for name in names - self._configs_seen:
                await self.server.refresh_topic_config(name)
            self._configs_seen = set(names)
            return
        current = await self._call(self.store.topics)
        new = [n for n in current if n not in self.topics or
               current[n].assignment.keys() != self.topics[n].assignment.keys()]
        self.topics = current
        if not new:
            return
        for n in new:
            self.server.topic_configs.set_overrides(n, await self._call(self.store.topic_configs, n))
        created = await self._create_missing_states(new)
        if created:
            log.info("controller: new partitions %s", ", ".join(str(tp) for tp in created))
            await self._send_all(created)

    async def _on_deletions(self, names: frozenset[str]) -> None:
        if self.active and names:
            await self._delete_topics(set(names))

    async def _delete_topics(self, names: set[str]) -> None:
        for name in sorted(names):
            info = self.topics.get(name)
            tps = [tp for tp in self.states if tp.topic == name]
            replicas_by_broker: dict[int, list[TopicPartition]] = {}
            if info is not None:
                for p, replicas in info.assignment.items():
                    for r in replicas:
                        replicas_by_broker.setdefault(r, []).append(TopicPartition(name, p))
            for bid, bt in replicas_by_broker.items():
                if bid in self.live_brokers:
                    try:
                        await self.channel(bid).stop_replica(self.broker_id, self.epoch, bt, True)
                    except Exception as e:
                        log.warning("StopReplica to broker %d failed: %s", bid, e)
            try:
                await self._call(self.store.delete_topic, name,
                                 controller_epoch_zk_version=self.store.controller_epoch_zk_version)
            except UnknownTopicError:
                pass
            tid = info.topic_id if info is not None and info.topic_id else uuid.UUID(int=0)
            for tp in tps:
                self.states.pop(tp, None)
                self.versions.pop(tp, None)
            self.topics.pop(name, None)
            await self._send_update_metadata([], [(tp, tid) for tp in tps])
            log.info("controller: deleted topic %s", name)

    async def _on_config_changes(self, names: list[str]) -> None:
        for name in names:
            try:
                configs = await self._call(self.store.topic_configs, name)
                self.server.topic_configs.set_overrides(name, configs)
                self.server.on_topic_config_change(name)
            except (MetadataError, ValueError) as e:
                log.warning("cannot apply config change of topic %s: %s", name, e)
        # Kafka's TopicUncleanLeaderElectionEnable event: switching unclean election on for a topic brings
        # its offline partitions back at once (with whatever a live replica has), not at the next broker change.
        if self.active and any(self._topic_unclean(n) for n in names):
            changed = await self._elect_offline_leaders()
            if changed:
                await self._send_all(changed)

    # ------------------------------------------------------------------ broker-side admin entry points
    def _live_broker_ids(self) -> list[int]:
        return sorted(self.server.metadata_cache.brokers) or [self.broker_id]

    async def create_topics(self, topics: list[NewTopic], *, validate_only: bool,
                            timeout_ms: int) -> dict[str, TopicResult]:
        results: dict[str, TopicResult] = {}
        created: list[str] = []
        cfg = self.server.config
        for t in topics:
            err = topic_name_error(t.name)
            if err is not None:
                results[t.name] = TopicResult(ErrorCode.INVALID_TOPIC_EXCEPTION, err)
                continue
            if t.name in self.server.metadata_cache.topics:
                results[t.name] = TopicResult(ErrorCode.TOPIC_ALREADY_EXISTS, f"Topic '{t.name}' already exists.")
                continue
            try:
                self.server.topic_configs.validate(t.configs)
            except ValueError as e:
                results[t.name] = TopicResult(ErrorCode.INVALID_CONFIG, str(e))
                continue
            try:
                if t.assignment:
                    if t.num_partitions != -1 or t.replication_factor != -1:
                        raise InvalidReplicaAssignmentError(
                            "Both numPartitions or replicationFactor and replicasAssignments were set. "
                            "Both cannot be used at the same time.")
                    validate_manual_assignment(t.assignment, self._live_broker_ids())
                    assignment = {p: list(r) for p, r in t.assignment.items()}
                else:
                    n = t.num_partitions if t.num_partitions != -1 else cfg["num.partitions"]
                    rf = t.replication_factor if t.replication_factor != -1 else cfg["default.replication.factor"]
                    assignment = assign_replicas_to_brokers(n, rf, self._live_broker_ids())
            except InvalidPartitionsError as e:
                results[t.name] = TopicResult(ErrorCode.INVALID_PARTITIONS, str(e))
                continue
            except InvalidReplicationFactorError as e:
                results[t.name] = TopicResult(ErrorCode.INVALID_REPLICATION_FACTOR, str(e))
                continue
            except InvalidReplicaAssignmentError as e:
                results[t.name] = TopicResult(ErrorCode.INVALID_REPLICA_ASSIGNMENT, str(e))
                continue
            topic_id = uuid.uuid4()
            result = TopicResult(ErrorCode.NONE, None, topic_id, len(assignment), len(assignment[0]),
                                 dict(t.configs))
            if not validate_only:
                try:
                    await self._call(self.store.create_topic, t.name, topic_id, assignment, t.configs)
                except TopicExistsError:
                    results[t.name] = TopicResult(ErrorCode.TOPIC_ALREADY_EXISTS,
                                                  f"Topic '{t.name}' already exists.")
                    continue
                except MetadataError as e:
                    results[t.name] = TopicResult(ErrorCode.UNKNOWN_SERVER_ERROR, str(e))
                    continue
                self.server.topic_configs.set_overrides(t.name, t.configs)
                created.append(t.name)
                log.info("created topic %s (id %s) with %d partitions, replicas %s", t.name, topic_id,
                         len(assignment), assignment)
            results[t.name] = result
        if created:
            if self.active:
                await self._enqueue(lambda: self._on_topics_change(frozenset(created)))
            ok = await self._wait_for(lambda: all(self._topic_ready(n) for n in created), timeout_ms)
            if not ok:
                for n in created:
                    if not self._topic_ready(n):
                        results[n] = TopicResult(ErrorCode.REQUEST_TIMED_OUT,
                                                 "Topic creation did not complete in time")
            for n in created:
                tm = self.server.metadata_cache.topics.get(n)
                if tm is not None:
                    results[n].topic_id = tm.topic_id
        return results

    def _topic_ready(self, name: str) -> bool:
        tm = self.server.metadata_cache.topics.get(name)
        return tm is not None and all(p.leader >= 0 for p in tm.partitions.values()) and bool(tm.partitions)

    async def _wait_for(self, condition: Callable[[], bool], timeout_ms: int) -> bool:
        deadline = time.monotonic() + max(timeout_ms, 0) / 1000
        while not condition():
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return False
            self._metadata_changed.clear()
            try:
                await asyncio.wait_for(self._metadata_changed.wait(), min(remaining, 0.1))
            except TimeoutError:
                pass
        return True

    def auto_create_topic(self, name: str) -> None:
        if name in self._auto_creating:
            return
        self._auto_creating.add(name)

        async def run() -> None:
            try:
                await self.create_topics([NewTopic(name)], validate_only=False, timeout_ms=30000)
            finally:
                self._auto_creating.discard(name)

        asyncio.ensure_future(run())

    async def ensure_internal_topic(self, name: str, partitions: int, replication_factor: int,
                                    configs: Mapping[str, str]) -> None:
        if name in self.server.metadata_cache.topics:
            return
        rf = max(1, min(replication_factor, len(self._live_broker_ids())))
        await self.create_topics([NewTopic(name, partitions, rf, configs=dict(configs))],
                                 validate_only=False, timeout_ms=30000)

    async def delete_topics(self, names: list[str], timeout_ms: int) -> dict[str, tuple[ErrorCode, str | None]]:
        results: dict[str, tuple[ErrorCode, str | None]] = {}
        marked = []
        for name in names:
            if name not in self.server.metadata_cache.topics:
                results[name] = (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "This server does not host this topic.")
                continue
            if not self.server.config["delete.topic.enable"]:
                results[name] = (ErrorCode.TOPIC_DELETION_DISABLED, "Topic deletion is disabled.")
                continue
            try:
                await self._call(self.store.mark_topic_for_deletion, name)
            except UnknownTopicError:
                results[name] = (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, None)
                continue
            marked.append(name)
            results[name] = (ErrorCode.NONE, None)
        if marked:
            if self.active:
                await self._enqueue(lambda: self._delete_topics(set(marked)))
            ok = await self._wait_for(lambda: all(n not in self.server.metadata_cache.topics for n in marked),
                                      timeout_ms)
            if not ok:
                for n in marked:
                    if n in self.server.metadata_cache.topics:
                        results[n] = (ErrorCode.REQUEST_TIMED_OUT, "Topic deletion did not complete in time")
        return results

    async def create_partitions(self, topic: str, count: int, assignment: list[list[int]] | None,
                                validate_only: bool, timeout_ms: int) -> tuple[ErrorCode, str | None]:
        info = await self._call(self.store.topic, topic)
        if info is None or topic in await self._call(self.store.topics_pending_deletion):
            return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"The topic '{topic}' does not exist."
        current = len(info.assignment)
        try:
            if count <= current:
                raise InvalidPartitionsError(
                    f"Topic currently has {current} partitions, {count} would not be an increase.")
            if assignment:
                if len(assignment) != count - current:
                    raise InvalidReplicaAssignmentError(
                        f"Increasing the number of partitions by {count - current} but {len(assignment)} "
                        "assignments provided.")
                rf = len(info.assignment[0])
                live = set(self._live_broker_ids())
                for a in assignment:
                    if len(a) != rf or len(set(a)) != len(a) or not set(a) <= live:
                        raise InvalidReplicaAssignmentError(f"invalid replica assignment {a}")
                extra = {current + i: list(a) for i, a in enumerate(assignment)}
            else:
                extra = assign_additional_partitions(info.assignment, count, self._live_broker_ids())
        except InvalidPartitionsError as e:
            return ErrorCode.INVALID_PARTITIONS, str(e)
        except InvalidReplicationFactorError as e:
            return ErrorCode.INVALID_REPLICATION_FACTOR, str(e)
        except InvalidReplicaAssignmentError as e:
            return ErrorCode.INVALID_REPLICA_ASSIGNMENT, str(e)
        if validate_only:
            return ErrorCode.NONE, None
        full = {p: list(r) for p, r in info.assignment.items()}
        full.update(extra)
        try:
            await self._call(self.store.set_assignment, topic, full, expected_version=info.zk_version)
        except BadVersionError:
            return ErrorCode.REASSIGNMENT_IN_PROGRESS, "the topic's assignment changed concurrently"
        if self.active:
            await self._enqueue(lambda: self._on_topics_change(frozenset([topic])))
        ok = await self._wait_for(
            lambda: topic in self.server.metadata_cache.topics
            and len(self.server.metadata_cache.topics[topic].partitions) >= count, timeout_ms)
        if not ok:
            return ErrorCode.REQUEST_TIMED_OUT, "Partition creation did not complete in time"
        log.info("topic %s now has %d partitions", topic, count)
        return ErrorCode.NONE, None

    async def alter_topic_configs(self, topic: str, configs: dict[str, str], validate_only: bool
                                  ) -> tuple[ErrorCode, str | None]:
        if topic not in self.server.metadata_cache.topics:
            return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"Topic {topic} does not exist"
        try:
            self.server.topic_configs.validate(configs)
        except ValueError as e:
            return ErrorCode.INVALID_CONFIG, str(e)
        if validate_only:
            return ErrorCode.NONE, None
        await self._call(self.store.set_topic_configs, topic, configs)
        self.server.topic_configs.set_overrides(topic, configs)
        self.server.on_topic_config_change(topic)
        return ErrorCode.NONE, None

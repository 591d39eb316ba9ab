"""The controller (Kafka's ZooKeeper-mode KafkaController): its event queue, lifecycle and cluster membership.

Every broker runs a `Controller`; the one that wins `/controller` in the metadata store is *active*. The
embedded default uses the local store (one node, always active); `zookeeper.connect` selects the ZooKeeper
store — the same code either way.

Contract:
- Events are processed one at a time, in order, on one task (Kafka's ControllerEventManager): every store
  watch enqueues one, and so do admin requests and controlled shutdowns that need the active controller.
  Store calls block, so they run on one metadata thread (`call`). The event task is kept and cancelled on
  shutdown; an event cancelled mid-way cancels the future its requester awaits.
- On election (`_become_active`): read live brokers, topics and partition states; create missing states;
  elect leaders for partitions whose leader is not live; send LeaderAndIsr to every replica and
  UpdateMetadata to every live broker; finish pending deletions, preferred elections and reassignments.
- Broker changes: partitions led by a dead broker get a new leader from the live ISR (unclean only where
  enabled), the dead broker leaves the ISR; a restarted broker (re-registered between two watch events) is
  handled as a failure followed by a start-up. New topics or partitions get their first state.
- Controlled shutdown: the broker asks the controller (over the wire, or directly when it is the
  controller) to move leadership away and take it out of the ISRs; it retries while partitions remain.
Each job lives in its own module, reached from here: the context (context.py), channels and request
batches (channel_manager.py), elections (election.py) applied by the partition state machine
(partition_state_machine.py), reassignment (reassignment.py), topic deletion (topic_deletion.py), ISR
changes (isr_changes.py; AlterPartition, both sides, in alter_partition.py), preferred elections
(preferred_election.py), producer ids (producer_ids.py; AllocateProducerIds served by `allocate_producer_ids`) and
the admin entry points every broker serves (admin_manager.py, as `Controller.admin`).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
from collections.abc import Awaitable, Callable, Collection, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from broker.common.metadata_version import request_versions
from broker.controller.admin_manager import AdminManager
from broker.controller.alter_partition import AlterPartitionService, RpcAlterPartitionManager
from broker.controller.channel_manager import ControllerChannelManager
from broker.controller.context import ControllerContext
from broker.controller.isr_changes import IsrChangeNotificationHandler, ZkAlterPartitionManager
from broker.controller.partition_state_machine import PartitionStateMachine
from broker.controller.preferred_election import PreferredReplicaElection
from broker.controller.producer_ids import RpcProducerIdManager, StoreProducerIdManager
from broker.controller.reassignment import PartitionReassignment
from broker.controller.topic_deletion import TopicDeletionManager
from broker.metadata import MetadataError
from broker.metadata.metadata_cache import BrokerEndpoint, ListenerEndpoint
from broker.metadata.store import LocalMetadataStore, MetadataStore, ZkMetadataStore
from protocol.errors import ErrorCode
from storage import TopicPartition

if TYPE_CHECKING:
    import uuid

    from broker.cluster.partition import PartitionState
    from broker.config.kafka_config import KafkaConfig
    from broker.config.topics import TopicConfigs
    from broker.coordinator.transaction.producer_id_manager import ProducerIdManager
    from broker.metadata.metadata_cache import MetadataCache, PartitionMetadata
    from broker.security.client import ClientSecurity

log = logging.getLogger("broker.controller")



def broker_listeners(info: Any) -> tuple[ListenerEndpoint, ...]:
    """Every endpoint a broker registered, with its listener's security protocol."""
    out = []
    for endpoint in info.endpoints:
        name, _, address = endpoint.partition("://")
        host, _, port = address.rpartition(":")
        out.append(ListenerEndpoint(name, host.strip("[]"), int(port),
                                    info.listener_security_protocol_map.get(name, "PLAINTEXT")))
    return tuple(out)

class ControllerServer(Protocol):
    """The broker as its controller sees it (KafkaServer), and the admin manager, the channels and the controller
    client with it: the broker's id, config, advertised endpoint and inter-broker security, its metadata cache and
    topic configs, its producer id manager (which the controller may replace), and the requests the controller
    applies to its own broker without a socket."""

    broker_id: int
    config: KafkaConfig
    endpoint: BrokerEndpoint
    inter_broker_security: ClientSecurity
    metadata_cache: MetadataCache
    topic_configs: TopicConfigs
    producer_ids: ProducerIdManager | None

    def apply_leader_and_isr(self, controller_id: int, controller_epoch: int,
                             states: dict[TopicPartition, PartitionState], topic_ids: dict[str, uuid.UUID],
                             leaders: list[BrokerEndpoint]) -> dict[TopicPartition, ErrorCode]: ...

    def apply_update_metadata(self, controller_id: int, controller_epoch: int, brokers: list[BrokerEndpoint],
                              partitions: list[tuple[TopicPartition, uuid.UUID, PartitionMetadata]]) -> bool: ...

    def apply_stop_replica(self, controller_id: int, controller_epoch: int, partitions: list[TopicPartition],
                           delete: bool) -> dict[TopicPartition, ErrorCode]: ...

    async def refresh_topic_config(self, topic: str) -> None: ...

    def on_topic_config_change(self, topic: str) -> None: ...


class RefusedRequest(Exception):
    """A request to the controller refused for what it says: the handler that asked answers it with an error code,
    so the controller's event loop does not log it as a failure of its own."""


class StaleBrokerEpoch(RefusedRequest):
    """A broker's request to the controller from an earlier registration (STALE_BROKER_EPOCH)."""


class UnknownBroker(RefusedRequest):
    """A request to the controller from a broker that is not registered (BROKER_ID_NOT_REGISTERED)."""


class Controller:
    def __init__(self, server: ControllerServer, store: MetadataStore) -> None:
        self.server = server
        self.store = store
        self.broker_id = server.broker_id
        self.cluster_id = ""
        self.active = False
        self.ctx = ControllerContext()
        self._executor = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="metadata")
        self._events: asyncio.Queue[tuple[Callable[[], Awaitable[Any]], asyncio.Future]] = asyncio.Queue()
        self._worker: asyncio.Task | None = None
        self._configs_seen: set[str] = set()
        self._watching_isr_changes = False
        self.channels = ControllerChannelManager(server, self.ctx)
        self.partition_states = PartitionStateMachine(self)
        self.reassignment = PartitionReassignment(self)
        self.topic_deletion = TopicDeletionManager(self)
        self.isr_change_notifications = IsrChangeNotificationHandler(self)
        self.preferred_election = PreferredReplicaElection(self)
        # How this broker's leaders propose ISR changes: to the controller (AlterPartition) from
        # inter.broker.protocol.version 2.7-IV2 in a ZooKeeper cluster, as Kafka's brokers; else written directly.
        self.alter_partition: ZkAlterPartitionManager | RpcAlterPartitionManager = ZkAlterPartitionManager(self)
        if server.config.get("zookeeper.connect") and \
                server.config.inter_broker_protocol_version.is_alter_partition_supported:
            self.alter_partition = RpcAlterPartitionManager(self)
        self.alter_partition_service = AlterPartitionService(self)
        self.admin = AdminManager(self)

    @classmethod
    def create(cls, server: ControllerServer) -> Controller:
        """The controller of a broker in ZooKeeper mode, or on its own metadata file without `zookeeper.connect`
        (in KRaft mode, `process.roles`, KafkaServer makes a KRaftBroker instead: broker/kraft/broker_server.py)."""
        loop = asyncio.get_running_loop()
        connect = server.config.get("zookeeper.connect")
        if connect:
            store: MetadataStore = ZkMetadataStore(
                connect, session_timeout_ms=server.config["zookeeper.session.timeout.ms"],
                dispatch=loop.call_soon_threadsafe)
        else:
            store = LocalMetadataStore(server.config.log_dirs[0], dispatch=loop.call_soon_threadsafe)
        return cls(server, store)

    # ------------------------------------------------------------------ plumbing
    async def call(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """Run a (blocking) store call on the metadata thread."""
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._executor, lambda: fn(*args, **kwargs))

    def enqueue(self, fn: Callable[[], Awaitable[Any]]) -> asyncio.Future:
        """Queue a controller event; the future answers its result."""
        fut = asyncio.get_running_loop().create_future()
        self._events.put_nowait((fn, fut))
        return fut

    async def _process_events(self) -> None:
        while True:
            fn, fut = await self._events.get()
            try:
                result = await fn()
            except asyncio.CancelledError:
                fut.cancel()
                raise
            except Exception as e:
                if not isinstance(e, MetadataError | RefusedRequest):
                    log.exception("controller event failed")
                if not fut.done():
                    fut.set_exception(e)
            else:
                if not fut.done():
                    fut.set_result(result)

    # ------------------------------------------------------------------ lifecycle
    async def startup(self) -> None:
        self._worker = asyncio.get_running_loop().create_task(self._process_events())
        self.cluster_id = await self.call(self.store.get_or_create_cluster_id)
        configured = self.server.config.get("cluster.id")
        if configured and configured != self.cluster_id:
            raise MetadataError(f"cluster.id {configured} does not match the stored cluster id {self.cluster_id}")
        rpc_ids: RpcProducerIdManager | None = None
        if self.server.config.get("zookeeper.connect"):
            if self.server.config.inter_broker_protocol_version.is_allocate_producer_ids_supported:
                # Kafka brokers at IBP 3.0+ ask the controller for blocks; so do we, once registered.
                self.server.producer_ids = rpc_ids = RpcProducerIdManager(self)
            else:
                ids = StoreProducerIdManager(self.store, self.broker_id, self._executor)
                await self.call(ids.start)
                self.server.producer_ids = ids
        ep = self.server.endpoint
        # After a kill -9 our previous session's registration lingers until it expires: wait it out rather
        # than fail the start (Kafka fails; a restarting supervisor would retry the same way).
        linger_s = self.server.config["zookeeper.session.timeout.ms"] / 1000 + 2 \
            if self.server.config.get("zookeeper.connect") else 0.0
        await self.call(self.store.register_broker, self.broker_id,
                        [f"{e.listener}://{e.host}:{e.port}" for e in ep.listeners], ep.rack,
                        {e.listener: e.security_protocol for e in ep.listeners},
                        wait_for_previous_session_s=linger_s)
        # Our own endpoint is not put into the metadata cache here: the controller may already have sent
        # its UpdateMetadata while we registered, and overwriting its broker list with ours alone left a
        # joining broker naming a controller it did not list (clients then waited for a controller forever).
        self.store.watch_controller(lambda cid: self.enqueue(lambda: self._on_controller_change(cid)))
        self.store.watch_brokers(lambda ids: self.enqueue(lambda: self._on_brokers_change(ids)))
        self.store.watch_topics(lambda names: self.enqueue(lambda: self._on_topics_change(names)))
        self.store.watch_deletions(lambda names: self.enqueue(lambda: self.topic_deletion.on_deletions(names)))
        self.store.watch_config_changes(lambda names: self.enqueue(lambda: self._on_config_changes(names)))
        self.store.watch_preferred_replica_election_request(
            lambda tps: self.enqueue(lambda: self.preferred_election.on_request(tps)))
        self.store.watch_partition_reassignment_request(
            lambda r: self.enqueue(lambda: self.reassignment.on_request(r)))
        for name in await self.call(lambda: list(self.store.topics())):
            self._configs_seen.add(name)
            try:
                self.server.topic_configs.set_overrides(name, await self.call(self.store.topic_configs, name))
            except ValueError as e:
                log.warning("topic %s has an invalid stored config: %s", name, e)
        # Wait for our own election attempt (the embedded default always wins it) to be processed.
        await self.enqueue(lambda: self._on_controller_change(None))
        if rpc_ids is not None:
            rpc_ids.start()

    async def shutdown(self) -> None:
        worker, self._worker = self._worker, None
        if worker is not None:
            worker.cancel()
            await asyncio.wait({worker})
        while not self._events.empty():
            _, fut = self._events.get_nowait()
            fut.cancel()
        await self.preferred_election.stop()
        if isinstance(self.server.producer_ids, RpcProducerIdManager):
            await self.server.producer_ids.close()
        await self.admin.shutdown()
        if isinstance(self.alter_partition, RpcAlterPartitionManager):
            self.alter_partition.close()
        await self.channels.close()
        try:
            await self.call(self.store.close)
        except Exception:
            log.exception("closing the metadata store failed")
        self._executor.shutdown(wait=False)

    # ------------------------------------------------------------------ what the rest of the broker asks
    async def record_isr_change(self, partition: Any, new_isr: list[int], partition_epoch: int
                                ) -> tuple[list[int], int] | None:
        """The leader's ISR proposal (isr_changes.ZkAlterPartitionManager, or AlterPartition to the controller:
        alter_partition.RpcAlterPartitionManager)."""
        return await self.alter_partition.submit(partition, new_isr, partition_epoch)

    async def allocate_producer_ids(self, broker_id: int, broker_epoch: int) -> tuple[int, int]:
        """The active controller's side of AllocateProducerIds: (first id, block length), claimed from the
        store. Raises UnknownBroker, StaleBrokerEpoch (Kafka wants the broker's current epoch exactly)."""
        async def allocate() -> tuple[int, int]:
            current = self.ctx.broker_epochs.get(broker_id)
            if current is None:
                raise UnknownBroker(f"broker {broker_id} is not registered")
            if broker_epoch != current:
                raise StaleBrokerEpoch(f"broker {broker_id} epoch {broker_epoch} is not its current {current}")
            first, last = await self.call(self.store.allocate_producer_id_block, broker_id)
            return first, last - first + 1
        return await self.enqueue(allocate)

    async def process_topic_changes(self, names: Collection[str]) -> None:
        """An admin request changed these topics in the store: when active, act now, not on the watch."""
        if self.active:
            await self.enqueue(lambda: self._on_topics_change(frozenset(names)))

    async def process_deletions(self, names: Collection[str]) -> None:
        """An admin request marked these topics for deletion: when active, delete them now."""
        if self.active:
            await self.enqueue(lambda: self.topic_deletion.delete_topics(set(names)))

    async def alter_partition_reassignments(self, reassignments: Mapping[TopicPartition, Sequence[int] | None]
                                            ) -> dict[TopicPartition, tuple[ErrorCode, str | None]] | None:
        """AlterPartitionReassignments on the active controller; None when this broker is not it."""
        async def alter() -> dict[TopicPartition, tuple[ErrorCode, str | None]] | None:
            return await self.reassignment.alter_from_api(reassignments) if self.active else None
        return await self.enqueue(alter)

    async def list_partition_reassignments(self, tps: Sequence[TopicPartition] | None
                                           ) -> dict[TopicPartition, tuple[tuple[int, ...], ...]] | None:
        """ListPartitionReassignments on the active controller; None when this broker is not it."""
        async def ongoing() -> dict[TopicPartition, tuple[tuple[int, ...], ...]] | None:
            return self.reassignment.ongoing(tps) if self.active else None
        return await self.enqueue(ongoing)

    # ------------------------------------------------------------------ controlled shutdown
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
        cid = await self.call(self.store.current_controller)
        ep = self.server.metadata_cache.alive_broker(cid) if cid is not None else None
        if ep is None:
            return None
        from broker.network.inter_broker import BrokerConnection
        from protocol import ApiKey, request_class

        conn = BrokerConnection(ep.host, ep.port, f"broker-{self.broker_id}-shutdown", timeout_s=10,
                                version_caps=request_versions(self.server.config.inter_broker_protocol_version),
                                security=self.server.inter_broker_security)
        try:
            resp = await conn.send(lambda v: request_class(ApiKey.CONTROLLED_SHUTDOWN)[v](
                broker_id=self.broker_id, broker_epoch=self.store.broker_epoch), ApiKey.CONTROLLED_SHUTDOWN)
        finally:
            conn.close()
        if resp.error_code != ErrorCode.NONE:
            log.info("controlled shutdown: controller answered %s", ErrorCode(resp.error_code).name)
            return None
        return [TopicPartition(p.topic_name, p.partition_index) for p in resp.remaining_partitions]

    async def handle_controlled_shutdown(self, broker_id: int, broker_epoch: int = -1) -> list[TopicPartition]:
        """The active controller's side (ControlledShutdown request): the partitions the broker still leads.
        Raises StaleBrokerEpoch for a request from an earlier registration of the broker."""
        return await self.enqueue(lambda: self._controlled_shutdown(broker_id, broker_epoch))

    async def _controlled_shutdown(self, broker_id: int, broker_epoch: int = -1) -> list[TopicPartition]:
        ctx = self.ctx
        if ctx.is_broker_epoch_stale(broker_id, broker_epoch):
            raise StaleBrokerEpoch(f"broker {broker_id} epoch {broker_epoch} < {ctx.broker_epochs.get(broker_id)}")
        ctx.shutting_down.add(broker_id)
        changed, remaining = await self.partition_states.elect_for_controlled_shutdown(broker_id)
        # Kafka's OfflineReplica transition for the shutting-down broker: it stops fetching (so no leader
        # takes it back into the ISR) and gives up leadership of what moved, before the new leaders hear.
        stopped = [tp for tp in ctx.states if broker_id in ctx.replicas(tp) and tp not in remaining]
        if stopped and broker_id in ctx.live_brokers:
            try:
                ch = self.channels.channel(broker_id)
                await ch.stop_replica(self.broker_id, ctx.epoch, stopped, False)
                if not await ch.drain(5.0):
                    log.warning("StopReplica to shutting-down broker %d not answered yet", broker_id)
            except Exception as e:
                log.warning("StopReplica to shutting-down broker %d failed: %s", broker_id, e)
        if changed:
            log.info("controller: controlled shutdown of broker %d moved %d partitions", broker_id, len(changed))
            # Metadata first: the shutting-down broker now answers NOT_LEADER_OR_FOLLOWER, and the clients it
            # sends to refresh must learn the new leaders there, not the old ones (which they would keep
            # until their next periodic refresh once it is gone).
            await self.channels.send_update_metadata(changed)
            await self.channels.send_partition_states(changed, exclude={broker_id})
        return remaining

    # ------------------------------------------------------------------ controller election
    async def _on_controller_change(self, controller_id: int | None) -> None:
        if controller_id is None or controller_id == -1:
            epoch = await self.call(self.store.elect_controller, self.broker_id)
            if epoch is not None:
                await self._become_active(epoch)
                return
            controller_id = await self.call(self.store.current_controller)
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
            self.store.watch_isr_changes(
                lambda tps: self.enqueue(lambda: self.isr_change_notifications.on_isr_changes(tps)))
        ctx = self.ctx
        ctx.epoch = epoch
        log.info("broker %d is the controller (controller epoch %d)", self.broker_id, epoch)
        self.server.metadata_cache.controller_id = self.broker_id
        await self._refresh_brokers()
        ctx.topics = await self.call(self.store.topics)
        for name in list(ctx.topics):
            await self.partition_states.load_states(name)
        await self.partition_states.create_missing_states(list(ctx.topics))
        await self.partition_states.elect_offline_leaders()
        pending = await self.call(self.store.topics_pending_deletion)
        # Kafka's onControllerFailover: every broker hears who is alive before any LeaderAndIsr.
        await self.channels.send_update_metadata([])
        await self.channels.send_partition_states()
        if pending:
            await self.topic_deletion.delete_topics(pending)
        await self.preferred_election.on_request(await self.call(self.store.preferred_replica_election_request))
        await self.reassignment.resume()
        self.preferred_election.start()

    # ------------------------------------------------------------------ brokers, topics, configs
    async def _refresh_brokers(self) -> None:
        infos = await self.call(self.store.live_brokers)
        live = {}
        inter_broker = self.server.config.inter_broker_listener_name
        for bid, info in infos.items():
            hp = info.endpoint(inter_broker) or info.endpoint()
            if hp is not None:
                live[bid] = BrokerEndpoint(bid, hp[0], hp[1], info.rack, broker_listeners(info))
        self.ctx.live_brokers = live
        self.ctx.broker_epochs = {bid: info.epoch for bid, info in infos.items()}

    async def _on_brokers_change(self, ids: frozenset[int]) -> None:
        if not self.active:
            return
        ctx = self.ctx
        before = set(ctx.live_brokers)
        epochs_before = dict(ctx.broker_epochs)
        await self._refresh_brokers()
        after = set(ctx.live_brokers)
        # A broker that died and registered again between two watch events (they coalesce) shows up with a
        # new broker epoch only: Kafka's bounced brokers, handled as a failure followed by a start-up.
        bounced = {b for b in before & after if ctx.broker_epochs.get(b) != epochs_before.get(b)}
        if bounced:
            log.info("controller: brokers %s restarted", sorted(bounced))
            for bid in bounced:
                await self.channels.remove(bid)
            await self.partition_states.elect_offline_leaders(exclude=bounced)
        dead = before - after
        born = (after - before) | bounced
        # A broker that finished (or never finished) its controlled shutdown is no longer shutting down once
        # it is gone; when it comes back it may lead again (Kafka's shuttingDownBrokerIds).
        ctx.shutting_down -= dead | born
        for bid in dead:
            await self.channels.remove(bid)
        if dead:
            log.info("controller: brokers %s are gone", sorted(dead))
        if born:
            log.info("controller: brokers %s joined", sorted(born))
        if born:
            # Kafka's onBrokerStartup: first the brokers already there learn who joined, and the new ones get
            # every live broker and every partition, so that no LeaderAndIsr reaches a broker naming a
            # leader it does not know (a Kafka broker then refuses to follow it).
            await self.channels.send_update_metadata([], to=after - born)
            await self.channels.send_update_metadata(list(ctx.states), to=born)
        changed = await self.partition_states.elect_offline_leaders() if dead or born else []
        if born:
            await self.partition_states.create_missing_states(list(ctx.topics))
            await self.channels.send_partition_states()
        elif changed:
            await self.channels.send_partition_states(changed)

    async def _on_topics_change(self, names: frozenset[str]) -> None:
        if not self.active:
            # Every broker needs a new topic's overrides (min.insync.replicas, retention...) for the
            # partitions it will lead or follow; Kafka's brokers read them from ZooKeeper too.
            for name in names - self._configs_seen:
                await self.server.refresh_topic_config(name)
            self._configs_seen = set(names)
            return
        ctx = self.ctx
        current = await self.call(self.store.topics)
        new = [n for n in current if n not in ctx.topics or
               current[n].assignment.keys() != ctx.topics[n].assignment.keys()]
        ctx.topics = current
        if not new:
            return
        for n in new:
            self.server.topic_configs.set_overrides(n, await self.call(self.store.topic_configs, n))
        created = await self.partition_states.create_missing_states(new)
        if created:
            log.info("controller: new partitions %s", ", ".join(str(tp) for tp in created))
            await self.channels.send_partition_states(created)

    async def _on_config_changes(self, names: list[str]) -> None:
        for name in names:
            try:
                configs = await self.call(self.store.topic_configs, name)
                self.server.topic_configs.set_overrides(name, configs)
                self.server.on_topic_config_change(name)
            except (MetadataError, ValueError) as e:
                log.warning("cannot apply config change of topic %s: %s", name, e)
        # Kafka's TopicUncleanLeaderElectionEnable event: switching unclean election on for a topic brings
        # its offline partitions back at once (with whatever a live replica has), not at the next broker change.
        if self.active and any(self.partition_states.topic_enables_unclean(n) for n in names):
            changed = await self.partition_states.elect_offline_leaders()
            if changed:
                await self.channels.send_partition_states(changed)

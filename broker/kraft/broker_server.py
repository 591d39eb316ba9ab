"""KRaft mode of KafkaServer (`process.roles=broker`): what `server.controller` is when a KRaft controller
quorum, not ZooKeeper or the embedded store, holds the cluster's metadata.

`KafkaServer.start` makes a `KRaftBroker` when `process.roles` is set (the ZooKeeper-mode/embedded `Controller`
otherwise, `Controller.create(server)`); it answers the calls the server and the request handlers make
of a controller:
- `startup()` (Kafka's BrokerServer start-up): reads the cluster id and directory ids from the log dirs'
  meta.properties (an unformatted dir is refused with Kafka's hint to format it); starts the metadata log
  follower (broker/kraft/raft_client.py), whose committed records load into the image and are published to
  the broker (broker/kraft/publisher.py); registers (broker/kraft/lifecycle.py) within
  `initial.broker.registration.timeout.ms` (a quorum answering INCONSISTENT_CLUSTER_ID to our fetches stops
  the start at once); waits until the controller says our metadata caught up, then
  asks to be unfenced and waits for it, and for the metadata log to say so too (so the first Metadata a client
  gets names this broker). Then the server starts serving clients.
- `controlled_shutdown()`: WantShutDown in the heartbeat, waiting (bounded) for ShouldShutDown, so
  leadership moves away before the broker stops, as Kafka's broker does on SIGTERM.
- `record_isr_change()`: AlterPartition (v0-3, topic ids from v2, in v3 the broker epochs the followers'
  fetches carried) to the active
  controller for the leader's ISR changes; refused changes return None (the leader keeps its ISR and retries
  later), unanswered ones are retried while we lead in the same epoch.
- `admin` and `preferred_election` (broker/kraft/admin.py): CreateTopics (and auto-creation, internal
  topics), DeleteTopics, CreatePartitions, topic config changes and ElectLeaders sent to the controller,
  answered once our metadata shows them; AlterPartitionReassignments and ListPartitionReassignments sent to the
  controller and answered as it answers (a reassignment runs through the metadata log: an added replica here
  becomes a follower, catches up, joins the ISR through the leader's AlterPartition, and the controller
  completes the move). While a client's admin request is handled, these go inside an Envelope (KIP-590) with
  the client's principal and address (broker/kraft/admin.py `as_client`, wrapped by the server).
- `assignments` (broker/kraft/assignments.py, KIP-858): replicas created in the directory the metadata
  assigns, AssignReplicasToDirs for those placed or moved here, failed log dirs in the heartbeats.
- Producer id blocks from AllocateProducerIds.
- `store`: a local metadata store (log dir 0) that holds a copy of the image's dynamic broker configs, client
  quotas, SCRAM credentials and ACLs (broker/kraft/security_sync.py), in the layout the dynamic config, the
  quota manager, the SCRAM login and the authorizer read; the requests that change them go to the controller
  (topic configs are read from the image directly).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from broker.config.kafka_config import ConfigError
from broker.controller.controller import ControllerServer
from broker.controller.producer_ids import RpcProducerIdManager
from broker.kraft.admin import KRaftAdmin, KRaftElections
from broker.kraft.assignments import AssignmentsManager
from broker.kraft.format import feature_release, formatted_properties
from broker.kraft.lifecycle import (
    METADATA_VERSION_RANGE,
    SUPPORTED_FEATURES,
    BrokerLifecycleManager,
    ControllerChannel,
    ControllerUnavailable,
)
from broker.kraft.loader import MetadataLoader
from broker.kraft.metadata_log import MetadataLogStore
from broker.kraft.publisher import MetadataPublisher
from broker.kraft.raft_client import MetadataLogFollower
from broker.kraft.security_sync import changed_parts, sync_image_security
from broker.metadata import MetadataError
from broker.metadata.store import LocalMetadataStore
from broker.security.client import controller_security
from protocol import ApiKey, request_class
from protocol.errors import ErrorCode
from storage.checkpoints import uuid_from_kafka_str

if TYPE_CHECKING:
    from broker.security.authorizer import AclAuthorizer
    from broker.server.log_dir_mover import ReplicaAlterLogDirsManager
    from broker.server.replica_manager import ReplicaManager
    from storage import LogManager

log = logging.getLogger("broker.kraft")

CONTROLLED_SHUTDOWN_TIMEOUT_S = 30.0
RECOVERED = 0


class KRaftServer(ControllerServer, Protocol):
    """The broker as its KRaft side sees it (KafkaServer): what a controller sees (a KRaftBroker answers the same
    calls), plus the authorizer (its ACLs come from the image), the log manager and the log-dir mover (KIP-858
    assignments), the replica manager the published images change, and `metadata_ready`."""

    authorizer: AclAuthorizer | None
    log_dir_mover: ReplicaAlterLogDirsManager
    log_manager: LogManager
    metadata_ready: asyncio.Event
    replica_manager: ReplicaManager


class KRaftBroker:
    def __init__(self, server: KRaftServer) -> None:
        self.server = server
        config = server.config
        self.broker_id = config.broker_id
        self.cluster_id = ""
        self.active = True  # every KRaft broker takes admin requests and sends them on to the controller
        self.store = _LocalStore(config.log_dirs[0], dispatch=asyncio.get_running_loop().call_soon_threadsafe)
        self._executor = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="metadata")
        self.publisher = MetadataPublisher(server, self.broker_id)
        self.loader = MetadataLoader(on_publish=self.publisher.publish)
        self.store.loader = self.loader
        self.store.kraft = self
        self.metadata_changed = asyncio.Event()
        self.follower: MetadataLogFollower | None = None
        self._fetch_refused: ErrorCode | None = None
        self.channel: ControllerChannel | None = None
        self.lifecycle: BrokerLifecycleManager | None = None
        self.admin = KRaftAdmin(self)
        self.preferred_election = KRaftElections(self)
        self.assignments: AssignmentsManager | None = None
        self._assignments_task: asyncio.Task | None = None

    async def call(self, fn: Any, *args: Any, **kwargs: Any) -> Any:
        return await asyncio.get_running_loop().run_in_executor(self._executor, lambda: fn(*args, **kwargs))

    @property
    def broker_epoch(self) -> int:
        return self.lifecycle.broker_epoch if self.lifecycle is not None else -1

    def _read_meta_properties(self) -> list[Any]:
        """The cluster id and each log dir's directory id, from meta.properties v1 (`python -m broker format`)."""
        config = self.server.config
        cluster_ids, dir_ids = set(), []
        self.dir_ids_by_path: dict[Path, uuid.UUID] = {}
        self.metadata_dir_id = uuid.UUID(int=0)
        for d in dict.fromkeys([*config.log_dirs, config.metadata_log_dir]):
            props = formatted_properties(d, self.broker_id, MetadataError)
            cluster_ids.add(props.get("cluster.id", ""))
            if props.get("directory.id") and d == config.metadata_log_dir:
                self.metadata_dir_id = uuid_from_kafka_str(props["directory.id"])
            if props.get("directory.id") and d in config.log_dirs:
                dir_ids.append(uuid_from_kafka_str(props["directory.id"]))
                self.dir_ids_by_path[Path(d)] = dir_ids[-1]
        if len(cluster_ids) != 1:
            raise MetadataError(f"the log dirs hold different cluster ids: {sorted(cluster_ids)}")
        self.cluster_id = cluster_ids.pop()
        configured = config.get("cluster.id")
        if configured and configured != self.cluster_id:
            raise MetadataError(f"cluster.id {configured} does not match the formatted cluster id {self.cluster_id}")
        return dir_ids

    async def startup(self) -> None:
        server, config = self.server, self.server.config
        dir_ids = self._read_meta_properties()
        server.metadata_cache.cluster_id = self.cluster_id
        try:
            security = controller_security(config)  # TLS and SASL as the inter-broker connections do them
        except (ConfigError, OSError, ValueError) as e:
            raise MetadataError(f"controller listener {config.controller_listener_names[0]} "
                                f"({config.controller_security_protocol}): {e}") from None
        combined = "controller" in config.process_roles
        self.follower = MetadataLogFollower(
            self.broker_id, self.cluster_id, self.loader, voters=config.quorum_voters,
            bootstrap=config.quorum_bootstrap_servers, security=security,
            request_timeout_ms=config["controller.quorum.request.timeout.ms"],
            retry_backoff_ms=config["controller.quorum.retry.backoff.ms"],
            # A combined node's controller keeps `__cluster_metadata-0/` itself: its broker follows in memory.
            store=None if combined else MetadataLogStore(config.metadata_log_dir / "__cluster_metadata-0",
                                                         segment_bytes=config["metadata.log.segment.bytes"],
                                                         segment_ms=config["metadata.log.segment.ms"]),
            replica_id=-1 if combined else None,
            snapshot_max_bytes=config["metadata.log.max.record.bytes.between.snapshots"],
            snapshot_interval_ms=config["metadata.log.max.snapshot.interval.ms"],
            directory_id=self.metadata_dir_id)
        self.loader.on_publish = self._on_publish
        self.follower.on_fetch_error = self._on_fetch_error
        self.channel = ControllerChannel(self.follower.leader_endpoint, f"broker-{self.broker_id}-to-controller",
                                         security=security,
                                         timeout_s=config["request.timeout.ms"] / 1000)
        ep = server.endpoint
        self.lifecycle = BrokerLifecycleManager(
            self.broker_id, self.cluster_id, self.channel,
            listeners=[(e.listener, e.host, e.port, e.security_protocol) for e in ep.listeners], rack=ep.rack,
            log_dir_ids=dir_ids, metadata_offset=lambda: self.follower.applied_offset if self.follower else -1,
            heartbeat_interval_ms=config["broker.heartbeat.interval.ms"])
        self.assignments = AssignmentsManager(self, self.dir_ids_by_path,
                                              interval_s=config["broker.heartbeat.interval.ms"] / 1000)
        self.lifecycle.offline_log_dirs = lambda: list(self.assignments.offline)
        self.publisher.on_local_changes = self.assignments.prefer_assigned_dirs
        server.log_dir_mover.before_swap = self.assignments.assign_move
        producer_ids = KRaftProducerIdManager(self)
        server.producer_ids = producer_ids
        self.follower.start()
        self.lifecycle.start()
        self._assignments_task = asyncio.get_running_loop().create_task(self.assignments.run())
        timeout_s = config["initial.broker.registration.timeout.ms"] / 1000
        lifecycle = self.lifecycle
        try:
            async with asyncio.timeout(timeout_s):
                await self._until(lifecycle.registered)
                if lifecycle.registration_failed is not None:
                    raise MetadataError(await self._refusal(lifecycle.registration_failed))
                await self._until(lifecycle.caught_up)
                self.publisher.start_replicas()
                lifecycle.set_ready_to_unfence()
                await self._until(lifecycle.unfenced)
                # The heartbeat can say "unfenced" before our metadata fetch brings the record that says so: until
                # then Metadata would list no broker and no controller, and librdkafka's admin client, given that
                # answer first, waited out its whole request timeout for a controller.
                while self.broker_id not in {b.id for b in self.loader.image.cluster.unfenced_brokers()}:
                    await asyncio.sleep(0.01)
        except TimeoutError:
            raise MetadataError("The broker was unable to register with the controller and be unfenced within "
                                f"initial.broker.registration.timeout.ms ({timeout_s * 1000:.0f} ms)") from None
        producer_ids.start()
        server.metadata_ready.set()
        log.info("KRaft broker %d registered (epoch %d), caught up with the metadata log at %d and unfenced",
                 self.broker_id, lifecycle.broker_epoch, self.follower.applied_offset)

    async def _refusal(self, error: ErrorCode) -> str:
        """The one line a refused registration stops the start with; for UNSUPPORTED_VERSION it names the
        cluster's finalized feature we do not support (from the metadata log, once fetched) and how to join."""
        text = f"the controller refused this broker's registration: {error.name}"
        if error != ErrorCode.UNSUPPORTED_VERSION:
            return text
        for _ in range(20):  # the metadata log is being fetched meanwhile
            features = self.loader.image.features
            if features.metadata_version is not None:
                break
            await asyncio.sleep(0.1)
        else:
            return text
        level = features.metadata_version
        lo, hi = METADATA_VERSION_RANGE
        if not lo <= level <= hi:
            # Below our range the cluster can be upgraded to our newest level; above it, only a metadata.version
            # without metadata changes in between can be downgraded, so a new cluster is the sure way.
            fix = (f"`kafka-features.sh upgrade --metadata {feature_release(hi)}`" if level < lo else
                   f"`kafka-features.sh downgrade --metadata {feature_release(hi)}`")
            return (f"{text}: the cluster's finalized metadata.version is {level} ({feature_release(level)}); this "
                    f"broker supports {lo} ({feature_release(lo)}) to {hi} ({feature_release(hi)}): change it with "
                    f"{fix} (or format a new cluster with "
                    f"`kafka-storage.sh format --release-version {feature_release(hi)}`)")
        for name, finalized in sorted(features.finalized_versions.items()):
            supported = SUPPORTED_FEATURES.get(name, (0, 0))
            if not supported[0] <= finalized <= supported[1]:
                return (f"{text}: the cluster's finalized {name} is {finalized}; this broker supports {name} "
                        f"{supported[0]} to {supported[1]}: change it with `kafka-features.sh downgrade --feature "
                        f"{name}={supported[1]}` (or format a new cluster with `kafka-storage.sh format --feature "
                        f"{name}={supported[1]}`)")
        return text

    async def _until(self, event: asyncio.Event) -> None:
        """Wait for a start-up step, unless the quorum refuses our metadata fetches for good."""
        while not event.is_set():
            if self._fetch_refused is not None:
                raise MetadataError(f"the controller quorum refused this broker's metadata fetch: "
                                    f"{self._fetch_refused.name} (cluster.id {self.cluster_id} in meta.properties)")
            try:
                async with asyncio.timeout(0.1):
                    await event.wait()
            except TimeoutError:
                pass

    def _on_fetch_error(self, error: ErrorCode) -> None:
        if error == ErrorCode.INCONSISTENT_CLUSTER_ID:
            self._fetch_refused = error

    def _on_publish(self, delta: Any, image: Any) -> None:
        previous = self.publisher.image
        self.publisher.publish(delta, image)
        if self.assignments is not None:
            self.assignments.wake.set()
        parts = changed_parts(previous, image, self.broker_id)
        if parts:
            # Broker configs, quotas, credentials and ACLs into the store their consumers read (in order: one
            # metadata thread), off the event loop.
            future = self._executor.submit(sync_image_security, self.store, image, self.broker_id,
                                           self.server.authorizer is not None, parts)
            future.add_done_callback(_log_failure)
        self.metadata_changed.set()

    async def controlled_shutdown(self) -> None:
        lifecycle = self.lifecycle
        if lifecycle is None or lifecycle.broker_epoch < 0 or not self.server.config["controlled.shutdown.enable"]:
            return
        lifecycle.begin_controlled_shutdown()
        try:
            async with asyncio.timeout(CONTROLLED_SHUTDOWN_TIMEOUT_S):
                await lifecycle.should_shut_down.wait()
            log.info("controlled shutdown complete: the controller moved leadership away")
        except TimeoutError:
            log.warning("no ShouldShutDown from the controller within %.0f s; shutting down anyway",
                        CONTROLLED_SHUTDOWN_TIMEOUT_S)

    async def shutdown(self) -> None:
        await self.admin.shutdown()
        if self._assignments_task is not None:
            self._assignments_task.cancel()
            await asyncio.gather(self._assignments_task, return_exceptions=True)
        if isinstance(self.server.producer_ids, KRaftProducerIdManager):
            await self.server.producer_ids.close()
        if self.lifecycle is not None:
            await self.lifecycle.stop()
        if self.follower is not None:
            await self.follower.stop()
        try:
            await self.call(self.store.close)
        except Exception:
            log.exception("closing the local metadata store failed")
        self._executor.shutdown(wait=False)

    # ---- AlterPartition
    async def record_isr_change(self, partition: Any, new_isr: list[int], partition_epoch: int
                                ) -> tuple[list[int], int] | None:
        leader_epoch = partition.leader_epoch
        backoff = 0.05
        while partition.is_leader and partition.leader_epoch == leader_epoch:
            try:
                outcome = await self._alter_partition(partition, new_isr, partition_epoch)
            except asyncio.CancelledError:
                raise
            except (ControllerUnavailable, RetriableAlterPartition) as e:
                log.info("%s: AlterPartition not answered (%s); retrying", partition.topic_partition, e)
                await asyncio.sleep(backoff)
                backoff = min(backoff * 2, 1.0)
                continue
            if isinstance(outcome, ErrorCode):
                log.info("%s: the controller refused ISR %s: %s", partition.topic_partition, new_isr, outcome.name)
                return None
            return outcome
        return None

    async def _alter_partition(self, partition: Any, new_isr: list[int], partition_epoch: int
                               ) -> tuple[list[int], int] | ErrorCode:
        assert self.channel is not None
        tp = partition.topic_partition
        Req = request_class(ApiKey.ALTER_PARTITION)

        def build(v: int) -> Any:
            P = Req.TopicData.PartitionData
            common = dict(partition_index=tp.partition, leader_epoch=partition.leader_epoch,
                          leader_recovery_state=RECOVERED, partition_epoch=partition_epoch)
            if v >= 3:
                part = P(new_isr_with_epochs=[P.BrokerState(broker_id=b, broker_epoch=self._epoch_of(b))
                                              for b in new_isr], **common)
            else:
                part = P(new_isr=list(new_isr), **common)
            topic = Req.TopicData(topic_id=partition.topic_id, partitions=[part]) if v >= 2 else \
                Req.TopicData(topic_name=tp.topic, partitions=[part])
            return Req[v](broker_id=self.broker_id, broker_epoch=self.broker_epoch, topics=[topic])

        resp = await self.channel.send(build, ApiKey.ALTER_PARTITION)
        if resp.error_code != ErrorCode.NONE:
            raise RetriableAlterPartition(ErrorCode(resp.error_code).name)
        for t in resp.topics:
            for p in t.partitions:
                if p.partition_index == tp.partition:
                    error = ErrorCode(p.error_code)
                    if error == ErrorCode.NOT_CONTROLLER:
                        raise RetriableAlterPartition(error.name)
                    if error != ErrorCode.NONE:
                        return error
                    return list(p.isr), p.partition_epoch
        return ErrorCode.UNKNOWN_SERVER_ERROR

    def note_follower_epoch(self, broker_id: int, epoch: int) -> None:
        """The broker epoch a follower's Fetch (v15+) carried (the Fetch handler tells us)."""
        self.publisher.follower_epochs[broker_id] = epoch

    def _epoch_of(self, broker_id: int) -> int:
        """The broker epoch AlterPartition v3 names for an ISR member: ours, or the one the follower's last fetch
        carried (-1 when it sent none), as Kafka's leader sends them."""
        if broker_id == self.broker_id:
            return self.broker_epoch
        return self.publisher.follower_epochs.get(broker_id, -1)

    # ---- partition reassignments: sent to the controller (broker/kraft/admin.py)
    async def alter_partition_reassignments(self, reassignments: Any) -> Any:
        return await self.admin.alter_partition_reassignments(reassignments)

    async def list_partition_reassignments(self, tps: Any) -> Any:
        return await self.admin.list_partition_reassignments(tps)

    # ---- AllocateProducerIds
    async def allocate_producer_ids(self, broker_id: int, broker_epoch: int) -> tuple[int, int]:
        assert self.channel is not None
        resp = await self.channel.send(lambda v: request_class(ApiKey.ALLOCATE_PRODUCER_IDS)[v](
            broker_id=self.broker_id, broker_epoch=self.broker_epoch), ApiKey.ALLOCATE_PRODUCER_IDS)
        if resp.error_code != ErrorCode.NONE:
            raise ControllerUnavailable(f"the controller answered {ErrorCode(resp.error_code).name}")
        return resp.producer_id_start, resp.producer_id_len


class _LocalStore(LocalMetadataStore):
    """The local store, whose topic configs are the metadata image's (the server re-reads them from its store)
    and whose broker epoch is our KRaft registration's."""

    loader: MetadataLoader | None = None
    kraft: KRaftBroker | None = None

    @property  # type: ignore[override]
    def broker_epoch(self) -> int:
        """Our KRaft broker epoch (server.broker_epoch reads it here): the registration's offset."""
        return self.kraft.broker_epoch if self.kraft is not None else -1

    def topic_configs(self, topic: str) -> dict[str, str]:
        return dict(self.loader.image.configs.topic_config(topic)) if self.loader is not None else {}


def _log_failure(future: concurrent.futures.Future) -> None:
    if not future.cancelled() and future.exception() is not None:
        log.error("applying broker configs, quotas, credentials or ACLs from the metadata log failed",
                  exc_info=future.exception())


class RetriableAlterPartition(Exception):
    pass


class KRaftProducerIdManager(RpcProducerIdManager):
    """Producer id blocks from the KRaft controller (AllocateProducerIds with our broker epoch)."""

    def __init__(self, kraft: KRaftBroker) -> None:
        super().__init__(kraft)  # type: ignore[arg-type]
        self.kraft = kraft

    async def _ask_controller(self) -> tuple[int, int]:
        return await self.kraft.allocate_producer_ids(self.kraft.broker_id, self.kraft.broker_epoch)

"""KafkaServer: one broker — its log manager, replica manager, metadata, coordinators and listener.

Start-up order (as Kafka's): configuration → log directories (recovery) → metadata cache and controller
→ replica manager (partitions this broker hosts, from the controller's LeaderAndIsr) → group coordinator
→ listener. Shutdown on SIGTERM reverses it: stop accepting, answer every parked request, let in-flight
requests finish (bounded; what is left is cancelled and awaited), checkpoint high watermarks, wait for
the flushes, compaction and file deletions running in the io executor, flush and close logs, write the
clean-shutdown marker.

Request dispatch lives here too (`handle_frame`): decode with the protocol codec, route to the handler
module of the API (`broker.apis.HANDLERS`), encode the response, and hand the parts — bytes and file
slices for sendfile — to the connection. A request for an API key or version no handler serves is
refused before it is decoded, as Kafka does: ApiVersions gets Kafka's v0 fallback answer (UNSUPPORTED_VERSION
and our ApiVersions range), anything else closes that one connection; malformed frames close it too (Kafka's
InvalidRequestException), one log line each naming the client's address, client id, API and the field at fault.
A handler that raises (sync or async) costs that request only: it is answered UNKNOWN_SERVER_ERROR when its
response has a top-level error code at that version, else its connection is closed, with one log line naming the
client, the API and the exception (the traceback only at DEBUG). With client quotas, the loop time of each request
is measured too.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import functools
import logging
import time
import uuid
from collections.abc import Callable
from struct import unpack_from
from typing import Any, NamedTuple

from broker import apis
from broker.apis import sasl_authenticator
from broker.apis.base import RequestContext, response_for, timed_steps
from broker.cluster.partition import PartitionState
from broker.cluster.replica_selector import replica_selector
from broker.config.dynamic import DynamicBrokerConfig
from broker.config.kafka_config import Endpoint, KafkaConfig
from broker.config.topics import TopicConfigs
from broker.controller import LEADER_DURING_DELETE, Controller
from broker.controller.producer_ids import FileProducerIdManager
from broker.coordinator.transaction.producer_id_manager import ProducerIdManager
from broker.metadata.metadata_cache import BrokerEndpoint, ListenerEndpoint, MetadataCache, PartitionMetadata
from broker.metrics.broker_metrics import BrokerMetrics
from broker.metrics.broker_state import metric_families
from broker.metrics.prometheus import PrometheusEndpoint
from broker.network.socket_server import Connection, Deferred, Response, SendfileChunk, SocketServer
from broker.security import sasl, tls
from broker.security.client import inter_broker_security
from broker.security.credentials import CredentialStore
from broker.security.quotas import ClientQuotas
from broker.server.fetch_session import FetchSessionCache
from broker.server.fetcher import ReplicaFetcherManager
from broker.server.log_dir_mover import ReplicaAlterLogDirsManager
from broker.server.replica_manager import ReplicaManager
from broker.server.txn_verification import AddPartitionsToTxnManager
from protocol import (
    ApiKey,
    ProtocolError,
    RecordsRef,
    api_versions_fallback_response,
    decode_request,
    encode_response_parts,
)
from protocol.api_keys import api_name
from protocol.errors import ErrorCode
from storage import LogManager, ProducerStateManagerConfig, TopicPartition
from storage.cleaner import LogCleaner

GROUP_METADATA_TOPIC = "__consumer_offsets"
TRANSACTION_STATE_TOPIC = "__transaction_state"
SHARE_GROUP_STATE_TOPIC = "__share_group_state"

log = logging.getLogger("broker.server")


# New partitions' metadata files are written together once no partition was created for FLUSH_METADATA_DELAY_S,
# or FLUSH_METADATA_MAX_WAIT_S after the first of them (see KafkaServer._flush_metadata_files_later).
FLUSH_METADATA_DELAY_S = 0.2
FLUSH_METADATA_MAX_WAIT_S = 2.0


def _flush_metadata_files(logs: list[Any]) -> None:
    """In a worker thread: each log's metadata files still behind (a failure is that log's alone; its next write
    tries again and fails its produce with KAFKA_STORAGE_ERROR)."""
    for log_ in logs:
        try:
            log_.flush_metadata_files()
        except OSError as e:
            log.error("%s: cannot write partition.metadata or leader-epoch-checkpoint: %s", log_.topic_partition, e)

# What a broker answers before it has the controller's first UpdateMetadata: the controller's own requests
# (which bring it), a follower's leader-epoch query and ApiVersions (no metadata in it).
_SERVED_BEFORE_METADATA = frozenset({
    ApiKey.LEADER_AND_ISR, ApiKey.STOP_REPLICA, ApiKey.UPDATE_METADATA, ApiKey.CONTROLLED_SHUTDOWN,
    ApiKey.API_VERSIONS, ApiKey.OFFSET_FOR_LEADER_EPOCH,
})


class _CorrelationId(NamedTuple):
    """All of a request header the ApiVersions fallback answer needs."""

    correlation_id: int


class KafkaServer:
    def __init__(self, config: KafkaConfig) -> None:
        self.config = config
        self.broker_id = config.broker_id
        # How this broker reaches the others' inter-broker listener (TLS context, SASL credentials).
        self.inter_broker_security = inter_broker_security(config)
        self.loop: asyncio.AbstractEventLoop | None = None
        self.socket_server: SocketServer | None = None  # the first listener's
        self.socket_servers: dict[str, SocketServer] = {}
        self.started = asyncio.Event()
        # Set once the controller's first UpdateMetadata is applied; client requests wait for it.
        self.metadata_ready = asyncio.Event()
        self._stopping = False
        self._timers: list[asyncio.TimerHandle] = []
        self.io_executor = concurrent.futures.ThreadPoolExecutor(max_workers=2, thread_name_prefix="log-io")
        self.topic_configs = TopicConfigs(config)
        self.dynamic_config = DynamicBrokerConfig(self)
        self.quotas = ClientQuotas(self.config["quota.window.num"], self.config["quota.window.size.seconds"])
        self.authorizer = self._authorizer(config)  # None: no authorization (authorizer.class.name empty)
        self.log_manager = LogManager(config.log_dirs, self.topic_configs.default_log_config(),
                                      topic_configs=self.topic_configs.overrides,
                                      producer_state_config=ProducerStateManagerConfig(
                                          config["producer.id.expiration.ms"]))
        self.metadata_cache = MetadataCache(self.broker_id, "")
        self.replica_manager = ReplicaManager(
            self.broker_id, self.log_manager,
            replica_lag_time_max_ms=config["replica.lag.time.max.ms"],
            log_config_for=self.topic_configs.log_config,
            min_insync_replicas_for=self.topic_configs.min_insync_replicas,
            metadata_cache=self.metadata_cache)
        self.replica_manager.on_flush_needed = self._schedule_flush
        self.replica_manager.flush_metadata_files_later = self._flush_metadata_files_later
        self.replica_manager.replica_selector = replica_selector(config.get("replica.selector.class"))
        # KIP-890: transactional produce is verified with the transaction coordinator (dynamic key).
        self.replica_manager.transaction_verification_enabled = \
            lambda: bool(self.config["transaction.partition.verification.enable"])
        self.replica_manager.add_partitions_to_txn = AddPartitionsToTxnManager(
            self.broker_id, self.metadata_cache,
            self._transaction_state_partition_for,
            request_timeout_ms=config["request.timeout.ms"], security=self.inter_broker_security)
        self.fetch_sessions = FetchSessionCache(config["max.incremental.fetch.session.cache.slots"])
        # Kafka's metrics, kept while metrics.prometheus.listener is set (broker/metrics), and KIP-714 telemetry
        self.metrics = BrokerMetrics() if config["metrics.prometheus.listener"] else None
        self.replica_manager.metrics = self.metrics
        self.metrics_endpoint: PrometheusEndpoint | None = None
        self.producer_ids: ProducerIdManager | None = None
        self.controller: Controller | None = None
        self._group_coordinator: Any = None  # started on first use (the property below)
        self.transaction_coordinator: Any = None
        # The share coordinator and the share-partition leaders' Persister (broker/share/rpc_persister.py) start on
        # first use (the properties below).
        self._share_coordinator: Any = None
        self._rpc_persister: Any = None
        self.fetcher_manager: ReplicaFetcherManager | None = None
        self._flushing: set[Any] = set()
        self._metadata_to_flush: list[Any] = []  # logs for the next flush-metadata-file job
        self._metadata_flush_timer: asyncio.TimerHandle | None = None
        self._metadata_flush_first = 0.0  # loop time of the oldest log waiting
        # Work handed to io_executor (flushes, compaction, file deletion), kept so shutdown awaits it
        # before the logs close.
        self._io_pending: set[asyncio.Future[Any]] = set()
        self.cleaner = LogCleaner()
        self._cleaning = False
        self.log_dir_mover = ReplicaAlterLogDirsManager(self.replica_manager, self.cleaner)
        # A KRaft broker sends these APIs' controller requests in an Envelope (broker/kraft/admin.py, set at start).
        self._forwarded_apis: frozenset[int] = frozenset()
        self._kraft_admin: Any = None

    @staticmethod
    def _authorizer(config: KafkaConfig) -> Any:
        # The ACL authorizer and its store are imported only by a broker configured with one (issue 35).
        if not (config.get("authorizer.class.name") or "").strip():
            return None
        from broker.security.authorizer import from_config

        return from_config(config)

    # ------------------------------------------------------------------ lifecycle
    @property
    def port(self) -> int:
        assert self.socket_server is not None
        return self.socket_server.port

    async def start(self) -> None:
        t0 = time.monotonic()
        self.loop = asyncio.get_running_loop()
        self.log_manager.startup()
        self.producer_ids = FileProducerIdManager(self.config.log_dirs[0] / "producer-id-block")
        # Bind first so that the advertised ports are known (port 0 = pick a free one).
        self.socket_servers = {ep.listener: self._bind(ep) for ep in self.config.broker_listeners}
        self.socket_server = next(iter(self.socket_servers.values()))
        self.endpoint = self._advertised_endpoint()
        self.replica_manager.high_watermarks = self.log_manager.read_high_watermarks()
        if self.config.is_kraft:  # process.roles: a KRaftBroker answers the controller's calls
            from broker.kraft import admin as kraft_admin
            from broker.kraft.broker_server import KRaftBroker

            self._kraft_admin = kraft_admin
            self._forwarded_apis = kraft_admin.FORWARDED_APIS

            self.controller = KRaftBroker(self)  # type: ignore[assignment]
        else:
            self.controller = Controller.create(self)
        await self.dynamic_config.startup(self.controller.store)  # KIP-226 configs and quotas apply before serving
        await self.quotas.startup(self.controller.store)
        if self.authorizer is not None:  # ACLs are loaded before anything serves, as Kafka's authorizer does
            await self.authorizer.startup(self.controller.store)
        self.fetcher_manager = ReplicaFetcherManager(self)
        self.replica_manager.fetcher_manager = self.fetcher_manager
        self.replica_manager.isr_updater = self.update_isr
        self._start_transaction_coordinator()
        # The group and share coordinators start on first use (a group request, FindCoordinator), or with the first
        # leadership change of their topic, which the controller may hand out during its start-up (a broker
        # restarted with groups): the hook must be listening before that. Their modules were a third of a start-up
        # (issue 35), and a broker that serves no groups never needs them.
        self.replica_manager.on_leadership_change.append(self._coordinator_leadership)
        await self.controller.startup()
        # Logs were opened before the topics' overrides and the dynamic broker configs were read.
        self.refresh_log_configs()
        self.metadata_cache.cluster_id = self.controller.cluster_id
        for socket_server in self.socket_servers.values():
            socket_server.start()
        if self.metrics is not None:
            self.metrics_endpoint = PrometheusEndpoint.start(self.config["metrics.prometheus.listener"], self.loop,
                                                             functools.partial(metric_families, self))
            log.info("metrics for Prometheus at http://%s:%d/metrics", self.metrics_endpoint.host,
                     self.metrics_endpoint.port)
        await self._wait_for_metadata()
        self._schedule_housekeeping()
        log.info("broker %d started in %.0f ms, listening on %s (advertised %s), log dirs %s",
                 self.broker_id, (time.monotonic() - t0) * 1000,
                 ", ".join(f"{n}://{s.host}:{s.port}" for n, s in self.socket_servers.items()),
                 ", ".join(f"{e.listener}://{e.host}:{e.port}" for e in self.endpoint.listeners),
                 ", ".join(str(d) for d in self.config.log_dirs))
        self.started.set()

    def _bind(self, ep: Endpoint) -> SocketServer:
        """One listener's socket: TLS for SSL and SASL_SSL, an authenticator per connection for SASL_*."""
        assert self.loop is not None
        protocol = self.config.listener_security_protocol_map[ep.listener]
        tls_listener = protocol.endswith("SSL")
        server = SocketServer(
            self.loop, ep.host, ep.port, self.handle_frame,
            max_request_bytes=self.config["socket.request.max.bytes"],
            idle_timeout_ms=self.config["connections.max.idle.ms"],
            queued_max_bytes=self.config["queued.max.request.bytes"],
            send_buffer_bytes=self.config["socket.send.buffer.bytes"],
            receive_buffer_bytes=self.config["socket.receive.buffer.bytes"],
            listener_name=ep.listener, ssl_context=tls.server_context(self.config, ep.listener) if tls_listener
            else None)
        server.ssl_principal = tls.principal_builder(self.config, ep.listener) if tls_listener else None
        server.track_arrival = self.metrics is not None
        if protocol.startswith("SASL_"):
            mechanisms = sasl.listener_mechanisms(self.config, ep.listener, self._scram_credential)
            delay_ms = self.config["connection.failed.authentication.delay.ms"]
            max_receive = self.config["sasl.server.max.receive.size"]
            server.handler = self._handle_sasl_frame

            def on_connect(conn: Connection) -> None:
                conn.auth = sasl_authenticator.SaslAuthenticator(self, conn, mechanisms, delay_ms)
                conn.max_frame_bytes = max_receive  # Kafka's bound on what an unauthenticated client may send

            server.on_connect = on_connect
        return server

    def _advertised_endpoint(self) -> BrokerEndpoint:
        protocols = self.config.listener_security_protocol_map
        listeners = []
        for adv in self.config.advertised_listeners:
            bound = self.socket_servers[adv.listener]
            host = adv.host or bound.host or "127.0.0.1"
            if host in ("0.0.0.0", "::"):
                host = "127.0.0.1"
            listeners.append(ListenerEndpoint(adv.listener, host, adv.port or bound.port, protocols[adv.listener]))
        inter = next(e for e in listeners if e.listener == self.config.inter_broker_listener_name)
        return BrokerEndpoint(self.broker_id, inter.host, inter.port, self.config.get("broker.rack"), tuple(listeners))

    async def _scram_credential(self, user: str, mechanism: str) -> Any:
        assert self.controller is not None
        return await self.controller.call(CredentialStore(self.controller.store).credential, user, mechanism)

    def _handle_sasl_frame(self, conn: Connection, frame: bytearray) -> Any:
        """A SASL listener's frames: its connection's authenticator sees them first (sasl_authenticator.route)."""
        return sasl_authenticator.route(conn, frame, self.handle_frame)

    async def _wait_for_metadata(self) -> None:
        """Until its first UpdateMetadata a joining broker knows no brokers and no controller (librdkafka's admin
        client then waited out its timeout for a controller). Like Kafka's KRaft brokers, serve clients once caught
        up with the metadata, bounded so that a broker the controller cannot reach still starts (and says why)."""
        timeout_s = self.config["zookeeper.session.timeout.ms"] / 1000
        try:
            async with asyncio.timeout(timeout_s):  # not wait_for: it can swallow a cancellation on 3.11
                await self.metadata_ready.wait()
        except TimeoutError:
            log.warning("no UpdateMetadata from the controller within %.0f s; serving clients without it",
                        timeout_s)
            self.metadata_ready.set()

    def _transaction_state_partition_for(self, transactional_id: str) -> int:
        """The __transaction_state partition of a transactional id, as the transaction coordinator computes it
        (started with the broker, before any produce is verified)."""
        return self.transaction_coordinator.partition_for(transactional_id)

    @property
    def group_coordinator(self) -> Any:
        """The group coordinator (__consumer_offsets), started by the first caller."""
        if self._group_coordinator is None:
            from broker.coordinator.group.service import start_group_coordinator

            coordinator = start_group_coordinator(self)
            # Share groups' offsets go through the persister of this broker's share-partition leaders (one store for
            # both sides); the group coordinator is below broker/share/ and gets it from here.
            coordinator.coordinator.share_persister = self._share_persister
            self._group_coordinator = coordinator
        return self._group_coordinator

    def started_group_coordinator(self) -> Any:
        """The group coordinator if something has started it, else None: for readers that must not start it (a
        metrics scrape)."""
        return self._group_coordinator

    def _share_persister(self) -> object:
        """The persister the share-partition leaders of this broker use (one store for both sides)."""
        from broker.share.manager import share_partition_manager

        return share_partition_manager(self).persister

    def _start_transaction_coordinator(self) -> None:
        from broker.coordinator.transaction.service import start_transaction_coordinator

        self.transaction_coordinator = start_transaction_coordinator(self)
        # The markers of partitions this broker leads are written in-process, by the WriteTxnMarkers handler's code.
        # Looked up at the call, not now: the handler modules load on first use (broker/apis/__init__.py).
        self.transaction_coordinator.markers.write_local = \
            lambda *args, **kwargs: apis.write_txn_markers.write_marker(self, *args, **kwargs)
        # So are the KIP-890 verifications of transactions this broker coordinates, by the AddPartitionsToTxn handler's.
        self.replica_manager.add_partitions_to_txn.verify_local = \
            lambda *args, **kwargs: apis.add_partitions_to_txn.verify_partitions(self, *args, **kwargs)
        self.replica_manager.add_partitions_to_txn.add_local = \
            lambda *args, **kwargs: apis.add_partitions_to_txn.add_partitions(self, *args, **kwargs)
        self.transaction_coordinator.startup()

    @property
    def share_coordinator(self) -> Any:
        """The share coordinator (KIP-932, __share_group_state), started by the first caller."""
        if self._share_coordinator is None:
            from broker.coordinator.share.service import start_share_coordinator

            coordinator = start_share_coordinator(self)
            try:
                asyncio.get_running_loop()
            except RuntimeError:  # asked from outside the broker's loop (a test's thread): its timers go there
                assert self.loop is not None
                self.loop.call_soon_threadsafe(coordinator.startup)
            else:
                coordinator.startup()
            self._share_coordinator = coordinator
        return self._share_coordinator

    @property
    def share_persister(self) -> Any:
        """The Persister of this broker's share-partition leaders (broker/share/rpc_persister.py), made by the first
        caller."""
        if self._rpc_persister is None:
            from broker.share.rpc_persister import RpcPersister

            # A share coordinator on this broker is asked in-process, by its state RPC handler's own `answer`.
            self._rpc_persister = RpcPersister(self, lambda api_key: apis.handler(api_key).answer)
        return self._rpc_persister

    def _coordinator_leadership(self, new_leaders: list[Any], new_followers: list[Any]) -> None:
        """Until the group or share coordinator runs: start it when this broker leads or follows a partition of its
        topic, and hand it this change (it registers for the later ones itself)."""
        if self._group_coordinator is not None and self._share_coordinator is not None:
            return
        topics = {p.topic_partition.topic for p in (*new_leaders, *new_followers)}
        if self._group_coordinator is None and GROUP_METADATA_TOPIC in topics:
            self.group_coordinator.runtime.on_leadership_change(new_leaders, new_followers)
        if self._share_coordinator is None and SHARE_GROUP_STATE_TOPIC in topics:
            self.share_coordinator.runtime.on_leadership_change(new_leaders, new_followers)

    async def shutdown(self) -> None:
        if self._stopping:
            return
        self._stopping = True
        log.info("broker %d shutting down", self.broker_id)
        for t in self._timers:
            t.cancel()
        if self._metadata_flush_timer is not None:
            self._metadata_flush_timer.cancel()  # the logs write them as they close
        if self.metrics_endpoint is not None:
            self.metrics_endpoint.stop()
        if self.controller is not None:
            try:
                await self.controller.controlled_shutdown()
            except Exception:
                log.exception("controlled shutdown failed; shutting down anyway")
        if self.socket_server is not None:
            for socket_server in self.socket_servers.values():
                socket_server.stop_accepting()
            self.replica_manager.produce_purgatory.shutdown()
            self.replica_manager.fetch_purgatory.shutdown()
            self.replica_manager.delete_records_purgatory.shutdown()
            for socket_server in self.socket_servers.values():
                await socket_server.drain(5.0)
            for socket_server in self.socket_servers.values():
                await socket_server.close()
        if self.transaction_coordinator is not None:
            try:
                await self.transaction_coordinator.shutdown()
            except Exception:
                log.exception("transaction coordinator shutdown failed")
        if self._share_coordinator is not None:
            try:
                await self._share_coordinator.shutdown()
            except Exception:
                log.exception("share coordinator shutdown failed")
        if self._rpc_persister is not None:
            self._rpc_persister.close()
        if self._group_coordinator is not None:
            try:
                await self._group_coordinator.shutdown()
            except Exception:
                log.exception("group coordinator shutdown failed")
        if self.fetcher_manager is not None:
            await self.fetcher_manager.shutdown()
        await self.replica_manager.stop_isr_updates()  # they write through the controller's store
        await self.log_dir_mover.shutdown()
        self.dynamic_config.shutdown()
        self.quotas.shutdown()
        if getattr(self, "group_configs", None) is not None:  # made on first use (broker/config/group_configs.py)
            self.group_configs.close()
        if getattr(self, "client_metrics_subscriptions", None) is not None:  # made on first use (KIP-714)
            self.client_metrics_subscriptions.close()
        if self.authorizer is not None:
            self.authorizer.shutdown()
        if self.controller is not None:
            await self.controller.shutdown()
        self.replica_manager.shutdown()
        if self.replica_manager.add_partitions_to_txn is not None:
            self.replica_manager.add_partitions_to_txn.shutdown()
        await asyncio.gather(*self._io_pending, return_exceptions=True)
        self.io_executor.shutdown(wait=True)
        self.log_manager.shutdown()
        log.info("broker %d shut down cleanly", self.broker_id)

    # ------------------------------------------------------------------ periodic work
    def _in_io(self, what: str, fn: Any, *args: Any) -> asyncio.Future[Any]:
        """Run fn(*args) in the io executor, kept until it ends; a failure is logged as `what` failed."""
        assert self.loop is not None
        fut = self.loop.run_in_executor(self.io_executor, fn, *args)
        self._io_pending.add(fut)

        def done(f: asyncio.Future[Any]) -> None:
            self._io_pending.discard(f)
            if not f.cancelled() and f.exception() is not None:
                log.error("%s failed", what, exc_info=f.exception())

        fut.add_done_callback(done)
        return fut

    def _every(self, interval_ms: int | Callable[[], int], fn: Any) -> None:
        """Run `fn` every `interval_ms` (a callable: re-read before each wait, for dynamic configs)."""
        assert self.loop is not None
        interval = interval_ms if callable(interval_ms) else lambda: interval_ms
        if interval() <= 0 or interval() >= 2**62:
            return

        def tick() -> None:
            if self._stopping:
                return
            try:
                fn()
            except Exception:
                log.exception("periodic task %s failed", getattr(fn, "__name__", fn))
            self._timers.append(self.loop.call_later(max(interval(), 1) / 1000, tick))  # type: ignore[union-attr]

        self._timers.append(self.loop.call_later(interval() / 1000, tick))

    def _schedule_housekeeping(self) -> None:
        cfg = self.config
        self._every(cfg["log.retention.check.interval.ms"], self._cleanup_logs)
        self._every(cfg["replica.high.watermark.checkpoint.interval.ms"],
                    self.replica_manager.checkpoint_high_watermarks)
        self._every(cfg["log.flush.offset.checkpoint.interval.ms"], self.log_manager.checkpoint_recovery_points)
        self._every(cfg["log.flush.start.offset.checkpoint.interval.ms"],
                    self.log_manager.checkpoint_log_start_offsets)
        self._every(min(cfg["replica.lag.time.max.ms"] // 2, 30000), self.replica_manager.maybe_shrink_isr)
        self._every(30000, self._purge_purgatories)
        # Kafka's PeriodicProducerExpirationCheck (each UnifiedLog schedules its own; one task walks them all).
        self._every(cfg["producer.id.expiration.check.interval.ms"], self._remove_expired_producers)
        # Deleted partitions and segments go once their file.delete.delay.ms has passed (checked each second).
        self._every(1000, self._remove_deleted_files)
        if cfg["log.cleaner.enable"]:
            self._every(lambda: cfg["log.cleaner.backoff.ms"], self._clean_logs)
        if cfg.log_flush_interval_ms < 2**62:
            self._every(min(cfg.log_flush_interval_ms, 1000), self._flush_dirty_logs)

    def _remove_expired_producers(self) -> None:
        removed = self.log_manager.remove_expired_producers(int(time.time() * 1000))
        if removed:
            log.debug("expired %d idle producer ids (producer.id.expiration.ms)", removed)

    def _remove_deleted_files(self) -> None:
        """Files whose file.delete.delay.ms has passed: deleted partitions' directories and retention-deleted
        segments. They are taken off the logs here, on the loop, and unlinked in the io executor, because
        unlinking a large segment frees its page cache and can take tens of milliseconds."""
        assert self.loop is not None
        now = int(time.time() * 1000)
        logs = self.log_manager.take_deleted_logs_due(now)
        segments = self.log_manager.take_expired_segment_deletes(now)
        if not logs and not segments:
            return

        def remove() -> None:
            for seg in segments:
                seg.delete_files()
            for lg in logs:  # renamed and closed: nothing else touches these directories any more
                lg.remove_dir()
                log.info("%s: removed deleted log directory %s", lg.topic_partition, lg.dir.name)

        self._in_io("removing deleted files", remove)

    def _purge_purgatories(self) -> None:
        self.replica_manager.produce_purgatory.purge_completed()
        self.replica_manager.fetch_purgatory.purge_completed()

    def _cleanup_logs(self) -> None:
        assert self.loop is not None
        now = int(time.time() * 1000)
        # Retention never deletes past the high watermark (Kafka's rule), so give storage the HWs.
        # It runs on the event loop, which owns the logs: segment deletion is renames and bookkeeping
        # (files are removed later), and appends must never interleave with it from another thread.
        hws = {tp: p.high_watermark for tp, p in self.replica_manager.partitions.items() if p.log is not None}
        self.log_manager.cleanup_logs(now, hws)

    def _clean_logs(self) -> None:
        """Compaction (cleanup.policy=compact) off the event loop, one log at a time."""
        assert self.loop is not None
        if self._cleaning:
            return
        self._cleaning = True

        def clean() -> None:
            for _ in range(8):  # bounded: the next tick picks up what is left
                log_ = self.cleaner.dirtiest_log(self.log_manager.all_logs())
                if log_ is None:
                    return
                stats = self.cleaner.clean(log_, int(time.time() * 1000))
                if not stats.cleaned:
                    return
                log.info("%s: compacted up to offset %d", log_.topic_partition, stats.end_offset)

        self._in_io("log cleaner", clean).add_done_callback(self._cleaning_done)

    def _cleaning_done(self, _: asyncio.Future) -> None:
        self._cleaning = False

    def _flush_dirty_logs(self) -> None:
        assert self.loop is not None
        now = int(time.time() * 1000)
        self._in_io("flushing dirty logs", self.log_manager.flush_dirty_logs, now)

    def _schedule_flush(self, partition: Any) -> None:
        """flush.messages reached: fsync off the event loop (one flush in flight per log)."""
        assert self.loop is not None
        log_ = partition.log
        if log_ is None or log_ in self._flushing:
            return
        self._flushing.add(log_)
        upto = log_.log_end_offset
        self._in_io(f"flush of {log_.topic_partition}", log_.flush, upto).add_done_callback(
            lambda _: self._flushing.discard(log_))

    def _flush_metadata_files_later(self, logs: list[Any]) -> None:
        """New partitions' partition.metadata and new leaders' epoch checkpoints, off the event loop (Kafka's
        flush-metadata-file task), in one job once the creation pauses (FLUSH_METADATA_DELAY_S, at most
        FLUSH_METADATA_MAX_WAIT_S): their fsyncs force journal commits that the next partitions' mkdir and create
        would otherwise wait behind (a creation of 1,000 partitions took 2-4x as long with them beside it).
        Waiting changes nothing a crash leaves: a log writes them itself before its first data. Before the loop
        runs (start-up), here."""
        if self.loop is None or self._stopping:
            for log_ in logs:
                log_.flush_metadata_files()
            return
        now = self.loop.time()
        if not self._metadata_to_flush:
            self._metadata_flush_first = now
        self._metadata_to_flush.extend(logs)
        if self._metadata_flush_timer is not None:
            if now - self._metadata_flush_first >= FLUSH_METADATA_MAX_WAIT_S:
                return  # due soon: never put off for good by a stream of creations
            self._metadata_flush_timer.cancel()
        self._metadata_flush_timer = self.loop.call_later(FLUSH_METADATA_DELAY_S, self._flush_metadata_files_now)

    def _flush_metadata_files_now(self) -> None:
        self._metadata_flush_timer = None
        logs, self._metadata_to_flush = self._metadata_to_flush, []
        if not self._stopping:  # else each log writes them as it closes
            self._in_io("flush-metadata-file", _flush_metadata_files, logs)

    # ------------------------------------------------------------------ topics
    def auto_create_topics(self, names: list[str], ctx: RequestContext | None = None) -> None:
        """`ctx`: the client request asking; a KRaft broker sends the creation in an Envelope as that client."""
        assert self.controller is not None
        for name in names:
            if ctx is not None and self.config.is_kraft:
                self.controller.admin.auto_create_topic(name, client=ctx)
            else:
                self.controller.admin.auto_create_topic(name)

    # ------------------------------------------------------------------ request dispatch
    def handle_frame(self, conn: Connection, frame: bytearray) -> Any:
        start = time.perf_counter_ns()
        if len(frame) >= 8:
            api_key, version = unpack_from(">hh", frame, 0)
            served = apis.VERSIONS.get(api_key)
            if served is None or not served[0] <= version <= served[1]:
                return self._not_served(conn, frame, api_key, version)
            if not self.metadata_ready.is_set() and api_key not in _SERVED_BEFORE_METADATA:
                return self._after_metadata(conn, frame)
        try:
            request = decode_request(frame)
        except ProtocolError as e:
            # As Kafka's SocketServer: a request that does not parse closes its connection (InvalidRequestException).
            log.debug("malformed frame from %s: %s", conn, bytes(frame[:256]).hex())
            header = getattr(e, "header", None)
            client = f" from client_id {header.client_id!r}" if header is not None and header.client_id else ""
            conn.close(f"malformed request{client}: {e}")
            return None
        header = request.header
        api_key = header.request_api_key
        ctx = RequestContext(self, conn, api_key, header.request_api_version, header.correlation_id,
                             header.client_id)
        if self.metrics is not None:
            ctx.timer = self.metrics.timer(api_key, ctx.api_version, conn.frame_arrived_ns, start)
        try:
            result = (apis.LOADED.get(api_key) or apis.handler(api_key)).handle(ctx, request)
        except Exception as e:  # noqa: BLE001 - one request's failure is answered, the broker goes on
            return self._failed(ctx, request, e)
        if api_key in self._forwarded_apis and asyncio.iscoroutine(result):
            result = self._kraft_admin.as_client(ctx, result)  # its controller requests go in an Envelope (KIP-590)
        ctx.handler_ns = time.perf_counter_ns() - start
        if result is None:
            self._no_answer(ctx)
            return None
        if asyncio.iscoroutine(result) or isinstance(result, asyncio.Future):  # with quotas, its loop time counts
            timed = self.quotas.quotas or self.metrics is not None
            later = self._finish_later(ctx, request, timed_steps(result, ctx) if timed else result)
            return Deferred(later) if ctx.deferred else later
        return self._encode(ctx, result)

    def _failed(self, ctx: RequestContext, request: Any, error: Exception) -> Response | None:
        """A handler raised: as Kafka's KafkaApis, answer that request UNKNOWN_SERVER_ERROR where its response has a
        top-level error code (with no message, as Kafka's ApiError keeps an unknown error's text to itself), else
        close that connection; one log line names the client, the API and the exception (the traceback at DEBUG)."""
        name = f"{api_name(ctx.api_key)} v{ctx.api_version}"
        log.debug("%s failed", name, exc_info=error)
        response = response_for(request)
        field = type(response)._struct.fields.get("error_code")
        if field is None or not field.for_version_q(ctx.api_version) or ctx.connection is None:
            log.error("%s: %s from client_id %r failed: %r; closing the connection", ctx.connection, name,
                      ctx.client_id, error)
            if ctx.connection is not None:
                ctx.connection.close(None)
            return None
        log.error("%s: %s from client_id %r failed: %r; answering UNKNOWN_SERVER_ERROR", ctx.connection, name,
                  ctx.client_id, error)
        response.error_code = ErrorCode.UNKNOWN_SERVER_ERROR
        return self._encode(ctx, response)

    async def _after_metadata(self, conn: Connection, frame: bytearray) -> Response | None:
        await self.metadata_ready.wait()
        result = self.handle_frame(conn, frame)
        result = result.awaitable if isinstance(result, Deferred) else result
        return (await result) if asyncio.iscoroutine(result) else result

    def _not_served(self, conn: Connection, frame: bytearray, api_key: int, version: int) -> Response | None:
        """A request for an API key or version no handler serves, answered as Kafka's SocketServer and
        KafkaApis do, with one log line: ApiVersions gets UNSUPPORTED_VERSION and our ApiVersions range in
        the v0 layout (KIP-511: the client retries at a version we serve); anything else closes the
        connection (Kafka: InvalidRequestException "... which is not enabled", then the channel closed)."""
        name = api_name(api_key)
        if api_key == ApiKey.API_VERSIONS:
            served = apis.VERSIONS[ApiKey.API_VERSIONS]
            log.info("%s: %s v%d is not served (v%d-v%d): answering UNSUPPORTED_VERSION", conn, name, version,
                     *served)
            correlation_id = unpack_from(">i", frame, 4)[0]
            body = api_versions_fallback_response(_CorrelationId(correlation_id), served)
            return Response(len(body), [body])
        conn.close(f"{name} v{version} is not served by this broker")
        return None

    async def _finish_later(self, ctx: RequestContext, request: Any, awaitable: Any) -> Response | None:
        try:
            response = await awaitable
        except Exception as e:  # noqa: BLE001 - see _failed
            return self._failed(ctx, request, e)
        if response is None:
            self._no_answer(ctx)
            return None
        return self._encode(ctx, response)

    @staticmethod
    def _no_answer(ctx: RequestContext) -> None:
        if ctx.timer is not None:
            ctx.timer.complete(ctx.handler_ns, 0, ctx.quota_exempt)
            ctx.timer.sent(0, 0)

    def _encode(self, ctx: RequestContext, response: Any) -> Response:
        ctx.record_request_time(response)
        response.with_header(correlation_id=ctx.correlation_id)
        size, parts = encode_response_parts(response)
        out: list[Any] = []
        for part in parts:
            if isinstance(part, RecordsRef):
                fs = part.source
                out.append(SendfileChunk(fs.fileno, fs.position, fs.length))
            else:
                out.append(part)
        if ctx.timer is None:
            return Response(size, out)
        ctx.timer.complete(ctx.handler_ns, getattr(response, "throttle_time_ms", 0), ctx.quota_exempt)
        return Response(size, out, ctx.timer.sent)

    # ------------------------------------------------------------------ what the controller tells this broker
    @property
    def broker_epoch(self) -> int:
        """This broker's epoch (KIP-380): the czxid of its registration in the metadata store; -1 before."""
        return self.controller.store.broker_epoch if self.controller is not None else -1

    def is_broker_epoch_stale(self, broker_epoch: int) -> bool:
        """A control request for an earlier registration of this broker (Kafka's isBrokerEpochStale: -1 is a
        controller that predates broker epochs; a newer epoch than ours is the controller having seen our
        registration first)."""
        return broker_epoch != -1 and broker_epoch < self.broker_epoch

    def apply_leader_and_isr(self, controller_id: int, controller_epoch: int,
                             states: dict[TopicPartition, PartitionState], topic_ids: dict[str, uuid.UUID],
                             leaders: list[BrokerEndpoint]) -> dict[TopicPartition, ErrorCode]:
        for ep in leaders:
            if ep.broker_id not in self.metadata_cache.brokers:
                self.metadata_cache.brokers[ep.broker_id] = ep
        return self.replica_manager.become_leader_or_follower(controller_id, controller_epoch, states, topic_ids)

    def apply_update_metadata(self, controller_id: int, controller_epoch: int, brokers: list[BrokerEndpoint],
                              partitions: list[tuple[TopicPartition, uuid.UUID, PartitionMetadata]]) -> bool:
        cache = self.metadata_cache
        if controller_epoch < cache.controller_epoch:
            log.warning("ignoring UpdateMetadata from controller %d with stale epoch %d < %d", controller_id,
                        controller_epoch, cache.controller_epoch)
            return False
        cache.controller_epoch = controller_epoch
        cache.controller_id = controller_id
        cache.set_brokers(brokers)
        self.metadata_ready.set()
        for tp, topic_id, pm in partitions:
            if pm.leader == LEADER_DURING_DELETE:
                cache.remove_topic(tp.topic)
                self.topic_configs.remove(tp.topic)
            else:
                cache.update_partition(tp.topic, topic_id, pm)
        return True

    def apply_stop_replica(self, controller_id: int, controller_epoch: int, partitions: list[TopicPartition],
                           delete: bool) -> dict[TopicPartition, ErrorCode]:
        if self._group_coordinator is not None:
            for tp in partitions:
                if tp.topic == GROUP_METADATA_TOPIC:
                    self._group_coordinator.on_resignation(tp.partition)
        if self.transaction_coordinator is not None:
            for tp in partitions:
                if tp.topic == TRANSACTION_STATE_TOPIC:
                    self.transaction_coordinator.on_resignation(tp.partition)
        if self._share_coordinator is not None:
            for tp in partitions:
                if tp.topic == SHARE_GROUP_STATE_TOPIC:
                    self._share_coordinator.on_resignation(tp.partition)
        return self.replica_manager.stop_replicas(partitions, delete)

    async def update_isr(self, partition: Any, new_isr: list[int], partition_epoch: int
                         ) -> tuple[list[int], int] | None:
        """The leader records an ISR change in the metadata store, conditional on the partition epoch
        (Kafka's zkVersion), then notifies the controller (ISR change notification)."""
        assert self.controller is not None
        result = await self.controller.record_isr_change(partition, new_isr, partition_epoch)
        if self.metrics is not None:  # Kafka's IsrShrinksPerSec, IsrExpandsPerSec, FailedIsrUpdatesPerSec
            self.metrics.record_isr_update(len(partition.isr), len(new_isr), result is not None)
        return result

    async def refresh_topic_config(self, topic: str) -> None:
        """Read a topic's overrides from the metadata store (the source of truth, as ZooKeeper is for
        Kafka) and apply them here if they differ — a broker that is not the controller may not have
        seen a new topic's config yet."""
        assert self.controller is not None
        stored = await self.controller.call(self.controller.store.topic_configs, topic)
        if dict(stored) != dict(self.topic_configs.overrides(topic)):
            try:
                self.topic_configs.set_overrides(topic, stored)
            except ValueError as e:
                log.warning("topic %s has an invalid stored config: %s", topic, e)
                return
            self.on_topic_config_change(topic)

    def refresh_log_configs(self) -> None:
        """Every open log and hosted partition takes its topic's current config (overrides over the
        broker's defaults, which dynamic broker configs may have changed)."""
        for lg in self.log_manager.all_logs():  # also those no partition hosts yet (before LeaderAndIsr)
            lg.update_config(self.topic_configs.log_config(lg.topic_partition.topic))
        for tp, partition in self.replica_manager.partitions.items():
            partition.update_config(self.topic_configs.log_config(tp.topic),
                                    self.topic_configs.min_insync_replicas(tp.topic))

    def on_topic_config_change(self, topic: str) -> None:
        cfg = self.topic_configs.log_config(topic)
        min_isr = self.topic_configs.min_insync_replicas(topic)
        for tp, partition in self.replica_manager.partitions.items():
            if tp.topic == topic:
                partition.update_config(cfg, min_isr)

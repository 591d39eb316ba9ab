"""The transaction coordinator wired into this broker: its config, `__transaction_state`, the shared runtime,
the marker channel and the timers.

Contract:
- `TransactionService` builds the state manager, the marker channel and the coordinator from the broker's
  transaction properties, and a `CoordinatorRuntime` for `__transaction_state` whose shard is the state
  manager (loaded on becoming leader of a partition, unloaded on losing it or on StopReplica, exactly as
  `__consumer_offsets` for the group coordinator). The coordinator epoch of a partition is its leader epoch.
- `__transaction_state` is created on first use (FindCoordinator key type 1 calls `ensure_topic`) through the
  controller's internal-topic path: transaction.state.log.num.partitions partitions, replication factor and
  min.insync.replicas capped at the live brokers, compacted, uncompressed, transaction.state.log.segment.bytes.
- `transaction_version_level()` is the cluster's finalized transaction.version (KRaft image; 0 in ZooKeeper
  mode): it picks the `__transaction_state` value version and the rules of the coordinator's own aborts.
- Timers: every transaction.abort.timed.out.transaction.cleanup.interval.ms the coordinator aborts timed-out
  transactions; every transaction.remove.expired.transaction.cleanup.interval.ms idle ids get tombstones.
- `shutdown()` stops the timers, the loads, the markers, then the coordinator.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any, Protocol

from broker.coordinator.runtime import CoordinatorRuntime, CoordinatorServer
from broker.coordinator.transaction.config import TransactionConfig
from broker.coordinator.transaction.coordinator import TransactionCoordinator
from broker.coordinator.transaction.markers import TransactionMarkerChannelManager
from broker.coordinator.transaction.state_manager import TRANSACTION_STATE_TOPIC, TransactionStateManager, now_ms
from storage import TopicPartition

if TYPE_CHECKING:
    from broker.coordinator.transaction.producer_id_manager import ProducerIdManager
    from broker.security.client import ClientSecurity

log = logging.getLogger("broker.coordinator.transaction")


class TransactionServer(CoordinatorServer, Protocol):
    """The broker as the transaction coordinator sees it (KafkaServer): a coordinator's server, plus its id and
    inter-broker security (the markers it sends) and its producer id manager."""

    broker_id: int
    inter_broker_security: ClientSecurity
    producer_ids: ProducerIdManager | None


class TransactionService:
    def __init__(self, server: TransactionServer) -> None:
        self.server = server
        cfg = server.config
        self.config = TransactionConfig(
            transactional_id_expiration_ms=cfg["transactional.id.expiration.ms"],
            transaction_max_timeout_ms=cfg["transaction.max.timeout.ms"],
            transaction_state_log_num_partitions=cfg["transaction.state.log.num.partitions"],
            transaction_state_log_replication_factor=cfg["transaction.state.log.replication.factor"],
            transaction_state_log_min_isr=cfg["transaction.state.log.min.isr"],
            transaction_state_log_segment_bytes=cfg["transaction.state.log.segment.bytes"],
            transaction_abort_timed_out_transaction_cleanup_interval_ms=cfg[
                "transaction.abort.timed.out.transaction.cleanup.interval.ms"],
            transaction_remove_expired_transaction_cleanup_interval_ms=cfg[
                "transaction.remove.expired.transaction.cleanup.interval.ms"],
            request_timeout_ms=cfg["request.timeout.ms"],
        )
        self.state = TransactionStateManager(self.config, self._append, self._leader_epoch)
        self.state.transaction_version_level = self.transaction_version_level
        self.markers = TransactionMarkerChannelManager(server.broker_id, server.metadata_cache, self.state,
                                                       self.config.request_timeout_ms, server.inter_broker_security)
        self.coordinator = TransactionCoordinator(self.state, self._generate_producer_id, self.markers)
        self.runtime = CoordinatorRuntime(TRANSACTION_STATE_TOPIC, self.state, server.replica_manager,
                                          append_timeout_ms=self.config.request_timeout_ms)
        server.replica_manager.on_leadership_change.append(self.runtime.on_leadership_change)
        self._timers: list[asyncio.Task] = []

    async def _append(self, partition: int, records: list[tuple[bytes, bytes | None]]) -> int:
        return await self.runtime.append(partition, records)

    def _generate_producer_id(self) -> int:
        # Read at each call: in a cluster the controller swaps in the ZooKeeper block manager at start-up, after
        # this service is built, and ids must be unique across brokers.
        assert self.server.producer_ids is not None
        return self.server.producer_ids.generate()

    def transaction_version_level(self) -> int:
        """The cluster's finalized transaction.version: a KRaft broker's from its metadata image; a ZooKeeper-mode
        cluster finalizes no features, so 0 (Kafka's TV_0)."""
        loader = getattr(self.server.controller, "loader", None)
        if loader is None:
            return 0
        return loader.image.features.finalized_versions.get("transaction.version", 0)

    def _leader_epoch(self, partition: int) -> int:
        p = self.server.replica_manager.get_partition(TopicPartition(TRANSACTION_STATE_TOPIC, partition))
        return p.leader_epoch if p is not None else -1

    def partition_for(self, transactional_id: str) -> int:
        return self.state.partition_for(transactional_id)

    # ---- the topic
    def topic_ready(self) -> bool:
        return TRANSACTION_STATE_TOPIC in self.server.metadata_cache.topics

    def ensure_topic(self) -> None:
        """Start creating __transaction_state if it does not exist (FindCoordinator answers
        COORDINATOR_NOT_AVAILABLE meanwhile, and clients retry)."""
        controller = self.server.controller
        assert controller is not None
        cfg = self.config
        live = max(1, len(self.server.metadata_cache.listed_brokers()))
        rf = min(cfg.transaction_state_log_replication_factor, live)
        self.runtime.ensure_topic(self.topic_ready(), lambda: controller.admin.ensure_internal_topic(
            TRANSACTION_STATE_TOPIC, cfg.transaction_state_log_num_partitions, rf,
            {"cleanup.policy": "compact", "compression.type": "uncompressed",
             "segment.bytes": str(cfg.transaction_state_log_segment_bytes),
             "min.insync.replicas": str(max(1, min(cfg.transaction_state_log_min_isr, rf))),
             "unclean.leader.election.enable": "false"}))

    # ---- lifecycle
    def startup(self) -> None:
        self.coordinator.startup()
        loop = asyncio.get_running_loop()
        self._timers.append(loop.create_task(self._every(
            self.config.transaction_abort_timed_out_transaction_cleanup_interval_ms,
            self.coordinator.abort_timed_out_transactions)))
        self._timers.append(loop.create_task(self._every(
            self.config.transaction_remove_expired_transaction_cleanup_interval_ms,
            lambda: self.state.remove_expired_transactional_ids(now_ms()))))

    async def _every(self, interval_ms: int, job: Any) -> None:
        while True:
            await asyncio.sleep(interval_ms / 1000)
            try:
                await job()
            except Exception:
                log.exception("transaction coordinator timer failed")

    def on_resignation(self, partition: int) -> None:
        self.runtime.on_resignation(partition)

    async def shutdown(self) -> None:
        self.coordinator.shutdown()
        for t in self._timers:
            t.cancel()
        if self._timers:
            await asyncio.wait(self._timers)
        self._timers.clear()
        await self.runtime.shutdown()
        await self.markers.shutdown()


def start_transaction_coordinator(server: TransactionServer) -> TransactionService:
    return TransactionService(server)

"""The group coordinator wired into this broker: its config, its `__consumer_offsets` and the shared runtime.

Contract:
- `GroupService` builds the `GroupCoordinator` from the broker's group properties and a `CoordinatorRuntime`
  (broker/coordinator/runtime.py) for `__consumer_offsets` whose shard is the coordinator's metadata
  manager: the runtime appends the manager's records through the ReplicaManager with acks=all, loads a
  partition when this broker becomes its leader and unloads it on resignation (a follower transition, or
  `on_resignation` for StopReplica). The shard is fed whole batches with their markers, so transactional
  offset commits reload as they were; `handle_txn_completion` is the WriteTxnMarkers handler's hook.
- `__consumer_offsets` is created on first use (FindCoordinator calls `ensure_offsets_topic`), compacted, with
  `offsets.topic.num.partitions` partitions and at most as many replicas as there are live brokers
  (Kafka refuses to create it until `offsets.topic.replication.factor` brokers are up).
- KIP-848 consumer groups read the broker's topics (ids, partition counts) from its metadata cache, and the
  `group.consumer.*` properties (session timeout, heartbeat interval, max size, assignors).
- `shutdown()` cancels and waits for loads and the topic creation, answers every waiting member, then
  cancels and waits for the coordinator's background writes.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from typing import Protocol

from broker.config.group_configs import GroupConfigsServer, group_configs
from broker.coordinator.group.config import GroupCoordinatorConfig
from broker.coordinator.group.coordinator import GroupCoordinator
from broker.coordinator.group.share_group import share_group_config
from broker.coordinator.runtime import CoordinatorRuntime, CoordinatorServer, TransactionalAppend

GROUP_METADATA_TOPIC = "__consumer_offsets"


class GroupCoordinatorServer(CoordinatorServer, GroupConfigsServer, Protocol):
    """The broker as the group coordinator sees it (KafkaServer): a coordinator's server whose group configs
    (share groups') it reads."""


class MetadataCacheTopics:
    """The broker's metadata cache as the consumer-group coordinator's topics image."""

    def __init__(self, server: GroupCoordinatorServer) -> None:
        self.server = server

    def topic(self, name: str) -> tuple[uuid.UUID, int] | None:
        tm = self.server.metadata_cache.topics.get(name)
        return (tm.topic_id, len(tm.partitions)) if tm is not None else None

    def names(self) -> Iterable[str]:
        return list(self.server.metadata_cache.topics)

    def name_of(self, topic_id: uuid.UUID) -> str | None:
        return self.server.metadata_cache.topic_name(topic_id)


class GroupService:
    def __init__(self, server: GroupCoordinatorServer) -> None:
        self.server = server
        cfg = server.config
        self.num_partitions = cfg["offsets.topic.num.partitions"]
        self.coordinator = GroupCoordinator(self._append, GroupCoordinatorConfig(
            offsets_topic_num_partitions=self.num_partitions,
            group_initial_rebalance_delay_ms=cfg["group.initial.rebalance.delay.ms"],
            group_min_session_timeout_ms=cfg["group.min.session.timeout.ms"],
            group_max_session_timeout_ms=cfg["group.max.session.timeout.ms"],
            group_max_size=cfg["group.max.size"],
            offset_metadata_max_bytes=cfg["offset.metadata.max.bytes"],
            offsets_retention_ms=cfg["offsets.retention.minutes"] * 60_000,
            offsets_retention_check_interval_ms=cfg["offsets.retention.check.interval.ms"],
            consumer_group_session_timeout_ms=cfg["group.consumer.session.timeout.ms"],
            consumer_group_heartbeat_interval_ms=cfg["group.consumer.heartbeat.interval.ms"],
            consumer_group_max_size=cfg["group.consumer.max.size"],
            consumer_group_assignors=tuple(cfg["group.consumer.assignors"]),
            consumer_group_migration_policy=cfg["group.consumer.migration.policy"].lower(),
        ), topics_image=MetadataCacheTopics(server))
        self.coordinator.share_config = share_group_config(cfg)
        self.coordinator.share_group_configs = lambda group_id: group_configs(server).cached(group_id)
        self.runtime = CoordinatorRuntime(GROUP_METADATA_TOPIC, self.coordinator.manager, server.replica_manager,
                                          append_timeout_ms=cfg["offsets.commit.timeout.ms"])
        server.replica_manager.on_leadership_change.append(self.runtime.on_leadership_change)

    async def _append(self, partition: int, records: list[tuple[bytes, bytes | None]],
                      txn: TransactionalAppend | None = None) -> int:
        return await self.runtime.append(partition, records, txn)

    # ---- transactions
    def handle_txn_completion(self, producer_id: int, offsets_partitions: list[int], is_commit: bool) -> None:
        """A transaction marker of `producer_id` is written to these __consumer_offsets partitions (the
        WriteTxnMarkers handler calls this once the marker's append succeeded): the producer's pending
        transactional offsets there become visible to OffsetFetch (commit) or are dropped (abort)."""
        self.coordinator.manager.handle_txn_completion(producer_id, offsets_partitions, is_commit)

    def partition_for(self, group_id: str) -> int:
        return self.coordinator.partition_for(group_id)

    # ---- the offsets topic
    def offsets_topic_ready(self) -> bool:
        return GROUP_METADATA_TOPIC in self.server.metadata_cache.topics

    def ensure_offsets_topic(self) -> None:
        """Start creating __consumer_offsets if it does not exist (FindCoordinator answers
        COORDINATOR_NOT_AVAILABLE meanwhile, and clients retry)."""
        cfg = self.server.config
        controller = self.server.controller
        assert controller is not None
        self.runtime.ensure_topic(self.offsets_topic_ready(), lambda: controller.admin.ensure_internal_topic(
            GROUP_METADATA_TOPIC, self.num_partitions, cfg["offsets.topic.replication.factor"],
            {"cleanup.policy": "compact", "segment.bytes": str(cfg["offsets.topic.segment.bytes"]),
             "compression.type": "producer"}))

    # ---- ownership
    def on_resignation(self, partition: int) -> None:
        self.runtime.on_resignation(partition)

    async def shutdown(self) -> None:
        await self.runtime.shutdown()
        self.coordinator.shutdown()
        await self.coordinator.manager.wait_background()


def start_group_coordinator(server: GroupCoordinatorServer) -> GroupService:
    return GroupService(server)


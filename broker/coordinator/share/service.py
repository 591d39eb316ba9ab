"""The share coordinator wired into this broker: its config, `__share_group_state`, the shared runtime.

Contract:
- `ShareCoordinatorService` builds the state manager (state.py) from the broker's share.coordinator.*
  properties, and a `CoordinatorRuntime` for `__share_group_state` whose shard it is (loaded on becoming leader
  of a partition, unloaded on losing it or on StopReplica, exactly as `__consumer_offsets` and
  `__transaction_state`); appends wait share.coordinator.write.timeout.ms for acks=all.
- `__share_group_state` is created on first use (FindCoordinator key type 2 calls `ensure_topic`) through the
  controller's internal-topic path: share.coordinator.state.topic.num.partitions partitions, replication factor
  and min.insync.replicas capped at the live brokers, compacted, uncompressed,
  share.coordinator.state.topic.segment.bytes.
- `shutdown()` makes every request answer COORDINATOR_NOT_AVAILABLE, then stops the loads.
- Not done (Kafka does): the periodic snapshot of cold share partitions and the pruning of records older than
  every share partition's last snapshot (DeleteRecords on the topic); compaction alone keeps the topic bounded.
"""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING

from broker.coordinator.runtime import CoordinatorRuntime
from broker.coordinator.share.config import ShareCoordinatorConfig
from broker.coordinator.share.records import ShareKey
from broker.coordinator.share.state import SHARE_GROUP_STATE_TOPIC, ShareStateManager

if TYPE_CHECKING:
    from broker.server import KafkaServer


class ShareCoordinatorService:
    def __init__(self, server: KafkaServer) -> None:
        self.server = server
        cfg = server.config
        self.config = ShareCoordinatorConfig(
            state_topic_num_partitions=cfg["share.coordinator.state.topic.num.partitions"],
            state_topic_replication_factor=cfg["share.coordinator.state.topic.replication.factor"],
            state_topic_min_isr=cfg["share.coordinator.state.topic.min.isr"],
            state_topic_segment_bytes=cfg["share.coordinator.state.topic.segment.bytes"],
            snapshot_update_records_per_snapshot=cfg["share.coordinator.snapshot.update.records.per.snapshot"],
            write_timeout_ms=cfg["share.coordinator.write.timeout.ms"],
        )
        self.state = ShareStateManager(self.config, self._append, self._partition_count)
        self.runtime = CoordinatorRuntime(SHARE_GROUP_STATE_TOPIC, self.state, server.replica_manager,
                                          append_timeout_ms=self.config.write_timeout_ms)
        server.replica_manager.on_leadership_change.append(self.runtime.on_leadership_change)

    async def _append(self, partition: int, records: list[tuple[bytes, bytes | None]]) -> int:
        return await self.runtime.append(partition, records)

    def _partition_count(self, topic_id: uuid.UUID) -> int | None:
        cache = self.server.metadata_cache
        name = cache.topic_name(topic_id)
        tm = cache.topics.get(name) if name is not None else None
        return len(tm.partitions) if tm is not None else None

    def partition_for(self, key: ShareKey) -> int:
        return self.state.partition_for(key)

    # ---- the topic
    def topic_ready(self) -> bool:
        return SHARE_GROUP_STATE_TOPIC in self.server.metadata_cache.topics

    def ensure_topic(self) -> None:
        """Start creating __share_group_state if it does not exist (FindCoordinator answers
        COORDINATOR_NOT_AVAILABLE meanwhile, and its callers retry)."""
        controller = self.server.controller
        assert controller is not None
        cfg = self.config
        live = max(1, len(self.server.metadata_cache.listed_brokers()))
        rf = min(cfg.state_topic_replication_factor, live)
        self.runtime.ensure_topic(self.topic_ready(), lambda: controller.admin.ensure_internal_topic(
            SHARE_GROUP_STATE_TOPIC, cfg.state_topic_num_partitions, rf,
            {"cleanup.policy": "compact", "compression.type": "uncompressed",
             "segment.bytes": str(cfg.state_topic_segment_bytes),
             "min.insync.replicas": str(max(1, min(cfg.state_topic_min_isr, rf))),
             "unclean.leader.election.enable": "false"}))

    # ---- lifecycle
    def on_resignation(self, partition: int) -> None:
        self.runtime.on_resignation(partition)

    async def shutdown(self) -> None:
        self.state.shutdown()
        await self.runtime.shutdown()


def start_share_coordinator(server: KafkaServer) -> ShareCoordinatorService:
    return ShareCoordinatorService(server)

"""The share coordinator wired into this broker: its config, `__share_group_state`, the shared runtime, the
pruning and cold-snapshot timers.

Contract:
- `ShareCoordinatorService` builds the state manager (state.py) from the broker's share.coordinator.*
  properties, and a `CoordinatorRuntime` for `__share_group_state` whose shard it is (loaded on becoming leader
  of a partition, unloaded on losing it or on StopReplica, exactly as `__consumer_offsets` and
  `__transaction_state`); appends wait share.coordinator.write.timeout.ms for acks=all.
- `__share_group_state` is created on first use (FindCoordinator key type 2 calls `ensure_topic`) through the
  controller's internal-topic path with Kafka's topic configs (KIP-932): share.coordinator.state.topic.num.partitions
  partitions, replication factor and min.insync.replicas capped at the live brokers, cleanup.policy=delete with
  retention.ms=-1 (never compacted: a share partition's state is its last ShareSnapshot plus every ShareUpdate
  after it, all under one key), compression.type=producer, share.coordinator.state.topic.segment.bytes.
- The topic is kept bounded as Kafka keeps it: every share.coordinator.state.topic.prune.interval.ms each led
  partition's records below its redundant offset (state.py) are deleted (DeleteRecords as leader, once per new
  offset); every share.coordinator.cold.partition.snapshot.interval.ms share partitions whose last snapshot is
  that old are snapshotted again so they do not hold the redundant offset back.
- A topic removed from the metadata (deleted) has its share partitions' state tombstoned (state.py).
- `shutdown()` makes every request answer COORDINATOR_NOT_AVAILABLE, stops the timers and the loads.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

from broker.coordinator.runtime import CoordinatorRuntime, CoordinatorServer
from broker.coordinator.share.config import ShareCoordinatorConfig
from broker.coordinator.share.records import ShareKey
from broker.coordinator.share.state import SHARE_GROUP_STATE_TOPIC, ShareStateManager
from protocol.errors import ErrorCode
from storage import TopicPartition

log = logging.getLogger("broker.coordinator.share")


class ShareCoordinatorService:
    def __init__(self, server: CoordinatorServer) -> None:
        self.server = server
        cfg = server.config
        self.config = ShareCoordinatorConfig(
            state_topic_num_partitions=cfg["share.coordinator.state.topic.num.partitions"],
            state_topic_replication_factor=cfg["share.coordinator.state.topic.replication.factor"],
            state_topic_min_isr=cfg["share.coordinator.state.topic.min.isr"],
            state_topic_segment_bytes=cfg["share.coordinator.state.topic.segment.bytes"],
            snapshot_update_records_per_snapshot=cfg["share.coordinator.snapshot.update.records.per.snapshot"],
            write_timeout_ms=cfg["share.coordinator.write.timeout.ms"],
            state_topic_prune_interval_ms=cfg["share.coordinator.state.topic.prune.interval.ms"],
            cold_partition_snapshot_interval_ms=cfg["share.coordinator.cold.partition.snapshot.interval.ms"],
        )
        self.state = ShareStateManager(self.config, self._append, self._partition_count,
                                       topic_partitions=self._state_topic_partitions)
        self.runtime = CoordinatorRuntime(SHARE_GROUP_STATE_TOPIC, self.state, server.replica_manager,
                                          append_timeout_ms=self.config.write_timeout_ms)
        server.replica_manager.on_leadership_change.append(self.runtime.on_leadership_change)
        self._pruned: dict[int, int] = {}  # partition -> the offset last pruned to
        self._timers: list[asyncio.Task] = []
        self._cleanups: set[asyncio.Task] = set()
        server.metadata_cache.on_topic_removed.append(self._on_topic_removed)

    def _on_topic_removed(self, topic_id: uuid.UUID) -> None:
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # not on the broker's loop (a test filling a cache): nothing is led here
            return
        task = loop.create_task(self.state.delete_topic_state(topic_id))
        self._cleanups.add(task)
        task.add_done_callback(self._cleanups.discard)

    async def _append(self, partition: int, records: list[tuple[bytes, bytes | None]]) -> int:
        return await self.runtime.append(partition, records)

    def _partition_count(self, topic_id: uuid.UUID) -> int | None:
        cache = self.server.metadata_cache
        name = cache.topic_name(topic_id)
        tm = cache.topics.get(name) if name is not None else None
        return len(tm.partitions) if tm is not None else None

    def _state_topic_partitions(self) -> int | None:
        tm = self.server.metadata_cache.topics.get(SHARE_GROUP_STATE_TOPIC)
        return len(tm.partitions) if tm is not None and tm.partitions else None

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
            {"cleanup.policy": "delete", "retention.ms": "-1", "compression.type": "producer",
             "segment.bytes": str(cfg.state_topic_segment_bytes),
             "min.insync.replicas": str(max(1, min(cfg.state_topic_min_isr, rf))),
             "unclean.leader.election.enable": "false"}))

    # ---- keeping the topic bounded
    async def prune(self) -> dict[int, int]:
        """Delete, in every led partition, the records below its redundant offset; partition -> new log start."""
        done: dict[int, int] = {}
        for pid in self.state.owned_partitions():
            offset = self.state.redundant_offset(pid)
            if offset is None or offset <= self._pruned.get(pid, 0):
                continue
            tp = TopicPartition(SHARE_GROUP_STATE_TOPIC, pid)
            result: Any = self.server.replica_manager.delete_records(self.config.write_timeout_ms, {tp: offset})
            if isinstance(result, asyncio.Future):
                result = await result
            r = result[tp]
            if r.error != ErrorCode.NONE:
                log.debug("%s: pruning below offset %d failed: %s", tp, offset, r.error.name)
                continue
            self._pruned[pid] = offset
            done[pid] = offset
            log.debug("%s: records below offset %d pruned", tp, offset)
        return done

    def startup(self) -> None:
        loop = asyncio.get_running_loop()
        self._timers.append(loop.create_task(self._every(self.config.state_topic_prune_interval_ms, self.prune)))
        self._timers.append(loop.create_task(self._every(
            self.config.cold_partition_snapshot_interval_ms,
            lambda: self.state.snapshot_cold_partitions(self.config.cold_partition_snapshot_interval_ms))))

    async def _every(self, interval_ms: int, job: Callable[[], Awaitable[Any]]) -> None:
        while True:
            await asyncio.sleep(interval_ms / 1000)
            try:
                await job()
            except Exception:
                log.exception("share coordinator timer failed")

    # ---- lifecycle
    def on_resignation(self, partition: int) -> None:
        self._pruned.pop(partition, None)
        self.runtime.on_resignation(partition)

    async def shutdown(self) -> None:
        self.state.shutdown()
        tasks = [*self._timers, *self._cleanups]
        for t in tasks:
            t.cancel()
        if tasks:
            await asyncio.wait(tasks)
        self._timers.clear()
        await self.runtime.shutdown()


def start_share_coordinator(server: CoordinatorServer) -> ShareCoordinatorService:
    return ShareCoordinatorService(server)

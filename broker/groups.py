"""Glue between the group coordinator (`broker.group`, pure logic) and this broker's log.

- Appends: the coordinator's `append_records(partition, [(key, value)])` becomes one record batch
  appended to `__consumer_offsets-<partition>` through the ReplicaManager with acks=all, so a commit is
  acknowledged only once it is committed (high watermark), as in Kafka.
- Ownership: becoming leader of an offsets partition loads its records (log start → high watermark, in
  chunks, yielding to the loop between them) into the coordinator; losing it unloads the partition.
- `__consumer_offsets` is created on first use (FindCoordinator), compacted, with
  `offsets.topic.num.partitions` partitions and at most as many replicas as there are live brokers
  (Kafka refuses to create it until `offsets.topic.replication.factor` brokers are up).
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import TYPE_CHECKING, Any

from broker.errors import KafkaApiError
from broker.group.coordinator import GroupCoordinator, GroupCoordinatorConfig
from broker.partition import Partition
from protocol.errors import ErrorCode
from protocol.records import CorruptRecordError, InvalidRecordError, build_batch, iter_batches
from storage import TopicPartition

if TYPE_CHECKING:
    from broker.server import KafkaServer

log = logging.getLogger("broker.groups")

GROUP_METADATA_TOPIC = "__consumer_offsets"
LOAD_CHUNK_BYTES = 1 << 20


class GroupService:
    def __init__(self, server: KafkaServer) -> None:
        self.server = server
        cfg = server.config
        self.num_partitions = cfg["offsets.topic.num.partitions"]
        self.coordinator = GroupCoordinator(self.append_records, GroupCoordinatorConfig(
            offsets_topic_num_partitions=self.num_partitions,
            group_initial_rebalance_delay_ms=cfg["group.initial.rebalance.delay.ms"],
            group_min_session_timeout_ms=cfg["group.min.session.timeout.ms"],
            group_max_session_timeout_ms=cfg["group.max.session.timeout.ms"],
            group_max_size=cfg["group.max.size"],
            offset_metadata_max_bytes=cfg["offset.metadata.max.bytes"],
            offsets_retention_ms=cfg["offsets.retention.minutes"] * 60_000,
            offsets_retention_check_interval_ms=cfg["offsets.retention.check.interval.ms"],
        ))
        self._loads: dict[int, asyncio.Task] = {}
        self._creating: asyncio.Task | None = None
        server.replica_manager.on_leadership_change.append(self.on_leadership_change)

    def partition_for(self, group_id: str) -> int:
        return self.coordinator.partition_for(group_id)

    # ---- the offsets topic
    def offsets_topic_ready(self) -> bool:
        return GROUP_METADATA_TOPIC in self.server.metadata_cache.topics

    def ensure_offsets_topic(self) -> None:
        """Start creating __consumer_offsets if it does not exist (FindCoordinator answers
        COORDINATOR_NOT_AVAILABLE meanwhile, and clients retry)."""
        if self.offsets_topic_ready() or (self._creating is not None and not self._creating.done()):
            return
        cfg = self.server.config
        assert self.server.controller is not None
        self._creating = asyncio.ensure_future(self.server.controller.admin.ensure_internal_topic(
            GROUP_METADATA_TOPIC, self.num_partitions, cfg["offsets.topic.replication.factor"],
            {"cleanup.policy": "compact", "segment.bytes": str(cfg["offsets.topic.segment.bytes"]),
             "compression.type": "producer"}))

    # ---- appends
    async def append_records(self, partition: int, records: list[tuple[bytes, bytes | None]]) -> int:
        now = int(time.time() * 1000)
        batch = build_batch([(k, v, [], now) for k, v in records])
        tp = TopicPartition(GROUP_METADATA_TOPIC, partition)
        rm = self.server.replica_manager
        result: Any = rm.append_records(self.server.config["offsets.commit.timeout.ms"], -1,
                                        {tp: memoryview(bytearray(batch))}, internal_topics_allowed=True)
        if isinstance(result, asyncio.Future):
            result = await result
        r = result[tp]
        if r.error != ErrorCode.NONE:
            raise KafkaApiError(r.error, f"append to {tp} failed: {r.error_message or r.error.name}")
        return r.last_offset

    # ---- ownership
    def on_leadership_change(self, new_leaders: list[Partition], new_followers: list[Partition]) -> None:
        for p in new_followers:
            if p.topic_partition.topic == GROUP_METADATA_TOPIC:
                self.on_resignation(p.topic_partition.partition)
        for p in new_leaders:
            if p.topic_partition.topic == GROUP_METADATA_TOPIC:
                self._start_load(p)

    def _start_load(self, partition: Partition) -> None:
        pid = partition.topic_partition.partition
        old = self._loads.pop(pid, None)
        if old is not None:
            old.cancel()
        self.coordinator.begin_loading(pid)
        self._loads[pid] = asyncio.ensure_future(self._load(partition, partition.leader_epoch))

    async def _load(self, partition: Partition, epoch: int) -> None:
        pid = partition.topic_partition.partition
        t0 = time.monotonic()
        log_ = partition.log
        assert log_ is not None
        offset = log_.log_start_offset
        try:
            while partition.is_leader and partition.leader_epoch == epoch:
                end = partition.high_watermark
                if offset >= end:
                    break
                info = log_.read(offset, LOAD_CHUNK_BYTES, max_offset=end, min_one_message=True)
                if info.records is None or info.records.length == 0:
                    break
                data = memoryview(info.records.read())
                pairs = []
                next_offset = offset
                for batch in iter_batches(data):
                    next_offset = batch.next_offset
                    if batch.is_control or batch.last_offset < offset:
                        continue
                    for rec in batch.records():
                        if rec.offset >= offset and rec.key is not None:
                            pairs.append((rec.key, rec.value))
                self.coordinator.load_partition(pid, pairs)
                if next_offset <= offset:
                    break
                offset = next_offset
                await asyncio.sleep(0)
        except (CorruptRecordError, InvalidRecordError) as e:
            log.error("%s: cannot load group metadata at offset %d: %s", partition.topic_partition, offset, e)
        if partition.is_leader and partition.leader_epoch == epoch:
            self.coordinator.on_partition_loaded(pid)
            log.debug("%s: group metadata loaded up to offset %d in %.0f ms", partition.topic_partition, offset,
                     (time.monotonic() - t0) * 1000)
        self._loads.pop(pid, None)

    def on_resignation(self, partition: int) -> None:
        task = self._loads.pop(partition, None)
        if task is not None:
            task.cancel()
        self.coordinator.unload_partition(partition)

    async def shutdown(self) -> None:
        for task in self._loads.values():
            task.cancel()
        self.coordinator.shutdown()


def start_group_coordinator(server: KafkaServer) -> GroupService:
    return GroupService(server)

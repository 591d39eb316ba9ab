"""JBOD in KRaft (KIP-858, Kafka 3.7+): which log directory holds each of our replicas, as the controller records
it, and log directories that failed (Kafka's AssignmentsManager and the directory part of ReplicaManager /
BrokerLifecycleManager).

Contract:
- `prefer_assigned_dirs(changes)`: a replica the metadata places in one of our online directories is created
  there (LogManager's preferred dir), as Kafka's getOrCreateLog honours the target directory id; a replica whose
  directory is MIGRATING, UNASSIGNED, LOST or not ours goes where the log manager chooses.
- `AssignmentsManager.run()` (from registration to shutdown): the replicas a published image changed (at once)
  and every local log (each `full_scan_every` x `interval_s`) whose directory id differs from the one the image
  gives our replica are sent to the controller in one AssignReplicasToDirs (v0: broker id and epoch,
  directories -> topic ids -> partitions), once metadata.version is at least 3.7-IV2 (level 17; before it the
  controller does not track directories). This covers a directory chosen for a new replica; a replica being
  moved by AlterReplicaLogDirs is left to `assign_move`, the log dir mover's `before_swap`, which assigns the
  destination before the moved log takes over. Per partition: NONE (the metadata will show it), UNKNOWN_TOPIC_ID /
  UNKNOWN_TOPIC_OR_PARTITION / NOT_LEADER_OR_FOLLOWER (dropped: the replica is going away), anything else at
  the next full scan; a top-level error or an unreachable controller makes the next interval a full scan.
- `mark_offline(path)`: the hook for a log directory failure (the storage layer does not report failures yet):
  the directory's id goes into every BrokerHeartbeat's OfflineLogDirs from then on (v1), so the controller moves
  leadership and ISR membership of the replicas there away, as Kafka's BrokerLifecycleManager.propagateDirectory
  Failure does. Offline directories are never assigned.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from broker.kraft.lifecycle import ControllerUnavailable
from protocol import ApiKey, request_class
from protocol.errors import ErrorCode
from storage import TopicPartition

if TYPE_CHECKING:
    from broker.kraft.broker_server import KRaftBroker
    from broker.kraft.delta import LocalReplicaChanges

log = logging.getLogger("broker.kraft.assignments")

IBP_3_7_IV2 = 17  # metadata.version level of directory assignment
_DROPPED = (ErrorCode.UNKNOWN_TOPIC_ID, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode.NOT_LEADER_OR_FOLLOWER)


class AssignmentsManager:
    def __init__(self, kraft: KRaftBroker, dir_ids: Mapping[Path, uuid.UUID], *, interval_s: float = 2.0,
                 full_scan_every: int = 10) -> None:
        self.kraft = kraft
        self.dir_ids = dict(dir_ids)
        self.dirs_by_id = {v: k for k, v in self.dir_ids.items()}
        self.offline: list[uuid.UUID] = []
        self.interval_s = interval_s
        self.wake = asyncio.Event()
        self._sent: dict[tuple[uuid.UUID, int], tuple[uuid.UUID, float]] = {}  # -> (dir, when) awaiting metadata
        # Replicas the last published images changed: checked at once; every log only each
        # `full_scan_every` intervals (a replica moved by AlterReplicaLogDirs shows up there).
        self._dirty: set[TopicPartition] = set()
        self.full_scan_s = interval_s * full_scan_every
        self._last_full = 0.0

    # ------------------------------------------------------------------ where replicas are created
    def prefer_assigned_dirs(self, changes: LocalReplicaChanges) -> None:
        log_manager = self.kraft.server.log_manager
        self._dirty.update(changes.directory_ids, changes.leaders, changes.followers)
        for tp, dir_id in changes.directory_ids.items():
            path = self.dirs_by_id.get(dir_id)
            if path is not None and dir_id not in self.offline and log_manager.get_log(tp) is None:
                log_manager.set_preferred_dir(tp, path)

    # ------------------------------------------------------------------ log directory failures
    def mark_offline(self, log_dir: Path) -> None:
        dir_id = self.dir_ids.get(Path(log_dir))
        if dir_id is not None and dir_id not in self.offline:
            log.error("log directory %s (%s) is offline", log_dir, dir_id)
            self.offline.append(dir_id)
            if self.kraft.lifecycle is not None:
                self.kraft.lifecycle.wake()

    # ------------------------------------------------------------------ assignments
    def pending(self, tps: Iterable[TopicPartition] | None = None) -> dict[uuid.UUID, dict[uuid.UUID, list[int]]]:
        """directory id -> topic id -> partitions (of `tps`, else every local log) whose log is there while the
        image says otherwise."""
        image = self.kraft.loader.image
        broker_id = self.kraft.broker_id
        log_manager = self.kraft.server.log_manager
        now = time.monotonic()
        out: dict[uuid.UUID, dict[uuid.UUID, list[int]]] = {}
        mover = self.kraft.server.log_dir_mover
        for tp in (log.topic_partition for log in log_manager.all_logs()) if tps is None else tps:
            if mover.future_log(tp) is not None:
                continue  # being moved: `assign_move` assigns the destination before the swap
            where = log_manager.dir_of(tp)
            dir_id = self.dir_ids.get(where) if where is not None else None
            topic = image.topics.by_name.get(tp.topic)
            partition = topic.partitions.get(tp.partition) if topic is not None else None
            if dir_id is None or dir_id in self.offline or partition is None or broker_id not in partition.replicas:
                continue
            if partition.directory(broker_id) == dir_id:
                self._sent.pop((topic.topic_id, tp.partition), None)
                continue
            sent = self._sent.get((topic.topic_id, tp.partition))
            if sent is not None and sent[0] == dir_id and now - sent[1] < self.interval_s:
                continue
            out.setdefault(dir_id, {}).setdefault(topic.topic_id, []).append(tp.partition)
        return out

    async def run(self) -> None:
        while True:
            try:
                async with asyncio.timeout(self.interval_s):
                    await self.wake.wait()
            except TimeoutError:
                pass
            self.wake.clear()
            level = self.kraft.loader.image.features.metadata_version or 0
            if level < IBP_3_7_IV2 or self.kraft.broker_epoch < 0:
                continue
            now = time.monotonic()
            if now - self._last_full >= self.full_scan_s:
                self._last_full, self._dirty = now, set()
                pending = self.pending()
            else:
                dirty, self._dirty = self._dirty, set()
                pending = self.pending(dirty)
            if pending:
                await self._assign(pending)

    async def assign_move(self, tp: TopicPartition, destination: Path) -> bool:
        """The log dir mover's `before_swap`: the destination of a replica being moved assigned at the controller
        (True), before the moved log takes over. Before metadata.version 3.7-IV2 there is nothing to assign."""
        if (self.kraft.loader.image.features.metadata_version or 0) < IBP_3_7_IV2:
            return True
        dir_id = self.dir_ids.get(destination)
        topic = self.kraft.loader.image.topics.by_name.get(tp.topic)
        if dir_id is None or topic is None:
            return True
        errors = await self._assign({dir_id: {topic.topic_id: [tp.partition]}})
        return errors.get((topic.topic_id, tp.partition)) in (ErrorCode.NONE, *_DROPPED)

    async def _assign(self, pending: dict[uuid.UUID, dict[uuid.UUID, list[int]]]
                      ) -> dict[tuple[uuid.UUID, int], ErrorCode]:
        Req = request_class(ApiKey.ASSIGN_REPLICAS_TO_DIRS)
        channel = self.kraft.channel
        assert channel is not None
        epoch = self.kraft.broker_epoch

        def build(v: int) -> Any:
            return Req[v](broker_id=self.kraft.broker_id, broker_epoch=epoch, directories=[
                Req.DirectoryData(id=d, topics=[
                    Req.DirectoryData.TopicData(topic_id=t, partitions=[
                        Req.DirectoryData.TopicData.PartitionData(partition_index=p) for p in sorted(ps)])
                    for t, ps in topics.items()])
                for d, topics in pending.items()])

        try:
            resp = await channel.send(build, ApiKey.ASSIGN_REPLICAS_TO_DIRS)
        except ControllerUnavailable as e:
            log.debug("AssignReplicasToDirs not sent: %s", e)
            self._last_full = 0.0
            return {}
        if resp.error_code != ErrorCode.NONE:
            log.info("AssignReplicasToDirs refused: %s", ErrorCode(resp.error_code).name)
            self._last_full = 0.0
            return {}
        now = time.monotonic()
        errors: dict[tuple[uuid.UUID, int], ErrorCode] = {}
        for d in resp.directories:
            for t in d.topics:
                for p in t.partitions:
                    error = errors[(t.topic_id, p.partition_index)] = ErrorCode(p.error_code)
                    if error == ErrorCode.NONE or error in _DROPPED:
                        # Awaiting the metadata (NONE), or not ours any more: not sent again for a while.
                        self._sent[(t.topic_id, p.partition_index)] = (d.id, now)
                    else:
                        log.info("assignment of %s-%d to %s failed: %s", t.topic_id, p.partition_index, d.id,
                                 error.name)
        return errors

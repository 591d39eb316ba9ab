"""Moving replicas between log dirs (Kafka's future logs and ReplicaAlterLogDirsThread), for AlterReplicaLogDirs.

Contract (one asyncio loop, like the ReplicaManager it serves):
- `move(tp, destination)` starts copying a hosted replica's log into a future log in `destination`
  (`LogManager.create_future_log`, named `<tp>.<uuid hex>-future`); a move of the same replica to another
  dir replaces it (the first future log is deleted); a move back to the dir the replica is in cancels it.
- One task per move copies whole batches, at most `chunk_bytes` per step, from the current log's log end
  side (`Log.read`, then `append_as_follower`, so offsets, leader epochs and producer state are kept), and
  follows the current log's log start offset; a current log that no longer holds what was copied (a
  follower's truncation, by offset or by leader epoch) restarts the copy. The partition keeps serving from
  the current log throughout.
- When the future log has caught up, in one step with nothing awaited between the check and the swap, the
  future log replaces the current one (`LogManager.replace_with_future_log`; the partition is given the new
  log with its high watermark) and the old directory is deleted as DeleteTopics deletes one. Cleaning of the
  log is paused during the move and the swap waits for a clean in progress to stop.
- `before_swap(tp, destination)` (a KRaft broker's: AssignReplicasToDirs, KIP-858), when set, is awaited the
  first time the future log has caught up; the swap happens only once it returned True (False: asked again after
  a pause, the copy going on meanwhile), at a later catch-up, as Kafka's ReplicaAlterLogDirsThread assigns the
  future replica's directory before promoting it.
- `future_log(tp)` is what DescribeLogDirs lists as the future replica (`is_future_key`). A move whose replica
  goes away (StopReplica, LeaderAndIsr removing it) is dropped with its future log. A move cut short by a stop
  of the broker is not resumed (the future directory is removed at the next start).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from storage import Log, TopicPartition, UnexpectedAppendOffsetError

if TYPE_CHECKING:
    from broker.cluster.partition import Partition
    from broker.server.replica_manager import ReplicaManager
    from storage.cleaner import LogCleaner

log = logging.getLogger(__name__)


@dataclass
class FutureReplica:
    log: Log
    destination: Path
    task: asyncio.Task | None = None
    assigned: bool = False  # before_swap confirmed the destination


class ReplicaAlterLogDirsManager:
    def __init__(self, replica_manager: ReplicaManager, cleaner: LogCleaner | None = None,
                 chunk_bytes: int = 1 << 20) -> None:
        self.rm = replica_manager
        self.log_manager = replica_manager.log_manager
        self.cleaner = cleaner
        self.chunk_bytes = chunk_bytes
        self.futures: dict[TopicPartition, FutureReplica] = {}
        self.before_swap: Callable[[TopicPartition, Path], Awaitable[bool]] | None = None

    def future_log(self, tp: TopicPartition) -> Log | None:
        future = self.futures.get(tp)
        return future.log if future is not None else None

    def move(self, tp: TopicPartition, destination: Path) -> None:
        current = self.futures.get(tp)
        if current is not None and current.destination == destination:
            return
        if current is not None:
            self.cancel(tp)
        if self.log_manager.dir_of(tp) == destination:
            return
        future = FutureReplica(self.log_manager.create_future_log(tp, destination), destination)
        self.futures[tp] = future
        if self.cleaner is not None:
            self.cleaner.abort_and_pause(tp, timeout=0)
        future.task = asyncio.get_running_loop().create_task(self._copy(tp, future), name=f"move-{tp}")
        log.info("%s: moving the replica from %s to %s", tp, self.log_manager.dir_of(tp), destination)

    def cancel(self, tp: TopicPartition) -> None:
        future = self.futures.pop(tp, None)
        if future is None:
            return
        if future.task is not None:
            future.task.cancel()
        self.log_manager.delete_future_log(future.log)
        if self.cleaner is not None:
            self.cleaner.resume(tp)

    async def shutdown(self) -> None:
        tasks = [f.task for f in self.futures.values() if f.task is not None]
        for tp in list(self.futures):
            self.cancel(tp)
        if tasks:
            await asyncio.wait(tasks)

    async def _copy(self, tp: TopicPartition, future: FutureReplica) -> None:
        try:
            while True:
                partition = self.rm.get_partition(tp)
                current = partition.log if partition is not None else None
                if current is None or self.log_manager.get_log(tp) is not current:
                    log.info("%s: replica gone; its move to %s is dropped", tp, future.destination)
                    self._forget(tp, future)
                    return
                target = future.log
                if self._diverged(current, target) or target.log_end_offset < current.log_start_offset:
                    target.truncate_fully_and_start_at(current.log_start_offset)
                if target.log_start_offset < current.log_start_offset:
                    target.maybe_increment_log_start_offset(min(current.log_start_offset, target.log_end_offset))
                if target.log_end_offset == current.log_end_offset and not future.assigned:
                    future.assigned = self.before_swap is None or await self.before_swap(tp, future.destination)
                    if not future.assigned:
                        await asyncio.sleep(0.5)
                    continue
                if target.log_end_offset == current.log_end_offset:
                    if self.cleaner is None or not self.cleaner.is_cleaning(tp):
                        # The swap is one step of the event loop: appends the current log's writer still holds
                        # are waited for and copied in that same step, or the moved log would miss them.
                        if current.appended_end_offset != current.log_end_offset:
                            current.wait_for_writes()
                            while target.log_end_offset < current.log_end_offset:
                                if not self._copy_chunk(current, target):
                                    break
                            if target.log_end_offset != current.log_end_offset:
                                continue
                        self._swap(tp, future, partition)
                        return
                else:
                    self._copy_chunk(current, target)
                await asyncio.sleep(0.01 if target.log_end_offset == current.log_end_offset else 0)
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("%s: moving the replica to %s failed", tp, future.destination)
            self._forget(tp, future)

    def _copy_chunk(self, current: Log, target: Log) -> bool:
        """Copy the next batches; False when there was nothing to copy."""
        read = current.read(target.log_end_offset, self.chunk_bytes)
        if read.records is None:
            return False
        records = read.records.read()
        try:
            target.append_as_follower(records)
        except UnexpectedAppendOffsetError as e:
            if not target.starts_inside(e):
                raise
            # The current log starts inside its first batch (DeleteRecords): so does the copy.
            target.truncate_fully_and_start_at(e.first_offset)
            target.append_as_follower(records)
        return True

    @staticmethod
    def _diverged(current: Log, target: Log) -> bool:
        """The current log no longer holds what was copied: truncated below it, or (a follower truncated by leader
        epoch and written again) its copy of the target's latest epoch ends before the target's end."""
        if target.log_end_offset > current.log_end_offset:
            return True
        latest = target.leader_epoch_cache.latest_epoch()
        if latest is None:
            return False
        epoch, end = current.leader_epoch_cache.end_offset_for(latest, current.log_end_offset)
        return epoch != latest or end < target.log_end_offset

    def _swap(self, tp: TopicPartition, future: FutureReplica, partition: Partition) -> None:
        hw = partition.high_watermark
        moved = self.log_manager.replace_with_future_log(tp, future.log, future.destination)
        self.rm.set_partition_log(partition, moved, hw)
        self.futures.pop(tp, None)
        if self.cleaner is not None:
            self.cleaner.resume(tp)
        log.info("%s: replica moved to %s (log end offset %d)", tp, future.destination, moved.log_end_offset)

    def _forget(self, tp: TopicPartition, future: FutureReplica) -> None:
        if self.futures.get(tp) is future:
            future.task = None
            self.cancel(tp)

"""A leader's ISR changes (Kafka's Partition.maybeExpandIsr / maybeShrinkIsr and its pending ISR states).

Contract: `IsrManagement` is mixed into `Partition` and is the only code that proposes a new ISR. The
leader proposes through `isr_updater` (the broker's: an AlterPartition to the controller, or a
version-checked write to the metadata store; it answers the committed ISR and partition epoch, or None
when refused), one change at a time:
- expand (`maybe_expand_isr`, after a follower's fetch): a follower outside the ISR whose log end offset
  has reached both the high watermark and the start offset of the current leader epoch;
- shrink (`maybe_shrink_isr`, on the ReplicaManager's timer): the followers that have not caught up with
  the leader within replica.lag.time.max.ms.
While a proposal is in flight (Kafka's PendingExpandIsr / PendingShrinkIsr) `pending_isr` holds it and
the HW counts the *maximal* ISR (committed ∪ proposed: an expanding replica counts at once, a shrinking one
until the change is committed), while min.insync.replicas counts the committed `isr` only. The answer is
applied only if this broker still leads in the same leader epoch; then the HW may move (a shrink can
unblock it) and `on_isr_change` lets the ReplicaManager check its purgatories. Each proposal is a task the
partition keeps until it ends (`wait_for_isr_updates`, `cancel_isr_updates`): none is left untracked.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable

from broker.cluster.replica import Replica
from storage import TopicPartition

log = logging.getLogger("broker.partition")

# Called with the partition (the `Partition` this half belongs to), the proposed ISR and the partition epoch.
IsrUpdater = Callable[["IsrManagement", list[int], int], Awaitable[tuple[list[int], int] | None]]


class IsrManagement:
    """The ISR half of `Partition`: state and proposals. The partition provides the attributes below."""

    topic_partition: TopicPartition
    local_broker_id: int
    leader_epoch: int
    leader_epoch_start_offset: int
    partition_epoch: int
    replica_lag_time_max_ms: int
    remote_replicas: dict[int, Replica]
    _high_watermark: int
    is_leader: bool  # a property of Partition
    replica_eligible: Callable[[int], bool]  # KRaft's isReplicaIsrEligible (always True in ZooKeeper mode)
    maybe_increment_leader_hw: Callable[[int], bool]

    def __init__(self) -> None:
        self.isr: list[int] = []
        self.pending_isr: list[int] | None = None
        self.isr_updater: IsrUpdater | None = None
        # Called after a committed ISR change: a shrink can let the HW move and acks=all produces finish.
        self.on_isr_change: Callable[[IsrManagement], None] | None = None  # called with the Partition
        self._isr_updates: set[asyncio.Task] = set()

    @property
    def maximal_isr(self) -> list[int]:
        if self.pending_isr is None:
            return self.isr
        return sorted(set(self.isr) | set(self.pending_isr))

    def _isr_change_in_flight(self) -> bool:
        return self.pending_isr is not None

    def maybe_expand_isr(self, replica: Replica) -> None:
        if self.isr_updater is None or self._isr_change_in_flight():
            return
        if replica.broker_id in self.isr:
            return
        if replica.log_end_offset >= self._high_watermark and \
                replica.log_end_offset >= self.leader_epoch_start_offset and self.replica_eligible(replica.broker_id):
            self._propose_isr(sorted(set(self.isr) | {replica.broker_id}), "expand")

    def maybe_shrink_isr(self, now_ms: int) -> None:
        if not self.is_leader or self.isr_updater is None or self._isr_change_in_flight():
            return
        out_of_sync = [
            rid for rid in self.isr
            if rid != self.local_broker_id and rid in self.remote_replicas
            and now_ms - self.remote_replicas[rid].last_caught_up_time_ms > self.replica_lag_time_max_ms
        ]
        if out_of_sync:
            log.info("%s: shrinking ISR %s, out of sync %s (log end offsets %s, high watermark %d)",
                     self.topic_partition, self.isr, out_of_sync,
                     {r: self.remote_replicas[r].log_end_offset for r in out_of_sync}, self._high_watermark)
            self._propose_isr([r for r in self.isr if r not in out_of_sync], "shrink")

    def _propose_isr(self, new_isr: list[int], kind: str) -> None:
        assert self.isr_updater is not None
        self.pending_isr = new_isr
        epoch = self.leader_epoch

        async def commit() -> None:
            try:
                result = await self.isr_updater(self, new_isr, self.partition_epoch)  # type: ignore[misc]
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("%s: ISR %s failed", self.topic_partition, kind)
                result = None
            if self.leader_epoch != epoch or not self.is_leader:
                return
            self.pending_isr = None
            if result is not None:
                self.isr, self.partition_epoch = list(result[0]), result[1]
                log.info("%s: ISR now %s (partition epoch %d)", self.topic_partition, self.isr,
                         self.partition_epoch)
            # Kafka's maybeIncrementLeaderHW + tryCompleteDelayedRequests after an ISR update: without the
            # shrunk-away replica the HW may move now, not only at the next follower fetch.
            self.maybe_increment_leader_hw(time.time_ns() // 1_000_000)
            if self.on_isr_change is not None:
                self.on_isr_change(self)

        task = asyncio.get_running_loop().create_task(commit(), name=f"isr-{kind}-{self.topic_partition}")
        self._isr_updates.add(task)
        task.add_done_callback(self._isr_updates.discard)

    async def wait_for_isr_updates(self) -> None:
        """Until every ISR proposal in flight has been answered (or cancelled)."""
        while self._isr_updates:
            await asyncio.gather(*self._isr_updates, return_exceptions=True)

    def cancel_isr_updates(self) -> None:
        for task in self._isr_updates:
            task.cancel()

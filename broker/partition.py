"""A partition replica on this broker: leader or follower state, ISR, high watermark, log end offsets.

This is Kafka's `Partition`: it holds the rules and the state, does no networking, and touches disk only
through its `Log`. The ReplicaManager calls it; the fetchers and the server do the I/O.

The high watermark (Kafka's `maybeIncrementLeaderHW`):
  The leader's HW is the smallest log end offset among the leader and every replica that is in the
  (maximal) ISR, or that has caught up to the leader within `replica.lag.time.max.ms`. It never moves
  backwards on the leader. A record is committed — visible to read-uncommitted consumers and
  acknowledged for acks=all — only when the HW is past it.
A follower's HW is min(its own LEO, the HW in the leader's fetch response).

ISR changes (Kafka's PendingExpandIsr / PendingShrinkIsr): the leader proposes a new ISR through
`isr_updater` (the metadata store, with a version check) and, while the proposal is in flight, counts
the *maximal* ISR (committed ∪ proposed) for the HW and the committed one for `min.insync.replicas`.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from broker.errors import KafkaApiError
from protocol.errors import ErrorCode
from storage import FetchDataInfo, Log, OffsetOutOfRangeError, TopicPartition

log = logging.getLogger("broker.partition")

# Fetch isolation (Kafka's FetchIsolation)
FETCH_LOG_END = 0  # followers
FETCH_HIGH_WATERMARK = 1  # consumers, read_uncommitted
FETCH_TXN_COMMITTED = 2  # consumers, read_committed


@dataclass
class PartitionState:
    """What a LeaderAndIsr request (or the local controller) says about one partition."""

    leader: int
    leader_epoch: int
    isr: list[int]
    replicas: list[int]
    partition_epoch: int = 0
    controller_epoch: int = 0
    adding_replicas: list[int] = field(default_factory=list)
    removing_replicas: list[int] = field(default_factory=list)
    is_new: bool = False


@dataclass
class Replica:
    """The leader's view of a follower (Kafka's `Replica` / `ReplicaState`)."""

    broker_id: int
    log_end_offset: int = -1
    log_start_offset: int = -1
    last_fetch_leader_log_end_offset: int = 0
    last_fetch_time_ms: int = 0
    last_caught_up_time_ms: int = 0

    def update_fetch_state(self, fetch_offset: int, log_start_offset: int, fetch_time_ms: int,
                           leader_end_offset: int) -> None:
        # A follower is caught up at the time of a fetch if it asked for the leader's LEO; it was caught
        # up at the previous fetch if it now asks for at least what the leader's LEO was then.
        if fetch_offset >= leader_end_offset:
            self.last_caught_up_time_ms = max(self.last_caught_up_time_ms, fetch_time_ms)
        elif fetch_offset >= self.last_fetch_leader_log_end_offset:
            self.last_caught_up_time_ms = max(self.last_caught_up_time_ms, self.last_fetch_time_ms)
        self.log_end_offset = fetch_offset
        self.log_start_offset = log_start_offset
        self.last_fetch_leader_log_end_offset = leader_end_offset
        self.last_fetch_time_ms = fetch_time_ms

    def reset(self, now_ms: int, leader_end_offset: int, in_sync: bool) -> None:
        self.log_end_offset = -1
        self.log_start_offset = -1
        self.last_fetch_leader_log_end_offset = leader_end_offset
        self.last_fetch_time_ms = now_ms if in_sync else 0
        self.last_caught_up_time_ms = now_ms if in_sync else 0


@dataclass
class LogReadResult:
    info: FetchDataInfo | None
    high_watermark: int
    last_stable_offset: int
    log_start_offset: int
    log_end_offset: int
    error: ErrorCode = ErrorCode.NONE
    diverging_epoch: tuple[int, int] | None = None  # (epoch, end_offset) for a follower that diverged
    preferred_read_replica: int = -1


IsrUpdater = Callable[["Partition", list[int], int], Awaitable[tuple[list[int], int] | None]]


class Partition:
    def __init__(self, tp: TopicPartition, local_broker_id: int, *, replica_lag_time_max_ms: int,
                 min_insync_replicas: int = 1) -> None:
        self.topic_partition = tp
        self.local_broker_id = local_broker_id
        self.replica_lag_time_max_ms = replica_lag_time_max_ms
        self.min_insync_replicas = min_insync_replicas
        self.log: Log | None = None
        self.topic_id = None
        self.leader_id: int | None = None
        self.leader_epoch = -1
        self.leader_epoch_start_offset = -1
        self.partition_epoch = 0
        self.controller_epoch = 0
        self.assigned_replicas: list[int] = []
        self.isr: list[int] = []
        self.pending_isr: list[int] | None = None
        self.remote_replicas: dict[int, Replica] = {}
        self.high_watermark = 0
        self.isr_updater: IsrUpdater | None = None
        # Called after a committed ISR change: a shrink can let the HW move and acks=all produces finish.
        self.on_isr_change: Callable[[Partition], None] | None = None

    def __repr__(self) -> str:
        return f"Partition {self.topic_partition}"

    # ---- role
    @property
    def is_leader(self) -> bool:
        return self.leader_id == self.local_broker_id

    @property
    def log_end_offset(self) -> int:
        return self.log.log_end_offset if self.log is not None else 0

    @property
    def log_start_offset(self) -> int:
        return self.log.log_start_offset if self.log is not None else 0

    @property
    def maximal_isr(self) -> list[int]:
        if self.pending_isr is None:
            return self.isr
        return sorted(set(self.isr) | set(self.pending_isr))

    def make_leader(self, state: PartitionState, now_ms: int) -> bool:
        """Become (or stay) leader. Returns True if this broker was not the leader before."""
        assert self.log is not None
        was_leader = self.is_leader
        self.controller_epoch = state.controller_epoch
        self.assigned_replicas = list(state.replicas)
        self.isr = list(state.isr)
        self.pending_isr = None
        self.partition_epoch = state.partition_epoch
        leo = self.log.log_end_offset
        if state.leader_epoch != self.leader_epoch or not was_leader:
            # The new epoch starts at our LEO: followers truncate to it if they diverged (KIP-101).
            self.log.leader_epoch_cache.assign(state.leader_epoch, leo)
            self.leader_epoch_start_offset = leo
            log.info("%s: leader at epoch %d from offset %d, ISR %s, high watermark %d",
                     self.topic_partition, state.leader_epoch, leo, state.isr, self.high_watermark)
        self.leader_epoch = state.leader_epoch
        self.leader_id = self.local_broker_id
        self.remote_replicas = {
            r: self.remote_replicas.get(r) or Replica(r) for r in state.replicas if r != self.local_broker_id
        }
        for rid, replica in self.remote_replicas.items():
            if not was_leader:
                replica.reset(now_ms, leo, rid in self.isr)
            else:
                # Kafka's resetReplicaState for a re-elected leader: a follower the controller took out of the
                # ISR (dead, shutting down) must not hold the HW back for replica.lag.time.max.ms as "caught up".
                replica.last_caught_up_time_ms = now_ms if rid in self.isr else 0
        self.high_watermark = min(max(self.high_watermark, self.log.log_start_offset), leo)
        self.maybe_increment_leader_hw(now_ms)
        return not was_leader

    def make_follower(self, state: PartitionState) -> bool:
        """Become a follower of `state.leader`. Returns True if the leader or epoch changed."""
        changed = self.leader_id != state.leader or self.leader_epoch != state.leader_epoch
        self.controller_epoch = state.controller_epoch
        self.assigned_replicas = list(state.replicas)
        self.isr = list(state.isr)
        self.pending_isr = None
        self.partition_epoch = state.partition_epoch
        self.leader_epoch = state.leader_epoch
        self.leader_epoch_start_offset = -1
        self.leader_id = state.leader
        self.remote_replicas = {}
        if self.log is not None:
            self.high_watermark = min(self.high_watermark, self.log.log_end_offset)
        return changed

    # ---- leader epoch checks
    def check_leader_epoch(self, current_leader_epoch: int, require_leader: bool = True) -> None:
        if require_leader and not self.is_leader:
            raise KafkaApiError(ErrorCode.NOT_LEADER_OR_FOLLOWER, f"{self.topic_partition}: not the leader")
        if current_leader_epoch >= 0:
            if current_leader_epoch < self.leader_epoch:
                raise KafkaApiError(ErrorCode.FENCED_LEADER_EPOCH,
                                    f"{self.topic_partition}: epoch {current_leader_epoch} < {self.leader_epoch}")
            if current_leader_epoch > self.leader_epoch:
                raise KafkaApiError(ErrorCode.UNKNOWN_LEADER_EPOCH,
                                    f"{self.topic_partition}: epoch {current_leader_epoch} > {self.leader_epoch}")

    # ---- high watermark
    def maybe_increment_leader_hw(self, now_ms: int) -> bool:
        """Advance the HW to the smallest LEO among the leader and the replicas that count. True if it moved."""
        if self.log is None or not self.is_leader:
            return False
        new_hw = self.log.log_end_offset
        maximal = self.maximal_isr
        for rid, replica in self.remote_replicas.items():
            # An ISR member whose LEO is still unknown (-1) holds the HW where it is, as in Kafka.
            if rid in maximal or now_ms - replica.last_caught_up_time_ms <= self.replica_lag_time_max_ms:
                new_hw = min(new_hw, replica.log_end_offset)
        if new_hw > self.high_watermark:
            log.debug("%s: high watermark %d -> %d", self.topic_partition, self.high_watermark, new_hw)
            self.high_watermark = new_hw
            return True
        return False

    def update_follower_high_watermark(self, leader_high_watermark: int) -> bool:
        new_hw = min(self.log_end_offset, leader_high_watermark)
        if new_hw != self.high_watermark and new_hw >= 0:
            self.high_watermark = new_hw
            return True
        return False

    # ---- follower fetch state on the leader
    def update_follower_fetch_state(self, replica_id: int, fetch_offset: int, log_start_offset: int,
                                    now_ms: int) -> bool:
        """Record a follower's fetch; maybe expand the ISR; return True if the HW moved."""
        replica = self.remote_replicas.get(replica_id)
        if replica is None:
            raise KafkaApiError(ErrorCode.NOT_LEADER_OR_FOLLOWER,
                                f"{self.topic_partition}: broker {replica_id} is not a replica")
        replica.update_fetch_state(fetch_offset, log_start_offset, now_ms, self.log_end_offset)
        self.maybe_expand_isr(replica)
        return self.maybe_increment_leader_hw(now_ms)

    def _isr_change_in_flight(self) -> bool:
        return self.pending_isr is not None

    def maybe_expand_isr(self, replica: Replica) -> None:
        if self.isr_updater is None or self._isr_change_in_flight():
            return
        if replica.broker_id in self.isr:
            return
        if replica.log_end_offset >= self.high_watermark and \
                replica.log_end_offset >= self.leader_epoch_start_offset:
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
                     {r: self.remote_replicas[r].log_end_offset for r in out_of_sync}, self.high_watermark)
            self._propose_isr([r for r in self.isr if r not in out_of_sync], "shrink")

    def _propose_isr(self, new_isr: list[int], kind: str) -> None:
        import asyncio

        assert self.isr_updater is not None
        self.pending_isr = new_isr
        epoch = self.leader_epoch

        async def commit() -> None:
            try:
                result = await self.isr_updater(self, new_isr, self.partition_epoch)  # type: ignore[misc]
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

        asyncio.ensure_future(commit())

    # ---- acks=all bookkeeping
    def check_enough_replicas_reach_offset(self, required_offset: int) -> tuple[bool, ErrorCode]:
        """Kafka's checkEnoughReplicasReachOffset for DelayedProduce."""
        if not self.is_leader:
            return True, ErrorCode.NOT_LEADER_OR_FOLLOWER
        if self.high_watermark >= required_offset:
            if len(self.isr) >= self.min_insync_replicas:
                return True, ErrorCode.NONE
            return True, ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND
        return False, ErrorCode.NONE

    # ---- reads
    def read_records(self, fetch_offset: int, current_leader_epoch: int, max_bytes: int, isolation: int,
                     fetch_only_from_leader: bool, min_one_message: bool,
                     last_fetched_epoch: int = -1) -> LogReadResult:
        self.check_leader_epoch(current_leader_epoch, require_leader=fetch_only_from_leader)
        if self.log is None:
            raise KafkaApiError(ErrorCode.NOT_LEADER_OR_FOLLOWER, f"{self.topic_partition}: no local log")
        log_ = self.log
        hw = self.high_watermark
        leo = log_.log_end_offset
        if last_fetched_epoch >= 0 and isolation == FETCH_LOG_END:
            # KIP-320 / KIP-392: tell a follower where its log diverges instead of serving data.
            epoch, end_offset = log_.leader_epoch_cache.end_offset_for(last_fetched_epoch, leo)
            if epoch < last_fetched_epoch or end_offset < fetch_offset:
                return LogReadResult(None, hw, hw, log_.log_start_offset, leo,
                                     diverging_epoch=(epoch, end_offset))
        if isolation == FETCH_LOG_END:
            max_offset = None
        else:
            max_offset = hw
        try:
            info = log_.read(fetch_offset, max_bytes, max_offset=max_offset, min_one_message=min_one_message)
        except OffsetOutOfRangeError as e:
            raise KafkaApiError(ErrorCode.OFFSET_OUT_OF_RANGE, f"{self.topic_partition}: {e}") from None
        return LogReadResult(info, hw, hw, log_.log_start_offset, leo)

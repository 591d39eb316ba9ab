"""A partition replica on this broker: its log, leader or follower state, ISR, high watermark.

This is Kafka's `Partition`, and it owns its `Log`: every read (consumer and follower fetches, ListOffsets,
OffsetForLeaderEpoch, a delayed fetch's end offset), every append (`append_records_to_leader`,
`append_records_to_follower`), every truncation (`truncate_to`, `truncate_fully_and_start_at`) and every
move of the log start offset (`delete_records_on_leader`, `follow_leader_log_start_offset`) goes through
it, so the rules below sit next to each change of the log they depend on. Nothing else calls the log's
mutators or sets the high watermark. It does no networking: the ReplicaManager and the replica fetcher
call it, and it raises `KafkaApiError` with the code the client gets.

The high watermark (Kafka's `maybeIncrementLeaderHW`):
  The leader's HW is the smallest log end offset among the leader and every replica that is in the
  (maximal) ISR, or that has caught up to the leader within `replica.lag.time.max.ms`. It never moves
  backwards on the leader. A record is committed — visible to read-uncommitted consumers and
  acknowledged for acks=all — only when the HW is past it. A follower's fetch counts only when its log
  does not diverge from ours (no diverging epoch in the answer).
A follower's HW is min(its own LEO, the HW in the leader's fetch response); truncation lowers it to the
new LEO, a restart of the log sets it to the new start.
min.insync.replicas: an acks=all append is refused (NOT_ENOUGH_REPLICAS) while the committed ISR is
smaller, and answered NOT_ENOUGH_REPLICAS_AFTER_APPEND if the ISR shrank below it before the HW got there.

The last stable offset (Kafka's lastStableOffset): the log's first unstable offset (the first offset of
the earliest transaction still open or whose marker is not below the HW) when it is below the HW, else the
HW; never above the HW. Every HW move is reported to the log (`Log.update_high_watermark`, in
`_set_high_watermark`, the one place the HW changes), leader and follower alike, so completed transactions
stop holding the LSO back once replicated. read_committed fetches read up to the LSO with the aborted
transactions of the range; ListOffsets for read_committed answers from the LSO.

ISR changes (expand, shrink, the proposal in flight and the *maximal* ISR the HW counts meanwhile) are the
`IsrManagement` half of this class, in partition_isr.py; the leader's view of each follower is a `Replica`
(replica.py).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field

from broker.cluster.partition_isr import IsrManagement
from broker.cluster.replica import Replica
from broker.common.errors import KafkaApiError
from protocol.errors import ErrorCode
from storage import (
    AppendOrigin,
    FetchDataInfo,
    KafkaStorageError,
    Log,
    LogAppendInfo,
    LogConfig,
    LogOffsetMetadata,
    OffsetOutOfRangeError,
    StorageError,
    TopicPartition,
    UnexpectedAppendOffsetError,
    VerificationGuard,
)

log = logging.getLogger("broker.partition")

# Fetch isolation (Kafka's FetchIsolation)
FETCH_LOG_END = 0  # followers
FETCH_HIGH_WATERMARK = 1  # consumers, read_uncommitted
FETCH_TXN_COMMITTED = 2  # consumers, read_committed

# ListOffsets' special timestamps (Kafka's ListOffsetsRequest)
LATEST_TIMESTAMP = -1
EARLIEST_TIMESTAMP = -2
MAX_TIMESTAMP = -3
EARLIEST_LOCAL_TIMESTAMP = -4
LATEST_TIERED_TIMESTAMP = -5
EARLIEST_PENDING_UPLOAD_TIMESTAMP = -6  # ListOffsets v11 (KIP-1023)

DELETE_RECORDS_HIGH_WATERMARK = -1  # DeleteRecords: "up to the high watermark"


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
    leader_recovery_state: int = 0  # KIP-704: 1 (RECOVERING) after an unclean election; the leader recovers it


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
    high_watermark_moved: bool = False  # a follower's fetch advanced the leader's HW


@dataclass(frozen=True, slots=True)
class LeaderAppendResult:
    info: LogAppendInfo
    log_append_time: int  # -1 unless the topic uses LogAppendTime
    high_watermark_moved: bool


class Partition(IsrManagement):
    def __init__(self, tp: TopicPartition, local_broker_id: int, *, replica_lag_time_max_ms: int,
                 min_insync_replicas: int = 1) -> None:
        super().__init__()  # the ISR state: isr, pending_isr, isr_updater, on_isr_change
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
        # KRaft (Kafka's isReplicaIsrEligible): a caught-up follower counts for the HW only if its broker is
        # unfenced and not shutting down; the KRaft publisher sets this, ZooKeeper mode keeps every one.
        self.replica_eligible: Callable[[int], bool] = lambda _: True
        self.assigned_replicas: list[int] = []
        self.remote_replicas: dict[int, Replica] = {}
        self._high_watermark = 0
        # Where the HW sits in the log, worked out when a delayed fetch first asks (Kafka keeps it beside the HW).
        self._high_watermark_metadata: LogOffsetMetadata | None = None

    def __repr__(self) -> str:
        return f"Partition {self.topic_partition}"

    # ---- state
    @property
    def is_leader(self) -> bool:
        return self.leader_id == self.local_broker_id

    @property
    def high_watermark(self) -> int:
        return self._high_watermark

    @property
    def last_stable_offset(self) -> int:
        """The log's first unstable offset when it is below the HW, else the HW (Kafka's lastStableOffset)."""
        hw = self._high_watermark
        first = self.log.first_unstable_offset if self.log is not None else None
        return first if first is not None and first < hw else hw

    @property
    def log_end_offset(self) -> int:
        return self.log.log_end_offset if self.log is not None else 0

    @property
    def log_start_offset(self) -> int:
        return self.log.log_start_offset if self.log is not None else 0

    def set_log(self, log_: Log, checkpoint_high_watermark: int) -> None:
        """Attach the local log; the HW starts at the checkpointed one, within [log start, log end]."""
        self.log = log_
        self._set_high_watermark(max(min(checkpoint_high_watermark, log_.log_end_offset), log_.log_start_offset))

    def update_config(self, config: LogConfig, min_insync_replicas: int) -> None:
        """A topic config change: the log's settings and min.insync.replicas."""
        self.min_insync_replicas = min_insync_replicas
        if self.log is not None:
            self.log.update_config(config)

    def _set_high_watermark(self, offset: int) -> None:
        self._high_watermark = offset
        self._high_watermark_metadata = None
        if self.log is not None:
            self.log.update_high_watermark(offset)

    # ---- role
    def make_leader(self, state: PartitionState, now_ms: int) -> bool:
        """Become (or stay) leader. Returns True if this broker was not the leader before."""
        assert self.log is not None
        # The new epoch starts at the end of everything appended: appends the writer still holds count (a new
        # epoch placed below them would make followers truncate what they have and fetch it again, forever).
        self.log.wait_for_writes()
        was_leader = self.is_leader
        self.controller_epoch = state.controller_epoch
        self.assigned_replicas = list(state.replicas)
        self.isr = list(state.isr)
        self.pending_isr = None
        self.partition_epoch = state.partition_epoch
        leo = self.log.log_end_offset
        if state.leader_epoch != self.leader_epoch or not was_leader:
            # The new epoch starts at our LEO: followers truncate to it if they diverged (KIP-101). Written to the
            # checkpoint off the event loop, and before any data of the epoch (Log.flush_metadata_files).
            self.log.maybe_assign_epoch_start_offset(state.leader_epoch, leo)
            self.leader_epoch_start_offset = leo
            log.info("%s: leader at epoch %d from offset %d, ISR %s, high watermark %d",
                     self.topic_partition, state.leader_epoch, leo, state.isr, self._high_watermark)
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
        hw = min(max(self._high_watermark, self.log.log_start_offset), leo)
        if hw != self._high_watermark:
            self._set_high_watermark(hw)
        self.maybe_increment_leader_hw(now_ms)
        return not was_leader

    def make_follower(self, state: PartitionState) -> bool:
        """Become a follower of `state.leader`. Returns True if the leader or epoch changed."""
        changed = self.leader_id != state.leader or self.leader_epoch != state.leader_epoch
        if self.log is not None:
            self.log.wait_for_writes()  # what we appended as leader is in the log before we follow
        self.controller_epoch = state.controller_epoch
        self.assigned_replicas = list(state.replicas)
        self.isr = list(state.isr)
        self.pending_isr = None
        self.partition_epoch = state.partition_epoch
        self.leader_epoch = state.leader_epoch
        self.leader_epoch_start_offset = -1
        self.leader_id = state.leader
        self.remote_replicas = {}
        if self.log is not None and self._high_watermark > self.log.log_end_offset:
            self._set_high_watermark(self.log.log_end_offset)
        return changed

    def stop(self) -> None:
        """StopReplica: no leadership, no ISR change in flight (the log stays until it is deleted)."""
        self.leader_id = None
        self.pending_isr = None
        self.cancel_isr_updates()

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

    def _local_log(self, current_leader_epoch: int = -1, require_leader: bool = True) -> Log:
        """Kafka's localLogWithEpochOrThrow."""
        self.check_leader_epoch(current_leader_epoch, require_leader)
        if self.log is None:
            raise KafkaApiError(ErrorCode.NOT_LEADER_OR_FOLLOWER, f"{self.topic_partition}: no local log")
        return self.log

    # ---- high watermark
    @property
    def effective_min_isr(self) -> int:
        """min.insync.replicas, capped at the replication factor (a topic may ask for more than it has)."""
        return min(self.min_insync_replicas, len(self.remote_replicas) + 1)

    @property
    def is_under_min_isr(self) -> bool:
        return self.is_leader and len(self.isr) < self.effective_min_isr

    def maybe_increment_leader_hw(self, now_ms: int) -> bool:
        """Advance the HW to the smallest LEO among the leader and the replicas that count. True if it moved.

        Not while the ISR is below the effective min.insync.replicas (Kafka 3.7+, KAFKA-15583): an acks=1
        write to such a partition stays invisible to consumers until enough replicas hold it again."""
        if self.log is None or not self.is_leader or self.is_under_min_isr:
            return False
        new_hw = self.log.log_end_offset
        maximal = self.maximal_isr
        for rid, replica in self.remote_replicas.items():
            # An ISR member whose LEO is still unknown (-1) holds the HW where it is, as in Kafka.
            if rid in maximal or (now_ms - replica.last_caught_up_time_ms <= self.replica_lag_time_max_ms
                                  and self.replica_eligible(rid)):
                new_hw = min(new_hw, replica.log_end_offset)
        if new_hw > self._high_watermark:
            log.debug("%s: high watermark %d -> %d", self.topic_partition, self._high_watermark, new_hw)
            self._set_high_watermark(new_hw)
            return True
        return False

    def update_follower_high_watermark(self, leader_high_watermark: int) -> bool:
        new_hw = min(self.log_end_offset, leader_high_watermark)
        if new_hw != self._high_watermark and new_hw >= 0:
            self._set_high_watermark(new_hw)
            return True
        return False

    def high_watermark_metadata(self) -> LogOffsetMetadata:
        """Where the HW sits in the log, worked out once per HW value (Kafka's convertToOffsetMetadataOrThrow)."""
        metadata = self._high_watermark_metadata
        if metadata is None:
            assert self.log is not None
            metadata = self._high_watermark_metadata = self.log.convert_to_offset_metadata(self._high_watermark)
        return metadata

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

    # ---- acks=all bookkeeping
    def check_enough_replicas_reach_offset(self, required_offset: int) -> tuple[bool, ErrorCode]:
        """Kafka's checkEnoughReplicasReachOffset for DelayedProduce."""
        if not self.is_leader:
            return True, ErrorCode.NOT_LEADER_OR_FOLLOWER
        if self._high_watermark >= required_offset:
            # The ISR may have shrunk after the append was parked: the write is in, with too few copies.
            if len(self.maximal_isr) >= self.effective_min_isr:
                return True, ErrorCode.NONE
            return True, ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND
        return False, ErrorCode.NONE

    # ---- appends
    def maybe_start_transaction_verification(self, producer_id: int, sequence: int, epoch: int,
                                             supports_epoch_bump: bool = False) -> VerificationGuard:
        """KIP-890 (Kafka's Partition.maybeStartTransactionVerification): the guard a transactional produce
        must carry when its producer has no ongoing transaction here, SENTINEL when it has one (nothing to
        verify). The broker verifies: the log requires the guard from now on."""
        if self.log is None or not self.is_leader:
            raise KafkaApiError(ErrorCode.NOT_LEADER_OR_FOLLOWER, f"{self.topic_partition}: leader is {self.leader_id}")
        self.set_transaction_verification(True)
        return self.log.maybe_start_transaction_verification(producer_id, sequence, epoch, supports_epoch_bump)

    def set_transaction_verification(self, enabled: bool) -> None:
        """Whether the log requires a verification guard for a transactional append that opens a transaction:
        the broker's (dynamic) transaction.partition.verification.enable as of the last transactional request."""
        if self.log is not None:
            self.log.producer_state.transaction_verification_enabled = enabled

    def append_records_to_leader(self, records: memoryview, required_acks: int, now_ms: int, *,
                                 origin: AppendOrigin = AppendOrigin.CLIENT,
                                 verification_guard: VerificationGuard | None = None) -> LeaderAppendResult:
        """Kafka's appendRecordsToLeader: min.insync.replicas, then the append, then maybe a new HW.
        Transaction markers (control batches) come with `origin=AppendOrigin.COORDINATOR`; a KIP-890
        verified transactional produce with its `verification_guard` (`Log.maybe_start_transaction_verification`)."""
        if self.log is None or not self.is_leader:
            raise KafkaApiError(ErrorCode.NOT_LEADER_OR_FOLLOWER, f"{self.topic_partition}: leader is {self.leader_id}")
        log_ = self.log
        tp = self.topic_partition
        if required_acks == -1 and self.is_under_min_isr:
            raise KafkaApiError(ErrorCode.NOT_ENOUGH_REPLICAS,
                                f"{tp}: ISR {self.isr} is below min.insync.replicas {self.effective_min_isr}")
        try:
            # Storage validates the batches (Kafka's LogValidator), stamps LogAppendTime and assigns offsets.
            info = log_.append_as_leader(records, self.leader_epoch, now_ms=now_ms, origin=origin,
                                         verification_guard=verification_guard)
        except StorageError as e:
            if isinstance(e, KafkaStorageError):
                log.error("%s: append failed: %s", tp, e)
            record_errors = getattr(e, "record_errors", [])
            # A per-record rejection (Kafka's RecordValidationException) reaches the producer with the
            # validator's own message, which already names the partition.
            raise KafkaApiError(ErrorCode[e.kafka_error], str(e) if record_errors else f"{tp}: {e}",
                                record_errors) from None
        log_append_time = now_ms if log_.config.message_timestamp_type == "LogAppendTime" else -1
        # With one replica in the ISR the append alone can move the HW.
        moved = not info.duplicate and self.maybe_increment_leader_hw(now_ms)
        return LeaderAppendResult(info, log_append_time, moved)

    def append_records_to_follower(self, records: memoryview) -> LogAppendInfo:
        """Batches fetched from the leader, with the leader's offsets and epochs (storage errors propagate)."""
        log_ = self._local_log(require_leader=False)
        try:
            return log_.append_as_follower(records)
        except UnexpectedAppendOffsetError as e:
            if not log_.starts_inside(e):
                raise
            # An empty log restarted at the leader's log start offset, which DeleteRecords put inside a batch:
            # the leader serves that whole batch, so our log starts at the batch (Kafka does the same); the
            # leader's log start offset then comes back with the fetch response.
            log.info("%s: fetched batch %d..%d spans our empty log's start %d: restarting the log at %d",
                     self.topic_partition, e.first_offset, e.last_offset, log_.log_start_offset, e.first_offset)
            self.truncate_fully_and_start_at(e.first_offset)
            return log_.append_as_follower(records)

    # ---- reads
    def fetch_records(self, fetch_offset: int, current_leader_epoch: int, max_bytes: int, isolation: int,
                      min_one_message: bool, *, replica_id: int = -1, last_fetched_epoch: int = -1,
                      follower_log_start_offset: int = -1, now_ms: int = 0,
                      update_fetch_state: bool = True, fetch_only_from_leader: bool = True) -> LogReadResult:
        """Kafka's fetchRecords: read for a consumer (up to the HW, or for read_committed up to the LSO with the
        aborted transactions of what was read) or a follower (up to the LEO); a follower's fetch then updates
        its state here (ISR, HW) unless its log diverges from ours. Every answer carries the LSO. A consumer
        with client metadata (KIP-392, `fetch_only_from_leader` False) may read a follower, up to its HW."""
        log_ = self._local_log(current_leader_epoch, require_leader=fetch_only_from_leader)
        replica = None
        if replica_id >= 0:
            replica = self.remote_replicas.get(replica_id)
            if replica is None:
                # Kafka: with an epoch the (replica, epoch) pair is not recognised yet; without, the old answer.
                raise KafkaApiError(ErrorCode.UNKNOWN_LEADER_EPOCH if current_leader_epoch >= 0
                                    else ErrorCode.NOT_LEADER_OR_FOLLOWER,
                                    f"{self.topic_partition}: broker {replica_id} is not a replica")
        hw = self._high_watermark
        lso = self.last_stable_offset
        leo = log_.log_end_offset
        if replica is not None and last_fetched_epoch >= 0:
            # KIP-320 / KIP-392: tell a follower where its log diverges instead of serving data.
            diverging = self.diverging_epoch(last_fetched_epoch, fetch_offset)
            if diverging is not None:
                return LogReadResult(None, hw, lso, log_.log_start_offset, leo, diverging_epoch=diverging)
        read_committed = isolation == FETCH_TXN_COMMITTED
        max_offset = None if isolation == FETCH_LOG_END else lso if read_committed else hw
        try:
            info = log_.read(fetch_offset, max_bytes, max_offset=max_offset, min_one_message=min_one_message,
                             include_aborted_transactions=read_committed)
        except OffsetOutOfRangeError as e:
            raise KafkaApiError(ErrorCode.OFFSET_OUT_OF_RANGE, f"{self.topic_partition}: {e}") from None
        result = LogReadResult(info, hw, lso, log_.log_start_offset, leo)
        if replica is not None and update_fetch_state:
            replica.update_fetch_state(fetch_offset, follower_log_start_offset, now_ms, leo)
            self.maybe_expand_isr(replica)
            if self.maybe_increment_leader_hw(now_ms):
                result.high_watermark = self._high_watermark
                result.last_stable_offset = self.last_stable_offset
                result.high_watermark_moved = True
        return result

    def diverging_epoch(self, last_fetched_epoch: int, fetch_offset: int) -> tuple[int, int] | None:
        """(epoch, end offset) when a follower's log, which ends `last_fetched_epoch` at `fetch_offset`, is
        not a prefix of ours: we end that epoch earlier, or know only an older one. None when it is."""
        assert self.log is not None
        epoch, end_offset = self.log.leader_epoch_cache.end_offset_for(last_fetched_epoch, self.log.log_end_offset)
        if epoch < last_fetched_epoch or end_offset < fetch_offset:
            return epoch, end_offset
        return None

    def end_offset_metadata(self, current_leader_epoch: int, isolation: int, require_leader: bool = True
                            ) -> LogOffsetMetadata:
        """Where a fetch of this isolation may read up to (the LEO, the HW, or for read_committed the LSO), with
        its place in the log (Kafka's fetchOffsetSnapshot); KafkaApiError when we no longer lead (unless a
        follower may serve: `require_leader` False) or the epoch is fenced/unknown."""
        log_ = self._local_log(current_leader_epoch, require_leader)
        if isolation == FETCH_LOG_END:
            return log_.log_end_offset_metadata
        if isolation == FETCH_TXN_COMMITTED:
            first = log_.first_unstable_offset
            if first is not None and first < self._high_watermark:
                return log_.first_unstable_offset_metadata()  # type: ignore[return-value]
        return self.high_watermark_metadata()

    def offset_metadata(self, offset: int) -> LogOffsetMetadata:
        """Where `offset` sits in the log; OffsetOutOfRangeError outside it."""
        return self._local_log(require_leader=False).convert_to_offset_metadata(offset)

    def latest_epoch(self) -> int | None:
        """The latest leader epoch in our log's epoch cache (what a follower fetches as last_fetched_epoch)."""
        return self.log.leader_epoch_cache.latest_epoch() if self.log is not None else None

    def last_offset_for_leader_epoch(self, current_leader_epoch: int, leader_epoch: int,
                                     fetch_only_from_leader: bool = True) -> tuple[int, int]:
        """Kafka's lastOffsetForLeaderEpoch: the largest epoch <= `leader_epoch` we know and where it ends
        (the next epoch's start, or our LEO); (-1, -1) when we know none."""
        log_ = self._local_log(current_leader_epoch, fetch_only_from_leader)
        return log_.leader_epoch_cache.end_offset_for(leader_epoch, log_.log_end_offset)

    def fetch_offset_for_timestamp(self, timestamp: int, current_leader_epoch: int, *, from_replica: bool,
                                   read_committed: bool = False) -> tuple[int, int, int]:
        """ListOffsets on the leader: (offset, timestamp, leader epoch of that offset), (-1, -1, -1) for none.
        Replicas see up to the LEO, read_uncommitted consumers up to the HW, read_committed ones up to the LSO
        (Kafka's lastFetchableOffset: the latest offset, and the bound of timestamp lookups)."""
        log_ = self._local_log(current_leader_epoch)
        if from_replica:
            last_fetchable = log_.log_end_offset
        else:
            last_fetchable = self.last_stable_offset if read_committed else self._high_watermark
        if timestamp in (EARLIEST_TIMESTAMP, EARLIEST_LOCAL_TIMESTAMP):
            offset, found_ts = log_.log_start_offset, -1
        elif timestamp == LATEST_TIMESTAMP:
            return last_fetchable, -1, self.leader_epoch  # Kafka answers the current leader epoch here
        elif timestamp in (LATEST_TIERED_TIMESTAMP, EARLIEST_PENDING_UPLOAD_TIMESTAMP):
            return -1, -1, -1  # no tiered storage: nothing is remote or waiting for upload (Kafka answers -1 then)
        elif timestamp == MAX_TIMESTAMP:
            found_ts, offset = log_.max_timestamp_and_offset()
            if offset < 0 or offset >= last_fetchable:
                return -1, -1, -1
        elif timestamp < 0:
            raise KafkaApiError(ErrorCode.INVALID_REQUEST, f"unknown special timestamp {timestamp}")
        else:
            found = log_.offset_for_timestamp(timestamp)
            if found is None or found[0] >= last_fetchable:
                return -1, -1, -1
            offset, found_ts = max(found[0], log_.log_start_offset), found[1]
        epoch = log_.leader_epoch_cache.epoch_for_offset(offset) if offset >= 0 else None
        return offset, found_ts, epoch if epoch is not None else -1

    # ---- log start offset and truncation
    def delete_records_on_leader(self, offset: int) -> int:
        """DeleteRecords: move the log start offset up to `offset` (-1: the HW), never past the HW; returns the
        offset asked for, with -1 resolved to the HW (Kafka's requestedOffset: the low watermark the request
        waits for, see `low_watermark_if_leader`)."""
        if self.log is None or not self.is_leader:
            raise KafkaApiError(ErrorCode.NOT_LEADER_OR_FOLLOWER, f"{self.topic_partition}: not the leader")
        converted = self._high_watermark if offset == DELETE_RECORDS_HIGH_WATERMARK else offset
        if converted < 0 or converted > self._high_watermark:
            raise KafkaApiError(ErrorCode.OFFSET_OUT_OF_RANGE,
                                f"{self.topic_partition}: offset {converted} is above the high watermark")
        try:
            self.log.maybe_increment_log_start_offset(converted)
        except OffsetOutOfRangeError as e:
            raise KafkaApiError(ErrorCode.OFFSET_OUT_OF_RANGE, str(e)) from None
        return converted

    def low_watermark_if_leader(self, is_alive: Callable[[int], bool]) -> int:
        """Kafka's lowWatermarkIfLeader: the lowest log start offset of this leader and of every remote replica
        on a live broker, as learned from their fetches (-1 until a replica has fetched since it was reset)."""
        if self.log is None or not self.is_leader:
            raise KafkaApiError(ErrorCode.NOT_LEADER_OR_FOLLOWER, f"{self.topic_partition}: not the leader")
        low = self.log.log_start_offset
        for replica in self.remote_replicas.values():
            if is_alive(replica.broker_id) and replica.log_start_offset < low:
                low = replica.log_start_offset
        return low

    def follow_leader_log_start_offset(self, leader_log_start_offset: int) -> None:
        """A follower's log start offset follows the leader's (never past its own log end offset)."""
        log_ = self._local_log(require_leader=False)
        if leader_log_start_offset > log_.log_start_offset:
            log_.maybe_increment_log_start_offset(min(leader_log_start_offset, log_.log_end_offset))

    def truncate_to(self, offset: int) -> None:
        """Follower truncation (by leader epoch, or to the HW without epochs); the HW follows the new LEO down."""
        log_ = self._local_log(require_leader=False)
        log_.truncate_to(offset)
        self._set_high_watermark(min(self._high_watermark, log_.log_end_offset))

    def truncate_fully_and_start_at(self, offset: int) -> None:
        """Drop the whole log and restart it at `offset` (the leader's log start is past our log end)."""
        self._local_log(require_leader=False).truncate_fully_and_start_at(offset)
        self._set_high_watermark(offset)

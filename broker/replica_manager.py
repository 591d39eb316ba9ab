"""ReplicaManager: the partitions this broker hosts, produce and fetch against them, LeaderAndIsr.

Kafka's ReplicaManager, on one asyncio loop:
- `append_records` validates and appends produce data to the leaders here and, for acks=all, parks a
  `DelayedProduce` until the high watermark passes every appended batch (or `timeout_ms`).
- `fetch_messages` reads from leaders (consumers, up to the HW or LSO) or logs (followers, up to the LEO),
  records follower fetch state (ISR, HW) and parks a `DelayedFetch` until `min_bytes` are there
  (or `max_wait_ms`).
- `become_leader_or_follower` applies LeaderAndIsr: stale controller epochs are rejected, partitions whose
  leader epoch is not newer are skipped, then `make_leaders` / `make_followers` (the fetcher manager,
  when there is one, stops and starts replica fetchers; followers truncate by leader epoch).
- After every event that may unblock a delayed operation (append, HW move, leader change) the produce
  and fetch purgatories are checked for that partition.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from broker.errors import KafkaApiError
from broker.partition import (
    FETCH_LOG_END,
    LogReadResult,
    Partition,
    PartitionState,
)
from broker.purgatory import DelayedOperation, Purgatory
from protocol.errors import ErrorCode
from protocol.records import (
    CorruptRecordError,
    InvalidRecordError,
    RecordTooLargeError,
    TimestampType,
    validate_batches,
)
from storage import (
    DuplicateSequenceError,
    InvalidProducerEpochError,
    KafkaStorageError,
    LogConfig,
    LogManager,
    OutOfOrderSequenceError,
    TopicPartition,
)
from storage import InvalidRecordError as StorageInvalidRecordError
from storage.errors import RecordTooLargeError as StorageRecordTooLargeError

log = logging.getLogger("broker.replica_manager")


def now_ms() -> int:
    return time.time_ns() // 1_000_000


# ---------------------------------------------------------------- produce
@dataclass
class ProducePartitionResult:
    error: ErrorCode = ErrorCode.NONE
    base_offset: int = -1
    last_offset: int = -1
    log_append_time: int = -1
    log_start_offset: int = -1
    error_message: str | None = None
    record_errors: list[tuple[int, str | None]] = field(default_factory=list)


class DelayedProduce(DelayedOperation):
    def __init__(self, delay_ms: int, replica_manager: ReplicaManager,
                 results: dict[TopicPartition, ProducePartitionResult], future: asyncio.Future) -> None:
        super().__init__(delay_ms)
        self.rm = replica_manager
        self.results = results
        self.future = future
        self.pending = {tp for tp, r in results.items() if r.error == ErrorCode.NONE}

    def try_complete(self) -> bool:
        for tp in list(self.pending):
            partition = self.rm.partitions.get(tp)
            if partition is None:
                self.results[tp].error = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                self.pending.discard(tp)
                continue
            done, error = partition.check_enough_replicas_reach_offset(self.results[tp].last_offset + 1)
            if done:
                self.results[tp].error = error
                self.pending.discard(tp)
        if not self.pending:
            return self.force_complete()
        return False

    def on_expiration(self) -> None:
        for tp in self.pending:
            self.results[tp].error = ErrorCode.REQUEST_TIMED_OUT
        self.pending.clear()

    def on_complete(self) -> None:
        if not self.future.done():
            self.future.set_result(self.results)


# ---------------------------------------------------------------- fetch
@dataclass
class FetchParams:
    replica_id: int  # -1 for consumers
    max_wait_ms: int
    min_bytes: int
    max_bytes: int
    isolation: int  # FETCH_LOG_END / FETCH_HIGH_WATERMARK / FETCH_TXN_COMMITTED
    hard_max_bytes_limit: bool = False  # Fetch v0-v2: no "first batch always returned" relief

    @property
    def is_from_follower(self) -> bool:
        return self.replica_id >= 0


@dataclass
class PartitionFetchInfo:
    fetch_offset: int
    max_bytes: int
    current_leader_epoch: int = -1
    log_start_offset: int = -1
    last_fetched_epoch: int = -1


@dataclass
class FetchPartitionData:
    error: ErrorCode
    high_watermark: int = -1
    last_stable_offset: int = -1
    log_start_offset: int = -1
    records: object | None = None  # storage FileSlice or None
    diverging_epoch: tuple[int, int] | None = None
    current_leader: tuple[int, int] | None = None  # (leader id, leader epoch) for NOT_LEADER/FENCED hints
    preferred_read_replica: int = -1

    @property
    def size(self) -> int:
        return self.records.length if self.records is not None else 0  # type: ignore[attr-defined]


class DelayedFetch(DelayedOperation):
    def __init__(self, delay_ms: int, rm: ReplicaManager, params: FetchParams,
                 infos: list[tuple[TopicPartition, PartitionFetchInfo]], future: asyncio.Future) -> None:
        super().__init__(delay_ms)
        self.rm = rm
        self.params = params
        self.infos = infos
        self.future = future

    def try_complete(self) -> bool:
        accumulated = 0
        for tp, info in self.infos:
            partition = self.rm.partitions.get(tp)
            if partition is None or partition.log is None:
                return self.force_complete()
            if self.params.is_from_follower:
                end = partition.log_end_offset
            else:
                if not partition.is_leader or (0 <= info.current_leader_epoch != partition.leader_epoch):
                    return self.force_complete()
                end = partition.high_watermark
            if end < info.fetch_offset:
                # Log truncated under the fetch offset (leader change): answer now, with the error.
                return self.force_complete()
            if end > info.fetch_offset:
                accumulated += self.rm.estimate_bytes(partition, info.fetch_offset, end, info.max_bytes)
        if accumulated >= self.params.min_bytes:
            return self.force_complete()
        return False

    def on_complete(self) -> None:
        if not self.future.done():
            self.future.set_result(self.rm.read_from_local_logs(self.params, self.infos))


# ---------------------------------------------------------------- the manager
class ReplicaManager:
    def __init__(self, broker_id: int, log_manager: LogManager, *, replica_lag_time_max_ms: int,
                 log_config_for: Callable[[str], LogConfig], min_insync_replicas_for: Callable[[str], int]) -> None:
        self.broker_id = broker_id
        self.log_manager = log_manager
        self.replica_lag_time_max_ms = replica_lag_time_max_ms
        self.log_config_for = log_config_for
        self.min_insync_replicas_for = min_insync_replicas_for
        self.partitions: dict[TopicPartition, Partition] = {}
        self.produce_purgatory = Purgatory("Produce")
        self.fetch_purgatory = Purgatory("Fetch")
        self.controller_epoch = 0
        self.fetcher_manager = None  # set in cluster mode (replica fetchers)
        self.isr_updater = None  # set in cluster mode
        self.on_leadership_change: list[Callable[[list[Partition], list[Partition]], None]] = []
        self.on_flush_needed: Callable[[Partition], None] | None = None
        self.high_watermarks: dict[TopicPartition, int] = {}

    # ---- lookup
    def get_partition(self, tp: TopicPartition) -> Partition | None:
        return self.partitions.get(tp)

    def leader_partition_or_error(self, tp: TopicPartition) -> Partition:
        partition = self.partitions.get(tp)
        if partition is None or partition.log is None:
            raise KafkaApiError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"{tp}: not hosted here")
        if not partition.is_leader:
            raise KafkaApiError(ErrorCode.NOT_LEADER_OR_FOLLOWER, f"{tp}: leader is {partition.leader_id}")
        return partition

    # ---- LeaderAndIsr
    def become_leader_or_follower(self, controller_id: int, controller_epoch: int,
                                  states: dict[TopicPartition, PartitionState],
                                  topic_ids: dict[str, object] | None = None) -> dict[TopicPartition, ErrorCode]:
        if controller_epoch < self.controller_epoch:
            log.warning("ignoring LeaderAndIsr from controller %d with stale controller epoch %d < %d",
                        controller_id, controller_epoch, self.controller_epoch)
            return {tp: ErrorCode.STALE_CONTROLLER_EPOCH for tp in states}
        self.controller_epoch = controller_epoch
        errors: dict[TopicPartition, ErrorCode] = {}
        to_lead: dict[Partition, PartitionState] = {}
        to_follow: dict[Partition, PartitionState] = {}
        for tp, state in states.items():
            partition = self.partitions.get(tp)
            if partition is None:
                partition = Partition(tp, self.broker_id, replica_lag_time_max_ms=self.replica_lag_time_max_ms,
                                      min_insync_replicas=self.min_insync_replicas_for(tp.topic))
                partition.isr_updater = self.isr_updater
                partition.on_isr_change = lambda p: self._complete_delayed(p.topic_partition)
                self.partitions[tp] = partition
            elif state.leader_epoch <= partition.leader_epoch and partition.log is not None:
                log.info("%s: ignoring LeaderAndIsr with leader epoch %d (current %d)", tp,
                         state.leader_epoch, partition.leader_epoch)
                errors[tp] = ErrorCode.STALE_CONTROLLER_EPOCH if state.leader_epoch < partition.leader_epoch \
                    else ErrorCode.NONE
                continue
            if self.broker_id not in state.replicas:
                errors[tp] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                continue
            topic_id = (topic_ids or {}).get(tp.topic)
            if partition.log is None:
                try:
                    partition.log = self.log_manager.get_or_create_log(
                        tp, self.log_config_for(tp.topic), topic_id)  # type: ignore[arg-type]
                except KafkaStorageError as e:
                    log.error("%s: cannot open log: %s", tp, e)
                    errors[tp] = ErrorCode.KAFKA_STORAGE_ERROR
                    continue
                partition.high_watermark = min(self.high_watermarks.get(tp, 0), partition.log.log_end_offset)
                partition.high_watermark = max(partition.high_watermark, partition.log.log_start_offset)
            partition.topic_id = topic_id
            (to_lead if state.leader == self.broker_id else to_follow)[partition] = state
            errors[tp] = ErrorCode.NONE
        now = now_ms()
        new_leaders = self.make_leaders(to_lead, now)
        new_followers = self.make_followers(to_follow)
        for cb in self.on_leadership_change:
            cb(new_leaders, new_followers)
        return errors

    def make_leaders(self, states: dict[Partition, PartitionState], now: int) -> list[Partition]:
        if self.fetcher_manager is not None and states:
            self.fetcher_manager.remove_fetchers([p.topic_partition for p in states])
        became = []
        for partition, state in states.items():
            if partition.make_leader(state, now):
                became.append(partition)
            self._complete_delayed(partition.topic_partition)
        return became

    def make_followers(self, states: dict[Partition, PartitionState]) -> list[Partition]:
        became = []
        for partition, state in states.items():
            if partition.make_follower(state):
                became.append(partition)
        if self.fetcher_manager is not None and states:
            self.fetcher_manager.remove_fetchers([p.topic_partition for p in states])
            self.fetcher_manager.add_fetchers(
                {p.topic_partition: p for p in states if p.leader_id is not None and p.leader_id >= 0})
        for partition in states:
            self._complete_delayed(partition.topic_partition)
        return became

    def stop_replicas(self, tps: Iterable[TopicPartition], delete: bool) -> dict[TopicPartition, ErrorCode]:
        result = {}
        tps = list(tps)
        if self.fetcher_manager is not None:
            self.fetcher_manager.remove_fetchers(tps)
        for tp in tps:
            # Without delete (controlled shutdown, Kafka's OfflineReplica) the replica only stops: no fetching,
            # no leadership, but the partition stays so its high watermark is still checkpointed.
            partition = self.partitions.pop(tp, None) if delete else self.partitions.get(tp)
            if delete:
                self.high_watermarks.pop(tp, None)
            if partition is not None:
                partition.leader_id = None
                partition.pending_isr = None
                self._complete_delayed(tp)
            if delete:
                try:
                    self.log_manager.delete_log(tp)
                except KafkaStorageError as e:
                    log.error("%s: cannot delete log: %s", tp, e)
                    result[tp] = ErrorCode.KAFKA_STORAGE_ERROR
                    continue
            result[tp] = ErrorCode.NONE
        return result

    def _complete_delayed(self, tp: TopicPartition) -> None:
        self.produce_purgatory.check_and_complete(tp)
        self.fetch_purgatory.check_and_complete(tp)

    # ---- produce
    def append_records(self, timeout_ms: int, required_acks: int, entries: dict[TopicPartition, memoryview],
                       *, internal_topics_allowed: bool = False
                       ) -> dict[TopicPartition, ProducePartitionResult] | asyncio.Future:
        now = now_ms()
        results: dict[TopicPartition, ProducePartitionResult] = {}
        for tp, records in entries.items():
            results[tp] = self._append_to_leader(tp, records, required_acks, now, internal_topics_allowed)
        if required_acks != -1 or not any(r.error == ErrorCode.NONE for r in results.values()):
            return results
        future = asyncio.get_running_loop().create_future()
        op = DelayedProduce(timeout_ms, self, results, future)
        if self.produce_purgatory.try_complete_else_watch(op, list(results)):
            return results
        return future

    def _append_to_leader(self, tp: TopicPartition, records: memoryview, required_acks: int, now: int,
                          internal_topics_allowed: bool) -> ProducePartitionResult:
        try:
            if tp.topic.startswith("__") and not internal_topics_allowed and tp.topic == "__consumer_offsets":
                raise KafkaApiError(ErrorCode.INVALID_TOPIC_EXCEPTION, f"{tp}: internal topic")
            partition = self.leader_partition_or_error(tp)
            assert partition.log is not None
            config = partition.log.config
            if required_acks == -1 and len(partition.isr) < partition.min_insync_replicas:
                raise KafkaApiError(ErrorCode.NOT_ENOUGH_REPLICAS,
                                    f"{tp}: ISR {partition.isr} is below min.insync.replicas "
                                    f"{partition.min_insync_replicas}")
            try:
                summary = validate_batches(records, max_batch_size=config.max_message_bytes)
            except CorruptRecordError as e:
                raise KafkaApiError(ErrorCode.CORRUPT_MESSAGE, f"{tp}: {e}") from None
            except RecordTooLargeError as e:
                raise KafkaApiError(ErrorCode.MESSAGE_TOO_LARGE, f"{tp}: {e}") from None
            except InvalidRecordError as e:
                raise KafkaApiError(ErrorCode.INVALID_RECORD, f"{tp}: {e}") from None
            if summary.size_in_bytes > config.segment_bytes:
                raise KafkaApiError(ErrorCode.RECORD_LIST_TOO_LARGE, f"{tp}: {summary.size_in_bytes} bytes")
            log_append_time = -1
            if config.message_timestamp_type == "LogAppendTime":
                log_append_time = now
                # A client's v2 produce carries exactly one batch (validate_batches enforces it).
                summary.first_batch.set_max_timestamp(TimestampType.LOG_APPEND_TIME, now)
            try:
                info = partition.log.append_as_leader(records, partition.leader_epoch, now_ms=now,
                                                      log_append_time=log_append_time
                                                      if log_append_time >= 0 else None)
            except OutOfOrderSequenceError as e:
                raise KafkaApiError(ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER, f"{tp}: {e}") from None
            except DuplicateSequenceError as e:
                raise KafkaApiError(ErrorCode.DUPLICATE_SEQUENCE_NUMBER, f"{tp}: {e}") from None
            except InvalidProducerEpochError as e:
                raise KafkaApiError(ErrorCode.INVALID_PRODUCER_EPOCH, f"{tp}: {e}") from None
            except StorageRecordTooLargeError as e:
                raise KafkaApiError(ErrorCode.MESSAGE_TOO_LARGE, f"{tp}: {e}") from None
            except StorageInvalidRecordError as e:
                raise KafkaApiError(ErrorCode.INVALID_RECORD, f"{tp}: {e}") from None
            except KafkaStorageError as e:
                log.error("%s: append failed: %s", tp, e)
                raise KafkaApiError(ErrorCode.KAFKA_STORAGE_ERROR, f"{tp}: {e}") from None
            if not info.duplicate:
                if partition.maybe_increment_leader_hw(now):
                    self.fetch_purgatory.check_and_complete(tp)
                    self.produce_purgatory.check_and_complete(tp)
                else:
                    # Followers' delayed fetches wait on the LEO.
                    self.fetch_purgatory.check_and_complete(tp)
                if self.on_flush_needed is not None and partition.log.needs_flush():
                    self.on_flush_needed(partition)
            return ProducePartitionResult(ErrorCode.NONE, info.first_offset, info.last_offset,
                                          log_append_time, partition.log.log_start_offset)
        except KafkaApiError as e:
            if e.code not in (ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION):
                log.warning("produce to %s rejected: %s: %s", tp, e.code.name, e)
            return ProducePartitionResult(e.code, error_message=str(e))

    # ---- fetch
    def fetch_messages(self, params: FetchParams, infos: list[tuple[TopicPartition, PartitionFetchInfo]]
                       ) -> list[tuple[TopicPartition, FetchPartitionData]] | asyncio.Future:
        results = self.read_from_local_logs(params, infos)
        if params.is_from_follower:
            self._update_followers_fetch_state(params.replica_id, infos, results)
        total = sum(r.size for _, r in results)
        has_error = any(r.error != ErrorCode.NONE or r.diverging_epoch is not None for _, r in results)
        if params.max_wait_ms <= 0 or not infos or total >= params.min_bytes or has_error:
            return results
        future = asyncio.get_running_loop().create_future()
        op = DelayedFetch(params.max_wait_ms, self, params, infos, future)
        # try_complete re-checks with fresh numbers; if nothing arrived it parks.
        if self.fetch_purgatory.try_complete_else_watch(op, [tp for tp, _ in infos]):
            return future.result()
        return future

    def read_from_local_logs(self, params: FetchParams, infos: list[tuple[TopicPartition, PartitionFetchInfo]]
                             ) -> list[tuple[TopicPartition, FetchPartitionData]]:
        limit = params.max_bytes
        min_one_message = not params.hard_max_bytes_limit
        out = []
        for tp, info in infos:
            data = self._read_partition(params, tp, info, min(info.max_bytes, limit), min_one_message)
            if data.size > 0:
                min_one_message = False
                limit = max(0, limit - data.size)
            out.append((tp, data))
        return out

    def _read_partition(self, params: FetchParams, tp: TopicPartition, info: PartitionFetchInfo,
                        max_bytes: int, min_one_message: bool) -> FetchPartitionData:
        partition = self.partitions.get(tp)
        try:
            if partition is None or partition.log is None:
                raise KafkaApiError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"{tp}: not hosted here")
            result: LogReadResult = partition.read_records(
                info.fetch_offset, info.current_leader_epoch, max_bytes,
                params.isolation if not params.is_from_follower else FETCH_LOG_END,
                fetch_only_from_leader=True, min_one_message=min_one_message,
                last_fetched_epoch=info.last_fetched_epoch if params.is_from_follower else -1)
            return FetchPartitionData(
                ErrorCode.NONE, result.high_watermark, result.last_stable_offset, result.log_start_offset,
                result.info.records if result.info is not None else None,
                diverging_epoch=result.diverging_epoch)
        except KafkaApiError as e:
            hint = None
            if partition is not None and partition.leader_id is not None and e.code in (
                    ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.FENCED_LEADER_EPOCH):
                hint = (partition.leader_id, partition.leader_epoch)
            return FetchPartitionData(
                e.code, partition.high_watermark if partition else -1,
                partition.high_watermark if partition else -1,
                partition.log_start_offset if partition and partition.log else -1, current_leader=hint)

    def estimate_bytes(self, partition: Partition, fetch_offset: int, end: int, max_bytes: int) -> int:
        assert partition.log is not None
        try:
            info = partition.log.read(fetch_offset, max_bytes, max_offset=end, min_one_message=True)
        except Exception:
            return 1
        return info.records.length if info.records is not None else 0

    def _update_followers_fetch_state(self, replica_id: int,
                                      infos: list[tuple[TopicPartition, PartitionFetchInfo]],
                                      results: list[tuple[TopicPartition, FetchPartitionData]]) -> None:
        now = now_ms()
        for (tp, info), (_, data) in zip(infos, results, strict=True):
            if data.error != ErrorCode.NONE:
                continue
            partition = self.partitions[tp]
            try:
                moved = partition.update_follower_fetch_state(replica_id, info.fetch_offset,
                                                              info.log_start_offset, now)
            except KafkaApiError as e:
                data.error = e.code
                continue
            if moved:
                data.high_watermark = partition.high_watermark
                self._complete_delayed(tp)

    # ---- housekeeping
    def maybe_shrink_isr(self) -> None:
        now = now_ms()
        for partition in self.partitions.values():
            if partition.is_leader:
                partition.maybe_shrink_isr(now)

    def checkpoint_high_watermarks(self) -> None:
        hws = {tp: p.high_watermark for tp, p in self.partitions.items() if p.log is not None}
        self.log_manager.checkpoint_high_watermarks(hws)

    def shutdown(self) -> None:
        self.produce_purgatory.shutdown()
        self.fetch_purgatory.shutdown()
        if self.partitions:
            try:
                self.checkpoint_high_watermarks()
            except Exception:
                log.exception("cannot checkpoint high watermarks on shutdown")


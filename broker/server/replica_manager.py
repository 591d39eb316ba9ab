"""ReplicaManager: the partitions this broker hosts, produce and fetch against them, LeaderAndIsr.

Kafka's ReplicaManager, on one asyncio loop. It finds the partition (Kafka's getPartitionOrException:
NOT_LEADER_OR_FOLLOWER for a partition the metadata knows but this broker does not host,
UNKNOWN_TOPIC_OR_PARTITION otherwise) and leaves the log to `Partition`:
- `append_records` refuses client writes to internal topics, appends to each leader here
  (`Partition.append_records_to_leader`: min.insync.replicas, the append, the HW) and, for acks=all, parks
  a `DelayedProduce` (broker.server.delayed_produce) until the high watermark passes every appended batch (or
  `timeout_ms`). `origin` says who writes (Kafka's AppendOrigin): clients, or the coordinators (group
  metadata, transaction markers, which only `AppendOrigin.COORDINATOR` may write); KIP-890 verification
  guards ride along per partition. A client's produce with a `transactional_id` is first verified with the
  transaction coordinator (`txn_verification`, when `transaction.partition.verification.enable`):
  partitions whose producer has no ongoing transaction there are appended only once the coordinator
  confirms they are in the transaction, the others answer as Kafka does (INVALID_TXN_STATE, or
  TRANSACTION_ABORTABLE from Produce v11; NOT_ENOUGH_REPLICAS for retriable coordinator errors). A Produce
  v12+ (transaction.version 2, `transaction_operation` ADD_PARTITION) has the coordinator add them instead,
  verification enabled or not.
- `fetch_messages` reads each partition (`Partition.fetch_records`: read_uncommitted consumers up to the
  HW, read_committed ones up to the last stable offset with the aborted transactions of the range,
  followers up to the LEO, a follower's fetch updating its ISR/HW state there) and parks a `DelayedFetch`
  (broker.server.delayed_fetch, with the request's types) until `min_bytes` are there (or `max_wait_ms`). A parked
  fetch completes by comparing log positions, never by reading: Kafka's DelayedFetch cases.
- KIP-392: a consumer with client metadata (Fetch v11+) may read from a follower (up to its HW); on the
  leader, `replica.selector.class` (`replica_selector`) may answer a preferred read replica instead of data.
- `become_leader_or_follower` applies LeaderAndIsr: stale controller epochs are rejected, partitions whose
  leader epoch is not newer are skipped, then `make_leaders` / `make_followers` (the fetcher manager,
  when there is one, stops and starts replica fetchers; followers truncate by leader epoch). A new log is
  its directory and an empty segment; its partition.metadata and a new leader's epoch checkpoint entry are
  written off the event loop (`flush_metadata_files_later`, Kafka's flush-metadata-file task), and in any
  case before the log's first data (`storage.Log.flush_metadata_files`).
- `delete_records` moves each led partition's log start offset and, when a replica's log start offset
  is still behind, parks a `DelayedDeleteRecords` (broker.server.delayed_delete_records) until the low watermark
  gets there (or `timeout_ms`); a follower's fetch re-checks it.
- After every event that may unblock a delayed operation (append, HW move, leader change) the produce,
  fetch and delete-records purgatories are checked for that partition.
- Appends leave the event loop (`broker.server.log_writes`): a partition's log gets its log directory's writer thread
  when it is set, an append returns once reserved, and `append_records` answers (any acks) only once the
  bytes are in the file; the log end offset, and with it the HW and the purgatories, moves when the writer's
  completion reaches the loop (`_on_log_end_offset_moved`). `BROKER_SYNC_APPENDS=1` keeps appends on the
  loop (the bench's before/after).
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterable

from broker.cluster.partition import (
    FETCH_LOG_END,
    Partition,
    PartitionState,
)
from broker.cluster.replica_selector import ReplicaSelector, ReplicaView
from broker.common.errors import KafkaApiError
from broker.metadata.metadata_cache import INTERNAL_TOPICS, MetadataCache
from broker.metrics.broker_metrics import BrokerMetrics
from broker.server.delayed_delete_records import DelayedDeleteRecords, DeleteRecordsPartitionResult
from broker.server.delayed_fetch import (
    DelayedFetch,
    FetchParams,
    FetchPartitionData,
    FetchPartitionStatus,
    PartitionFetchInfo,
)
from broker.server.delayed_produce import DelayedProduce, ProducePartitionResult
from broker.server.log_writes import LogWrites
from broker.server.purgatory import Purgatory
from broker.server.txn_verification import (
    AddPartitionsToTxnManager,
    TransactionSupportedOperation,
    produce_error,
    split_for_verification,
)
from protocol.errors import ErrorCode
from storage import (
    AppendOrigin,
    KafkaStorageError,
    Log,
    LogConfig,
    LogManager,
    LogOffsetMetadata,
    TopicPartition,
    VerificationGuard,
)

log = logging.getLogger("broker.replica_manager")
_DEFAULT_ERROR = TransactionSupportedOperation.DEFAULT_ERROR


def now_ms() -> int:
    return time.time_ns() // 1_000_000


# ---------------------------------------------------------------- the manager
class ReplicaManager:
    def __init__(self, broker_id: int, log_manager: LogManager, *, replica_lag_time_max_ms: int,
                 log_config_for: Callable[[str], LogConfig], min_insync_replicas_for: Callable[[str], int],
                 metadata_cache: MetadataCache | None = None) -> None:
        self.broker_id = broker_id
        self.log_manager = log_manager
        self.replica_lag_time_max_ms = replica_lag_time_max_ms
        self.log_config_for = log_config_for
        self.min_insync_replicas_for = min_insync_replicas_for
        self.metadata_cache = metadata_cache
        self.partitions: dict[TopicPartition, Partition] = {}
        self.produce_purgatory = Purgatory("Produce")
        self.fetch_purgatory = Purgatory("Fetch")
        self.delete_records_purgatory = Purgatory("DeleteRecords")
        self.replica_selector: ReplicaSelector | None = None  # replica.selector.class (KIP-392)
        # Consumer partition reads this broker served as a follower (KIP-392), by partition.
        self.follower_consumer_fetches: Counter[TopicPartition] = Counter()
        self.controller_epoch = 0
        self.fetcher_manager = None  # set in cluster mode (replica fetchers)
        self.isr_updater = None  # set in cluster mode
        self.metrics: BrokerMetrics | None = None  # broker/metrics: set while metrics.prometheus.listener is
        self.on_leadership_change: list[Callable[[list[Partition], list[Partition]], None]] = []
        self.on_flush_needed: Callable[[Partition], None] | None = None
        self.flush_metadata_files_later: Callable[[list[Log]], None] | None = None
        self.high_watermarks: dict[TopicPartition, int] = {}
        # KIP-890: the broker's transaction.partition.verification.enable (read per request: it is dynamic)
        # and the client that asks the coordinators (None: nothing to ask, transactional produce unverified).
        self.transaction_verification_enabled: Callable[[], bool] = lambda: True
        self.add_partitions_to_txn: AddPartitionsToTxnManager | None = None
        self.log_writes = None if os.environ.get("BROKER_SYNC_APPENDS") else LogWrites(self._on_log_end_offset_moved)

    def set_partition_log(self, partition: Partition, log_: Log, high_watermark: int) -> None:
        """The partition's log, with its log directory's writer thread when there is an event loop to answer."""
        if self.log_writes is not None:
            try:
                asyncio.get_running_loop()
            except RuntimeError:
                pass  # no loop (a synchronous caller): appends write in place
            else:
                self.log_writes.attach(log_)
        partition.set_log(log_, high_watermark)

    def _on_log_end_offset_moved(self, log_: Log) -> None:
        """A writer's completion moved this log's end offset: what an in-place append would have done next."""
        tp = log_.topic_partition
        partition = self.partitions.get(tp)
        if partition is None or partition.log is not log_:
            return
        if partition.is_leader and partition.maybe_increment_leader_hw(now_ms()):
            self.produce_purgatory.check_and_complete(tp)
        self.fetch_purgatory.check_and_complete(tp)
        if self.on_flush_needed is not None and log_.needs_flush():
            self.on_flush_needed(partition)

    # ---- lookup
    def get_partition(self, tp: TopicPartition) -> Partition | None:
        return self.partitions.get(tp)

    def get_partition_or_error(self, tp: TopicPartition) -> Partition:
        """Kafka's getPartitionOrException: the hosted partition, else NOT_LEADER_OR_FOLLOWER when the
        metadata knows the partition (it lives on other brokers: clients refresh their metadata), else
        UNKNOWN_TOPIC_OR_PARTITION. Leadership is the partition's to check."""
        partition = self.partitions.get(tp)
        if partition is not None and partition.log is not None:
            return partition
        if self.metadata_cache is not None and self.metadata_cache.partition(tp.topic, tp.partition) is not None:
            raise KafkaApiError(ErrorCode.NOT_LEADER_OR_FOLLOWER, f"{tp}: not hosted here")
        raise KafkaApiError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"{tp}: unknown partition")

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
            topic_id = (topic_ids or {}).get(tp.topic)
            partition = self.partitions.get(tp)
            if partition is None:
                partition = Partition(tp, self.broker_id, replica_lag_time_max_ms=self.replica_lag_time_max_ms,
                                      min_insync_replicas=self.min_insync_replicas_for(tp.topic))
                partition.isr_updater = self.isr_updater
                partition.on_isr_change = lambda p: self._complete_delayed(p.topic_partition)
                self.partitions[tp] = partition
            if not self._consistent_topic_id(tp, topic_id):
                # Kafka checks this before anything else: a log left from an earlier topic of the same name (a
                # broker away while it was deleted and created again) must not be served as the new topic.
                log.error("%s: the controller's topic id %s does not match %s of the log; not taking this "
                          "partition's state (INCONSISTENT_TOPIC_ID)", tp, topic_id,
                          self._log_topic_id(tp))
                errors[tp] = ErrorCode.INCONSISTENT_TOPIC_ID
                continue
            if state.leader_epoch <= partition.leader_epoch and partition.log is not None:
                errors[tp] = self._same_or_older_leader_epoch(partition, state, topic_id)
                continue
            if self.broker_id not in state.replicas:
                errors[tp] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                continue
            if partition.log is None:
                try:
                    log_ = self.log_manager.get_or_create_log(
                        tp, self.log_config_for(tp.topic), topic_id)  # type: ignore[arg-type]
                except KafkaStorageError as e:
                    log.error("%s: cannot open log: %s", tp, e)
                    errors[tp] = ErrorCode.KAFKA_STORAGE_ERROR
                    continue
                self.set_partition_log(partition, log_, self.high_watermarks.get(tp, 0))
                log_.producer_state.transaction_verification_enabled = (
                    self.add_partitions_to_txn is not None and self.transaction_verification_enabled())
            partition.topic_id = topic_id
            (to_lead if state.leader == self.broker_id else to_follow)[partition] = state
            errors[tp] = ErrorCode.NONE
        now = now_ms()
        new_leaders = self.make_leaders(to_lead, now)
        new_followers = self.make_followers(to_follow)
        self._flush_metadata_files([p.log for tp in states if (p := self.partitions.get(tp)) is not None
                                    and p.log is not None and p.log.has_unflushed_metadata])
        # A copy: a callback may register another (the broker starts its share coordinator on the first change to
        # __share_group_state and hands it that change itself).
        for cb in tuple(self.on_leadership_change):
            cb(new_leaders, new_followers)
        return errors

    def _flush_metadata_files(self, logs: list[Log]) -> None:
        """The new partitions' partition.metadata and the new leaders' epoch checkpoints: handed to
        `flush_metadata_files_later` (Kafka's flush-metadata-file task: the broker runs them in a worker thread),
        else written here. Each log also writes them itself before its first data (Log.flush_metadata_files)."""
        if not logs:
            return
        if self.flush_metadata_files_later is not None:
            self.flush_metadata_files_later(logs)
            return
        for log_ in logs:
            log_.flush_metadata_files()

    def unhosted_logs(self) -> list[Log]:
        """The logs loaded from disk that no partition of this broker serves (yet)."""
        return [lg for lg in self.log_manager.all_logs()
                if (p := self.partitions.get(lg.topic_partition)) is None or p.log is None]

    def set_aside_stray_log(self, tp: TopicPartition, why: str) -> None:
        """A log the metadata no longer accounts for (KRaft start-up): moved aside as Kafka does, its high
        watermark forgotten so that a new partition of the same name starts from nothing."""
        moved = self.log_manager.mark_stray(tp)
        self.high_watermarks.pop(tp, None)
        log.warning("%s: stray log (%s): moved aside to %s, not served", tp, why, moved)

    def _log_topic_id(self, tp: TopicPartition) -> uuid.UUID | None:
        """The topic id of the log this broker holds for `tp` (hosted or only loaded from disk), as Kafka's
        Partition.topicId reads it."""
        partition = self.partitions.get(tp)
        log_ = partition.log if partition is not None and partition.log is not None else self.log_manager.get_log(tp)
        return log_.topic_id if log_ is not None else None

    def _consistent_topic_id(self, tp: TopicPartition, topic_id: object) -> bool:
        """Kafka's hasConsistentTopicId: a request without a topic id, or a log without one, agrees with any."""
        local = self._log_topic_id(tp)
        return topic_id is None or local is None or local == topic_id

    def _same_or_older_leader_epoch(self, partition: Partition, state: PartitionState,
                                    topic_id: uuid.UUID | None) -> ErrorCode:
        """Kafka's answer to a LeaderAndIsr that does not move the leader epoch forward: STALE_CONTROLLER_EPOCH
        (a new controller re-sending every partition's state gets it too, and ignores it), except that at the
        same epoch the controller may hand over the topic id of a log that has none (an IBP upgrade), or
        leave it out for a follower (a downgrade); both are taken."""
        log_ = partition.log
        assert log_ is not None
        if state.leader_epoch == partition.leader_epoch:
            if topic_id is not None and log_.topic_id is None:
                log.info("%s: assigning topic id %s at leader epoch %d", partition.topic_partition, topic_id,
                         state.leader_epoch)
                log_.assign_topic_id(topic_id)
                partition.topic_id = topic_id
                return ErrorCode.NONE
            if topic_id is None and log_.topic_id is not None and state.leader != self.broker_id:
                return ErrorCode.NONE
        log.info("%s: ignoring LeaderAndIsr with leader epoch %d (current %d)", partition.topic_partition,
                 state.leader_epoch, partition.leader_epoch)
        return ErrorCode.STALE_CONTROLLER_EPOCH

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
        deleted = False
        for tp in tps:
            # Without delete (controlled shutdown, Kafka's OfflineReplica) the replica only stops: no fetching,
            # no leadership, but the partition stays so its high watermark is still checkpointed.
            partition = self.partitions.pop(tp, None) if delete else self.partitions.get(tp)
            if delete:
                self.high_watermarks.pop(tp, None)
            if partition is not None:
                partition.stop()
                self._complete_delayed(tp)
            if delete:
                try:
                    self.log_manager.delete_log(tp, checkpoint=False)
                    deleted = True
                except KafkaStorageError as e:
                    log.error("%s: cannot delete log: %s", tp, e)
                    result[tp] = ErrorCode.KAFKA_STORAGE_ERROR
                    continue
            result[tp] = ErrorCode.NONE
        if deleted:  # once for all of them: a topic of 10,000 partitions rewrote both checkpoints 10,000 times
            self.log_manager.checkpoint_recovery_points()
            self.log_manager.checkpoint_log_start_offsets()
        return result

    def _complete_delayed(self, tp: TopicPartition) -> None:
        self.produce_purgatory.check_and_complete(tp)
        self.fetch_purgatory.check_and_complete(tp)
        self.delete_records_purgatory.check_and_complete(tp)

    # ---- DeleteRecords
    def delete_records(self, timeout_ms: int, offsets: dict[TopicPartition, int]
                       ) -> dict[TopicPartition, DeleteRecordsPartitionResult] | asyncio.Future:
        """Kafka's deleteRecords: move each led partition's log start offset, then answer at once if every
        low watermark is already there, else park a DelayedDeleteRecords until the replicas follow."""
        results: dict[TopicPartition, DeleteRecordsPartitionResult] = {}
        for tp, offset in offsets.items():
            try:
                partition = self.get_partition_or_error(tp)
                requested = partition.delete_records_on_leader(offset)
                low = partition.low_watermark_if_leader(self._is_alive)
                results[tp] = DeleteRecordsPartitionResult(ErrorCode.NONE, low, requested)
            except KafkaApiError as e:
                results[tp] = DeleteRecordsPartitionResult(e.code)
        if not any(r.error == ErrorCode.NONE and r.low_watermark < r.requested_offset for r in results.values()):
            return results
        future: asyncio.Future = asyncio.get_running_loop().create_future()
        op = DelayedDeleteRecords(timeout_ms, self, results, self._is_alive, future)
        if self.delete_records_purgatory.try_complete_else_watch(op, list(offsets)):
            return future.result()
        return future

    def _is_alive(self, broker_id: int) -> bool:
        return self.metadata_cache is None or self.metadata_cache.alive_broker(broker_id) is not None

    # ---- produce
    def append_records(self, timeout_ms: int, required_acks: int, entries: dict[TopicPartition, memoryview],
                       *, internal_topics_allowed: bool = False, origin: AppendOrigin = AppendOrigin.CLIENT,
                       verification_guards: dict[TopicPartition, VerificationGuard] | None = None,
                       transactional_id: str | None = None,
                       transaction_operation: TransactionSupportedOperation = _DEFAULT_ERROR,
                       ) -> dict[TopicPartition, ProducePartitionResult] | asyncio.Future:
        """Kafka's appendRecords. The transaction coordinator's markers: `origin=AppendOrigin.COORDINATOR`,
        `internal_topics_allowed=True`, acks=-1. A client's transactional produce passes its
        `transactional_id`, which starts KIP-890 verification; `transaction_operation` (from the Produce version)
        ADD_PARTITION (v12+, transaction.version 2) has the coordinator add the partitions instead, whatever
        transaction.partition.verification.enable."""
        if transactional_id is not None:
            adds = transaction_operation.supports_epoch_bump
            if self.add_partitions_to_txn is not None and (adds or self.transaction_verification_enabled()):
                return self._append_verified(timeout_ms, required_acks, entries, transactional_id,
                                             internal_topics_allowed, transaction_operation)
            self.disable_transaction_verification(entries)
        now = now_ms()
        results: dict[TopicPartition, ProducePartitionResult] = {}
        unwritten = []
        for tp, records in entries.items():
            guard = verification_guards.get(tp) if verification_guards else None
            results[tp] = result = self._append_to_local_log(tp, records, required_acks, now,
                                                             internal_topics_allowed, origin, guard)
            if result.error == ErrorCode.NONE and self.log_writes is not None:
                partition = self.partitions.get(tp)
                pending = self.log_writes.unwritten(partition.log if partition else None, result.last_offset + 1)
                if pending is not None:
                    unwritten.append((tp, pending))
        if unwritten:
            return asyncio.ensure_future(self._answer_when_written(timeout_ms, required_acks, results, unwritten))
        return self._answer_appended(timeout_ms, required_acks, results)

    async def _answer_when_written(self, timeout_ms: int, required_acks: int,
                                   results: dict[TopicPartition, ProducePartitionResult],
                                   unwritten: list[tuple[TopicPartition, tuple[Log, int, int]]]
                                   ) -> dict[TopicPartition, ProducePartitionResult]:
        assert self.log_writes is not None
        written = await self.log_writes.wait_written([pending for _, pending in unwritten])
        for (tp, _), ok in zip(unwritten, written, strict=True):
            if not ok:  # cut from the log before it was written: leadership lost (truncated), or a failed write
                partition = self.partitions.get(tp)
                leads = partition is not None and partition.is_leader
                results[tp] = ProducePartitionResult(ErrorCode.KAFKA_STORAGE_ERROR if leads
                                                     else ErrorCode.NOT_LEADER_OR_FOLLOWER)
        answer = self._answer_appended(timeout_ms, required_acks, results)
        return (await answer) if isinstance(answer, asyncio.Future) else answer

    def _answer_appended(self, timeout_ms: int, required_acks: int,
                         results: dict[TopicPartition, ProducePartitionResult]
                         ) -> dict[TopicPartition, ProducePartitionResult] | asyncio.Future:
        """acks=0/1 answer now (the bytes are written); acks=all waits in the purgatory for the HW."""
        if required_acks != -1 or not any(r.error == ErrorCode.NONE for r in results.values()):
            return results
        future = asyncio.get_running_loop().create_future()
        op = DelayedProduce(timeout_ms, self, results, future)
        if self.produce_purgatory.try_complete_else_watch(op, list(results)):
            return results
        return future

    def disable_transaction_verification(self, tps: Iterable[TopicPartition]) -> None:
        """Verification is off (or there is no coordinator client): these logs take transactional appends
        without a guard, as before the broker verified."""
        for tp in tps:
            partition = self.partitions.get(tp)
            if partition is not None:
                partition.set_transaction_verification(False)

    def _append_verified(self, timeout_ms: int, required_acks: int, entries: dict[TopicPartition, memoryview],
                         transactional_id: str, internal_topics_allowed: bool,
                         operation: TransactionSupportedOperation = _DEFAULT_ERROR
                         ) -> dict[TopicPartition, ProducePartitionResult] | asyncio.Future:
        """Kafka's appendRecords with verification: partitions needing it wait for the coordinator's answer;
        those it did not verify (and those that failed before asking) are not appended."""
        try:
            split = split_for_verification(self, entries, operation)
        except KafkaApiError as e:
            return {tp: ProducePartitionResult(e.code) for tp in entries}

        def append(errors: dict[TopicPartition, ErrorCode]) -> dict[TopicPartition, ProducePartitionResult] \
                | asyncio.Future:
            failed = {**split.errors, **errors}
            early = {}
            for tp, code in failed.items():
                error, message = produce_error(code, operation)
                early[tp] = ProducePartitionResult(error, error_message=message)
            verified = {tp: r for tp, r in entries.items() if tp not in failed}
            result = self.append_records(timeout_ms, required_acks, verified,
                                         internal_topics_allowed=internal_topics_allowed,
                                         verification_guards=split.guards) if verified else {}
            if isinstance(result, asyncio.Future):
                async def merged() -> dict[TopicPartition, ProducePartitionResult]:
                    return {**early, **(await result)}
                return asyncio.ensure_future(merged())
            return {**early, **result}

        if not split.guards:
            return append({})
        assert self.add_partitions_to_txn is not None
        asked = self.add_partitions_to_txn.verify_transaction(transactional_id, split.producer_id,
                                                              split.producer_epoch, list(split.guards),
                                                              operation, retry_concurrent=True)
        if asked.done():  # this broker's own coordinator answered in-process
            return append(asked.result())

        async def after_verification() -> dict[TopicPartition, ProducePartitionResult]:
            result = append(await asked)
            return (await result) if isinstance(result, asyncio.Future) else result
        return asyncio.ensure_future(after_verification())

    def _append_to_local_log(self, tp: TopicPartition, records: memoryview, required_acks: int, now: int,
                             internal_topics_allowed: bool, origin: AppendOrigin = AppendOrigin.CLIENT,
                             verification_guard: VerificationGuard | None = None) -> ProducePartitionResult:
        try:
            if tp.topic in INTERNAL_TOPICS and not internal_topics_allowed:
                raise KafkaApiError(ErrorCode.INVALID_TOPIC_EXCEPTION, f"{tp}: internal topic")
            partition = self.get_partition_or_error(tp)
            appended = partition.append_records_to_leader(records, required_acks, now, origin=origin,
                                                          verification_guard=verification_guard)
        except KafkaApiError as e:
            if self.metrics is not None:
                self.metrics.record_produce(tp.topic, 0, len(records), e.code)
            if e.code not in (ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION):
                log.warning("produce to %s rejected: %s: %s", tp, e.code.name, e)
            if e.record_errors:  # Kafka answers a per-record rejection with the log start offset too
                return ProducePartitionResult(e.code, log_start_offset=partition.log_start_offset,
                                              error_message=str(e), record_errors=e.record_errors)
            # Kafka sends an error message only with per-record errors (and for failed verification); the
            # rest is in the log line above.
            return ProducePartitionResult(e.code)
        info = appended.info
        if self.metrics is not None:  # Kafka's BrokerTopicMetrics (a duplicate is not appended again)
            self.metrics.record_produce(tp.topic, 0 if info.duplicate else info.records_count,
                                        0 if info.duplicate else info.valid_bytes, 0)
        if not info.duplicate and partition.log.writer is None:  # type: ignore[union-attr]
            # Written in place (with a writer thread, its completion does this: _on_log_end_offset_moved).
            # Followers' delayed fetches wait on the LEO, consumers' and acks=all produces on the HW.
            self.fetch_purgatory.check_and_complete(tp)
            if appended.high_watermark_moved:
                self.produce_purgatory.check_and_complete(tp)
            if self.on_flush_needed is not None and partition.log.needs_flush():  # type: ignore[union-attr]
                self.on_flush_needed(partition)
        return ProducePartitionResult(ErrorCode.NONE, info.first_offset, info.last_offset,
                                      appended.log_append_time, partition.log_start_offset)

    # ---- fetch
    def fetch_messages(self, params: FetchParams, infos: list[tuple[TopicPartition, PartitionFetchInfo]]
                       ) -> list[tuple[TopicPartition, FetchPartitionData]] | asyncio.Future:
        results = self.read_from_local_logs(params, infos, update_fetch_state=True)
        total = sum(r.size for _, r in results)
        has_error = any(r.error != ErrorCode.NONE or r.diverging_epoch is not None or r.preferred_read_replica >= 0
                        for _, r in results)
        if params.max_wait_ms <= 0 or not infos or total >= params.min_bytes or has_error:
            return results
        future = asyncio.get_running_loop().create_future()
        statuses = [(tp, FetchPartitionStatus(data.fetch_offset_metadata or LogOffsetMetadata(info.fetch_offset),
                                              info, data.high_watermark))
                    for (tp, info), (_, data) in zip(infos, results, strict=True)]
        op = DelayedFetch(params.max_wait_ms, self, params, statuses, future)
        # try_complete re-checks with fresh numbers; if nothing arrived it parks.
        if self.fetch_purgatory.try_complete_else_watch(op, [tp for tp, _ in infos]):
            return future.result()
        return future

    def read_from_local_logs(self, params: FetchParams, infos: list[tuple[TopicPartition, PartitionFetchInfo]],
                             *, update_fetch_state: bool) -> list[tuple[TopicPartition, FetchPartitionData]]:
        """Kafka's readFromLog. A follower's fetch updates its state on the leader only when it first
        arrives (`update_fetch_state`), not again when a delayed fetch completes."""
        limit = params.max_bytes
        min_one_message = not params.hard_max_bytes_limit
        now = now_ms()
        out = []
        hw_moved = []
        for tp, info in infos:
            data, moved = self._read_partition(params, tp, info, min(info.max_bytes, limit), min_one_message,
                                               now, update_fetch_state)
            if moved:
                hw_moved.append(tp)
            if data.size > 0:
                min_one_message = False
                limit = max(0, limit - data.size)
            out.append((tp, data))
        for tp in hw_moved:
            self._complete_delayed(tp)
        if params.is_from_follower and update_fetch_state:
            # The fetch carried the follower's log start offset: a parked DeleteRecords may be done.
            for tp, _ in infos:
                self.delete_records_purgatory.check_and_complete(tp)
        return out

    def _read_partition(self, params: FetchParams, tp: TopicPartition, info: PartitionFetchInfo,
                        max_bytes: int, min_one_message: bool, now: int, update_fetch_state: bool
                        ) -> tuple[FetchPartitionData, bool]:
        from_follower = params.is_from_follower
        try:
            if tp in self.partitions and not self._consistent_topic_id(tp, info.topic_id):
                raise KafkaApiError(ErrorCode.INCONSISTENT_TOPIC_ID, f"{tp}: topic id {info.topic_id} is not the log's")
            partition = self.get_partition_or_error(tp)
            preferred = self.find_preferred_read_replica(partition, params, info.fetch_offset, now)
            if preferred is not None:
                # KIP-392: no data, only where to fetch from (with the offsets, as Kafka's fetchOffsetSnapshot).
                partition.check_leader_epoch(info.current_leader_epoch, require_leader=False)
                return FetchPartitionData(ErrorCode.NONE, partition.high_watermark, partition.last_stable_offset,
                                          partition.log_start_offset, None, preferred_read_replica=preferred), False
            result = partition.fetch_records(
                info.fetch_offset, info.current_leader_epoch, max_bytes,
                FETCH_LOG_END if from_follower else params.isolation, min_one_message,
                replica_id=params.replica_id, last_fetched_epoch=info.last_fetched_epoch if from_follower else -1,
                follower_log_start_offset=info.log_start_offset, now_ms=now, update_fetch_state=update_fetch_state,
                fetch_only_from_leader=params.fetch_only_from_leader)
            if not partition.is_leader and update_fetch_state:
                self.follower_consumer_fetches[tp] += 1
            read = result.info
            return FetchPartitionData(
                ErrorCode.NONE, result.high_watermark, result.last_stable_offset, result.log_start_offset,
                read.records if read is not None else None, diverging_epoch=result.diverging_epoch,
                fetch_offset_metadata=read.fetch_offset_metadata if read is not None else None,
                aborted_transactions=read.aborted_transactions if read is not None else None,
            ), result.high_watermark_moved
        except KafkaApiError as e:
            found = self.partitions.get(tp)
            return FetchPartitionData(
                e.code, found.high_watermark if found else -1, found.high_watermark if found else -1,
                found.log_start_offset if found and found.log else -1), False

    def find_preferred_read_replica(self, partition: Partition, params: FetchParams, fetch_offset: int,
                                    now: int) -> int | None:
        """Kafka's findPreferredReadReplica: on the leader, for a consumer with client metadata, the replica
        `replica.selector.class` picks among the leader and the in-sync followers holding `fetch_offset`;
        None for the leader itself (the leader serves), without a selector, or for replication fetches."""
        meta = params.client_metadata
        if self.replica_selector is None or meta is None or params.is_from_follower or not partition.is_leader:
            return None
        cache = self.metadata_cache

        def rack(broker_id: int) -> str | None:
            endpoint = cache.alive_broker(broker_id) if cache is not None else None
            return endpoint.rack if endpoint is not None else None

        leader = ReplicaView(self.broker_id, rack(self.broker_id), partition.log_end_offset, 0)
        candidates = [leader] + [
            ReplicaView(r.broker_id, rack(r.broker_id), r.log_end_offset, now - r.last_caught_up_time_ms)
            for r in partition.remote_replicas.values()
            if r.broker_id in partition.isr and r.log_end_offset >= fetch_offset and r.log_start_offset <= fetch_offset
            and (cache is None or cache.alive_broker(r.broker_id) is not None)]
        chosen = self.replica_selector.select(meta.rack_id, leader, candidates)
        return None if chosen.broker_id == self.broker_id else chosen.broker_id

    # ---- housekeeping
    def maybe_shrink_isr(self) -> None:
        now = now_ms()
        for partition in self.partitions.values():
            if partition.is_leader:
                partition.maybe_shrink_isr(now)

    async def stop_isr_updates(self) -> None:
        """Cancel the ISR proposals in flight and wait until they have ended (broker shutdown)."""
        for partition in self.partitions.values():
            partition.cancel_isr_updates()
        for partition in list(self.partitions.values()):
            await partition.wait_for_isr_updates()

    def checkpoint_high_watermarks(self) -> None:
        hws = {tp: p.high_watermark for tp, p in self.partitions.items() if p.log is not None}
        self.log_manager.checkpoint_high_watermarks(hws)

    def shutdown(self) -> None:
        if self.log_writes is not None:
            self.log_writes.close()  # the writers finish what they hold; the logs close afterwards
        self.produce_purgatory.shutdown()
        self.fetch_purgatory.shutdown()
        self.delete_records_purgatory.shutdown()
        if self.partitions:
            try:
                self.checkpoint_high_watermarks()
            except Exception:
                log.exception("cannot checkpoint high watermarks on shutdown")

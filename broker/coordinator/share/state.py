"""The share coordinator's state: each share partition's persisted state per `__share_group_state` partition,
and the only writer of that topic (Kafka's ShareCoordinatorShard, its rules and error codes).

Contract:
- It is the `CoordinatorShard` of the shared `CoordinatorRuntime`: `begin_loading(p)` marks p loading
  (COORDINATOR_LOAD_IN_PROGRESS), `load_partition` replays ShareSnapshot/ShareUpdate records, `on_partition_loaded`
  makes p answer, `unload_partition` drops it (NOT_COORDINATOR from then on). Once `shutdown()` is called every
  request answers COORDINATOR_NOT_AVAILABLE (Kafka's inactive service).
- A share partition (group, topic id, partition) lives on partition abs(javaHash("group:topicId:partition")) %
  the partition count of `__share_group_state` (share.coordinator.state.topic.num.partitions until it exists;
  Kafka's SharePartitionKey.asCoordinatorKey and partitionFor).
- Replay, the single way the state changes (loading, and after each acknowledged append): a ShareSnapshot replaces
  the share partition's state; a ShareUpdate merges its batches into it (`batches.combine`, pruned at its start
  offset when that is not -1) and counts one more update since the snapshot (the first update after nothing
  counts 0); a tombstone forgets it. The leader and state epochs kept per share partition only grow.
- Writes (`write`, `initialize`, `delete`, and `read` when it raises the leader epoch) build one record from the
  current state, append it with acks=all (share.coordinator.write.timeout.ms) and replay it once acknowledged, only
  if this broker still owns the partition at the same load (else NOT_COORDINATOR). Requests for one share
  partition are served one at a time, in order. Append errors are mapped as Kafka's coordinators map them:
  UNKNOWN_TOPIC_OR_PARTITION, NOT_ENOUGH_REPLICAS, REQUEST_TIMED_OUT -> COORDINATOR_NOT_AVAILABLE;
  NOT_LEADER_OR_FOLLOWER, KAFKA_STORAGE_ERROR -> NOT_COORDINATOR; record too large -> UNKNOWN_SERVER_ERROR.
- Rules (Kafka's): ownership is checked first, then a negative partition is INVALID_REQUEST.
  Write: INVALID_REQUEST before the share partition is initialized; FENCED_LEADER_EPOCH when a leader epoch
  (not -1) is older than the one kept; FENCED_STATE_EPOCH when a state epoch (not -1) is older;
  UNKNOWN_TOPIC_OR_PARTITION when the topic id or partition is not in the metadata. The record is a ShareSnapshot
  (snapshot epoch + 1, the merged batches, the kept leader and state epochs) once
  share.coordinator.snapshot.update.records.per.snapshot updates were written since the last one, else a
  ShareUpdate of the request's batches. A write does not change the leader epoch kept.
  Read: INVALID_REQUEST before initialization, FENCED_LEADER_EPOCH for an older leader epoch (-1 included),
  UNKNOWN_TOPIC_OR_PARTITION; a newer leader epoch (not -1) is recorded first (a record without batches).
  Initialize: FENCED_STATE_EPOCH for an older state epoch; writes a fresh ShareSnapshot (no batches, leader epoch
  0). Delete: a tombstone when there is state, nothing otherwise. Summary: start offset -1, state epoch 0 and
  leader epoch 0 for a share partition without state; otherwise the state's (the leader epoch of its last
  snapshot or update, not the highest seen).
- A deleted topic's share partitions get tombstones in the partitions this broker leads then
  (`delete_topic_state`, Kafka's cleanup on a metadata delta); a partition loading or led elsewhere at that
  moment keeps them (as Kafka's).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from dataclasses import dataclass, field

from broker.common.errors import KafkaApiError
from broker.coordinator.runtime import LoadedBatch
from broker.coordinator.runtime import partition_for as java_hash_partition
from broker.coordinator.share.batches import combine
from broker.coordinator.share.config import ShareCoordinatorConfig
from broker.coordinator.share.persister import PersisterStateBatch
from broker.coordinator.share.records import (
    SNAPSHOT,
    UPDATE,
    ShareKey,
    ShareRecordError,
    ShareSnapshotValue,
    ShareUpdateValue,
    decode_key,
    decode_snapshot,
    decode_update,
    encode_key,
    encode_snapshot,
    encode_update,
)
from protocol.errors import ErrorCode

log = logging.getLogger("broker.coordinator.share")

SHARE_GROUP_STATE_TOPIC = "__share_group_state"

AppendRecords = Callable[[int, list[tuple[bytes, bytes | None]]], Awaitable[int]]
Record = tuple[bytes | memoryview, bytes | memoryview | None]

# Kafka's CoordinatorOperationExceptionHelper mapping of append errors (anything else passes through).
_APPEND_ERRORS = {
    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION: ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.NOT_ENOUGH_REPLICAS: ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.REQUEST_TIMED_OUT: ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.NOT_LEADER_OR_FOLLOWER: ErrorCode.NOT_COORDINATOR,
    ErrorCode.KAFKA_STORAGE_ERROR: ErrorCode.NOT_COORDINATOR,
    ErrorCode.MESSAGE_TOO_LARGE: ErrorCode.UNKNOWN_SERVER_ERROR,
    ErrorCode.RECORD_LIST_TOO_LARGE: ErrorCode.UNKNOWN_SERVER_ERROR,
}


@dataclass(frozen=True, slots=True)
class ShareGroupOffset:
    """A share partition's current state (Kafka's ShareGroupOffset)."""
    snapshot_epoch: int
    state_epoch: int
    leader_epoch: int
    start_offset: int
    state_batches: tuple[PersisterStateBatch, ...] = ()
    create_timestamp: int = 0
    write_timestamp: int = 0


class ShareStateError(Exception):
    """A request refused with a Kafka error code (and Kafka's message where it has one)."""

    def __init__(self, code: ErrorCode, message: str | None = None) -> None:
        super().__init__(message or code.name)
        self.code = code
        self.message = message


@dataclass(slots=True)
class _Partition:
    """One loaded (or loading) `__share_group_state` partition."""
    states: dict[ShareKey, ShareGroupOffset] = field(default_factory=dict)
    leader_epochs: dict[ShareKey, int] = field(default_factory=dict)
    state_epochs: dict[ShareKey, int] = field(default_factory=dict)
    update_counts: dict[ShareKey, int] = field(default_factory=dict)
    # The offset of each share partition's latest ShareSnapshot: everything before the smallest is redundant.
    snapshot_offsets: dict[ShareKey, int] = field(default_factory=dict)


def _name(key: ShareKey) -> str:
    return f"share partition {key.coordinator_key()}"


class ShareStateManager:
    def __init__(self, config: ShareCoordinatorConfig, append_records: AppendRecords,
                 partition_count: Callable[[uuid.UUID], int | None],
                 clock_ms: Callable[[], int] | None = None,
                 topic_partitions: Callable[[], int | None] = lambda: None) -> None:
        self.config = config
        self._topic_partitions = topic_partitions  # how many partitions __share_group_state has, None if unknown
        self._append_records = append_records
        self._partition_count = partition_count  # a topic id's partition count in the metadata, None if unknown
        self._clock_ms = clock_ms or (lambda: int(time.time() * 1000))
        self._loading: dict[int, _Partition] = {}
        self._owned: dict[int, _Partition] = {}
        self._locks: dict[ShareKey, tuple[asyncio.Lock, list[int]]] = {}
        self.active = True

    def partition_for(self, key: ShareKey) -> int:
        return java_hash_partition(key.coordinator_key(), self.num_partitions())

    def num_partitions(self) -> int:
        """The partition count of `__share_group_state` as it exists (Kafka takes it from the metadata), else
        share.coordinator.state.topic.num.partitions."""
        return self._topic_partitions() or self.config.state_topic_num_partitions

    def shutdown(self) -> None:
        self.active = False

    # ---- the shard (CoordinatorRuntime)
    def begin_loading(self, partition: int) -> None:
        self._owned.pop(partition, None)
        self._loading[partition] = _Partition()

    def load_partition(self, partition: int, records: Iterable[Record]) -> None:
        self.load_batches(partition, [LoadedBatch(-1, -1, False, None, list(records))])

    def load_batches(self, partition: int, batches: list[LoadedBatch]) -> None:
        """Replay from the log. A record's offset is taken as its batch's base offset: exact for the one-record
        batches written here, at or below the truth for others, so pruning never goes too far."""
        state = self._loading.get(partition)
        if state is None:
            return
        for batch in batches:
            if batch.control_type is not None:
                continue
            for key, value in batch.records:
                try:
                    decoded = decode_key(key)
                    if decoded is None:
                        continue
                    self._replay(state, decoded[0], decoded[1], value, batch.base_offset)
                except ShareRecordError as e:
                    log.error("%s-%d: undecodable record skipped: %s", SHARE_GROUP_STATE_TOPIC, partition, e)

    def on_partition_loaded(self, partition: int) -> None:
        state = self._loading.pop(partition, None)
        if state is None:
            return
        self._owned[partition] = state
        log.info("%s-%d loaded: %d share partitions", SHARE_GROUP_STATE_TOPIC, partition, len(state.states))

    def unload_partition(self, partition: int) -> None:
        was = self._loading.pop(partition, None) is not None
        if self._owned.pop(partition, None) is not None or was:
            log.info("%s-%d unloaded", SHARE_GROUP_STATE_TOPIC, partition)

    def owned_partitions(self) -> list[int]:
        return sorted(self._owned)

    def redundant_offset(self, partition: int) -> int | None:
        """The offset below which every record of `partition` is superseded by a later ShareSnapshot or
        tombstone (Kafka's ShareCoordinatorOffsetsManager): the smallest latest-snapshot offset of its share
        partitions; None when nothing can be pruned."""
        p = self._owned.get(partition)
        if p is None or not p.snapshot_offsets:
            return None
        lowest = min(p.snapshot_offsets.values())
        return lowest if lowest > 0 else None

    async def delete_topic_state(self, topic_id: uuid.UUID) -> int:
        """Tombstones for every share partition of a deleted topic in the partitions this broker leads (Kafka's
        maybeCleanupShareState); how many were written."""
        written = 0
        for pid, p in list(self._owned.items()):
            for key in [k for k in p.states if k.topic_id == topic_id]:
                async with self._serialized(key):
                    if self._owned.get(pid) is not p or key not in p.states:
                        continue
                    try:
                        await self._write(pid, p, SNAPSHOT, key, None)
                        written += 1
                    except ShareStateError as e:
                        log.info("%s: state of the deleted topic not removed: %s", _name(key), e.code.name)
        return written

    async def snapshot_cold_partitions(self, interval_ms: int) -> int:
        """Rewrite as a ShareSnapshot (same state, snapshot epoch + 1, write timestamp now) every share partition
        whose last snapshot is `interval_ms` old, so one quiet share partition does not hold back pruning
        (Kafka's snapshotColdPartitions; skipped when every share partition was already rewritten so). Returns
        how many were written."""
        written = 0
        for pid, p in list(self._owned.items()):
            if all(s.create_timestamp != s.write_timestamp for s in p.states.values()):
                continue
            now = self._clock_ms()
            for key, current in list(p.states.items()):
                if now - current.write_timestamp < interval_ms:
                    continue
                async with self._serialized(key):
                    if self._owned.get(pid) is not p or p.states.get(key) is not current:
                        continue
                    value = ShareSnapshotValue(current.snapshot_epoch + 1, current.state_epoch,
                                               current.leader_epoch, current.start_offset, current.create_timestamp,
                                               self._clock_ms(), current.state_batches)
                    try:
                        await self._write(pid, p, SNAPSHOT, key, encode_snapshot(value))
                        written += 1
                    except ShareStateError as e:
                        log.debug("%s: cold snapshot not written: %s", key, e.code.name)
        return written

    # ---- replay
    def _replay(self, p: _Partition, kind: int, key: ShareKey, value: bytes | memoryview | None,
                offset: int) -> None:
        if kind == SNAPSHOT:
            if value is None:
                p.snapshot_offsets.pop(key, None)
                p.states.pop(key, None)
                p.leader_epochs.pop(key, None)
                p.state_epochs.pop(key, None)
                p.update_counts.pop(key, None)
                return
            snap = decode_snapshot(value)
            p.snapshot_offsets[key] = offset
            p.leader_epochs[key] = max(p.leader_epochs.get(key, snap.leader_epoch), snap.leader_epoch)
            p.state_epochs[key] = max(p.state_epochs.get(key, snap.state_epoch), snap.state_epoch)
            p.states[key] = ShareGroupOffset(snap.snapshot_epoch, snap.state_epoch, snap.leader_epoch,
                                             snap.start_offset, snap.state_batches, snap.create_timestamp,
                                             snap.write_timestamp)
            if p.update_counts.get(key, 0) >= self.config.snapshot_update_records_per_snapshot:
                p.update_counts[key] = 0
        elif value is not None:
            upd = decode_update(value)
            p.leader_epochs[key] = max(p.leader_epochs.get(key, upd.leader_epoch), upd.leader_epoch)
            current = p.states.get(key)
            if current is None:
                p.states[key] = ShareGroupOffset(upd.snapshot_epoch, 0, upd.leader_epoch, upd.start_offset,
                                                 upd.state_batches)
                p.update_counts[key] = 0
            else:
                start = current.start_offset if upd.start_offset == -1 else upd.start_offset
                leader_epoch = current.leader_epoch if upd.leader_epoch == -1 else upd.leader_epoch
                p.states[key] = ShareGroupOffset(
                    current.snapshot_epoch, current.state_epoch, leader_epoch, start,
                    tuple(combine(current.state_batches, upd.state_batches, start)),
                    current.create_timestamp, current.write_timestamp)
                p.update_counts[key] = p.update_counts.get(key, -1) + 1

    # ---- ownership and ordering
    def _partition_of(self, key: ShareKey) -> tuple[int, _Partition]:
        if not self.active:
            raise ShareStateError(ErrorCode.COORDINATOR_NOT_AVAILABLE, "the share coordinator has shut down")
        pid = self.partition_for(key)
        if pid in self._loading:
            raise ShareStateError(ErrorCode.COORDINATOR_LOAD_IN_PROGRESS)
        p = self._owned.get(pid)
        if p is None:
            raise ShareStateError(ErrorCode.NOT_COORDINATOR)
        return pid, p

    @contextlib.asynccontextmanager
    async def _serialized(self, key: ShareKey) -> AsyncIterator[None]:
        entry = self._locks.get(key)
        if entry is None:
            entry = self._locks[key] = (asyncio.Lock(), [0])
        entry[1][0] += 1
        try:
            async with entry[0]:
                yield
        finally:
            entry[1][0] -= 1
            if entry[1][0] == 0 and self._locks.get(key) is entry:
                del self._locks[key]

    async def _write(self, pid: int, p: _Partition, kind: int, key: ShareKey, value: bytes | None) -> None:
        try:
            offset = await self._append_records(pid, [(encode_key(kind, key), value)])
        except KafkaApiError as e:
            error = _APPEND_ERRORS.get(e.code, e.code)
            log.info("%s: writing to %s-%d failed: %s (answering %s)", key, SHARE_GROUP_STATE_TOPIC, pid,
                     e.code.name, error.name)
            raise ShareStateError(error) from None
        if self._owned.get(pid) is not p:
            raise ShareStateError(ErrorCode.NOT_COORDINATOR)
        self._replay(p, kind, key, value, offset)

    def _check_topic(self, key: ShareKey) -> None:
        count = self._partition_count(key.topic_id)
        if count is None or count <= key.partition:
            raise ShareStateError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)

    @staticmethod
    def _check_partition(key: ShareKey) -> None:
        if key.partition < 0:
            raise ShareStateError(ErrorCode.INVALID_REQUEST, f"partition {key.partition} is negative")

    # ---- requests
    async def write(self, key: ShareKey, state_epoch: int, leader_epoch: int, start_offset: int,
                    batches: list[PersisterStateBatch]) -> None:
        self._partition_of(key)
        self._check_partition(key)
        async with self._serialized(key):
            pid, p = self._partition_of(key)
            current = p.states.get(key)
            if current is None:
                raise ShareStateError(ErrorCode.INVALID_REQUEST, f"{_name(key)} has no state to write to: it "
                                                                 "was never initialized")
            if leader_epoch != -1 and p.leader_epochs.get(key, leader_epoch) > leader_epoch:
                raise ShareStateError(ErrorCode.FENCED_LEADER_EPOCH)
            if state_epoch != -1 and p.state_epochs.get(key, state_epoch) > state_epoch:
                raise ShareStateError(ErrorCode.FENCED_STATE_EPOCH)
            self._check_topic(key)
            kind, value = self._state_record(p, key, current, start_offset, current.leader_epoch, batches)
            await self._write(pid, p, kind, key, value)

    def _state_record(self, p: _Partition, key: ShareKey, current: ShareGroupOffset, start_offset: int,
                      leader_epoch: int, batches: list[PersisterStateBatch]) -> tuple[int, bytes]:
        if p.update_counts.get(key, 0) >= self.config.snapshot_update_records_per_snapshot:
            now = self._clock_ms()
            start = current.start_offset if start_offset == -1 else start_offset
            return SNAPSHOT, encode_snapshot(ShareSnapshotValue(
                current.snapshot_epoch + 1, current.state_epoch, leader_epoch, start, now, now,
                tuple(combine(current.state_batches, batches, start))))
        return UPDATE, encode_update(ShareUpdateValue(current.snapshot_epoch, leader_epoch, start_offset,
                                                      tuple(combine((), batches, start_offset))))

    async def read(self, key: ShareKey, leader_epoch: int) -> ShareGroupOffset:
        self._partition_of(key)
        self._check_partition(key)
        async with self._serialized(key):
            pid, p = self._partition_of(key)
            current = p.states.get(key)
            if current is None:
                raise ShareStateError(ErrorCode.INVALID_REQUEST, f"{_name(key)} has no state to read: it was "
                                                                 "never initialized")
            if p.leader_epochs.get(key, leader_epoch) > leader_epoch:
                raise ShareStateError(ErrorCode.FENCED_LEADER_EPOCH)
            self._check_topic(key)
            if leader_epoch != -1 and p.leader_epochs.get(key) != leader_epoch:
                log.info("%s: read by a share-partition leader at the new leader epoch %d", key, leader_epoch)
                kind, value = self._state_record(p, key, current, current.start_offset, leader_epoch, [])
                await self._write(pid, p, kind, key, value)
            return current

    def read_summary(self, key: ShareKey) -> ShareGroupOffset:
        _, p = self._partition_of(key)
        self._check_partition(key)
        self._check_topic(key)
        current = p.states.get(key)
        return current if current is not None else ShareGroupOffset(0, 0, 0, -1)

    async def initialize(self, key: ShareKey, state_epoch: int, start_offset: int) -> None:
        self._partition_of(key)
        self._check_partition(key)
        async with self._serialized(key):
            pid, p = self._partition_of(key)
            if state_epoch != -1 and p.state_epochs.get(key, state_epoch) > state_epoch:
                raise ShareStateError(ErrorCode.FENCED_STATE_EPOCH)
            self._check_topic(key)
            current = p.states.get(key)
            now = self._clock_ms()
            value = ShareSnapshotValue(0 if current is None else current.snapshot_epoch + 1, state_epoch, 0,
                                       start_offset, now, now)
            await self._write(pid, p, SNAPSHOT, key, encode_snapshot(value))

    async def delete(self, key: ShareKey) -> None:
        self._partition_of(key)
        self._check_partition(key)
        async with self._serialized(key):
            pid, p = self._partition_of(key)
            self._check_topic(key)
            if key not in p.states:
                return
            await self._write(pid, p, SNAPSHOT, key, None)

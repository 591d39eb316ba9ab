"""What every coordinator of an internal topic shares: the leader of a partition of the topic IS that
partition's coordinator (Kafka's CoordinatorRuntime, CoordinatorLoader and PartitionWriter).

Contract:
- One `CoordinatorRuntime` per internal topic (`__consumer_offsets` for groups, `__transaction_state` for
  transactions) and per broker, owned by the broker's asyncio loop. Its `shard` is the coordinator's state
  (a `CoordinatorShard`), which knows nothing of logs or leadership. The runtime knows the broker's replica
  manager only as a `PartitionWriter` (Kafka's), its partitions as `CoordinatorPartition`s, and a coordinator's
  service sees the broker as a `CoordinatorServer`: protocols defined here, implemented above (ReplicaManager,
  Partition, KafkaServer), so the coordinators import nothing of the replication path.
- Becoming leader of a partition of the topic (`on_leadership_change`, registered with the PartitionWriter)
  schedules a load: `shard.begin_loading(p)` at once (requests for it answer "loading"), then the partition's
  records from log start to the log end offset (as Kafka's coordinators load, FetchIsolation.LOG_END: a new
  leader's high watermark can lag records the old coordinator already had acknowledged, acks=all, and every
  record in a leader's log gets committed), in chunks of LOAD_CHUNK_BYTES, yielding to the loop between
  chunks, as `shard.load_partition(p, [(key, value), ...])` (control batches and keyless records skipped), then
  `shard.on_partition_loaded(p)`. A shard whose records may be written in transactions (the group
  coordinator's transactional offset commits; a `BatchLoadingShard`) gets whole batches instead,
  `shard.load_batches(p, [LoadedBatch, ...])`: producer id, the transactional bit, and the markers (control
  batches) that commit or abort them, so it can replay a transaction's records only once it committed.
  The load stops (and the shard is not told it finished) once this broker is no longer leader at the epoch
  the load began with.
- Becoming follower, or `on_resignation(p)` (StopReplica), cancels a running load and calls
  `shard.unload_partition(p)`. A new leadership while a load runs cancels it and starts over.
- Tasks are kept until they end, cancelled loads too: `wait_loaded(p)` awaits the running load of p (tests
  wait on it, not on time), `shutdown()` cancels every task and waits for them.
- `append(p, records, txn=None)` writes one batch of (key, value) records to partition p through the
  PartitionWriter with acks=all, internal topics allowed and origin COORDINATOR, so a write is acknowledged
  only once committed (high watermark), as Kafka's coordinators write; it raises KafkaApiError with the
  partition's error otherwise. `txn` (a `TransactionalAppend`) makes it a transactional batch of that
  producer id and epoch (base sequence 0, as Kafka writes transactional offset commits), appended with
  the KIP-890 verification guard the caller obtained.
- `ensure_topic(create)` starts creating the topic once (FindCoordinator answers COORDINATOR_NOT_AVAILABLE
  meanwhile and clients retry); the creation task is kept and cancelled by `shutdown()`.
- `partition_for(key, n)`: the partition of an internal topic of `n` partitions a key belongs to (a group id, a
  transactional id, a share partition's key), as all of Kafka's coordinators compute it:
  Utils.abs(key.hashCode()) % n with Java's String.hashCode (`java_string_hashcode`).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Coroutine, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from broker.common.errors import KafkaApiError
from protocol.errors import ErrorCode
from protocol.records import CorruptRecordError, InvalidRecordError, build_batch, control_record_type, iter_batches
from storage import AppendOrigin, TopicPartition, VerificationGuard

if TYPE_CHECKING:
    from broker.config.kafka_config import KafkaConfig
    from broker.metadata.metadata_cache import MetadataCache
    from storage import Log

log = logging.getLogger("broker.coordinator")

LOAD_CHUNK_BYTES = 1 << 20
Record = tuple[bytes | memoryview, bytes | memoryview | None]


def java_string_hashcode(s: str) -> int:
    """Java's String.hashCode: over UTF-16 code units, with 32-bit signed overflow."""
    h = 0
    raw = s.encode("utf-16-be")
    for i in range(0, len(raw), 2):
        h = (31 * h + ((raw[i] << 8) | raw[i + 1])) & 0xFFFFFFFF
    return h - (1 << 32) if h & 0x80000000 else h


def partition_for(group_id: str, num_partitions: int) -> int:
    h = java_string_hashcode(group_id)
    # Kafka's Utils.abs: Integer.MIN_VALUE maps to 0, not to itself.
    return (0 if h == -(1 << 31) else abs(h)) % num_partitions


class CoordinatorShard(Protocol):
    """A coordinator's state for the partitions of its internal topic, fed by the runtime."""

    def begin_loading(self, partition: int) -> None: ...
    def load_partition(self, partition: int, records: Iterable[Record]) -> None: ...
    def on_partition_loaded(self, partition: int) -> None: ...
    def unload_partition(self, partition: int) -> None: ...


@dataclass(frozen=True, slots=True)
class LoadedBatch:
    """One batch of an internal topic, as a `BatchLoadingShard` replays it."""
    base_offset: int
    producer_id: int
    is_transactional: bool
    control_type: int | None  # a marker's ControlRecordType (0 ABORT, 1 COMMIT); None for data batches
    records: list[Record]  # data batches: the keyed records at or after the load offset; markers: none


@runtime_checkable
class BatchLoadingShard(CoordinatorShard, Protocol):
    """A shard that follows transactions: it is fed whole batches, markers included."""

    def load_batches(self, partition: int, batches: list[LoadedBatch]) -> None: ...


@dataclass(frozen=True, slots=True)
class TransactionalAppend:
    """Who writes a transactional batch to an internal topic (a transactional offset commit)."""
    producer_id: int
    producer_epoch: int
    verification_guard: VerificationGuard | None = None


class CoordinatorPartition(Protocol):
    """A partition of an internal topic, as its coordinator sees it (broker.cluster.partition.Partition)."""

    topic_partition: TopicPartition
    leader_epoch: int
    log: Log | None

    @property
    def is_leader(self) -> bool: ...


class PartitionWriter(Protocol):
    """All a coordinator knows of the broker's replica manager (Kafka's PartitionWriter; the implementation is
    broker.server.replica_manager.ReplicaManager): append to a partition of its internal topic, move its log start
    offset, look a partition up, and hear of leadership changes, called with the partitions (`CoordinatorPartition`)
    this broker now leads and those it now follows. Appends and deletions answer a result per partition (`error`,
    `error_message`, `last_offset`), or a future of them."""

    on_leadership_change: list[Callable[[list[Any], list[Any]], None]]

    def append_records(self, timeout_ms: int, required_acks: int, entries: dict[TopicPartition, memoryview], *,
                       internal_topics_allowed: bool = False, origin: AppendOrigin = AppendOrigin.CLIENT,
                       verification_guards: dict[TopicPartition, VerificationGuard] | None = None) -> Any: ...

    def delete_records(self, timeout_ms: int, offsets: dict[TopicPartition, int]) -> Any: ...

    def get_partition(self, tp: TopicPartition) -> CoordinatorPartition | None: ...


class CoordinatorServer(Protocol):
    """The broker as a coordinator's service sees it (KafkaServer): its config, its metadata cache (the internal
    topic, the live brokers), its replica manager as the coordinator's `PartitionWriter`, and its controller, which
    creates the internal topic (`controller.admin.ensure_internal_topic`)."""

    config: KafkaConfig
    metadata_cache: MetadataCache
    replica_manager: PartitionWriter
    controller: Any  # broker.controller.Controller, or broker.kraft.broker_server.KRaftBroker: rooms above this one


class CoordinatorRuntime:
    def __init__(self, topic: str, shard: CoordinatorShard, replica_manager: PartitionWriter, *,
                 append_timeout_ms: int) -> None:
        self.topic = topic
        self.shard = shard
        self.replica_manager = replica_manager
        self.append_timeout_ms = append_timeout_ms
        self._loads: dict[int, asyncio.Task] = {}  # the running load of each partition
        self._tasks: set[asyncio.Task] = set()  # every task not finished yet, cancelled loads too
        self._creating: asyncio.Task | None = None

    def _keep(self, task: asyncio.Task) -> asyncio.Task:
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    # ---- ownership
    def on_leadership_change(self, new_leaders: list[CoordinatorPartition],
                             new_followers: list[CoordinatorPartition]) -> None:
        for p in new_followers:
            if p.topic_partition.topic == self.topic:
                self.on_resignation(p.topic_partition.partition)
        for p in new_leaders:
            if p.topic_partition.topic == self.topic:
                self._start_load(p)

    def on_resignation(self, partition: int) -> None:
        task = self._loads.pop(partition, None)
        if task is not None:
            task.cancel()
        self.shard.unload_partition(partition)

    def _start_load(self, partition: CoordinatorPartition) -> None:
        pid = partition.topic_partition.partition
        old = self._loads.pop(pid, None)
        if old is not None:
            old.cancel()
        self.shard.begin_loading(pid)
        task = self._keep(asyncio.get_running_loop().create_task(self._load(partition, partition.leader_epoch)))
        self._loads[pid] = task
        task.add_done_callback(lambda t: self._loads.pop(pid, None) if self._loads.get(pid) is t else None)

    async def _load(self, partition: CoordinatorPartition, epoch: int) -> None:
        pid = partition.topic_partition.partition
        t0 = time.monotonic()
        log_ = partition.log
        assert log_ is not None
        offset = log_.log_start_offset
        try:
            while partition.is_leader and partition.leader_epoch == epoch:
                end = log_.log_end_offset
                if offset >= end:
                    break
                info = log_.read(offset, LOAD_CHUNK_BYTES, max_offset=end, min_one_message=True)
                if info.records is None or info.records.length == 0:
                    break
                data = memoryview(info.records.read())
                next_offset = self._feed_shard(pid, data, offset)
                if next_offset <= offset:
                    break
                offset = next_offset
                await asyncio.sleep(0)
        except (CorruptRecordError, InvalidRecordError) as e:
            log.error("%s: cannot load coordinator state at offset %d: %s", partition.topic_partition, offset, e)
        if partition.is_leader and partition.leader_epoch == epoch:
            self.shard.on_partition_loaded(pid)
            log.debug("%s: coordinator state loaded up to offset %d in %.0f ms", partition.topic_partition, offset,
                      (time.monotonic() - t0) * 1000)

    def _feed_shard(self, pid: int, data: memoryview, offset: int) -> int:
        """Hand the shard the batches in `data` from `offset` on; returns the offset after the last batch."""
        pairs: list[Record] = []
        batches: list[LoadedBatch] = []
        by_batch = isinstance(self.shard, BatchLoadingShard)
        next_offset = offset
        for batch in iter_batches(data):
            next_offset = batch.next_offset
            if batch.last_offset < offset:
                continue
            if batch.is_control:
                if by_batch:
                    control = next(iter(batch.records()), None)
                    kind = control_record_type(control.key) if control is not None else None
                    if kind is not None:
                        batches.append(LoadedBatch(batch.base_offset, batch.producer_id, True, kind, []))
                continue
            keyed = [(rec.key, rec.value) for rec in batch.records() if rec.offset >= offset and rec.key is not None]
            if by_batch:
                batches.append(LoadedBatch(batch.base_offset, batch.producer_id, batch.is_transactional, None,
                                           keyed))
            else:
                pairs.extend(keyed)
        if by_batch:
            self.shard.load_batches(pid, batches)  # type: ignore[attr-defined]
        else:
            self.shard.load_partition(pid, pairs)
        return next_offset

    async def wait_loaded(self, partition: int) -> None:
        """Wait for a running load of `partition` to end (at once when none runs)."""
        task = self._loads.get(partition)
        if task is not None:
            await asyncio.wait({task})

    # ---- writes
    async def append(self, partition: int, records: list[tuple[bytes, bytes | None]],
                     txn: TransactionalAppend | None = None) -> int:
        now = int(time.time() * 1000)
        tp = TopicPartition(self.topic, partition)
        guards = None
        if txn is None:
            batch = build_batch([(k, v, [], now) for k, v in records])
        else:
            batch = build_batch([(k, v, [], now) for k, v in records], producer_id=txn.producer_id,
                                producer_epoch=txn.producer_epoch, base_sequence=0, is_transactional=True)
            if txn.verification_guard is not None:
                guards = {tp: txn.verification_guard}
        result: Any = self.replica_manager.append_records(self.append_timeout_ms, -1,
                                                          {tp: memoryview(bytearray(batch))},
                                                          internal_topics_allowed=True,
                                                          origin=AppendOrigin.COORDINATOR,
                                                          verification_guards=guards)
        if isinstance(result, asyncio.Future):
            result = await result
        r = result[tp]
        if r.error != ErrorCode.NONE:
            raise KafkaApiError(r.error, f"append to {tp} failed: {r.error_message or r.error.name}")
        return r.last_offset

    # ---- the topic
    def ensure_topic(self, exists: bool, create: Callable[[], Coroutine[Any, Any, None]]) -> None:
        if exists or (self._creating is not None and not self._creating.done()):
            return
        task = self._keep(asyncio.get_running_loop().create_task(create()))
        self._creating = task

        def done(t: asyncio.Task) -> None:
            if not t.cancelled() and t.exception() is not None:
                log.warning("creating %s failed: %r", self.topic, t.exception())

        task.add_done_callback(done)

    async def shutdown(self) -> None:
        tasks = set(self._tasks)
        self._loads.clear()
        self._creating = None
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.wait(tasks)

"""The groups and committed offsets of the `__consumer_offsets` partitions this broker leads, and their
persistence (Kafka's GroupMetadataManager).

Contract:
- Owned by the broker's asyncio loop, no locks, no I/O of its own: every write goes through the injected
  `append_records(partition, [(key, value | None), ...]) -> offset`, which appends one batch to partition N
  of `__consumer_offsets` with acks=all semantics and raises on failure (an exception with an int
  `code`/`errno` is mapped with Kafka's rules; anything else answers COORDINATOR_NOT_AVAILABLE). The cache
  changes only after the append succeeded, so clients hear about a commit only once it is committed.
- Ownership (a `CoordinatorShard` for broker/coordinator/runtime.py): `begin_loading(p)`,
  `load_partition(p, records)` with the partition's (key, value) pairs in log order (consecutive chunks),
  `on_partition_loaded(p)`, `unload_partition(p)`. `partition_error(group_id)` tells a request whether this
  broker coordinates the group: NOT_COORDINATOR (not owned), COORDINATOR_LOAD_IN_PROGRESS (loading),
  COORDINATOR_NOT_AVAILABLE (shut down), None (owned and loaded).
- Loaded groups are handed to `on_group_loaded(group)`; a group leaving the cache because its partition is
  unloaded (or a newer copy was loaded) goes Dead, its timers stop, and `on_group_unloaded(group, error)`
  answers its waiting members. The coordinator (coordinator.py) sets both hooks.
- `partition_for(group_id)` is `abs(String.hashCode(group_id)) % offsets.topic.num.partitions`, exactly
  Kafka's (Utils.abs maps Integer.MIN_VALUE to 0).
- Transactional offset commits (KIP-98/KIP-447, Kafka's pendingTransactionalOffsetCommits): `store_txn_offsets`
  appends a transactional batch of the producer and keeps the offsets pending in the group, invisible to
  OffsetFetch (which answers UNSTABLE_OFFSET_COMMIT for them when asked for stable offsets);
  `handle_txn_completion(producer_id, partitions, is_commit)`, called once the transaction's marker is
  written to those `__consumer_offsets` partitions, makes them committed (unless a newer commit already is)
  or drops them. Loading (`load_batches`, batch by batch with the markers; the replay is loader.py's)
  follows the same rules: a transaction's offsets count from its COMMIT marker on, an ABORT drops them, one
  still open stays pending.
- Offsets: `store_offsets`, `fetch_offsets`, `delete_offsets`, `delete_groups`, `delete_offsets_of_partitions`
  (Kafka's handleDeletedPartitions), and retention (KIP-211): every offsets.retention.check.interval.ms
  `expire_offsets` drops offsets past retention; Empty groups left without offsets die, with a tombstone.
- KIP-848 consumer groups live on their entry's `consumer` (consumer_requests.py changes them and appends their
  records through `append_group_records`); loading rebuilds them from the partition's ConsumerGroup* records,
  and a dying group is tombstoned with them. ListGroups lists them with their own type and state.
- Background writes (`spawn`: retention, the empty group of a finished generation) are kept; `shutdown()`
  cancels them and `wait_background()` waits for them.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Coroutine, Iterable, Sequence
from typing import Any

from broker.coordinator.group.config import GroupCoordinatorConfig
from broker.coordinator.group.consumer_records import group_tombstones
from broker.coordinator.group.errors import (
    GroupErrorCode,
    error_code_of,
    map_group_append_error,
    map_offset_append_error,
)
from broker.coordinator.group.loader import PartitionLoad
from broker.coordinator.group.metadata import (
    CONSUMER_PROTOCOL_TYPE,
    GroupMetadata,
    GroupState,
    MemberMetadata,
    OffsetAndMetadata,
)
from broker.coordinator.group.results import FetchedOffset, ListedGroup, ListGroupsResult, OffsetFetchResult
from broker.coordinator.group.schema import (
    GroupMetadataKey,
    GroupMetadataValue,
    MemberMetadataValue,
    OffsetCommitKey,
    OffsetCommitValue,
    encode_group_metadata_key,
    encode_group_metadata_value,
    encode_offset_commit_key,
    encode_offset_commit_value,
)
from broker.coordinator.runtime import LoadedBatch, TransactionalAppend, partition_for
from storage.values import TopicPartition

log = logging.getLogger(__name__)

E = GroupErrorCode
# append_records(partition, records) -> last offset; transactional batches pass txn=TransactionalAppend(...).
AppendRecords = Callable[..., Awaitable[int]]
Record = tuple[bytes | memoryview, bytes | memoryview | None]
Tombstones = list[tuple[bytes, bytes | None]]


class GroupMetadataManager:
    def __init__(self, append_records: AppendRecords, config: GroupCoordinatorConfig, *,
                 clock_ms: Callable[[], int] | None = None) -> None:
        self._append_records = append_records
        self.config = config
        self.clock_ms = clock_ms or (lambda: int(time.time() * 1000))
        self.groups: dict[str, GroupMetadata] = {}
        self._owned: set[int] = set()
        self._loading: dict[int, PartitionLoad] = {}
        self.shutting_down = False
        self._expiry_timer: asyncio.TimerHandle | None = None
        self._background: set[asyncio.Task[Any]] = set()
        # producer id -> groups holding its pending transactional offsets (Kafka's openGroupsForProducer)
        self._open_groups_for_producer: dict[int, set[str]] = {}
        self.on_group_loaded: Callable[[GroupMetadata], None] = lambda group: None
        self.on_group_unloaded: Callable[[GroupMetadata, int], None] = lambda group, error: None
        self.on_share_groups_loaded: Callable[[int, dict[str, Any]], None] = lambda partition, groups: None

    # ================================================================================================
    # Ownership of __consumer_offsets partitions
    # ================================================================================================
    def partition_for(self, group_id: str) -> int:
        return partition_for(group_id, self.config.offsets_topic_num_partitions)

    def is_active(self, partition: int) -> bool:
        return partition in self._owned

    def is_loading(self, partition: int) -> bool:
        return partition in self._loading

    def partition_error(self, group_id: str) -> int | None:
        if self.shutting_down:
            return E.COORDINATOR_NOT_AVAILABLE
        partition = self.partition_for(group_id)
        if partition in self._loading:
            return E.COORDINATOR_LOAD_IN_PROGRESS
        if partition not in self._owned:
            return E.NOT_COORDINATOR
        return None

    def begin_loading(self, partition: int) -> None:
        """Mark a partition as being loaded: its groups answer COORDINATOR_LOAD_IN_PROGRESS until loaded."""
        self._owned.discard(partition)
        self._loading.setdefault(partition, PartitionLoad(partition))

    def load_partition(self, partition: int, records: Iterable[Record]) -> None:
        """Replay (key, value) pairs of one __consumer_offsets partition in log order; a chunk at a time."""
        self._load_state(partition).replay(records)

    def load_batches(self, partition: int, batches: Iterable[LoadedBatch]) -> None:
        """Replay whole batches of one __consumer_offsets partition in log order, markers included: a
        transactional batch's offsets wait for their producer's COMMIT marker (Kafka's loader)."""
        self._load_state(partition).replay_batches(batches)

    def _load_state(self, partition: int) -> PartitionLoad:
        state = self._loading.get(partition)
        if state is None:
            self.begin_loading(partition)
            state = self._loading[partition]
        return state

    def on_partition_loaded(self, partition: int) -> None:
        """Finish loading: build the groups, hand them to the coordinator, answer for them."""
        state = self._loading.pop(partition, None) or PartitionLoad(partition)
        now = self.clock_ms()
        offsets_by_group = state.committed_by_group()
        pending_by_group = state.pending_by_group()
        consumer_groups = state.consumer.build()
        loaded = 0
        # Groups that only ever committed offsets (no group management) have no metadata record.
        offsets_only = [g for g in {**offsets_by_group, **pending_by_group, **consumer_groups} if g not in state.groups]
        for group_id in [*state.groups, *offsets_only]:
            value = state.groups.get(group_id)
            # A KIP-848 consumer group's own records win over a classic record left by a conversion.
            group = (self._group_from_record(group_id, partition, value, now)
                     if value is not None and group_id not in consumer_groups
                     else GroupMetadata(group_id, partition, state_timestamp_ms=now))
            group.consumer = consumer_groups.get(group_id)
            group.offsets = offsets_by_group.pop(group_id, {})
            group.pending_txn_offsets = pending_by_group.pop(group_id, {})
            for producer_id in group.pending_txn_offsets:
                self._open_groups_for_producer.setdefault(producer_id, set()).add(group_id)
            self._install_loaded_group(group)
            loaded += 1
        self.on_share_groups_loaded(partition, state.share.build())
        self._owned.add(partition)
        if state.skipped:
            log.warning("__consumer_offsets-%d: %d undecodable records skipped", partition, state.skipped)
        log.info("__consumer_offsets-%d loaded: %d groups", partition, loaded)
        self._ensure_expiry_timer()

    def unload_partition(self, partition: int) -> None:
        """Stop coordinating a partition's groups; their waiting members hear NOT_COORDINATOR."""
        self._owned.discard(partition)
        self._loading.pop(partition, None)
        for group in [g for g in self.groups.values() if g.partition == partition]:
            self._unload_group(group, E.NOT_COORDINATOR)

    def shutdown(self) -> None:
        """Stop all timers and background writes, unload everything; afterwards COORDINATOR_NOT_AVAILABLE."""
        self.shutting_down = True
        if self._expiry_timer is not None:
            self._expiry_timer.cancel()
            self._expiry_timer = None
        for task in self._background:
            task.cancel()
        for partition in sorted(self._owned | set(self._loading)):
            self.unload_partition(partition)

    async def wait_background(self) -> None:
        if self._background:
            await asyncio.wait(set(self._background))

    @staticmethod
    def _group_from_record(group_id: str, partition: int, value: GroupMetadataValue, now: int) -> GroupMetadata:
        group = GroupMetadata(group_id, partition)
        group.generation_id = value.generation
        group.protocol_type = value.protocol_type or None
        group.protocol_name = value.protocol
        group.state = GroupState.STABLE if value.members else GroupState.EMPTY
        group.state_timestamp_ms = (value.current_state_timestamp if value.current_state_timestamp >= 0
                                    else now)
        for m in value.members:
            member = MemberMetadata(
                member_id=m.member_id, group_instance_id=m.group_instance_id, client_id=m.client_id,
                client_host=m.client_host, rebalance_timeout_ms=m.rebalance_timeout,
                session_timeout_ms=m.session_timeout, protocol_type=value.protocol_type,
                supported_protocols=[(value.protocol or "", m.subscription)], assignment=m.assignment)
            group.add(member)
        group.leader_id = value.leader if value.leader in group.members else next(iter(group.members), None)
        if group.members:
            group.subscribed_topics = group._compute_subscribed_topics()
        return group

    def _install_loaded_group(self, group: GroupMetadata) -> None:
        old = self.groups.get(group.group_id)
        if old is not None:
            self._unload_group(old, E.NOT_COORDINATOR)
        self.groups[group.group_id] = group
        self.on_group_loaded(group)

    def _unload_group(self, group: GroupMetadata, error: int) -> None:
        for producer_id in group.pending_txn_offsets:
            self._remove_producer_group(producer_id, group.group_id)
        previous = group.state
        group.transition_to(GroupState.DEAD, self.clock_ms())
        group.cancel_timers()
        self.on_group_unloaded(group, error)
        if previous is not GroupState.DEAD and self.groups.get(group.group_id) is group:
            del self.groups[group.group_id]

    # ================================================================================================
    # The group cache
    # ================================================================================================
    def add_group(self, group_id: str) -> GroupMetadata:
        group = GroupMetadata(group_id, self.partition_for(group_id), state_timestamp_ms=self.clock_ms())
        self.groups[group_id] = group
        return group

    def remove_dead_group(self, group: GroupMetadata) -> None:
        if not group.is_in(GroupState.DEAD):
            group.transition_to(GroupState.DEAD, self.clock_ms())
        group.cancel_timers()
        if self.groups.get(group.group_id) is group:
            del self.groups[group.group_id]

    def list_groups(self, states_filter: Sequence[str] | None, types_filter: Sequence[str] | None
                    ) -> ListGroupsResult:
        """ListGroups; states (v4+) and types (v5+) filters match case-insensitively, empty = all.
        While a partition loads, the answer is COORDINATOR_LOAD_IN_PROGRESS with the groups known."""
        states = {s.lower() for s in states_filter or ()}
        types = {t.lower() for t in types_filter or ()}
        groups = []
        for group in self.groups.values():
            if group.partition not in self._owned or group.is_in(GroupState.DEAD):
                continue
            if group.consumer is not None:
                # A KIP-848 consumer group: Kafka lists it with protocol type "consumer" and its own state.
                listed = ListedGroup(group.group_id, CONSUMER_PROTOCOL_TYPE, group.consumer.state.value, "consumer")
            else:
                listed = ListedGroup(group.group_id, group.protocol_type or "", group.state.value)
            if states and listed.group_state.lower() not in states:
                continue
            if types and listed.group_type not in types:
                continue
            groups.append(listed)
        if self.shutting_down:
            return ListGroupsResult(E.COORDINATOR_NOT_AVAILABLE)
        error = E.COORDINATOR_LOAD_IN_PROGRESS if self._loading else E.NONE
        return ListGroupsResult(error, groups)

    # ================================================================================================
    # Offsets
    # ================================================================================================
    async def store_offsets(self, group: GroupMetadata, offsets: dict[TopicPartition, OffsetAndMetadata]) -> int:
        """Append the commits; the group's offsets change once the append succeeded (unless it died). Until then
        they are pending: OffsetFetch with require_stable answers UNSTABLE_OFFSET_COMMIT for them (Kafka's
        pendingOffsetCommits)."""
        group.pending_offset_commits.update(offsets)
        error, base_offset = await self._append_batch(group.partition, _offset_records(group, offsets),
                                                      map_offset_append_error)
        for tp, o in offsets.items():
            if group.pending_offset_commits.get(tp) is o:
                del group.pending_offset_commits[tp]
        if error == E.NONE and not group.is_in(GroupState.DEAD):
            for tp, o in offsets.items():
                o.record_offset = base_offset
                current = group.offsets.get(tp)
                if current is None or not o.older_than(current):
                    group.offsets[tp] = o
        return error

    async def store_txn_offsets(self, group: GroupMetadata, producer_id: int, producer_epoch: int,
                                offsets: dict[TopicPartition, OffsetAndMetadata],
                                verification_guard: Any = None) -> int:
        """Append a producer's transactional commits (one transactional batch with its id and epoch) and keep
        them pending in the group until the transaction's marker (`handle_txn_completion`)."""
        records = _offset_records(group, offsets)
        self._open_groups_for_producer.setdefault(producer_id, set()).add(group.group_id)
        group.prepare_txn_offset_commit(producer_id, offsets)
        txn = TransactionalAppend(producer_id, producer_epoch, verification_guard)
        error, base_offset = await self._append_batch(group.partition, records, map_offset_append_error, txn)
        for tp, o in offsets.items():
            if error == E.NONE:
                o.record_offset = base_offset
                group.on_txn_offset_commit_append(producer_id, tp, o)
            else:
                group.fail_pending_txn_offset_commit(producer_id, tp)
        if producer_id not in group.pending_txn_offsets:
            self._remove_producer_group(producer_id, group.group_id)
        return error

    def handle_txn_completion(self, producer_id: int, partitions: Iterable[int], is_commit: bool) -> None:
        """The transaction of `producer_id` ended and its marker is written to these __consumer_offsets
        partitions: its pending offsets in their groups become committed (commit) or are dropped (abort).
        Groups that moved away meanwhile are completed by their new coordinator's load (Kafka's
        handleTxnCompletion)."""
        completed = set(partitions)
        for group_id in list(self._open_groups_for_producer.get(producer_id, ())):
            if self.partition_for(group_id) not in completed:
                continue
            group = self.groups.get(group_id)
            if group is not None and not group.is_in(GroupState.DEAD):
                group.complete_pending_txn_offset_commit(producer_id, is_commit)
            self._remove_producer_group(producer_id, group_id)

    def _remove_producer_group(self, producer_id: int, group_id: str) -> None:
        groups = self._open_groups_for_producer.get(producer_id)
        if groups is not None:
            groups.discard(group_id)
            if not groups:
                del self._open_groups_for_producer[producer_id]

    def fetch_offsets(self, group_id: str, partitions: Sequence[tuple[str, int]] | None,
                      require_stable: bool = False) -> OffsetFetchResult:
        """The given partitions (offset -1 when none is committed), or all committed when None. With
        `require_stable` (KIP-447) a partition with a pending transactional commit answers
        UNSTABLE_OFFSET_COMMIT (the client retries until the transaction completes)."""
        group = self.groups.get(group_id)
        live = group is not None and not group.is_in(GroupState.DEAD)
        committed = group.offsets if group is not None and live else {}
        wanted = list(committed) if partitions is None else [TopicPartition(t, p) for t, p in partitions]
        out = []
        for tp in wanted:
            o = committed.get(tp)
            if require_stable and group is not None and live and group.has_pending_offset_commits(tp):
                out.append(FetchedOffset(tp.topic, tp.partition, -1, -1, "", E.UNSTABLE_OFFSET_COMMIT))
            elif o is None:
                out.append(FetchedOffset(tp.topic, tp.partition, -1, -1, ""))
            else:
                out.append(FetchedOffset(tp.topic, tp.partition, o.offset, o.leader_epoch, o.metadata))
        return OffsetFetchResult(E.NONE, out)

    async def delete_offsets(self, group: GroupMetadata, removable: list[TopicPartition]) -> int:
        """Tombstone a group's offsets (the group too if it is Empty and loses them all)."""
        records: Tombstones = [
            (encode_offset_commit_key(OffsetCommitKey(group.group_id, tp.topic, tp.partition)), None)
            for tp in removable]
        if (group.is_in(GroupState.EMPTY) and len(removable) == len(group.offsets) and not group.pending_txn_offsets
                and not group.has_consumer_members):
            records.extend(_group_tombstones(group))
        error = await self._append(group.partition, records, map_offset_append_error)
        if error == E.NONE:
            group.remove_pending_offsets(removable)
            for tp in removable:
                group.offsets.pop(tp, None)
            if (group.is_in(GroupState.EMPTY) and not group.has_offsets and not group.members
                    and not group.has_consumer_members):
                self.remove_dead_group(group)
        return error

    async def delete_groups(self, groups: list[GroupMetadata]) -> dict[str, int]:
        """Remove Empty groups and tombstone them with their offsets, one batch per partition."""
        by_partition: dict[int, list[GroupMetadata]] = {}
        for group in groups:
            self.remove_dead_group(group)
            by_partition.setdefault(group.partition, []).append(group)
        results: dict[str, int] = {}
        for partition, members in by_partition.items():
            records: Tombstones = []
            for group in members:
                for topic, tp_partition in group.offsets:
                    records.append((encode_offset_commit_key(
                        OffsetCommitKey(group.group_id, topic, tp_partition)), None))
                records.extend(_group_tombstones(group))
            code = await self._append(partition, records, map_offset_append_error)
            for group in members:
                results[group.group_id] = code
        return results

    async def delete_offsets_of_partitions(self, partitions: Iterable[tuple[str, int]]) -> int:
        """Forget every group's committed offsets of deleted topic partitions (Kafka's
        handleDeletedPartitions, called after DeleteTopics / partition deletion); Empty groups left
        without offsets die. Returns how many offsets were removed."""
        gone = {TopicPartition(t, p) for t, p in partitions}
        doomed: list[tuple[GroupMetadata, list[TopicPartition], bool]] = []
        for group in self._owned_live_groups():
            tps = [tp for tp in group.offsets if tp in gone]
            if tps:
                doomed.append((group, tps, group.is_in(GroupState.EMPTY) and len(tps) == len(group.offsets)
                               and not group.pending_txn_offsets and not group.has_consumer_members))
        return await self._remove_offsets(doomed)

    def _owned_live_groups(self) -> list[GroupMetadata]:
        return [g for g in self.groups.values() if g.partition in self._owned and not g.is_in(GroupState.DEAD)]

    async def _remove_offsets(self, doomed: list[tuple[GroupMetadata, list[TopicPartition], bool]]) -> int:
        """Tombstone (group, offsets, the group dies too) entries, one batch per partition; the cache changes
        where the batch was appended. Returns how many offsets were removed."""
        by_partition: dict[int, list[tuple[GroupMetadata, list[TopicPartition], bool]]] = {}
        for entry in doomed:
            by_partition.setdefault(entry[0].partition, []).append(entry)
        removed = 0
        for partition, entries in by_partition.items():
            records: Tombstones = []
            for group, tps, dies in entries:
                records.extend((encode_offset_commit_key(OffsetCommitKey(group.group_id, t, p)), None)
                               for t, p in tps)
                if dies:
                    records.extend(_group_tombstones(group))
            if await self._append(partition, records, map_offset_append_error) != E.NONE:
                continue
            for group, tps, dies in entries:
                group.remove_pending_offsets(tps)
                for tp in tps:
                    group.offsets.pop(tp, None)
                removed += len(tps)
                if dies and group.is_in(GroupState.EMPTY) and not group.has_offsets:
                    self.remove_dead_group(group)
        return removed

    # ================================================================================================
    # Offset retention (KIP-211)
    # ================================================================================================
    def _ensure_expiry_timer(self) -> None:
        if self._expiry_timer is None and not self.shutting_down:
            self._expiry_timer = asyncio.get_running_loop().call_later(
                self.config.offsets_retention_check_interval_ms / 1000, self._on_expiry_timer)

    def _on_expiry_timer(self) -> None:
        self._expiry_timer = None
        self.spawn(self.expire_offsets(), "expire offsets")
        self._ensure_expiry_timer()

    async def expire_offsets(self) -> int:
        """Drop offsets past retention, as Kafka does every offsets.retention.check.interval.ms: an
        Empty group's offsets once offsets.retention.ms passed since it became Empty (or since the commit,
        whichever is later); a consumer group's offsets of topics it no longer subscribes to; any offset
        with an explicit expire timestamp in the past. Empty groups left without offsets die."""
        now = self.clock_ms()
        retention = self.config.offsets_retention_ms
        doomed: list[tuple[GroupMetadata, list[TopicPartition], bool]] = []
        for group in self._owned_live_groups():
            expired = []
            for tp, o in group.offsets.items():
                if o.expire_timestamp >= 0:
                    if now >= o.expire_timestamp:
                        expired.append(tp)
                elif group.has_consumer_members:
                    # A consumer group with members: only offsets of topics it no longer subscribes to expire.
                    if not group.consumer.is_subscribed_to_topic(tp.topic) and now >= o.commit_timestamp + retention:
                        expired.append(tp)
                elif group.is_in(GroupState.EMPTY):
                    base = max(o.commit_timestamp, group.state_timestamp_ms)
                    if now >= base + retention:
                        expired.append(tp)
                elif (group.protocol_type == CONSUMER_PROTOCOL_TYPE and group.subscribed_topics is not None
                      and tp.topic not in group.subscribed_topics and now >= o.commit_timestamp + retention):
                    expired.append(tp)
            # A group with transactional commits pending stays until its transactions end (Kafka's hasOffsets).
            dies = (group.is_in(GroupState.EMPTY) and len(expired) == len(group.offsets)
                    and not group.pending_txn_offsets and not group.has_consumer_members)
            if expired or dies:
                doomed.append((group, expired, dies))
        removed = await self._remove_offsets(doomed)
        if removed:
            log.info("expired %d offsets", removed)
        return removed

    # ================================================================================================
    # Persistence
    # ================================================================================================
    async def store_group(self, group: GroupMetadata, assignment: dict[str, bytes]) -> int:
        """Append the group's metadata record with this assignment; the error code (NONE on success)."""
        return await self._append(group.partition, [group_metadata_record(group, assignment)], map_group_append_error)

    async def append_group_records(self, partition: int, records: list[tuple[bytes, bytes | None]]) -> int:
        """Append group records (KIP-848 consumer groups' changes); the error code as for group metadata."""
        return await self._append(partition, records, map_group_append_error) if records else E.NONE

    async def _append(self, partition: int, records: list[tuple[bytes, bytes | None]],
                      map_error: Callable[[int], int]) -> int:
        return (await self._append_batch(partition, records, map_error))[0]

    async def _append_batch(self, partition: int, records: list[tuple[bytes, bytes | None]],
                            map_error: Callable[[int], int], txn: TransactionalAppend | None = None
                            ) -> tuple[int, int]:
        """(error code, offset of the appended batch's first record)."""
        if partition not in self._owned:
            return E.NOT_COORDINATOR, -1
        try:
            if txn is None:
                last_offset = await self._append_records(partition, records)
            else:
                last_offset = await self._append_records(partition, records, txn=txn)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # noqa: BLE001 - any append failure becomes a Kafka error code
            code = error_code_of(exc)
            mapped = map_error(code) if code is not None else E.COORDINATOR_NOT_AVAILABLE
            log.warning("append to __consumer_offsets-%d failed (%r): answering %s", partition, exc,
                        _error_name(mapped))
            return mapped, -1
        return E.NONE, last_offset - len(records) + 1

    def spawn(self, coro: Coroutine[Any, Any, Any], what: str) -> None:
        """Run a write in the background, kept until it ends (cancelled by shutdown)."""
        task = asyncio.get_running_loop().create_task(coro)
        self._background.add(task)

        def done(t: asyncio.Task[Any]) -> None:
            self._background.discard(t)
            if not t.cancelled() and t.exception() is not None:
                log.error("group coordinator: %s failed: %r", what, t.exception())

        task.add_done_callback(done)


def group_metadata_record(group: GroupMetadata, assignment: dict[str, bytes]) -> tuple[bytes, bytes | None]:
    """A classic group's metadata record with this assignment (member id -> assignment bytes)."""
    protocol = group.protocol_name
    members = tuple(
        MemberMetadataValue(
            member_id=m.member_id, group_instance_id=m.group_instance_id, client_id=m.client_id,
            client_host=m.client_host, rebalance_timeout=m.rebalance_timeout_ms,
            session_timeout=m.session_timeout_ms,
            subscription=m.metadata_for(protocol) if protocol is not None else b"",
            assignment=assignment.get(m.member_id, b""))
        for m in group.members.values())
    value = GroupMetadataValue(group.protocol_type or "", group.generation_id, protocol,
                               group.leader_id, group.state_timestamp_ms, members)
    return encode_group_metadata_key(GroupMetadataKey(group.group_id)), encode_group_metadata_value(value)


def _offset_records(group: GroupMetadata, offsets: dict[TopicPartition, OffsetAndMetadata]
                    ) -> list[tuple[bytes, bytes | None]]:
    return [(encode_offset_commit_key(OffsetCommitKey(group.group_id, tp.topic, tp.partition)),
             encode_offset_commit_value(OffsetCommitValue(o.offset, o.leader_epoch, o.metadata, o.commit_timestamp,
                                                          o.expire_timestamp)))
            for tp, o in offsets.items()]


def _group_tombstones(group: GroupMetadata) -> list[tuple[bytes, bytes | None]]:
    """A dying group's records: its classic metadata and, for a consumer group, every consumer group record."""
    records: list[tuple[bytes, bytes | None]] = [(encode_group_metadata_key(GroupMetadataKey(group.group_id)), None)]
    return records + (group_tombstones(group.consumer) if group.consumer is not None else [])


def _error_name(code: int) -> str:
    try:
        return GroupErrorCode(code).name
    except ValueError:
        return str(code)

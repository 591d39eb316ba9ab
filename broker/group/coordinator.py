"""The classic-protocol group coordinator (Kafka's GroupCoordinator + GroupMetadataManager), on asyncio.

Contract:
- One `GroupCoordinator` per broker, owned by the broker's asyncio loop: every method runs on that loop,
  timers are `loop.call_later` handles, and nothing is locked.
- It does no I/O. The broker injects `append_records(partition, [(key, value | None), ...]) -> offset`,
  which appends one batch to partition N of `__consumer_offsets` with acks=all semantics and raises on
  failure (an exception with an int `code`/`errno` is mapped with Kafka's rules; anything else answers
  COORDINATOR_NOT_AVAILABLE). Clients hear about a commit or an assignment only after it succeeded.
- Ownership of `__consumer_offsets` partitions: the broker calls `begin_loading(p)` (optional),
  `load_partition(p, records)` with the partition's (key, value) pairs in log order (may be called several
  times with consecutive chunks), then `on_partition_loaded(p)`; `unload_partition(p)` when it loses
  leadership. Groups of a partition not owned answer NOT_COORDINATOR, of one being loaded
  COORDINATOR_LOAD_IN_PROGRESS (Heartbeat: NONE, SyncGroup: REBALANCE_IN_PROGRESS, as Kafka does).
- `partition_for(group_id)` is `abs(String.hashCode(group_id)) % offsets.topic.num.partitions`,
  exactly Kafka's (Utils.abs maps Integer.MIN_VALUE to 0).
- The request methods (`join_group`, `sync_group`, `heartbeat`, `leave_group`, `commit_offsets`,
  `fetch_offsets`, `delete_offsets`, `describe_groups`, `list_groups`, `delete_groups`) are coroutines
  returning the dataclasses in `broker.group.results` with Kafka error codes. JoinGroup and SyncGroup
  may wait for the rest of the group; a cancelled caller does not cancel the group's rebalance.
- Kafka's timeouts: `group.initial.rebalance.delay.ms` for the first join of an Empty group, the
  largest rebalance timeout of the members for the join phase and again for the sync phase, each member's
  session timeout between heartbeats (5 minutes for a new member waiting in its first join), and the
  session timeout for a pending member id handed out with MEMBER_ID_REQUIRED.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from broker.group.errors import (
    GroupErrorCode,
    error_code_of,
    map_group_append_error,
    map_offset_append_error,
)
from broker.group.metadata import (
    CONSUMER_PROTOCOL_TYPE,
    GroupMetadata,
    GroupState,
    MemberMetadata,
    OffsetAndMetadata,
)
from broker.group.results import (
    DescribedGroup,
    DescribedMember,
    FetchedOffset,
    JoinGroupMember,
    JoinGroupResult,
    LeaveGroupResult,
    LeaveMember,
    LeaveMemberResult,
    ListedGroup,
    ListGroupsResult,
    OffsetCommitEntry,
    OffsetDeleteResult,
    OffsetFetchResult,
    SyncGroupResult,
)
from broker.group.schema import (
    GroupMetadataKey,
    GroupMetadataValue,
    MemberMetadataValue,
    OffsetCommitKey,
    OffsetCommitValue,
    SchemaError,
    decode_group_metadata_value,
    decode_key,
    decode_offset_commit_value,
    encode_group_metadata_key,
    encode_group_metadata_value,
    encode_offset_commit_key,
    encode_offset_commit_value,
)
from storage.values import TopicPartition

log = logging.getLogger(__name__)

E = GroupErrorCode
AppendRecords = Callable[[int, list[tuple[bytes, bytes | None]]], Awaitable[int]]
Record = tuple[bytes | memoryview, bytes | memoryview | None]


@dataclass(frozen=True, slots=True)
class GroupCoordinatorConfig:
    """Kafka's broker properties for groups, under their Kafka names with dots as underscores."""
    offsets_topic_num_partitions: int = 50
    group_initial_rebalance_delay_ms: int = 3000
    group_min_session_timeout_ms: int = 6000
    group_max_session_timeout_ms: int = 1800000
    group_max_size: int = 2147483647
    offset_metadata_max_bytes: int = 4096
    offsets_retention_ms: int = 7 * 24 * 3600 * 1000
    offsets_retention_check_interval_ms: int = 600000
    # Kafka's GroupCoordinator.NewMemberJoinTimeoutMs: how long a new member may wait in its first join.
    new_member_join_timeout_ms: int = 300000


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


class _LoadState:
    __slots__ = ("offsets", "groups", "removed_groups", "skipped")

    def __init__(self) -> None:
        self.offsets: dict[tuple[str, str, int], OffsetCommitValue] = {}
        self.groups: dict[str, GroupMetadataValue] = {}
        self.removed_groups: set[str] = set()
        self.skipped = 0


class GroupCoordinator:
    def __init__(self, append_records: AppendRecords, config: GroupCoordinatorConfig | None = None, *,
                 clock_ms: Callable[[], int] | None = None) -> None:
        self._append_records = append_records
        self.config = config or GroupCoordinatorConfig()
        self._clock_ms = clock_ms or (lambda: int(time.time() * 1000))
        self._groups: dict[str, GroupMetadata] = {}
        self._active_partitions: set[int] = set()
        self._loading: dict[int, _LoadState] = {}
        self._shutting_down = False
        self._expiry_timer: asyncio.TimerHandle | None = None
        self._background: set[asyncio.Task[Any]] = set()

    # ================================================================================================
    # Ownership of __consumer_offsets partitions
    # ================================================================================================
    def partition_for(self, group_id: str) -> int:
        return partition_for(group_id, self.config.offsets_topic_num_partitions)

    def is_active(self, partition: int) -> bool:
        return partition in self._active_partitions

    def is_loading(self, partition: int) -> bool:
        return partition in self._loading

    def begin_loading(self, partition: int) -> None:
        """Mark a partition as being loaded: its groups answer COORDINATOR_LOAD_IN_PROGRESS until loaded."""
        self._active_partitions.discard(partition)
        self._loading.setdefault(partition, _LoadState())

    def load_partition(self, partition: int, records: Iterable[Record]) -> None:
        """Replay (key, value) pairs of one __consumer_offsets partition in log order; a chunk at a time."""
        state = self._loading.get(partition)
        if state is None:
            self.begin_loading(partition)
            state = self._loading[partition]
        for raw_key, raw_value in records:
            try:
                key = decode_key(raw_key)
                if isinstance(key, OffsetCommitKey):
                    tp_key = (key.group, key.topic, key.partition)
                    if raw_value is None:
                        state.offsets.pop(tp_key, None)
                    else:
                        state.offsets[tp_key] = decode_offset_commit_value(raw_value)
                elif isinstance(key, GroupMetadataKey):
                    if raw_value is None:
                        state.groups.pop(key.group, None)
                        state.removed_groups.add(key.group)
                    else:
                        state.groups[key.group] = decode_group_metadata_value(raw_value)
                        state.removed_groups.discard(key.group)
            except SchemaError as exc:
                state.skipped += 1
                if state.skipped == 1:
                    log.warning("__consumer_offsets-%d: skipping undecodable record: %s", partition, exc)

    def on_partition_loaded(self, partition: int) -> None:
        """Finish loading: build the groups, start their members' session timers, answer for them."""
        state = self._loading.pop(partition, None) or _LoadState()
        now = self._clock_ms()
        offsets_by_group: dict[str, dict[TopicPartition, OffsetAndMetadata]] = {}
        for (group_id, topic, tp_partition), v in state.offsets.items():
            offsets_by_group.setdefault(group_id, {})[TopicPartition(topic, tp_partition)] = OffsetAndMetadata(
                v.offset, v.leader_epoch, v.metadata, v.commit_timestamp, v.expire_timestamp)
        loaded = 0
        for group_id, value in state.groups.items():
            group = self._group_from_record(group_id, partition, value, now)
            group.offsets = offsets_by_group.pop(group_id, {})
            self._install_loaded_group(group)
            loaded += 1
        # Groups that only ever committed offsets (no group management) have no metadata record.
        for group_id, offsets in offsets_by_group.items():
            group = GroupMetadata(group_id, partition, state_timestamp_ms=now)
            group.offsets = offsets
            self._install_loaded_group(group)
            loaded += 1
        self._active_partitions.add(partition)
        if state.skipped:
            log.warning("__consumer_offsets-%d: %d undecodable records skipped", partition, state.skipped)
        log.info("__consumer_offsets-%d loaded: %d groups", partition, loaded)
        self._ensure_expiry_timer()

    def unload_partition(self, partition: int) -> None:
        """Stop coordinating a partition's groups; their waiting members hear NOT_COORDINATOR."""
        self._active_partitions.discard(partition)
        self._loading.pop(partition, None)
        for group in [g for g in self._groups.values() if g.partition == partition]:
            self._unload_group(group, E.NOT_COORDINATOR)

    def shutdown(self) -> None:
        """Stop all timers and answer every waiting member; afterwards COORDINATOR_NOT_AVAILABLE."""
        self._shutting_down = True
        if self._expiry_timer is not None:
            self._expiry_timer.cancel()
            self._expiry_timer = None
        for partition in sorted(self._active_partitions | set(self._loading)):
            self.unload_partition(partition)

    def group(self, group_id: str) -> GroupMetadata | None:
        """The in-memory group, for inspection (tests, admin tools); never mutate it from outside."""
        return self._groups.get(group_id)

    def _group_from_record(self, group_id: str, partition: int, value: GroupMetadataValue,
                           now: int) -> GroupMetadata:
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
        old = self._groups.get(group.group_id)
        if old is not None:
            self._unload_group(old, E.NOT_COORDINATOR)
        self._groups[group.group_id] = group
        for member in group.members.values():
            self._schedule_heartbeat(group, member)
        if group.size > self.config.group_max_size:
            # group.max.size was lowered since the group was stored: rebalance so the excess members go
            # (their JoinGroup answers GROUP_MAX_SIZE_REACHED) after a chance to commit.
            self._prepare_rebalance(group, f"loaded group is over capacity ({self.config.group_max_size})")

    def _unload_group(self, group: GroupMetadata, error: int) -> None:
        previous = group.state
        group.transition_to(GroupState.DEAD, self._clock_ms())
        self._cancel_group_timers(group)
        for member in list(group.members.values()):
            self._complete_join(member, JoinGroupResult.failed(error, member.member_id))
            self._complete_sync(member, SyncGroupResult(error))
        if previous is not GroupState.DEAD and self._groups.get(group.group_id) is group:
            del self._groups[group.group_id]

    def _cancel_group_timers(self, group: GroupMetadata) -> None:
        for handle in (group.join_timer, group.sync_timer, *group.pending_member_timers.values()):
            if handle is not None:
                handle.cancel()
        group.join_timer = group.sync_timer = None
        group.initial_delay_active = False
        group.pending_member_timers.clear()
        for member in group.members.values():
            if member.heartbeat_timer is not None:
                member.heartbeat_timer.cancel()
                member.heartbeat_timer = None

    # ================================================================================================
    # Validation shared by all requests
    # ================================================================================================
    def _validate(self, group_id: str | None, require_non_empty: bool = True) -> int | None:
        if group_id is None or (require_non_empty and group_id == "") or not _fits_int16_string(group_id):
            return E.INVALID_GROUP_ID
        if self._shutting_down:
            return E.COORDINATOR_NOT_AVAILABLE
        partition = self.partition_for(group_id)
        if partition in self._loading:
            return E.COORDINATOR_LOAD_IN_PROGRESS
        if partition not in self._active_partitions:
            return E.NOT_COORDINATOR
        return None

    def _now(self) -> int:
        return self._clock_ms()

    def _loop(self) -> asyncio.AbstractEventLoop:
        return asyncio.get_running_loop()

    # ================================================================================================
    # JoinGroup
    # ================================================================================================
    async def join_group(self, group_id: str, member_id: str, group_instance_id: str | None,
                         client_id: str, client_host: str, rebalance_timeout_ms: int,
                         session_timeout_ms: int, protocol_type: str,
                         protocols: Sequence[tuple[str, bytes]], *, api_version: int) -> JoinGroupResult:
        """JoinGroup. `api_version` selects KIP-394 (v4+: MEMBER_ID_REQUIRED on a first join without
        group.instance.id) and KIP-814 (v9+: a rejoining static leader gets skip_assignment).
        v0 has no rebalance timeout: pass any value <= 0 and the session timeout is used."""
        error = self._validate(group_id)
        if error is not None:
            return JoinGroupResult.failed(error, member_id)
        cfg = self.config
        if not cfg.group_min_session_timeout_ms <= session_timeout_ms <= cfg.group_max_session_timeout_ms:
            return JoinGroupResult.failed(E.INVALID_SESSION_TIMEOUT, member_id)
        if rebalance_timeout_ms <= 0:
            rebalance_timeout_ms = session_timeout_ms
        protocols = [(name, bytes(metadata)) for name, metadata in protocols]
        # Flexible request versions allow strings longer than __consumer_offsets records can hold.
        if not all(_fits_int16_string(s) for s in (member_id, group_instance_id, client_id, client_host,
                                                    protocol_type, *(name for name, _ in protocols))):
            return JoinGroupResult.failed(E.INVALID_REQUEST, member_id)
        is_unknown_member = member_id == ""
        group = self._groups.get(group_id)
        if group is None:
            if not is_unknown_member:
                return JoinGroupResult.failed(E.UNKNOWN_MEMBER_ID, member_id)
            group = GroupMetadata(group_id, self.partition_for(group_id), state_timestamp_ms=self._now())
            self._groups[group_id] = group

        if not self._accept_joining_member(group, member_id):
            member = group.members.get(member_id)
            if member is not None:
                self._remove_member_and_update_group(group, member)
            else:
                group.pending_members.discard(member_id)
            return JoinGroupResult.failed(E.GROUP_MAX_SIZE_REACHED, "")

        future: asyncio.Future[JoinGroupResult] = self._loop().create_future()
        join = _JoinRequest(member_id, group_instance_id, client_id, client_host, rebalance_timeout_ms,
                            session_timeout_ms, protocol_type, protocols, api_version, future)
        if is_unknown_member:
            await self._do_new_member_join(group, join)
        else:
            self._do_current_member_join(group, join)
        if group.is_in(GroupState.PREPARING_REBALANCE):
            self._try_complete_join(group)
        return await asyncio.shield(future)

    def _accept_joining_member(self, group: GroupMetadata, member_id: str) -> bool:
        max_size = self.config.group_max_size
        if group.is_in(GroupState.EMPTY, GroupState.DEAD):
            return True
        if group.is_in(GroupState.PREPARING_REBALANCE):
            member = group.members.get(member_id)
            return (member is not None and member.is_awaiting_join) or group.num_awaiting_join() < max_size
        return group.has(member_id) or group.size < max_size

    async def _do_new_member_join(self, group: GroupMetadata, join: _JoinRequest) -> None:
        if group.is_in(GroupState.DEAD):
            join.answer(JoinGroupResult.failed(E.COORDINATOR_NOT_AVAILABLE, ""))
            return
        if not group.supports_protocols(join.protocol_type, join.protocols):
            join.answer(JoinGroupResult.failed(E.INCONSISTENT_GROUP_PROTOCOL, ""))
            return
        # Kafka prefixes a static member's id with its group.instance.id, a dynamic one's with client.id.
        prefix = join.group_instance_id if join.group_instance_id is not None else join.client_id
        new_member_id = f"{prefix}-{uuid.uuid4()}"
        if join.group_instance_id is not None:
            old_member_id = group.static_member_id(join.group_instance_id)
            if old_member_id is not None:
                await self._update_static_member_and_rebalance(
                    group, join.group_instance_id, old_member_id, new_member_id, join)
            else:
                self._add_member_and_rebalance(group, new_member_id, join)
        elif join.api_version >= 4:
            group.pending_members.add(new_member_id)
            self._schedule_pending_member_expiry(group, new_member_id, join.session_timeout_ms)
            join.answer(JoinGroupResult.failed(E.MEMBER_ID_REQUIRED, new_member_id))
        else:
            self._add_member_and_rebalance(group, new_member_id, join)

    def _do_current_member_join(self, group: GroupMetadata, join: _JoinRequest) -> None:
        member_id = join.member_id
        if group.is_in(GroupState.DEAD):
            join.answer(JoinGroupResult.failed(E.COORDINATOR_NOT_AVAILABLE, member_id))
            return
        if not group.supports_protocols(join.protocol_type, join.protocols):
            join.answer(JoinGroupResult.failed(E.INCONSISTENT_GROUP_PROTOCOL, member_id))
            return
        if member_id in group.pending_members:
            self._cancel_pending_member_expiry(group, member_id)
            self._add_member_and_rebalance(group, member_id, join)
            return
        if group.is_static_member_fenced(join.group_instance_id, member_id):
            join.answer(JoinGroupResult.failed(E.FENCED_INSTANCE_ID, member_id))
            return
        instance_unknown = join.group_instance_id is not None and not group.has_static_member(
            join.group_instance_id)
        member = group.members.get(member_id)
        if member is None or instance_unknown:
            join.answer(JoinGroupResult.failed(E.UNKNOWN_MEMBER_ID, member_id))
            return
        state = group.state
        if state is GroupState.PREPARING_REBALANCE:
            self._update_member_and_rebalance(group, member, join)
        elif state is GroupState.COMPLETING_REBALANCE:
            if member.matches(join.protocols):
                # A retried JoinGroup whose answer was lost: repeat the current generation's answer.
                join.answer(self._join_result_for(group, member))
            else:
                self._update_member_and_rebalance(group, member, join)
        elif state is GroupState.STABLE:
            if group.is_leader(member_id) or not member.matches(join.protocols):
                # The leader rejoining means it wants a new assignment (e.g. its metadata changed).
                self._update_member_and_rebalance(group, member, join)
            else:
                join.answer(self._join_result_for(group, member, include_members=False))
        else:
            join.answer(JoinGroupResult.failed(E.UNKNOWN_MEMBER_ID, member_id))

    def _join_result_for(self, group: GroupMetadata, member: MemberMetadata,
                         include_members: bool | None = None) -> JoinGroupResult:
        if include_members is None:
            include_members = group.is_leader(member.member_id)
        members = ([JoinGroupMember(mid, iid, meta) for mid, iid, meta in group.current_member_metadata()]
                   if include_members else [])
        return JoinGroupResult(error_code=E.NONE, member_id=member.member_id,
                               generation_id=group.generation_id, protocol_type=group.protocol_type,
                               protocol_name=group.protocol_name, leader=group.leader_id or "",
                               skip_assignment=False, members=members)

    def _add_member_and_rebalance(self, group: GroupMetadata, member_id: str, join: _JoinRequest) -> None:
        member = MemberMetadata(
            member_id=member_id, group_instance_id=join.group_instance_id, client_id=join.client_id,
            client_host=join.client_host, rebalance_timeout_ms=join.rebalance_timeout_ms,
            session_timeout_ms=join.session_timeout_ms, protocol_type=join.protocol_type,
            supported_protocols=list(join.protocols), is_new=True, join_future=join.future)
        # A member joining during the initial delay extends it (up to the rebalance timeout).
        if group.is_in(GroupState.PREPARING_REBALANCE) and group.generation_id == 0:
            group.new_member_added = True
        group.add(member)
        self._schedule_heartbeat(group, member, self.config.new_member_join_timeout_ms)
        self._maybe_prepare_rebalance(group, f"adding new member {member_id}")

    def _update_member_and_rebalance(self, group: GroupMetadata, member: MemberMetadata,
                                     join: _JoinRequest) -> None:
        group.update_member(member, join.protocols, join.rebalance_timeout_ms, join.session_timeout_ms)
        self._set_join_future(member, join.future)
        self._maybe_prepare_rebalance(group, f"updating metadata for member {member.member_id}")

    def _set_join_future(self, member: MemberMetadata, future: asyncio.Future[Any]) -> None:
        # A second JoinGroup from the same member supersedes the first; the first must still be
        # answered or its connection's response queue would stall behind it.
        self._complete_join(member, JoinGroupResult.failed(E.REBALANCE_IN_PROGRESS, member.member_id))
        member.join_future = future

    async def _update_static_member_and_rebalance(self, group: GroupMetadata, instance_id: str,
                                                  old_member_id: str, new_member_id: str,
                                                  join: _JoinRequest) -> None:
        current_leader = group.leader_id
        member = group.members[old_member_id]
        # The previous incarnation of this instance is fenced: its pending requests end now.
        self._complete_join(member, JoinGroupResult.failed(E.FENCED_INSTANCE_ID, old_member_id))
        self._complete_sync(member, SyncGroupResult(E.FENCED_INSTANCE_ID))
        group.replace_static_member(instance_id, old_member_id, new_member_id)
        old_protocols = list(member.supported_protocols)
        old_rebalance, old_session = member.rebalance_timeout_ms, member.session_timeout_ms
        group.update_member(member, join.protocols, join.rebalance_timeout_ms, join.session_timeout_ms)
        member.join_future = join.future
        self._schedule_heartbeat(group, member)

        if group.is_in(GroupState.STABLE):
            if group.select_protocol() != group.protocol_name:
                self._maybe_prepare_rebalance(
                    group, f"static member {instance_id} rejoined with a different protocol")
                return
            # Same protocol: keep the assignment, no rebalance; persist the new member id first.
            generation = group.generation_id
            assignment = {m.member_id: m.assignment for m in group.members.values()}
            error = await self._store_group(group, assignment)
            if error != E.NONE:
                if group.members.get(new_member_id) is member:
                    group.update_member(member, old_protocols, old_rebalance, old_session)
                    group.replace_static_member(instance_id, new_member_id, old_member_id)
                    self._schedule_heartbeat(group, member)
                self._complete_join(member, JoinGroupResult(
                    error_code=error, member_id="", generation_id=generation,
                    protocol_type=group.protocol_type, protocol_name=group.protocol_name,
                    leader=current_leader or ""))
                member.join_future = None
                return
            is_leader = group.is_leader(new_member_id)
            skip = is_leader and join.api_version >= 9
            members = ([JoinGroupMember(mid, iid, meta) for mid, iid, meta in group.current_member_metadata()]
                       if skip else [])
            # Before KIP-814 the rejoining leader is told the old leader id, so it acts as a follower
            # and does not compute a new assignment.
            self._complete_join(member, JoinGroupResult(
                error_code=E.NONE, member_id=new_member_id, generation_id=group.generation_id,
                protocol_type=group.protocol_type, protocol_name=group.protocol_name,
                leader=(group.leader_id if skip else current_leader) or "", skip_assignment=skip,
                members=members))
        elif group.is_in(GroupState.COMPLETING_REBALANCE):
            # The leader may already be assigning to the old member id: start over.
            self._prepare_rebalance(group, f"static member {instance_id} rejoined during sync")
        # PreparingRebalance: the member now simply waits for the join phase to end.

    # ================================================================================================
    # Rebalance: join phase
    # ================================================================================================
    def _maybe_prepare_rebalance(self, group: GroupMetadata, reason: str) -> None:
        if group.can_rebalance():
            self._prepare_rebalance(group, reason)

    def _prepare_rebalance(self, group: GroupMetadata, reason: str) -> None:
        if group.is_in(GroupState.COMPLETING_REBALANCE):
            self._reset_and_propagate_assignment_error(group, E.REBALANCE_IN_PROGRESS)
        if group.sync_timer is not None:
            group.sync_timer.cancel()
            group.sync_timer = None
        group.pending_sync_members.clear()
        was_empty = group.is_in(GroupState.EMPTY)
        group.transition_to(GroupState.PREPARING_REBALANCE, self._now())
        log.info("group %s: preparing to rebalance in generation %d (%s)", group.group_id,
                 group.generation_id, reason)
        if group.join_timer is not None:
            group.join_timer.cancel()
        if was_empty:
            delay = self.config.group_initial_rebalance_delay_ms
            remaining = max(group.rebalance_timeout_ms() - delay, 0)
            group.initial_delay_active = True
            group.join_timer = self._loop().call_later(
                delay / 1000, self._on_initial_delay_expired, group, delay, remaining)
        else:
            group.initial_delay_active = False
            group.join_timer = self._loop().call_later(
                group.rebalance_timeout_ms() / 1000, self._on_complete_join, group)
            self._try_complete_join(group)

    def _on_initial_delay_expired(self, group: GroupMetadata, delay: int, remaining: int) -> None:
        group.join_timer = None
        if group.new_member_added and remaining != 0:
            group.new_member_added = False
            next_delay = min(delay, remaining)
            group.join_timer = self._loop().call_later(
                next_delay / 1000, self._on_initial_delay_expired, group, next_delay,
                max(remaining - delay, 0))
            return
        group.initial_delay_active = False
        self._on_complete_join(group)

    def _try_complete_join(self, group: GroupMetadata) -> None:
        if (group.is_in(GroupState.PREPARING_REBALANCE) and not group.initial_delay_active
                and group.has_all_members_joined()):
            self._on_complete_join(group)

    def _on_complete_join(self, group: GroupMetadata) -> None:
        if group.join_timer is not None:
            group.join_timer.cancel()
            group.join_timer = None
        group.initial_delay_active = False
        if not group.is_in(GroupState.PREPARING_REBALANCE):
            return
        for member in group.not_yet_rejoined():
            # Static members keep their place until their session times out (KIP-345).
            if not member.is_static:
                log.info("group %s: removing member %s, it did not rejoin", group.group_id,
                         member.member_id)
                self._cancel_heartbeat(member)
                self._complete_sync(member, SyncGroupResult(E.UNKNOWN_MEMBER_ID))
                group.remove(member.member_id)
        if not group.maybe_elect_new_joined_leader() and group.members:
            # Nobody rejoined: wait another rebalance timeout for session expiry to clear them out.
            log.warning("group %s: no member rejoined; waiting", group.group_id)
            group.join_timer = self._loop().call_later(
                group.rebalance_timeout_ms() / 1000, self._on_complete_join, group)
            return
        group.init_next_generation(self._now())
        if group.is_in(GroupState.EMPTY):
            log.info("group %s: generation %d is empty", group.group_id, group.generation_id)
            self._spawn(self._store_group(group, {}), f"store empty group {group.group_id}")
            return
        log.info("group %s: generation %d with %d members, protocol %s", group.group_id,
                 group.generation_id, group.size, group.protocol_name)
        for member in list(group.members.values()):
            self._complete_join(member, self._join_result_for(group, member))
            self._schedule_heartbeat(group, member)
            member.is_new = False
            group.pending_sync_members.add(member.member_id)
        generation = group.generation_id
        group.sync_timer = self._loop().call_later(
            group.rebalance_timeout_ms() / 1000, self._on_pending_sync_expired, group, generation)

    # ================================================================================================
    # SyncGroup
    # ================================================================================================
    async def sync_group(self, group_id: str, generation_id: int, member_id: str,
                         group_instance_id: str | None, protocol_type: str | None,
                         protocol_name: str | None,
                         assignments: Iterable[tuple[str, bytes]]) -> SyncGroupResult:
        """SyncGroup. `assignments` is the leader's (member_id, assignment) list; followers send none.
        protocol_type / protocol_name are None for request versions before v5."""
        error = self._validate(group_id)
        if error == E.COORDINATOR_LOAD_IN_PROGRESS:
            # The member will rejoin once the group is loaded.
            return SyncGroupResult(E.REBALANCE_IN_PROGRESS)
        if error is not None:
            return SyncGroupResult(error)
        group = self._groups.get(group_id)
        if group is None:
            return SyncGroupResult(E.UNKNOWN_MEMBER_ID)
        if group.is_in(GroupState.DEAD):
            return SyncGroupResult(E.COORDINATOR_NOT_AVAILABLE)
        if group.is_static_member_fenced(group_instance_id, member_id):
            return SyncGroupResult(E.FENCED_INSTANCE_ID)
        member = group.members.get(member_id)
        if member is None:
            return SyncGroupResult(E.UNKNOWN_MEMBER_ID)
        if generation_id != group.generation_id:
            return SyncGroupResult(E.ILLEGAL_GENERATION)
        if protocol_type is not None and protocol_type != group.protocol_type:
            return SyncGroupResult(E.INCONSISTENT_GROUP_PROTOCOL)
        if protocol_name is not None and protocol_name != group.protocol_name:
            return SyncGroupResult(E.INCONSISTENT_GROUP_PROTOCOL)
        if group.is_in(GroupState.EMPTY):
            return SyncGroupResult(E.UNKNOWN_MEMBER_ID)
        if group.is_in(GroupState.PREPARING_REBALANCE):
            return SyncGroupResult(E.REBALANCE_IN_PROGRESS)
        if group.is_in(GroupState.STABLE):
            group.pending_sync_members.discard(member_id)
            self._schedule_heartbeat(group, member)
            return SyncGroupResult(E.NONE, group.protocol_type, group.protocol_name, member.assignment)

        # CompletingRebalance: wait for the leader's assignment to be stored.
        future: asyncio.Future[SyncGroupResult] = self._loop().create_future()
        self._complete_sync(member, SyncGroupResult(E.REBALANCE_IN_PROGRESS))
        member.sync_future = future
        group.pending_sync_members.discard(member_id)
        if group.is_leader(member_id):
            assignment = {m: b"" for m in group.members}
            for target, data in assignments:
                if target in assignment:
                    assignment[target] = bytes(data)
            generation = group.generation_id
            store_error = await self._store_group(group, assignment)
            if group.is_in(GroupState.COMPLETING_REBALANCE) and group.generation_id == generation:
                if store_error != E.NONE:
                    self._reset_and_propagate_assignment_error(group, store_error)
                    self._maybe_prepare_rebalance(group, "storing the assignment failed")
                else:
                    for m in group.members.values():
                        m.assignment = assignment.get(m.member_id, b"")
                    group.transition_to(GroupState.STABLE, self._now())
                    self._propagate_assignment(group, E.NONE)
        return await asyncio.shield(future)

    def _reset_and_propagate_assignment_error(self, group: GroupMetadata, error: int) -> None:
        for member in group.members.values():
            member.assignment = b""
        self._propagate_assignment(group, error)

    def _propagate_assignment(self, group: GroupMetadata, error: int) -> None:
        for member in group.members.values():
            self._complete_sync(member, SyncGroupResult(error, group.protocol_type, group.protocol_name,
                                                        member.assignment))
            # A session that ran out while the members waited for the leader starts over now.
            self._schedule_heartbeat(group, member)

    def _on_pending_sync_expired(self, group: GroupMetadata, generation: int) -> None:
        group.sync_timer = None
        if group.generation_id != generation or not group.is_in(
                GroupState.COMPLETING_REBALANCE, GroupState.STABLE):
            return
        if not group.pending_sync_members:
            return
        missing = sorted(group.pending_sync_members)
        log.info("group %s: removing members that did not send SyncGroup: %s", group.group_id, missing)
        for member_id in missing:
            member = group.members.get(member_id)
            if member is not None:
                self._cancel_heartbeat(member)
                self._complete_join(member, JoinGroupResult.failed(E.UNKNOWN_MEMBER_ID, ""))
                self._complete_sync(member, SyncGroupResult(E.UNKNOWN_MEMBER_ID))
            group.remove(member_id)
        self._prepare_rebalance(group, "pending SyncGroup expired")

    # ================================================================================================
    # Heartbeat, LeaveGroup, session expiry
    # ================================================================================================
    async def heartbeat(self, group_id: str, member_id: str, group_instance_id: str | None,
                        generation_id: int) -> int:
        """Heartbeat; returns the error code."""
        error = self._validate(group_id)
        if error == E.COORDINATOR_LOAD_IN_PROGRESS:
            return E.NONE  # the group is loading; the member keeps its session until it is loaded
        if error is not None:
            return error
        group = self._groups.get(group_id)
        if group is None:
            return E.UNKNOWN_MEMBER_ID
        if group.is_in(GroupState.DEAD):
            return E.COORDINATOR_NOT_AVAILABLE
        if group.is_static_member_fenced(group_instance_id, member_id):
            return E.FENCED_INSTANCE_ID
        member = group.members.get(member_id)
        if member is None:
            return E.UNKNOWN_MEMBER_ID
        if generation_id != group.generation_id:
            return E.ILLEGAL_GENERATION
        if group.is_in(GroupState.EMPTY):
            return E.UNKNOWN_MEMBER_ID
        self._schedule_heartbeat(group, member)
        if group.is_in(GroupState.PREPARING_REBALANCE):
            return E.REBALANCE_IN_PROGRESS
        return E.NONE

    async def leave_group(self, group_id: str, members: Sequence[LeaveMember]) -> LeaveGroupResult:
        """LeaveGroup. v0-2: pass [LeaveMember(member_id)]; v3+: the request's member identities."""
        error = self._validate(group_id)
        if error is not None:
            return LeaveGroupResult(error)
        group = self._groups.get(group_id)
        if group is None:
            return LeaveGroupResult(E.NONE, [LeaveMemberResult(m.member_id, m.group_instance_id,
                                                               E.UNKNOWN_MEMBER_ID) for m in members])
        if group.is_in(GroupState.DEAD):
            return LeaveGroupResult(E.COORDINATOR_NOT_AVAILABLE)
        results = []
        for leaving in members:
            member_id = leaving.member_id
            if member_id == "" and leaving.group_instance_id is not None:
                member_id = group.static_member_id(leaving.group_instance_id) or ""
            if member_id in group.pending_members:
                self._remove_pending_member_and_update_group(group, member_id)
                code = E.NONE
            elif group.is_static_member_fenced(leaving.group_instance_id, member_id):
                code = E.FENCED_INSTANCE_ID
            elif member_id in group.members:
                log.info("group %s: member %s leaves", group.group_id, member_id)
                self._remove_member_and_update_group(group, group.members[member_id])
                code = E.NONE
            else:
                code = E.UNKNOWN_MEMBER_ID
            results.append(LeaveMemberResult(leaving.member_id, leaving.group_instance_id, code))
        return LeaveGroupResult(E.NONE, results)

    def _remove_member_and_update_group(self, group: GroupMetadata, member: MemberMetadata) -> None:
        # A member removed while it waits in JoinGroup hears UNKNOWN_MEMBER_ID and joins afresh.
        self._complete_join(member, JoinGroupResult.failed(E.UNKNOWN_MEMBER_ID, ""))
        self._complete_sync(member, SyncGroupResult(E.UNKNOWN_MEMBER_ID))
        self._cancel_heartbeat(member)
        group.remove(member.member_id)
        if group.is_in(GroupState.STABLE, GroupState.COMPLETING_REBALANCE):
            self._maybe_prepare_rebalance(group, f"removing member {member.member_id}")
        elif group.is_in(GroupState.PREPARING_REBALANCE):
            self._try_complete_join(group)

    def _remove_pending_member_and_update_group(self, group: GroupMetadata, member_id: str) -> None:
        self._cancel_pending_member_expiry(group, member_id)
        group.remove(member_id)
        if group.is_in(GroupState.PREPARING_REBALANCE):
            self._try_complete_join(group)

    def _schedule_heartbeat(self, group: GroupMetadata, member: MemberMetadata,
                            timeout_ms: int | None = None) -> None:
        self._cancel_heartbeat(member)
        timeout = member.session_timeout_ms if timeout_ms is None else timeout_ms
        member.heartbeat_timer = self._loop().call_later(
            timeout / 1000, self._on_heartbeat_expired, group, member)

    def _cancel_heartbeat(self, member: MemberMetadata) -> None:
        if member.heartbeat_timer is not None:
            member.heartbeat_timer.cancel()
            member.heartbeat_timer = None

    def _on_heartbeat_expired(self, group: GroupMetadata, member: MemberMetadata) -> None:
        member.heartbeat_timer = None
        if group.is_in(GroupState.DEAD) or group.members.get(member.member_id) is not member:
            return
        if not member.is_new and (member.is_awaiting_join or member.is_awaiting_sync):
            # Waiting in a rebalance counts as alive; the rebalance and sync timeouts govern it and
            # the session timer restarts when the phase ends.
            return
        log.info("group %s: member %s failed to heartbeat within its session timeout", group.group_id,
                 member.member_id)
        self._remove_member_and_update_group(group, member)

    def _schedule_pending_member_expiry(self, group: GroupMetadata, member_id: str, timeout_ms: int) -> None:
        self._cancel_pending_member_expiry(group, member_id)
        group.pending_member_timers[member_id] = self._loop().call_later(
            timeout_ms / 1000, self._on_pending_member_expired, group, member_id)

    def _cancel_pending_member_expiry(self, group: GroupMetadata, member_id: str) -> None:
        handle = group.pending_member_timers.pop(member_id, None)
        if handle is not None:
            handle.cancel()

    def _on_pending_member_expired(self, group: GroupMetadata, member_id: str) -> None:
        group.pending_member_timers.pop(member_id, None)
        if member_id in group.pending_members and not group.is_in(GroupState.DEAD):
            log.info("group %s: pending member %s never joined", group.group_id, member_id)
            self._remove_pending_member_and_update_group(group, member_id)

    @staticmethod
    def _complete_join(member: MemberMetadata, result: JoinGroupResult) -> None:
        future = member.join_future
        member.join_future = None
        if future is not None and not future.done():
            future.set_result(result)

    @staticmethod
    def _complete_sync(member: MemberMetadata, result: SyncGroupResult) -> None:
        future = member.sync_future
        member.sync_future = None
        if future is not None and not future.done():
            future.set_result(result)

    # ================================================================================================
    # Offsets
    # ================================================================================================
    async def commit_offsets(self, group_id: str, member_id: str, group_instance_id: str | None,
                             generation_id: int, offsets: Sequence[OffsetCommitEntry],
                             retention_time_ms: int = -1) -> dict[TopicPartition, int]:
        """OffsetCommit; the error per partition in request order. Simple consumers (no group
        management) commit with generation_id -1 and member_id "" while the group is Empty.
        `retention_time_ms` (v2-v4) >= 0 sets an expire timestamp; -1 uses offsets.retention.ms."""
        tps = [TopicPartition(e.topic, e.partition) for e in offsets]
        error = self._validate(group_id, require_non_empty=False)
        if error is not None:
            return dict.fromkeys(tps, error)
        group = self._groups.get(group_id)
        if group is None:
            if generation_id >= 0:
                # A commit from an older generation of a group that no longer exists.
                return dict.fromkeys(tps, E.ILLEGAL_GENERATION)
            group = GroupMetadata(group_id, self.partition_for(group_id), state_timestamp_ms=self._now())
            self._groups[group_id] = group
        error = self._validate_offset_commit(group, generation_id, member_id, group_instance_id)
        if error is not None:
            return dict.fromkeys(tps, error)
        if group.is_in(GroupState.COMPLETING_REBALANCE):
            # The member knows the new generation but has no assignment yet: commit after SyncGroup.
            return dict.fromkeys(tps, E.REBALANCE_IN_PROGRESS)
        member = group.members.get(member_id)
        if member is not None:
            self._schedule_heartbeat(group, member)

        now = self._now()
        expire = now + retention_time_ms if retention_time_ms >= 0 else -1
        results: dict[TopicPartition, int] = {}
        records: list[tuple[bytes, bytes | None]] = []
        to_store: dict[TopicPartition, OffsetAndMetadata] = {}
        for entry, tp in zip(offsets, tps, strict=True):
            metadata = entry.metadata or ""
            if (len(metadata.encode("utf-8")) > self.config.offset_metadata_max_bytes
                    or not _fits_int16_string(metadata)):
                results[tp] = E.OFFSET_METADATA_TOO_LARGE
                continue
            if not _fits_int16_string(tp.topic):
                results[tp] = E.INVALID_REQUEST
                continue
            value = OffsetAndMetadata(entry.offset, entry.leader_epoch, metadata, now, expire)
            to_store[tp] = value
            records.append((
                encode_offset_commit_key(OffsetCommitKey(group_id, tp.topic, tp.partition)),
                encode_offset_commit_value(OffsetCommitValue(
                    value.offset, value.leader_epoch, value.metadata, value.commit_timestamp,
                    value.expire_timestamp))))
        if records:
            append_error = await self._append(group.partition, records, map_offset_append_error)
            if append_error == E.NONE and not group.is_in(GroupState.DEAD):
                group.offsets.update(to_store)
            for tp in to_store:
                results[tp] = append_error
        return {tp: results[tp] for tp in tps}

    @staticmethod
    def _validate_offset_commit(group: GroupMetadata, generation_id: int, member_id: str,
                                group_instance_id: str | None) -> int | None:
        if group.is_in(GroupState.DEAD):
            return E.COORDINATOR_NOT_AVAILABLE
        if generation_id >= 0 or member_id != "" or group_instance_id is not None:
            if group.is_static_member_fenced(group_instance_id, member_id):
                return E.FENCED_INSTANCE_ID
            if not group.has(member_id):
                return E.UNKNOWN_MEMBER_ID
            if generation_id != group.generation_id:
                return E.ILLEGAL_GENERATION
            return None
        if not group.is_in(GroupState.EMPTY):
            # Only members may commit to a group that has members.
            return E.UNKNOWN_MEMBER_ID
        return None

    async def fetch_offsets(self, group_id: str, partitions: Sequence[tuple[str, int]] | None,
                            require_stable: bool = False) -> OffsetFetchResult:
        """OffsetFetch for one group: the given partitions (offset -1 when none is committed), or all
        committed partitions when `partitions` is None. Commits are visible once appended, so
        `require_stable` never finds an unstable offset here."""
        error = self._validate(group_id, require_non_empty=False)
        if error is not None:
            return OffsetFetchResult(error)
        group = self._groups.get(group_id)
        committed = group.offsets if group is not None and not group.is_in(GroupState.DEAD) else {}
        wanted = list(committed) if partitions is None else [TopicPartition(t, p) for t, p in partitions]
        out = []
        for topic, partition in wanted:
            o = committed.get(TopicPartition(topic, partition))
            if o is None:
                out.append(FetchedOffset(topic, partition, -1, -1, ""))
            else:
                out.append(FetchedOffset(topic, partition, o.offset, o.leader_epoch, o.metadata))
        return OffsetFetchResult(E.NONE, out)

    async def delete_offsets(self, group_id: str,
                             partitions: Sequence[tuple[str, int]]) -> OffsetDeleteResult:
        """OffsetDelete (KIP-496): an Empty group loses any offsets; a consumer group with members
        only those of topics it is not subscribed to (GROUP_SUBSCRIBED_TO_TOPIC otherwise)."""
        error = self._validate(group_id)
        if error is not None:
            return OffsetDeleteResult(error)
        group = self._groups.get(group_id)
        if group is None or group.is_in(GroupState.DEAD):
            return OffsetDeleteResult(E.GROUP_ID_NOT_FOUND)
        tps = [TopicPartition(t, p) for t, p in partitions]
        results: dict[TopicPartition, int] = {}
        if group.is_in(GroupState.EMPTY):
            eligible = tps
        elif group.protocol_type == CONSUMER_PROTOCOL_TYPE:
            eligible = []
            for tp in tps:
                if group.is_subscribed_to_topic(tp.topic):
                    results[tp] = E.GROUP_SUBSCRIBED_TO_TOPIC
                else:
                    eligible.append(tp)
        else:
            return OffsetDeleteResult(E.NON_EMPTY_GROUP)
        removable = [tp for tp in eligible if tp in group.offsets]
        append_error = E.NONE
        if removable:
            records: list[tuple[bytes, bytes | None]] = [
                (encode_offset_commit_key(OffsetCommitKey(group_id, tp.topic, tp.partition)), None)
                for tp in removable]
            group_dies = group.is_in(GroupState.EMPTY) and len(removable) == len(group.offsets)
            if group_dies:
                records.append((encode_group_metadata_key(GroupMetadataKey(group_id)), None))
            append_error = await self._append(group.partition, records, map_offset_append_error)
            if append_error == E.NONE:
                for tp in removable:
                    group.offsets.pop(tp, None)
                if group.is_in(GroupState.EMPTY) and not group.offsets and not group.members:
                    self._remove_dead_group(group)
        for tp in eligible:
            results[tp] = append_error
        return OffsetDeleteResult(E.NONE, {tp: results[tp] for tp in tps})

    # ================================================================================================
    # DescribeGroups, ListGroups, DeleteGroups
    # ================================================================================================
    async def describe_groups(self, group_ids: Sequence[str]) -> list[DescribedGroup]:
        out = []
        for group_id in group_ids:
            error = self._validate(group_id, require_non_empty=False)
            if error is not None:
                out.append(DescribedGroup(group_id, error, group_state=""))
                continue
            group = self._groups.get(group_id)
            if group is None:
                out.append(DescribedGroup(group_id, E.NONE))
                continue
            stable = group.is_in(GroupState.STABLE)
            protocol = (group.protocol_name or "") if stable else ""
            members = [
                DescribedMember(m.member_id, m.group_instance_id, m.client_id, m.client_host,
                                m.metadata_for(protocol) if stable else b"",
                                m.assignment if stable else b"")
                for m in group.members.values()]
            out.append(DescribedGroup(group_id, E.NONE, group.state.value, group.protocol_type or "",
                                      protocol, members))
        return out

    async def list_groups(self, states_filter: Sequence[str] | None = None,
                          types_filter: Sequence[str] | None = None) -> ListGroupsResult:
        """ListGroups; states (v4+) and types (v5+) filters match case-insensitively, empty = all.
        While a partition loads, the answer is COORDINATOR_LOAD_IN_PROGRESS with the groups known."""
        states = {s.lower() for s in states_filter or ()}
        types = {t.lower() for t in types_filter or ()}
        groups = []
        for group in self._groups.values():
            if group.partition not in self._active_partitions or group.is_in(GroupState.DEAD):
                continue
            if states and group.state.value.lower() not in states:
                continue
            if types and "classic" not in types:
                continue
            groups.append(ListedGroup(group.group_id, group.protocol_type or "", group.state.value))
        if self._shutting_down:
            return ListGroupsResult(E.COORDINATOR_NOT_AVAILABLE)
        error = E.COORDINATOR_LOAD_IN_PROGRESS if self._loading else E.NONE
        return ListGroupsResult(error, groups)

    async def delete_groups(self, group_ids: Sequence[str]) -> dict[str, int]:
        """DeleteGroups: only Empty (or unknown-protocol, offsets-only) groups; NON_EMPTY_GROUP else."""
        results: dict[str, int] = {}
        by_partition: dict[int, list[GroupMetadata]] = {}
        for group_id in group_ids:
            error = self._validate(group_id, require_non_empty=False)
            if error is not None:
                results[group_id] = error
                continue
            group = self._groups.get(group_id)
            if group is None or group.is_in(GroupState.DEAD):
                results[group_id] = E.GROUP_ID_NOT_FOUND
            elif group.is_in(GroupState.EMPTY):
                self._remove_dead_group(group)
                by_partition.setdefault(group.partition, []).append(group)
            else:
                results[group_id] = E.NON_EMPTY_GROUP
        for partition, groups in by_partition.items():
            records: list[tuple[bytes, bytes | None]] = []
            for group in groups:
                for topic, tp_partition in group.offsets:
                    records.append((encode_offset_commit_key(
                        OffsetCommitKey(group.group_id, topic, tp_partition)), None))
                records.append((encode_group_metadata_key(GroupMetadataKey(group.group_id)), None))
            code = await self._append(partition, records, map_offset_append_error)
            for group in groups:
                results[group.group_id] = code
        return {g: results[g] for g in group_ids if g in results}

    async def delete_offsets_of_partitions(self, partitions: Iterable[tuple[str, int]]) -> int:
        """Forget every group's committed offsets of deleted topic partitions (Kafka's
        handleDeletedPartitions, called after DeleteTopics / partition deletion); Empty groups left
        without offsets die. Returns how many offsets were removed."""
        gone = {TopicPartition(t, p) for t, p in partitions}
        by_partition: dict[int, list[tuple[GroupMetadata, list[TopicPartition], bool]]] = {}
        for group in list(self._groups.values()):
            if group.partition not in self._active_partitions or group.is_in(GroupState.DEAD):
                continue
            doomed = [tp for tp in group.offsets if tp in gone]
            if doomed:
                dies = group.is_in(GroupState.EMPTY) and len(doomed) == len(group.offsets)
                by_partition.setdefault(group.partition, []).append((group, doomed, dies))
        removed = 0
        for partition, entries in by_partition.items():
            records: list[tuple[bytes, bytes | None]] = []
            for group, doomed, dies in entries:
                records.extend((encode_offset_commit_key(OffsetCommitKey(group.group_id, t, p)), None)
                               for t, p in doomed)
                if dies:
                    records.append((encode_group_metadata_key(GroupMetadataKey(group.group_id)), None))
            if await self._append(partition, records, map_offset_append_error) != E.NONE:
                continue
            for group, doomed, dies in entries:
                for tp in doomed:
                    group.offsets.pop(tp, None)
                removed += len(doomed)
                if dies and group.is_in(GroupState.EMPTY) and not group.offsets:
                    self._remove_dead_group(group)
        return removed

    def _remove_dead_group(self, group: GroupMetadata) -> None:
        if not group.is_in(GroupState.DEAD):
            group.transition_to(GroupState.DEAD, self._now())
        self._cancel_group_timers(group)
        if self._groups.get(group.group_id) is group:
            del self._groups[group.group_id]

    # ================================================================================================
    # Offset retention (KIP-211)
    # ================================================================================================
    def _ensure_expiry_timer(self) -> None:
        if self._expiry_timer is None and not self._shutting_down:
            self._expiry_timer = self._loop().call_later(
                self.config.offsets_retention_check_interval_ms / 1000, self._on_expiry_timer)

    def _on_expiry_timer(self) -> None:
        self._expiry_timer = None
        self._spawn(self.expire_offsets(), "expire offsets")
        self._ensure_expiry_timer()

    async def expire_offsets(self) -> int:
        """Drop offsets past retention, as Kafka does every offsets.retention.check.interval.ms: an
        Empty group's offsets once offsets.retention.ms passed since it became Empty (or since the commit,
        whichever is later); a consumer group's offsets of topics it no longer subscribes to; any offset
        with an explicit expire timestamp in the past. Empty groups left without offsets die."""
        now = self._now()
        retention = self.config.offsets_retention_ms
        removed = 0
        by_partition: dict[int, list[tuple[GroupMetadata, list[TopicPartition], bool]]] = {}
        for group in list(self._groups.values()):
            if group.partition not in self._active_partitions or group.is_in(GroupState.DEAD):
                continue
            expired = []
            for tp, o in group.offsets.items():
                if o.expire_timestamp >= 0:
                    if now >= o.expire_timestamp:
                        expired.append(tp)
                elif group.is_in(GroupState.EMPTY):
                    base = max(o.commit_timestamp, group.state_timestamp_ms)
                    if now >= base + retention:
                        expired.append(tp)
                elif (group.protocol_type == CONSUMER_PROTOCOL_TYPE and group.subscribed_topics is not None
                      and tp.topic not in group.subscribed_topics and now >= o.commit_timestamp + retention):
                    expired.append(tp)
            dies = group.is_in(GroupState.EMPTY) and len(expired) == len(group.offsets)
            if expired or dies:
                by_partition.setdefault(group.partition, []).append((group, expired, dies))
        for partition, entries in by_partition.items():
            records: list[tuple[bytes, bytes | None]] = []
            for group, expired, dies in entries:
                records.extend((encode_offset_commit_key(OffsetCommitKey(group.group_id, t, p)), None)
                               for t, p in expired)
                if dies:
                    records.append((encode_group_metadata_key(GroupMetadataKey(group.group_id)), None))
            if await self._append(partition, records, map_offset_append_error) != E.NONE:
                continue
            for group, expired, dies in entries:
                for tp in expired:
                    group.offsets.pop(tp, None)
                removed += len(expired)
                if dies and group.is_in(GroupState.EMPTY) and not group.offsets:
                    self._remove_dead_group(group)
        if removed:
            log.info("expired %d offsets", removed)
        return removed

    # ================================================================================================
    # Persistence
    # ================================================================================================
    async def _store_group(self, group: GroupMetadata, assignment: dict[str, bytes]) -> int:
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
        record = (encode_group_metadata_key(GroupMetadataKey(group.group_id)),
                  encode_group_metadata_value(value))
        return await self._append(group.partition, [record], map_group_append_error)

    async def _append(self, partition: int, records: list[tuple[bytes, bytes | None]],
                      map_error: Callable[[int], int]) -> int:
        if partition not in self._active_partitions:
            return E.NOT_COORDINATOR
        try:
            await self._append_records(partition, records)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # noqa: BLE001 - any append failure becomes a Kafka error code
            code = error_code_of(exc)
            mapped = map_error(code) if code is not None else E.COORDINATOR_NOT_AVAILABLE
            log.warning("append to __consumer_offsets-%d failed (%r): answering %s", partition, exc,
                        _error_name(mapped))
            return mapped
        return E.NONE

    def _spawn(self, coro: Awaitable[Any], what: str) -> None:
        task = asyncio.ensure_future(coro)
        self._background.add(task)

        def done(t: asyncio.Task[Any]) -> None:
            self._background.discard(t)
            if not t.cancelled() and t.exception() is not None:
                log.error("group coordinator: %s failed: %r", what, t.exception())

        task.add_done_callback(done)


def _fits_int16_string(value: str | None) -> bool:
    return value is None or len(value) <= 0x7FFF // 3 or len(value.encode("utf-8")) <= 0x7FFF


def _error_name(code: int) -> str:
    try:
        return GroupErrorCode(code).name
    except ValueError:
        return str(code)


class _JoinRequest:
    """The fields of one JoinGroup request plus the future its caller awaits."""
    __slots__ = ("member_id", "group_instance_id", "client_id", "client_host", "rebalance_timeout_ms",
                 "session_timeout_ms", "protocol_type", "protocols", "api_version", "future")

    def __init__(self, member_id: str, group_instance_id: str | None, client_id: str, client_host: str,
                 rebalance_timeout_ms: int, session_timeout_ms: int, protocol_type: str,
                 protocols: list[tuple[str, bytes]], api_version: int,
                 future: asyncio.Future[JoinGroupResult]) -> None:
        self.member_id = member_id
        self.group_instance_id = group_instance_id
        self.client_id = client_id
        self.client_host = client_host
        self.rebalance_timeout_ms = rebalance_timeout_ms
        self.session_timeout_ms = session_timeout_ms
        self.protocol_type = protocol_type
        self.protocols = protocols
        self.api_version = api_version
        self.future = future

    def answer(self, result: JoinGroupResult) -> None:
        if not self.future.done():
            self.future.set_result(result)

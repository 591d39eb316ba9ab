"""The classic-protocol group coordinator (Kafka's GroupCoordinator): membership and rebalance, on asyncio.

This file answers the membership requests (validation, JoinGroup with static membership, SyncGroup,
Heartbeat, LeaveGroup) and the group admin requests (DescribeGroups, ListGroups, DeleteGroups);
offset_requests.py, mixed into the same class, the offset requests (OffsetCommit, TxnOffsetCommit,
OffsetFetch, OffsetDelete); rebalance.py holds the rebalance state machine and its timers;
metadata_manager.py the groups, offsets and their persistence.

Contract:
- One `GroupCoordinator` per broker, owned by the broker's asyncio loop: every method runs on that loop,
  timers are `loop.call_later` handles, and nothing is locked.
- It does no I/O. Its `manager` (metadata_manager.py, Kafka's GroupMetadataManager) holds the groups and
  committed offsets of the `__consumer_offsets` partitions this broker leads, loads and unloads them
  (driven by broker/coordinator/runtime.py), and persists every change through the injected
  `append_records(partition, [(key, value | None), ...]) -> offset` (acks=all; see the manager's contract).
  Clients hear about a commit or an assignment only after it succeeded.
- Groups of a partition not owned answer NOT_COORDINATOR, of one being loaded COORDINATOR_LOAD_IN_PROGRESS
  (Heartbeat: NONE, SyncGroup: REBALANCE_IN_PROGRESS, as Kafka does). A loaded group's members get their
  session timers here; an unloaded group's waiting members are answered NOT_COORDINATOR.
- KIP-848 consumer groups (ConsumerGroupHeartbeat, ConsumerGroupDescribe) are consumer_requests.py's, mixed in
  too; their topic metadata comes from the injected `topics_image`. Classic requests (JoinGroup, SyncGroup,
  Heartbeat, LeaveGroup) for a consumer group go to migration.py's classic-member paths, as do the conversions
  between the two kinds of group; DescribeGroups answers a consumer group as Dead, DeleteGroups as NON_EMPTY_GROUP.
- KIP-932 share groups (ShareGroupHeartbeat, ShareGroupDescribe) are share_requests.py's, mixed in too.
- The request methods (`join_group`, `sync_group`, `heartbeat`, `leave_group`, `commit_offsets`,
  `commit_txn_offsets` (TxnOffsetCommit, KIP-447 member checks), `fetch_offsets`, `delete_offsets`,
  `describe_groups`, `list_groups`, `delete_groups`) are coroutines returning the dataclasses in
  `broker.coordinator.group.results` with Kafka error codes. JoinGroup and SyncGroup may wait for the rest
  of the group; a cancelled caller does not cancel the group's rebalance.
- Kafka's timeouts: `group.initial.rebalance.delay.ms` for the first join of an Empty group, the
  largest rebalance timeout of the members for the join phase and again for the sync phase, each member's
  session timeout between heartbeats (5 minutes for a new member waiting in its first join), and the
  session timeout for a pending member id handed out with MEMBER_ID_REQUIRED.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Callable, Iterable, Sequence

from broker.coordinator.group.config import GroupCoordinatorConfig
from broker.coordinator.group.consumer_records import group_tombstones
from broker.coordinator.group.consumer_requests import ConsumerGroupRequests, NoTopics, TopicsImage
from broker.coordinator.group.errors import GroupErrorCode
from broker.coordinator.group.metadata import (
    GroupMetadata,
    GroupState,
)
from broker.coordinator.group.metadata_manager import AppendRecords, GroupMetadataManager
from broker.coordinator.group.migration import MigrationRequests
from broker.coordinator.group.offset_requests import OffsetRequests
from broker.coordinator.group.rebalance import JoinRequest, Rebalancer
from broker.coordinator.group.results import (
    DescribedGroup,
    DescribedMember,
    JoinGroupMember,
    JoinGroupResult,
    LeaveGroupResult,
    LeaveMember,
    LeaveMemberResult,
    ListGroupsResult,
    SyncGroupResult,
)
from broker.coordinator.group.schema import fits_int16_string
from broker.coordinator.group.share_requests import ShareGroupRequests

log = logging.getLogger(__name__)

E = GroupErrorCode


class GroupCoordinator(OffsetRequests, ConsumerGroupRequests, MigrationRequests, ShareGroupRequests):
    def __init__(self, append_records: AppendRecords, config: GroupCoordinatorConfig | None = None, *,
                 clock_ms: Callable[[], int] | None = None, topics_image: TopicsImage | None = None) -> None:
        self.config = config or GroupCoordinatorConfig()
        self.topics_image = topics_image or NoTopics()
        self.manager = GroupMetadataManager(append_records, self.config, clock_ms=clock_ms)
        self.rebalance = Rebalancer(self.config, self.manager)
        self.manager.on_group_loaded = self._on_group_loaded
        self.manager.on_group_unloaded = self._on_group_unloaded
        self.manager.on_share_groups_loaded = self.on_share_groups_loaded

    def partition_for(self, group_id: str) -> int:
        return self.manager.partition_for(group_id)

    def group(self, group_id: str) -> GroupMetadata | None:
        """The in-memory group, for inspection (tests, admin tools); never mutate it from outside."""
        return self.manager.groups.get(group_id)

    def shutdown(self) -> None:
        """Stop all timers and answer every waiting member; afterwards COORDINATOR_NOT_AVAILABLE."""
        self.manager.shutdown()
        self.shutdown_share_groups()

    def _on_group_loaded(self, group: GroupMetadata) -> None:
        if group.consumer is not None:
            self.on_consumer_group_loaded(group.consumer)
        for member in group.members.values():
            self.rebalance.schedule_heartbeat(group, member)
        if group.size > self.config.group_max_size:
            # group.max.size was lowered since the group was stored: rebalance so the excess members go
            # (their JoinGroup answers GROUP_MAX_SIZE_REACHED) after a chance to commit.
            self.rebalance.prepare(group, f"loaded group is over capacity ({self.config.group_max_size})")

    def _on_group_unloaded(self, group: GroupMetadata, error: int) -> None:
        for member in list(group.members.values()):
            self.rebalance.complete_join(member, JoinGroupResult.failed(error, member.member_id))
            self.rebalance.complete_sync(member, SyncGroupResult(error))

    # ================================================================================================
    # Validation shared by all requests
    # ================================================================================================
    def _validate(self, group_id: str | None, require_non_empty: bool = True) -> int | None:
        if group_id is None or (require_non_empty and group_id == "") or not fits_int16_string(group_id):
            return E.INVALID_GROUP_ID
        return self.manager.partition_error(group_id)

    def _now(self) -> int:
        return self.manager.clock_ms()

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
        if not all(fits_int16_string(s) for s in (member_id, group_instance_id, client_id, client_host,
                                                    protocol_type, *(name for name, _ in protocols))):
            return JoinGroupResult.failed(E.INVALID_REQUEST, member_id)
        is_unknown_member = member_id == ""
        group = self.manager.groups.get(group_id)
        if group is not None and group.consumer is not None:
            if group.has_consumer_members:
                # A classic member joins a consumer group (migration.py), whatever the migration policy.
                return await self._classic_join_to_consumer_group(
                    group, member_id, group_instance_id, client_id, client_host, rebalance_timeout_ms,
                    session_timeout_ms, protocol_type, protocols, api_version)
            # An Empty consumer group becomes a classic group, as in Kafka: its records go first.
            error = await self.manager.append_group_records(group.partition, group_tombstones(group.consumer))
            if error != E.NONE:
                return JoinGroupResult.failed(error, member_id)
            group.consumer = None
        if group is None:
            if not is_unknown_member:
                return JoinGroupResult.failed(E.UNKNOWN_MEMBER_ID, member_id)
            group = self.manager.add_group(group_id)

        if not self._accept_joining_member(group, member_id):
            member = group.members.get(member_id)
            if member is not None:
                self.rebalance.remove_member(group, member)
            else:
                group.pending_members.discard(member_id)
            return JoinGroupResult.failed(E.GROUP_MAX_SIZE_REACHED, "")

        future: asyncio.Future[JoinGroupResult] = self._loop().create_future()
        join = JoinRequest(member_id, group_instance_id, client_id, client_host, rebalance_timeout_ms,
                           session_timeout_ms, protocol_type, protocols, api_version, future)
        if is_unknown_member:
            await self._do_new_member_join(group, join)
        else:
            self._do_current_member_join(group, join)
        if group.is_in(GroupState.PREPARING_REBALANCE):
            self.rebalance.try_complete_join(group)
        return await asyncio.shield(future)

    def _accept_joining_member(self, group: GroupMetadata, member_id: str) -> bool:
        max_size = self.config.group_max_size
        if group.is_in(GroupState.EMPTY, GroupState.DEAD):
            return True
        if group.is_in(GroupState.PREPARING_REBALANCE):
            member = group.members.get(member_id)
            return (member is not None and member.is_awaiting_join) or group.num_awaiting_join() < max_size
        return group.has(member_id) or group.size < max_size

    async def _do_new_member_join(self, group: GroupMetadata, join: JoinRequest) -> None:
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
                self.rebalance.add_member(group, new_member_id, join)
        elif join.api_version >= 4:
            group.pending_members.add(new_member_id)
            self.rebalance.schedule_pending_member_expiry(group, new_member_id, join.session_timeout_ms)
            join.answer(JoinGroupResult.failed(E.MEMBER_ID_REQUIRED, new_member_id))
        else:
            self.rebalance.add_member(group, new_member_id, join)

    def _do_current_member_join(self, group: GroupMetadata, join: JoinRequest) -> None:
        member_id = join.member_id
        if group.is_in(GroupState.DEAD):
            join.answer(JoinGroupResult.failed(E.COORDINATOR_NOT_AVAILABLE, member_id))
            return
        if not group.supports_protocols(join.protocol_type, join.protocols):
            join.answer(JoinGroupResult.failed(E.INCONSISTENT_GROUP_PROTOCOL, member_id))
            return
        if member_id in group.pending_members:
            self.rebalance.cancel_pending_member_expiry(group, member_id)
            self.rebalance.add_member(group, member_id, join)
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
            self.rebalance.update_member(group, member, join)
        elif state is GroupState.COMPLETING_REBALANCE:
            if member.matches(join.protocols):
                # A retried JoinGroup whose answer was lost: repeat the current generation's answer.
                join.answer(self.rebalance.join_result_for(group, member))
            else:
                self.rebalance.update_member(group, member, join)
        elif state is GroupState.STABLE:
            if group.is_leader(member_id) or not member.matches(join.protocols):
                # The leader rejoining means it wants a new assignment (e.g. its metadata changed).
                self.rebalance.update_member(group, member, join)
            else:
                join.answer(self.rebalance.join_result_for(group, member, include_members=False))
        else:
            join.answer(JoinGroupResult.failed(E.UNKNOWN_MEMBER_ID, member_id))

    async def _update_static_member_and_rebalance(self, group: GroupMetadata, instance_id: str,
                                                  old_member_id: str, new_member_id: str,
                                                  join: JoinRequest) -> None:
        current_leader = group.leader_id
        member = group.members[old_member_id]
        # The previous incarnation of this instance is fenced: its pending requests end now.
        self.rebalance.complete_join(member, JoinGroupResult.failed(E.FENCED_INSTANCE_ID, old_member_id))
        self.rebalance.complete_sync(member, SyncGroupResult(E.FENCED_INSTANCE_ID))
        group.replace_static_member(instance_id, old_member_id, new_member_id)
        old_protocols = list(member.supported_protocols)
        old_rebalance, old_session = member.rebalance_timeout_ms, member.session_timeout_ms
        group.update_member(member, join.protocols, join.rebalance_timeout_ms, join.session_timeout_ms)
        member.join_future = join.future
        self.rebalance.schedule_heartbeat(group, member)

        if group.is_in(GroupState.STABLE):
            if group.select_protocol() != group.protocol_name:
                self.rebalance.maybe_prepare(
                    group, f"static member {instance_id} rejoined with a different protocol")
                return
            # Same protocol: keep the assignment, no rebalance; persist the new member id first.
            generation = group.generation_id
            assignment = {m.member_id: m.assignment for m in group.members.values()}
            error = await self.manager.store_group(group, assignment)
            if error != E.NONE:
                if group.members.get(new_member_id) is member:
                    group.update_member(member, old_protocols, old_rebalance, old_session)
                    group.replace_static_member(instance_id, new_member_id, old_member_id)
                    self.rebalance.schedule_heartbeat(group, member)
                self.rebalance.complete_join(member, JoinGroupResult(
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
            self.rebalance.complete_join(member, JoinGroupResult(
                error_code=E.NONE, member_id=new_member_id, generation_id=group.generation_id,
                protocol_type=group.protocol_type, protocol_name=group.protocol_name,
                leader=(group.leader_id if skip else current_leader) or "", skip_assignment=skip,
                members=members))
        elif group.is_in(GroupState.COMPLETING_REBALANCE):
            # The leader may already be assigning to the old member id: start over.
            self.rebalance.prepare(group, f"static member {instance_id} rejoined during sync")
        # PreparingRebalance: the member now simply waits for the join phase to end.

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
        group = self.manager.groups.get(group_id)
        if group is None:
            return SyncGroupResult(E.UNKNOWN_MEMBER_ID)
        if group.is_in(GroupState.DEAD):
            return SyncGroupResult(E.COORDINATOR_NOT_AVAILABLE)
        if group.consumer is not None:
            return self._classic_sync_to_consumer_group(group.consumer, generation_id, member_id, group_instance_id,
                                                        protocol_type, protocol_name)
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
            self.rebalance.schedule_heartbeat(group, member)
            return SyncGroupResult(E.NONE, group.protocol_type, group.protocol_name, member.assignment)

        # CompletingRebalance: wait for the leader's assignment to be stored.
        future: asyncio.Future[SyncGroupResult] = self._loop().create_future()
        self.rebalance.complete_sync(member, SyncGroupResult(E.REBALANCE_IN_PROGRESS))
        member.sync_future = future
        group.pending_sync_members.discard(member_id)
        if group.is_leader(member_id):
            assignment = {m: b"" for m in group.members}
            for target, data in assignments:
                if target in assignment:
                    assignment[target] = bytes(data)
            generation = group.generation_id
            store_error = await self.manager.store_group(group, assignment)
            if group.is_in(GroupState.COMPLETING_REBALANCE) and group.generation_id == generation:
                if store_error != E.NONE:
                    self.rebalance.reset_and_propagate_assignment_error(group, store_error)
                    self.rebalance.maybe_prepare(group, "storing the assignment failed")
                else:
                    for m in group.members.values():
                        m.assignment = assignment.get(m.member_id, b"")
                    group.transition_to(GroupState.STABLE, self._now())
                    self.rebalance.propagate_assignment(group, E.NONE)
        return await asyncio.shield(future)

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
        group = self.manager.groups.get(group_id)
        if group is None:
            return E.UNKNOWN_MEMBER_ID
        if group.is_in(GroupState.DEAD):
            return E.COORDINATOR_NOT_AVAILABLE
        if group.consumer is not None:
            return self._classic_heartbeat_to_consumer_group(group.consumer, member_id, group_instance_id,
                                                             generation_id)
        if group.is_static_member_fenced(group_instance_id, member_id):
            return E.FENCED_INSTANCE_ID
        member = group.members.get(member_id)
        if member is None:
            return E.UNKNOWN_MEMBER_ID
        if generation_id != group.generation_id:
            return E.ILLEGAL_GENERATION
        if group.is_in(GroupState.EMPTY):
            return E.UNKNOWN_MEMBER_ID
        self.rebalance.schedule_heartbeat(group, member)
        if group.is_in(GroupState.PREPARING_REBALANCE):
            return E.REBALANCE_IN_PROGRESS
        return E.NONE

    async def leave_group(self, group_id: str, members: Sequence[LeaveMember]) -> LeaveGroupResult:
        """LeaveGroup. v0-2: pass [LeaveMember(member_id)]; v3+: the request's member identities."""
        error = self._validate(group_id)
        if error is not None:
            return LeaveGroupResult(error)
        group = self.manager.groups.get(group_id)
        if group is None:
            return LeaveGroupResult(E.NONE, [LeaveMemberResult(m.member_id, m.group_instance_id,
                                                               E.UNKNOWN_MEMBER_ID) for m in members])
        if group.is_in(GroupState.DEAD):
            return LeaveGroupResult(E.COORDINATOR_NOT_AVAILABLE)
        if group.consumer is not None:
            return await self._classic_leave_to_consumer_group(group, members)
        results = []
        for leaving in members:
            member_id = leaving.member_id
            if member_id == "" and leaving.group_instance_id is not None:
                member_id = group.static_member_id(leaving.group_instance_id) or ""
            if member_id in group.pending_members:
                self.rebalance.remove_pending_member(group, member_id)
                code = E.NONE
            elif group.is_static_member_fenced(leaving.group_instance_id, member_id):
                code = E.FENCED_INSTANCE_ID
            elif member_id in group.members:
                log.info("group %s: member %s leaves", group.group_id, member_id)
                self.rebalance.remove_member(group, group.members[member_id])
                code = E.NONE
            else:
                code = E.UNKNOWN_MEMBER_ID
            results.append(LeaveMemberResult(leaving.member_id, leaving.group_instance_id, code))
        return LeaveGroupResult(E.NONE, results)

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
            group = self.manager.groups.get(group_id)
            if group is None or group.consumer is not None:
                # A consumer group is not described by DescribeGroups (v0-5): Dead with no members, as Kafka.
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
        return self.manager.list_groups(states_filter, types_filter)

    async def delete_groups(self, group_ids: Sequence[str]) -> dict[str, int]:
        """DeleteGroups: only Empty (or unknown-protocol, offsets-only) groups; NON_EMPTY_GROUP else."""
        results: dict[str, int] = {}
        doomed: list[GroupMetadata] = []
        for group_id in group_ids:
            error = self._validate(group_id, require_non_empty=False)
            if error is not None:
                results[group_id] = error
                continue
            group = self.manager.groups.get(group_id)
            if group is None or group.is_in(GroupState.DEAD):
                results[group_id] = E.GROUP_ID_NOT_FOUND
            elif group.is_in(GroupState.EMPTY) and not group.has_consumer_members:
                doomed.append(group)
            else:
                results[group_id] = E.NON_EMPTY_GROUP
        results.update(await self.manager.delete_groups(doomed))
        return {g: results[g] for g in group_ids if g in results}

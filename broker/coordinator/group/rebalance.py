"""The rebalance protocol's state machine and its timers, for the group coordinator (Kafka's
GroupCoordinator rebalance paths with DelayedJoin, InitialDelayedJoin, DelayedSync and DelayedHeartbeat).

Contract (on the broker's asyncio loop; timers are `loop.call_later` handles stored on the group and its
members; nothing is locked):
- `add_member` / `update_member` / `remove_member` / `remove_pending_member` change a group's members and
  start a rebalance where Kafka does (`maybe_prepare`: Empty, Stable or CompletingRebalance groups).
- `prepare` moves a group to PreparingRebalance: an Empty group waits `group.initial.rebalance.delay.ms`,
  extended by each new member up to the rebalance timeout; any other waits at most the largest rebalance
  timeout of its members, and less once every member has rejoined (`try_complete_join`). Completing the join
  phase removes dynamic members that did not rejoin, elects a leader, starts the next generation, answers
  every JoinGroup (the leader gets the member list) and starts the sync phase, bounded by the rebalance
  timeout again: members that send no SyncGroup by then are removed and the group rebalances. A generation
  without members is stored in the background through the metadata manager.
- Session timers: `schedule_heartbeat` (re)starts a member's session timeout (5 minutes for a new member
  in its first join); a member that times out is removed, unless it is waiting in a rebalance (the
  rebalance timeouts govern it then). Pending member ids of MEMBER_ID_REQUIRED expire after the session
  timeout too.
- `complete_join` / `complete_sync` answer a member's waiting JoinGroup / SyncGroup at most once.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from broker.coordinator.group.config import GroupCoordinatorConfig
from broker.coordinator.group.errors import GroupErrorCode
from broker.coordinator.group.metadata import GroupMetadata, GroupState, MemberMetadata
from broker.coordinator.group.metadata_manager import GroupMetadataManager
from broker.coordinator.group.results import JoinGroupMember, JoinGroupResult, SyncGroupResult

log = logging.getLogger(__name__)

E = GroupErrorCode


class Rebalancer:
    def __init__(self, config: GroupCoordinatorConfig, manager: GroupMetadataManager) -> None:
        self.config = config
        self.manager = manager

    def _now(self) -> int:
        return self.manager.clock_ms()

    @staticmethod
    def _loop() -> asyncio.AbstractEventLoop:
        return asyncio.get_running_loop()

    def join_result_for(self, group: GroupMetadata, member: MemberMetadata,
                         include_members: bool | None = None) -> JoinGroupResult:
        if include_members is None:
            include_members = group.is_leader(member.member_id)
        members = ([JoinGroupMember(mid, iid, meta) for mid, iid, meta in group.current_member_metadata()]
                   if include_members else [])
        return JoinGroupResult(error_code=E.NONE, member_id=member.member_id,
                               generation_id=group.generation_id, protocol_type=group.protocol_type,
                               protocol_name=group.protocol_name, leader=group.leader_id or "",
                               skip_assignment=False, members=members)

    def add_member(self, group: GroupMetadata, member_id: str, join: JoinRequest) -> None:
        member = MemberMetadata(
            member_id=member_id, group_instance_id=join.group_instance_id, client_id=join.client_id,
            client_host=join.client_host, rebalance_timeout_ms=join.rebalance_timeout_ms,
            session_timeout_ms=join.session_timeout_ms, protocol_type=join.protocol_type,
            supported_protocols=list(join.protocols), is_new=True, join_future=join.future)
        # A member joining during the initial delay extends it (up to the rebalance timeout).
        if group.is_in(GroupState.PREPARING_REBALANCE) and group.generation_id == 0:
            group.new_member_added = True
        group.add(member)
        self.schedule_heartbeat(group, member, self.config.new_member_join_timeout_ms)
        self.maybe_prepare(group, f"adding new member {member_id}")

    def update_member(self, group: GroupMetadata, member: MemberMetadata,
                                     join: JoinRequest) -> None:
        group.update_member(member, join.protocols, join.rebalance_timeout_ms, join.session_timeout_ms)
        self.set_join_future(member, join.future)
        self.maybe_prepare(group, f"updating metadata for member {member.member_id}")

    def set_join_future(self, member: MemberMetadata, future: asyncio.Future[Any]) -> None:
        # A second JoinGroup from the same member supersedes the first; the first must still be
        # answered or its connection's response queue would stall behind it.
        self.complete_join(member, JoinGroupResult.failed(E.REBALANCE_IN_PROGRESS, member.member_id))
        member.join_future = future

    def maybe_prepare(self, group: GroupMetadata, reason: str) -> None:
        if group.can_rebalance():
            self.prepare(group, reason)

    def prepare(self, group: GroupMetadata, reason: str) -> None:
        if group.is_in(GroupState.COMPLETING_REBALANCE):
            self.reset_and_propagate_assignment_error(group, E.REBALANCE_IN_PROGRESS)
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
            self.try_complete_join(group)

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

    def try_complete_join(self, group: GroupMetadata) -> None:
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
                self.cancel_heartbeat(member)
                self.complete_sync(member, SyncGroupResult(E.UNKNOWN_MEMBER_ID))
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
            self.manager.spawn(self.manager.store_group(group, {}), f"store empty group {group.group_id}")
            return
        log.info("group %s: generation %d with %d members, protocol %s", group.group_id,
                 group.generation_id, group.size, group.protocol_name)
        for member in list(group.members.values()):
            self.complete_join(member, self.join_result_for(group, member))
            self.schedule_heartbeat(group, member)
            member.is_new = False
            group.pending_sync_members.add(member.member_id)
        generation = group.generation_id
        group.sync_timer = self._loop().call_later(
            group.rebalance_timeout_ms() / 1000, self._on_pending_sync_expired, group, generation)

    def reset_and_propagate_assignment_error(self, group: GroupMetadata, error: int) -> None:
        for member in group.members.values():
            member.assignment = b""
        self.propagate_assignment(group, error)

    def propagate_assignment(self, group: GroupMetadata, error: int) -> None:
        for member in group.members.values():
            self.complete_sync(member, SyncGroupResult(error, group.protocol_type, group.protocol_name,
                                                        member.assignment))
            # A session that ran out while the members waited for the leader starts over now.
            self.schedule_heartbeat(group, member)

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
                self.cancel_heartbeat(member)
                self.complete_join(member, JoinGroupResult.failed(E.UNKNOWN_MEMBER_ID, ""))
                self.complete_sync(member, SyncGroupResult(E.UNKNOWN_MEMBER_ID))
            group.remove(member_id)
        self.prepare(group, "pending SyncGroup expired")

    def remove_member(self, group: GroupMetadata, member: MemberMetadata) -> None:
        # A member removed while it waits in JoinGroup hears UNKNOWN_MEMBER_ID and joins afresh.
        self.complete_join(member, JoinGroupResult.failed(E.UNKNOWN_MEMBER_ID, ""))
        self.complete_sync(member, SyncGroupResult(E.UNKNOWN_MEMBER_ID))
        self.cancel_heartbeat(member)
        group.remove(member.member_id)
        if group.is_in(GroupState.STABLE, GroupState.COMPLETING_REBALANCE):
            self.maybe_prepare(group, f"removing member {member.member_id}")
        elif group.is_in(GroupState.PREPARING_REBALANCE):
            self.try_complete_join(group)

    def remove_pending_member(self, group: GroupMetadata, member_id: str) -> None:
        self.cancel_pending_member_expiry(group, member_id)
        group.remove(member_id)
        if group.is_in(GroupState.PREPARING_REBALANCE):
            self.try_complete_join(group)

    def schedule_heartbeat(self, group: GroupMetadata, member: MemberMetadata,
                            timeout_ms: int | None = None) -> None:
        self.cancel_heartbeat(member)
        timeout = member.session_timeout_ms if timeout_ms is None else timeout_ms
        member.heartbeat_timer = self._loop().call_later(
            timeout / 1000, self._on_heartbeat_expired, group, member)

    def cancel_heartbeat(self, member: MemberMetadata) -> None:
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
        self.remove_member(group, member)

    def schedule_pending_member_expiry(self, group: GroupMetadata, member_id: str, timeout_ms: int) -> None:
        self.cancel_pending_member_expiry(group, member_id)
        group.pending_member_timers[member_id] = self._loop().call_later(
            timeout_ms / 1000, self._on_pending_member_expired, group, member_id)

    def cancel_pending_member_expiry(self, group: GroupMetadata, member_id: str) -> None:
        handle = group.pending_member_timers.pop(member_id, None)
        if handle is not None:
            handle.cancel()

    def _on_pending_member_expired(self, group: GroupMetadata, member_id: str) -> None:
        group.pending_member_timers.pop(member_id, None)
        if member_id in group.pending_members and not group.is_in(GroupState.DEAD):
            log.info("group %s: pending member %s never joined", group.group_id, member_id)
            self.remove_pending_member(group, member_id)

    @staticmethod
    def complete_join(member: MemberMetadata, result: JoinGroupResult) -> None:
        future = member.join_future
        member.join_future = None
        if future is not None and not future.done():
            future.set_result(result)

    @staticmethod
    def complete_sync(member: MemberMetadata, result: SyncGroupResult) -> None:
        future = member.sync_future
        member.sync_future = None
        if future is not None and not future.done():
            future.set_result(result)


class JoinRequest:
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


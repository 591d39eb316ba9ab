"""The group coordinator's share-group requests (KIP-932): ShareGroupHeartbeat and ShareGroupDescribe, with
Kafka 4.1's rules (GroupMetadataManager's share-group paths).

Contract:
- `ShareGroupRequests` is mixed into `GroupCoordinator` (coordinator.py), which provides `manager` (whose
  `__consumer_offsets` partitions decide NOT_COORDINATOR / COORDINATOR_LOAD_IN_PROGRESS, and whose group cache
  holds the classic and consumer groups a share group id must not collide with) and `topics_image`.
  `share_config` (ShareGroupConfig) is set by the broker from its group.share.* properties.
- A heartbeat: request checks (INVALID_REQUEST), the coordinator's errors, then the member: GROUP_ID_NOT_FOUND
  (a classic or consumer group has the id, or a non-joining member of an unknown group), GROUP_MAX_SIZE_REACHED
  (`group.share.max.size`), UNKNOWN_MEMBER_ID, FENCED_MEMBER_EPOCH (an epoch other than the member's current
  or previous one). A changed subscription, or changed partition counts of the subscribed topics, bumps the
  group epoch; the target assignment is then recomputed with the simple assignor and every member takes its
  part at the new epoch on its next heartbeat. The assignment is answered on joining and whenever it changed.
- Each heartbeat restarts the member's session (`group.share.session.timeout.ms`, or the group config
  `share.session.timeout.ms`; the interval answered: `share.heartbeat.interval.ms` likewise); expiring or
  leaving (epoch -1) removes the member and bumps the group epoch.
- Persistence (share_records.py): every accepted change is appended to the group's `__consumer_offsets`
  partition as Kafka's ShareGroup* records before the member hears of it, so the group survives a restart or a
  coordinator move (loaded members' sessions start again). A failed append answers its error (the in-memory
  change is not rolled back).
- Share-partition state (Kafka 4.1, share_state_metadata.py): members are assigned only partitions whose
  state is initialized; a heartbeat that finds subscribed partitions without state records them as
  initializing and, once answered, initializes them through `share_persister` (state epoch = group epoch,
  start offset -1); when they are initialized the next heartbeat bumps the group epoch and assigns them.
- DeleteGroups deletes an Empty share group (NON_EMPTY_GROUP while members remain): the state of every
  initialized and initializing partition is deleted through the persister first (its error answered when
  that fails), then the group's records are tombstoned.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from broker.coordinator.group import share_records
from broker.coordinator.group import share_state_metadata as state_md
from broker.coordinator.group.errors import GroupErrorCode as E
from broker.coordinator.group.errors import Refused
from broker.coordinator.group.metadata import GroupState
from broker.coordinator.group.share_group import (
    LEAVE_GROUP_MEMBER_EPOCH,
    Assignment,
    ShareGroup,
    ShareGroupConfig,
    ShareGroupMember,
    simple_assign,
)
from broker.coordinator.share.persister import PersisterError

if TYPE_CHECKING:
    from broker.coordinator.group.consumer_requests import TopicsImage
    from broker.coordinator.group.metadata_manager import GroupMetadataManager

log = logging.getLogger(__name__)

Record = tuple[bytes, bytes | None]


@dataclass(frozen=True, slots=True)
class ShareGroupHeartbeatResult:
    error_code: int
    error_message: str | None = None
    member_id: str | None = None
    member_epoch: int = 0
    heartbeat_interval_ms: int = 0
    assignment: Assignment | None = None


class ShareGroupRequests:
    manager: GroupMetadataManager
    topics_image: TopicsImage
    share_config: ShareGroupConfig = ShareGroupConfig()
    # A group's configs (broker/config/group_configs.py: share.session.timeout.ms, share.heartbeat.interval.ms), set by
    # the broker; they override `share_config` for that group.
    share_group_configs: Callable[[str], Mapping[str, str]] = staticmethod(lambda group_id: {})  # type: ignore[assignment]
    # The broker's share-state Persister (broker/coordinator/share/persister.py), set by the broker: the coordinator
    # initializes and deletes share-partition state through it (Kafka 4.1). None: every subscribed partition
    # is assignable and no state is initialized here (a bare coordinator).
    share_persister: Callable[[], Any] | None = None

    @property
    def share_groups(self) -> dict[str, ShareGroup]:
        groups = self.__dict__.get("_share_groups")
        if groups is None:
            groups = self.__dict__["_share_groups"] = {}
        return groups

    def is_share_group(self, group_id: str) -> bool:
        """Whether `group_id` is a share group this coordinator owns: classic and consumer group requests for
        it are refused (Kafka: "Group X is not a classic/consumer group")."""
        return group_id in self.share_groups and self.manager.partition_error(group_id) is None

    # ---------------------------------------------------------------- ShareGroupHeartbeat
    async def share_group_heartbeat(self, group_id: str, member_id: str, member_epoch: int, *,
                                    rack_id: str | None = None, subscribed_topic_names: list[str] | None = None,
                                    client_id: str = "", client_host: str = "") -> ShareGroupHeartbeatResult:
        try:
            if self.manager.shutting_down:
                raise Refused(E.COORDINATOR_NOT_AVAILABLE)
            _check_heartbeat(group_id, member_id, member_epoch, rack_id, subscribed_topic_names)
            error = self.manager.partition_error(group_id)
            if error is not None:
                raise Refused(error)
            records: list[Record] = []
            pending: dict[uuid.UUID, state_md.InitValue] = {}
            if member_epoch == LEAVE_GROUP_MEMBER_EPOCH:
                result = self._share_group_leave(group_id, member_id, records)
            else:
                result = self._share_group_heartbeat(group_id, member_id, member_epoch, rack_id,
                                                     subscribed_topic_names, client_id, client_host, records)
                pending = self._share_partitions_to_initialize(self.share_groups[group_id], records)
        except Refused as refused:
            return ShareGroupHeartbeatResult(refused.code, refused.message)
        # Applied; the member hears of it once it is stored (Kafka answers after the write).
        if records:
            error = await self.manager.append_group_records(self.manager.partition_for(group_id), records)
            if error != E.NONE:
                return ShareGroupHeartbeatResult(error)
        if pending:
            epoch = self.share_groups[group_id].group_epoch
            self.manager.spawn(self._initialize_share_partitions(group_id, epoch, pending),
                               "initialize share partitions")
        return result

    def _share_group_heartbeat(self, group_id: str, member_id: str, member_epoch: int, rack_id: str | None,
                               names: list[str] | None, client_id: str, client_host: str,
                               records: list[Record]) -> ShareGroupHeartbeatResult:
        group = self._share_group(group_id, create=member_epoch == 0)
        config = self.share_config
        member = group.members.get(member_id)
        if member is None:
            if member_epoch != 0:
                raise Refused(E.UNKNOWN_MEMBER_ID, f"Member {member_id} is not a member of group {group_id}.")
            if len(group.members) >= config.max_size:
                raise Refused(E.GROUP_MAX_SIZE_REACHED, "The share group has reached its maximum capacity of "
                               f"{config.max_size} members.")
            log.info("share group %s: member %s joins", group_id, member_id)
            member = ShareGroupMember(member_id)
        # Epoch 0 from a known member is a rejoin (after an error the client keeps its member id), as Kafka.
        elif member_epoch != 0 and (member_epoch > member.member_epoch or (
                member_epoch < member.member_epoch and member_epoch != member.previous_member_epoch)):
            raise Refused(E.FENCED_MEMBER_EPOCH, f"The share group member has member epoch {member_epoch}, the "
                           f"group coordinator knows {member.member_epoch}.")
        updated = replace(member, rack_id=rack_id if rack_id is not None else member.rack_id,
                          subscribed_topic_names=tuple(names) if names is not None else member.subscribed_topic_names,
                          client_id=client_id, client_host=client_host)
        members = dict(group.members)
        members[member_id] = updated
        metadata = self._share_subscription_metadata(members.values())
        bump = (member_id not in group.members or updated.subscribed_topic_names != member.subscribed_topic_names
                or metadata != group.subscription_metadata or self._initialized_assignment_pending(group, metadata))
        if member_id not in group.members or (updated.rack_id, updated.client_id, updated.client_host,
                                              updated.subscribed_topic_names) != (
                member.rack_id, member.client_id, member.client_host, member.subscribed_topic_names):
            records.append(share_records.member_metadata_record(group_id, updated))
        if metadata != group.subscription_metadata:
            records.append(share_records.partition_metadata_record(group_id, metadata))
        if bump:
            group.group_epoch += 1
            group.subscription_metadata = metadata
            records.append(share_records.group_epoch_record(group_id, group.group_epoch))
            log.info("share group %s: epoch %d", group_id, group.group_epoch)
        group.members[member_id] = updated
        if group.group_epoch > group.assignment_epoch:
            self._share_target(group, records)
        target = group.target_assignment.get(member_id, {})
        if updated.member_epoch != group.assignment_epoch or updated.assigned != target:
            updated.previous_member_epoch = updated.member_epoch
            updated.member_epoch = group.assignment_epoch
            updated.assigned = target
            records.append(share_records.current_assignment_record(group_id, updated))
        self._schedule_share_session_timeout(group, member_id)
        changed = member_epoch == 0 or updated.assigned != member.assigned
        interval = int(self.share_group_configs(group_id).get("share.heartbeat.interval.ms",
                                                               config.heartbeat_interval_ms))
        return ShareGroupHeartbeatResult(E.NONE, None, member_id, updated.member_epoch, interval,
                                         updated.assigned if changed else None)

    def _share_group(self, group_id: str, create: bool) -> ShareGroup:
        entry = self.manager.groups.get(group_id)
        if entry is not None and not entry.is_in(GroupState.DEAD):
            raise Refused(E.GROUP_ID_NOT_FOUND, f"Group {group_id} is not a share group.")
        group = self.share_groups.get(group_id)
        if group is None:
            if not create:
                raise Refused(E.GROUP_ID_NOT_FOUND, f"Share group {group_id} not found.")
            group = self.share_groups[group_id] = ShareGroup(group_id)
        return group

    def _share_subscription_metadata(self, members: Iterable[ShareGroupMember]) -> dict[str, tuple[uuid.UUID, int]]:
        out = {}
        for name in sorted({n for m in members for n in m.subscribed_topic_names}):
            found = self.topics_image.topic(name)
            if found is not None and found[1] > 0:
                out[name] = found
        return out

    def _share_target(self, group: ShareGroup, records: list[Record]) -> None:
        metadata = group.subscription_metadata
        specs = {mid: frozenset(metadata[t][0] for t in m.subscribed_topic_names if t in metadata)
                 for mid, m in group.members.items()}
        target = simple_assign(specs, self._assignable(group), group.target_assignment)
        records.extend(share_records.target_member_record(group.group_id, mid, assignment)
                       for mid, assignment in target.items() if group.target_assignment.get(mid) != assignment)
        group.target_assignment = target
        group.assignment_epoch = group.group_epoch
        records.append(share_records.target_epoch_record(group.group_id, group.assignment_epoch))

    # ---------------------------------------------------------------- share-partition state (Kafka 4.1)
    def _assignable(self, group: ShareGroup) -> dict[uuid.UUID, int | frozenset[int]]:
        """topic id -> what may be assigned of it: its initialized partitions (all of them without a
        persister)."""
        counts = dict(group.subscription_metadata.values())
        if self.share_persister is None:
            return dict(counts)
        initialized = group.state_metadata.initialized
        return {tid: frozenset(p for p in initialized[tid].partitions if p < count)
                for tid, count in counts.items() if tid in initialized}

    def _initialized_assignment_pending(self, group: ShareGroup,
                                        metadata: Mapping[str, tuple[uuid.UUID, int]]) -> bool:
        """Whether the target assignment misses initialized partitions of a subscribed topic (they were
        initialized after it was computed), as Kafka's initializedAssignmentPending. `metadata`: the
        subscribed topics (name -> id, partition count)."""
        if self.share_persister is None:
            return False
        assigned: dict[uuid.UUID, set[int]] = {}
        for assignment in group.target_assignment.values():
            for tid, ps in assignment.items():
                assigned.setdefault(tid, set()).update(ps)
        initialized = group.state_metadata.initialized
        return any(tid in initialized and assigned.get(tid, set()) != {p for p in initialized[tid].partitions
                                                                      if p < count}
                   for tid, count in metadata.values())

    def _share_partitions_to_initialize(self, group: ShareGroup,
                                        records: list[Record]) -> dict[uuid.UUID, state_md.InitValue]:
        """The subscribed partitions with no share-partition state yet (or whose initialization is older than
        the retry interval): they enter `initializing` (a record in `records`) and are returned."""
        if self.share_persister is None:
            return {}
        self._forget_deleted_topics(group, records)
        md = group.state_metadata
        now = int(time.time() * 1000)
        fresh = {tid: v for tid, v in md.initializing.items() if now - v.timestamp_ms < state_md.INITIALIZE_RETRY_MS}
        have = state_md.combine(md.initialized, fresh)
        pending = {}
        for name, (tid, count) in group.subscription_metadata.items():
            missing = frozenset(range(count)) - (have[tid].partitions if tid in have else frozenset())
            if missing:
                pending[tid] = state_md.InitValue(name, missing, now)
        if pending:
            updated = md.copy()
            updated.initializing = state_md.combine(
                {tid: v for tid, v in md.initializing.items() if tid not in pending}, pending)
            for tid in pending:
                updated.deleting.pop(tid, None)
            group.state_metadata = updated
            records.append(state_md.state_partition_metadata_record(group.group_id, updated))
        return pending

    def _forget_deleted_topics(self, group: ShareGroup, records: list[Record]) -> None:
        """Topics deleted since they got share-partition state leave the group's record (their state goes
        with the topic, as Kafka's maybeCleanupShareGroupState)."""
        md = group.state_metadata
        gone = {tid for tid in (*md.initializing, *md.initialized, *md.deleting)
                if self.topics_image.name_of(tid) is None}
        if not gone:
            return
        group.state_metadata = state_md.StatePartitionMetadata(
            {t: v for t, v in md.initializing.items() if t not in gone},
            {t: v for t, v in md.initialized.items() if t not in gone},
            {t: n for t, n in md.deleting.items() if t not in gone})
        records.append(state_md.state_partition_metadata_record(group.group_id, group.state_metadata))

    async def _initialize_share_partitions(self, group_id: str, epoch: int,
                                           pending: dict[uuid.UUID, state_md.InitValue]) -> None:
        """InitializeShareGroupState through the persister (state epoch: the group epoch; start offset -1, the
        share-partition leader applies share.auto.offset.reset), then the partitions move to `initialized`,
        or leave `initializing` when the persister failed (the next heartbeat after the retry interval tries
        again)."""
        assert self.share_persister is not None
        persister = self.share_persister()
        keys = [(tid, p) for tid, v in pending.items() for p in sorted(v.partitions)]

        async def one(tid: uuid.UUID, p: int) -> bool:
            try:
                await persister.initialize(group_id, tid.bytes, p, epoch, -1)
            except PersisterError as e:
                log.warning("share group %s: state of %s-%d not initialized: %s", group_id, tid, p, e)
                return False
            return True
        results = await asyncio.gather(*(one(tid, p) for tid, p in keys))
        done: dict[uuid.UUID, frozenset[int]] = {}
        failed: dict[uuid.UUID, frozenset[int]] = {}
        for (tid, p), ok in zip(keys, results, strict=True):
            target = done if ok else failed
            target[tid] = target.get(tid, frozenset()) | {p}
        group = self.share_groups.get(group_id)
        if group is None or self.manager.partition_error(group_id) is not None:
            return
        md = group.state_metadata.copy()
        md.initializing = state_md.remove(md.initializing, {**failed, **{
            tid: done.get(tid, frozenset()) | failed.get(tid, frozenset()) for tid in done}})
        now = int(time.time() * 1000)
        md.initialized = state_md.combine(md.initialized, {
            tid: state_md.InitValue(pending[tid].name, ps, now) for tid, ps in done.items()})
        group.state_metadata = md
        log.info("share group %s: share partitions initialized: %s", group_id,
                 {pending[t].name: sorted(ps) for t, ps in done.items()})
        await self.manager.append_group_records(self.manager.partition_for(group_id),
                                                [state_md.state_partition_metadata_record(group_id, md)])

    async def delete_share_partition_state(self, group_id: str,
                                           topics: dict[uuid.UUID, state_md.InitValue]) -> dict[uuid.UUID, int]:
        """DeleteShareGroupState through the persister for these partitions: topic id -> error (NONE, or the
        first persister error of its partitions)."""
        if self.share_persister is None:
            return {tid: E.NONE for tid in topics}
        persister = self.share_persister()
        # A deleted topic's state went with it (the share coordinator refuses unknown topics).
        keys = [(tid, p) for tid, v in topics.items() for p in sorted(v.partitions)
                if self.topics_image.name_of(tid) is not None]

        async def one(tid: uuid.UUID, p: int) -> int:
            try:
                await persister.delete(group_id, tid.bytes, p)
            except PersisterError as e:
                if e.error_code == E.UNKNOWN_TOPIC_OR_PARTITION:
                    return E.NONE  # the topic went meanwhile, and its state with it
                log.warning("share group %s: state of %s-%d not deleted: %s", group_id, tid, p, e)
                return e.error_code
            return E.NONE
        results = await asyncio.gather(*(one(tid, p) for tid, p in keys))
        out = {tid: E.NONE for tid in topics}
        for (tid, _), code in zip(keys, results, strict=True):
            if code != E.NONE and out[tid] == E.NONE:
                out[tid] = code
        return out

    def _share_group_leave(self, group_id: str, member_id: str, records: list[Record]) -> ShareGroupHeartbeatResult:
        group = self._share_group(group_id, create=False)
        if member_id not in group.members:
            raise Refused(E.UNKNOWN_MEMBER_ID, f"Member {member_id} is not a member of group {group_id}.")
        log.info("share group %s: member %s leaves", group_id, member_id)
        records.extend(self._remove_share_member(group, member_id))
        return ShareGroupHeartbeatResult(E.NONE, None, member_id, LEAVE_GROUP_MEMBER_EPOCH)

    def _remove_share_member(self, group: ShareGroup, member_id: str) -> list[Record]:
        """Remove a member; the group epoch moves so the others share its partitions. Returns the records."""
        records = share_records.member_tombstones(group.group_id, member_id)
        group.members.pop(member_id, None)
        group.target_assignment.pop(member_id, None)
        group.cancel_timer(member_id)
        metadata = self._share_subscription_metadata(group.members.values())
        if metadata != group.subscription_metadata:
            group.subscription_metadata = metadata
            records.append(share_records.partition_metadata_record(group.group_id, metadata))
        group.group_epoch += 1
        records.append(share_records.group_epoch_record(group.group_id, group.group_epoch))
        if not group.members:
            # The last member gone: nothing left to assign, the (empty) target is at the new epoch at once, as
            # Kafka's shareGroupFenceMember writes it; otherwise the next heartbeat computes the target.
            group.assignment_epoch = group.group_epoch
            records.append(share_records.target_epoch_record(group.group_id, group.assignment_epoch))
        return records

    def _schedule_share_session_timeout(self, group: ShareGroup, member_id: str) -> None:
        group.cancel_timer(member_id)

        def expire() -> None:
            group_id = group.group_id
            if (self.share_groups.get(group_id) is group and member_id in group.members
                    and self.manager.partition_error(group_id) is None):
                log.info("share group %s: member %s fenced: its session expired", group_id, member_id)
                records = self._remove_share_member(group, member_id)
                self.manager.spawn(self.manager.append_group_records(self.manager.partition_for(group_id), records),
                                   "fence a share group member")
        timeout_ms = int(self.share_group_configs(group.group_id).get("share.session.timeout.ms",
                                                                      self.share_config.session_timeout_ms))
        group.session_timers[member_id] = asyncio.get_running_loop().call_later(timeout_ms / 1000, expire)

    # ---------------------------------------------------------------- ShareGroupDescribe and listing
    async def share_group_describe(self, group_ids: list[str]) -> list[tuple[str, int, ShareGroup | None]]:
        """Per group id: (id, error code, the group). INVALID_GROUP_ID for an empty id, the coordinator's
        errors, GROUP_ID_NOT_FOUND for no share group of that id."""
        out: list[tuple[str, int, ShareGroup | None]] = []
        for group_id in group_ids:
            if not group_id:
                out.append((group_id, E.INVALID_GROUP_ID, None))
                continue
            error = E.COORDINATOR_NOT_AVAILABLE if self.manager.shutting_down else self.manager.partition_error(
                group_id)
            group = self.share_groups.get(group_id)
            if error is not None:
                out.append((group_id, error, None))
            elif group is None:
                out.append((group_id, E.GROUP_ID_NOT_FOUND, None))
            else:
                out.append((group_id, E.NONE, group))
        return out

    async def delete_share_group(self, group_id: str) -> int:
        """DeleteGroups for a share group this coordinator owns: NON_EMPTY_GROUP while it has members, else its
        records are tombstoned and it is gone (NONE), or the append's error."""
        group = self.share_groups.get(group_id)
        if group is None:
            return E.GROUP_ID_NOT_FOUND
        if group.members:
            return E.NON_EMPTY_GROUP
        # Kafka's order: the partitions move to `deleting`, their state is deleted wherever it is, then the
        # group's records are tombstoned.
        md = group.state_metadata
        candidates = md.with_state()
        for tid, name in md.deleting.items():
            found = self.topics_image.topic(name)
            if found is not None and found[0] == tid and tid not in candidates:
                candidates[tid] = state_md.InitValue(name, frozenset(range(found[1])), 0)
        if candidates:
            group.state_metadata = state_md.StatePartitionMetadata(
                deleting={tid: v.name for tid, v in candidates.items()})
            error = await self.manager.append_group_records(self.manager.partition_for(group_id), [
                state_md.state_partition_metadata_record(group_id, group.state_metadata)])
            if error != E.NONE:
                return int(error)
            errors = await self.delete_share_partition_state(group_id, candidates)
            failed = next((code for code in errors.values() if code != E.NONE), None)
            if failed is not None:
                # The state stays listed as deleting: a DeleteGroups retried later deletes it again.
                return int(E.COORDINATOR_NOT_AVAILABLE)
        records = [state_md.state_partition_metadata_tombstone(group_id),
                   (share_records.target_epoch_record(group_id, 0)[0], None),
                   (share_records.partition_metadata_record(group_id, {})[0], None),
                   (share_records.group_epoch_record(group_id, 0)[0], None)]
        error = await self.manager.append_group_records(self.manager.partition_for(group_id), records)
        if error == E.NONE and self.share_groups.get(group_id) is group and not group.members:
            self.share_groups.pop(group_id).cancel_timers()
            log.info("share group %s: deleted", group_id)
        return int(error)

    def listed_share_groups(self, states_filter: list[str] | None = None,
                            types_filter: list[str] | None = None) -> list[tuple[str, str]]:
        """(group id, state) of the share groups of the partitions this coordinator owns, matching ListGroups'
        filters (case-insensitive; empty or None: all)."""
        if types_filter and "share" not in {t.lower() for t in types_filter}:
            return []
        states = {s.lower() for s in states_filter or []}
        return [(gid, g.state) for gid, g in self.share_groups.items()
                if self.manager.partition_error(gid) is None and (not states or g.state.lower() in states)]

    def on_share_groups_loaded(self, partition: int, groups: dict[str, ShareGroup]) -> None:
        """A `__consumer_offsets` partition loaded: its share groups replace what was kept for it, and their
        members' sessions start now (as Kafka's)."""
        for group_id in [g for g in self.share_groups if self.manager.partition_for(g) == partition]:
            self.share_groups.pop(group_id).cancel_timers()
        for group_id, group in groups.items():
            self.share_groups[group_id] = group
            for member_id in group.members:
                self._schedule_share_session_timeout(group, member_id)

    def shutdown_share_groups(self) -> None:
        for group in self.share_groups.values():
            group.cancel_timers()


def _check_heartbeat(group_id: str, member_id: str, member_epoch: int, rack_id: str | None,
                     names: list[str] | None) -> None:
    """Kafka's ShareGroupHeartbeat request checks (INVALID_REQUEST)."""
    if not group_id:
        raise Refused(E.INVALID_REQUEST, "GroupId can't be empty.")
    if not member_id:
        raise Refused(E.INVALID_REQUEST, "MemberId can't be empty.")
    if rack_id == "":
        raise Refused(E.INVALID_REQUEST, "RackId can't be empty.")
    if member_epoch == 0 and not names:
        raise Refused(E.INVALID_REQUEST, "SubscribedTopicNames must be set in first request.")
    if member_epoch < LEAVE_GROUP_MEMBER_EPOCH:
        raise Refused(E.INVALID_REQUEST, f"MemberEpoch is {member_epoch}, but must be greater than or equal "
                       "to -1.")

"""The group coordinator's KIP-848 requests: ConsumerGroupHeartbeat and ConsumerGroupDescribe (Kafka's
GroupMetadataManager consumer-group paths, with Kafka 4.0's ConsumerGroupHeartbeat v1 rules).

Contract:
- `ConsumerGroupRequests` is mixed into `GroupCoordinator` (coordinator.py), which provides the config, the
  `manager` (the group cache and its `__consumer_offsets` ownership) and `topics_image` (the broker's topic
  metadata: name -> (topic id, partition count)).
- A consumer group lives on the group cache's entry for its id (`GroupMetadata.consumer`), next to its
  committed offsets; an Empty classic group (e.g. offsets only) becomes a consumer group when a member
  joins with epoch 0; a classic group with members is upgraded when `group.consumer.migration.policy` allows it
  (migration.py), else answers GROUP_ID_NOT_FOUND. A member leaving or fenced may downgrade the group
  (migration.py); `_update_member` is shared with classic members' JoinGroup.
- A heartbeat: request checks (INVALID_REQUEST, UNSUPPORTED_ASSIGNOR), then the coordinator's
  (NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE), then the member:
  GROUP_ID_NOT_FOUND, GROUP_MAX_SIZE_REACHED (`group.consumer.max.size`), UNKNOWN_MEMBER_ID,
  FENCED_MEMBER_EPOCH (an epoch other than the member's, except its previous one with a subset of its
  partitions: a lost response), static members' UNRELEASED_INSTANCE_ID and FENCED_INSTANCE_ID. The member's
  subscription (names, v1 regex, server assignor) is updated, a regex new to the member compiled in RE2
  (INVALID_REGULAR_EXPRESSION, topic_regex.py); a changed subscription, a changed regex resolution or changed
  partition counts of the subscribed topics bump the group epoch, and a group epoch ahead of the target assignment
  epoch recomputes the target assignment with the group's preferred assignor (the most requested
  `ServerAssignor`, else the first of `group.consumer.assignors`). The member then reconciles towards it
  (consumer_group.reconcile: revoke before assign). The assignment is answered on a full request (epoch 0,
  or every optional field set) or when it changed.
- Timers: each heartbeat restarts the member's session timeout (`group.consumer.session.timeout.ms`); a
  member waiting to revoke has its rebalance timeout; either expiring fences the member. Fencing or leaving
  (epoch -1) removes the member and bumps the group epoch; a static member's leave (-2) keeps its
  partitions and its place until its session times out or its instance rejoins.
- Persistence (consumer_records.py): every accepted change is appended to the group's `__consumer_offsets`
  partition as Kafka's ConsumerGroup* records before the member hears of it, so the group survives a restart
  or a coordinator move (loaded groups' sessions start again). A failed append answers its error (the
  in-memory change is not rolled back, unlike Kafka's timeline).
- Regexes (Kafka 4.0): the group's regexes are resolved together against every topic name on a heartbeat
  that finds one unresolved or the topic names changed since, keeping the topics that heartbeat's member may
  DESCRIBE (`describable`); fencing and classic members' requests reuse the last resolution. Kafka batches
  refreshes at most every 10 s and stores them as ConsumerGroupRegularExpression records; we refresh at once
  and keep them in memory (a loaded group reads them back from its subscription metadata).
"""

from __future__ import annotations

import asyncio
import base64
import logging
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from typing import Protocol

from broker.coordinator.group.assignors import ASSIGNORS, AssignmentMember, assignor_name
from broker.coordinator.group.config import GroupCoordinatorConfig
from broker.coordinator.group.consumer_group import (
    LEAVE_GROUP_MEMBER_EPOCH,
    LEAVE_GROUP_STATIC_MEMBER_EPOCH,
    Assignment,
    ConsumerGroup,
    ConsumerGroupMember,
    MemberState,
    is_subset,
    reconcile,
)
from broker.coordinator.group.consumer_records import (
    Record,
    assignment_changes,
    current_assignment_record,
    group_epoch_record,
    member_tombstones,
    partition_metadata_record,
    subscription_changes,
    target_member_record,
    target_records,
)
from broker.coordinator.group.errors import GroupErrorCode as E
from broker.coordinator.group.errors import Refused
from broker.coordinator.group.metadata import GroupMetadata, GroupState
from broker.coordinator.group.metadata_manager import GroupMetadataManager
from broker.coordinator.group.migration import MigrationRefused
from broker.coordinator.group.schema import GroupMetadataKey, encode_group_metadata_key
from broker.coordinator.group.topic_regex import regex_error, resolve

log = logging.getLogger(__name__)

OwnedPartitions = list[tuple[uuid.UUID, list[int]]]
# The topics (of those given) the member whose heartbeat resolves the group's regexes may DESCRIBE.
TopicFilter = Callable[[set[str]], set[str]]


class TopicsImage(Protocol):
    """The broker's view of topics the coordinator assigns from."""

    def topic(self, name: str) -> tuple[uuid.UUID, int] | None: ...

    def names(self) -> Iterable[str]: ...

    def name_of(self, topic_id: uuid.UUID) -> str | None: ...


class NoTopics:
    def topic(self, name: str) -> tuple[uuid.UUID, int] | None:
        return None

    def names(self) -> Iterable[str]:
        return ()

    def name_of(self, topic_id: uuid.UUID) -> str | None:
        return None


@dataclass(frozen=True, slots=True)
class ConsumerGroupHeartbeatResult:
    error_code: int
    error_message: str | None = None
    member_id: str | None = None
    member_epoch: int = 0
    heartbeat_interval_ms: int = 0
    assignment: Assignment | None = None


class ConsumerGroupRequests:
    """The KIP-848 half of `GroupCoordinator`; the coordinator provides the attributes below."""

    config: GroupCoordinatorConfig
    manager: GroupMetadataManager
    topics_image: TopicsImage

    # ---------------------------------------------------------------- ConsumerGroupHeartbeat
    async def consumer_group_heartbeat(
            self, group_id: str, member_id: str, member_epoch: int, *, instance_id: str | None = None,
            rack_id: str | None = None, rebalance_timeout_ms: int = -1,
            subscribed_topic_names: list[str] | None = None, subscribed_topic_regex: str | None = None,
            server_assignor: str | None = None, owned: OwnedPartitions | None = None, api_version: int = 1,
            client_id: str = "", client_host: str = "",
            describable: TopicFilter = set) -> ConsumerGroupHeartbeatResult:
        try:
            if self.manager.shutting_down:
                raise Refused(E.COORDINATOR_NOT_AVAILABLE)
            self._check_heartbeat(group_id, member_id, member_epoch, instance_id, rack_id, rebalance_timeout_ms,
                                  subscribed_topic_names, subscribed_topic_regex, server_assignor, owned,
                                  api_version)
            error = self.manager.partition_error(group_id)
            if error is not None:
                raise Refused(error)
            records: list[Record] = []
            if member_epoch in (LEAVE_GROUP_MEMBER_EPOCH, LEAVE_GROUP_STATIC_MEMBER_EPOCH):
                result = self._consumer_group_leave(group_id, member_id, member_epoch, instance_id, records)
            else:
                result = self._consumer_group_heartbeat(
                    group_id, member_id, member_epoch, instance_id, rack_id, rebalance_timeout_ms,
                    subscribed_topic_names, subscribed_topic_regex, server_assignor, owned, client_id, client_host,
                    describable, records)
        except Refused as refused:
            return ConsumerGroupHeartbeatResult(refused.code, refused.message)
        # The change is applied; the member hears of it once it is stored (Kafka answers after the write).
        error = await self.manager.append_group_records(self.manager.partition_for(group_id), records)
        return result if error == E.NONE else ConsumerGroupHeartbeatResult(error)

    def _check_heartbeat(self, group_id: str, member_id: str, member_epoch: int, instance_id: str | None,
                         rack_id: str | None, rebalance_timeout_ms: int, names: list[str] | None,
                         regex: str | None, server_assignor: str | None, owned: OwnedPartitions | None,
                         api_version: int) -> None:
        """Kafka's request checks: INVALID_REQUEST, then UNSUPPORTED_ASSIGNOR."""
        def invalid(message: str) -> Refused:
            return Refused(E.INVALID_REQUEST, message)
        if (api_version >= 1 or member_epoch > 0 or member_epoch == LEAVE_GROUP_MEMBER_EPOCH) and not member_id:
            raise invalid("MemberId can't be empty.")
        if not group_id:
            raise invalid("GroupId can't be empty.")
        if instance_id == "":
            raise invalid("InstanceId can't be empty.")
        if rack_id == "":
            raise invalid("RackId can't be empty.")
        if member_epoch == 0:
            if rebalance_timeout_ms == -1:
                raise invalid("RebalanceTimeoutMs must be provided in first request.")
            if owned is None or owned:
                raise invalid("TopicPartitions must be empty when (re-)joining.")
            if names is None and regex is None:
                raise invalid("Either SubscribedTopicNames or SubscribedTopicRegex must be non-null when "
                              "(re-)joining.")
        elif member_epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH:
            if instance_id is None:
                raise invalid("InstanceId can't be null.")
        elif member_epoch < LEAVE_GROUP_STATIC_MEMBER_EPOCH:
            raise invalid("MemberEpoch is invalid.")
        if server_assignor is not None and server_assignor not in self._assignors():
            raise Refused(E.UNSUPPORTED_ASSIGNOR, f"ServerAssignor {server_assignor} is not supported. "
                           f"Supported assignors: {', '.join(self._assignors())}.")

    def _assignors(self) -> list[str]:
        names = [assignor_name(a) for a in self.config.consumer_group_assignors]
        return [n for n in names if n is not None] or ["uniform"]

    def _consumer_group_heartbeat(self, group_id: str, member_id: str, member_epoch: int,
                                  instance_id: str | None, rack_id: str | None, rebalance_timeout_ms: int,
                                  names: list[str] | None, regex: str | None, server_assignor: str | None,
                                  owned: OwnedPartitions | None, client_id: str, client_host: str,
                                  describable: TopicFilter, records: list[Record]) -> ConsumerGroupHeartbeatResult:
        install, group = self._get_or_maybe_create(group_id, member_epoch == 0, records)
        if not member_id:
            # v0 lets the coordinator name a joining member (v1 members bring their own id): Kafka's Uuid string.
            member_id = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if len(group.members) >= self.config.consumer_group_max_size and member_id not in group.members:
            raise Refused(E.GROUP_MAX_SIZE_REACHED, "The consumer group has reached its maximum capacity of "
                           f"{self.config.consumer_group_max_size} members.")
        replaced: ConsumerGroupMember | None = None
        if instance_id is None:
            member = self._dynamic_member(group, member_id, member_epoch, owned)
        else:
            member, replaced = self._static_member(group, member_id, member_epoch, instance_id, owned)

        updated = replace(
            member,
            instance_id=instance_id if instance_id is not None else member.instance_id,
            rack_id=rack_id if rack_id is not None else member.rack_id,
            rebalance_timeout_ms=rebalance_timeout_ms if rebalance_timeout_ms != -1 else member.rebalance_timeout_ms,
            server_assignor=server_assignor if server_assignor is not None else member.server_assignor,
            subscribed_topic_names=tuple(names) if names is not None else member.subscribed_topic_names,
            subscribed_topic_regex=regex if regex is not None else member.subscribed_topic_regex,
            client_id=client_id, client_host=client_host)
        if updated.subscribed_topic_regex and updated.subscribed_topic_regex != member.subscribed_topic_regex:
            # Kafka compiles a regex when a member subscribes to it, before anything of the request is applied.
            error = regex_error(updated.subscribed_topic_regex)
            if error is not None:
                raise Refused(E.INVALID_REGULAR_EXPRESSION, f"SubscribedTopicRegex `{updated.subscribed_topic_regex}` "
                               f"is not a valid regular expression: {error}.")
        reconciled = self._update_member(group_id, install, group, member, updated, replaced, owned, records,
                                         describable)
        self._schedule_session_timeout(group, reconciled.member_id)

        full = member_epoch == 0 or (rebalance_timeout_ms != -1 and (names is not None or regex is not None)
                                     and owned is not None)
        assignment_changed = reconciled.assigned != member.assigned
        return ConsumerGroupHeartbeatResult(
            E.NONE, None, reconciled.member_id, reconciled.member_epoch,
            self.config.consumer_group_heartbeat_interval_ms,
            reconciled.assigned if full or assignment_changed else None)

    def _update_member(self, group_id: str, install: Callable[[], None] | None, group: ConsumerGroup,
                       member: ConsumerGroupMember, updated: ConsumerGroupMember,
                       replaced: ConsumerGroupMember | None, owned: OwnedPartitions | None,
                       records: list[Record], describable: TopicFilter | None = None) -> ConsumerGroupMember:
        """Kafka's three steps for a member's request (both protocols): store the updated member (a changed
        subscription, changed topics or a changed regex resolution bump the group epoch), recompute the target
        assignment when the group epoch is ahead of it, and reconcile the member towards its target. A heartbeat
        (`describable`: what its member may DESCRIBE) refreshes the group's regexes when due. Returns the
        reconciled member."""
        bump = (updated.subscribed_topic_names != member.subscribed_topic_names
                or updated.subscribed_topic_regex != member.subscribed_topic_regex)

        # The members as they will be, for the subscription metadata and the target assignment.
        members = dict(group.members)
        if replaced is not None:
            members.pop(replaced.member_id, None)
        members[updated.member_id] = updated
        resolved, resolved_against = self._resolved_regexes(group, members.values(), describable)
        if resolved != group.resolved_regexes:
            bump = True
        metadata = self._subscription_metadata(members.values(), resolved)
        if metadata != group.subscription_metadata:
            bump = True
        group_epoch = group.group_epoch + 1 if bump else group.group_epoch

        if group_epoch > group.assignment_epoch:
            target_all = self._compute_target(group, members, metadata, resolved, member, updated)
        else:
            target_all = None
        target_epoch = group_epoch if target_all is not None else group.assignment_epoch
        if target_all is not None:
            target = target_all.get(updated.member_id, {})
        else:
            # A static member's new incarnation inherits the target of the member it replaces.
            target = group.target_assignment.get(replaced.member_id if replaced is not None else updated.member_id, {})
        reconciled = reconcile(updated, target_epoch, target, group.partition_epoch, owned)

        # Apply: everything above could still refuse the request; from here on it is accepted. The records
        # follow Kafka's order: subscription, subscribed topics, group epoch, target assignment, current one.
        if install is not None:
            install()
        previous = group.members.get(updated.member_id)
        if replaced is not None:
            records.extend(member_tombstones(group_id, replaced.member_id))
            group.remove_member(replaced.member_id)
            group.cancel_timers(replaced.member_id)
            group.target_assignment[updated.member_id] = target
            records.append(target_member_record(group_id, updated.member_id, target))
        records.extend(subscription_changes(group_id, previous, updated))
        group.resolved_regexes = resolved
        if resolved_against is not None:
            group.regexes_resolved_against = resolved_against
        if metadata != group.subscription_metadata:
            records.append(partition_metadata_record(group_id, metadata))
        if bump or install is not None:
            group.group_epoch = group_epoch
            group.subscription_metadata = metadata
            records.append(group_epoch_record(group_id, group_epoch))
            log.info("consumer group %s: epoch %d", group_id, group_epoch)
        if target_all is not None:
            records.extend(target_records(group_id, group_epoch, group.target_assignment, target_all))
            group.target_assignment = dict(target_all)
            group.assignment_epoch = group_epoch
        records.extend(assignment_changes(group_id, previous, reconciled))
        group.update_member(reconciled)
        if reconciled != updated:
            if reconciled.state is MemberState.UNREVOKED_PARTITIONS:
                self._schedule_rebalance_timeout(group, reconciled)
            else:
                _cancel(group.rebalance_timers, reconciled.member_id)
        return reconciled

    def _get_or_maybe_create(self, group_id: str, create: bool,
                             records: list[Record]) -> tuple[Callable[[], None] | None, ConsumerGroup]:
        """(what installs the group in the cache once the request is accepted, or None; the consumer group)."""
        entry = self.manager.groups.get(group_id)
        if entry is not None and entry.consumer is not None and not entry.is_in(GroupState.DEAD):
            return None, entry.consumer
        if not create:
            raise Refused(E.GROUP_ID_NOT_FOUND, f"Consumer group {group_id} not found.")
        if entry is None or entry.is_in(GroupState.DEAD):
            new = GroupMetadata(group_id, self.manager.partition_for(group_id),
                                state_timestamp_ms=self.manager.clock_ms())
            new.consumer = ConsumerGroup(group_id)
            return lambda: self.manager.groups.__setitem__(group_id, new), new.consumer
        if entry.is_in(GroupState.EMPTY) and not entry.members:
            # An Empty classic group (offsets only, or all its members gone) becomes a consumer group; Kafka
            # converts it the same way, keeping its offsets. The cache entry stays.
            records.append((encode_group_metadata_key(GroupMetadataKey(group_id)), None))
            group = ConsumerGroup(group_id)

            def install() -> None:
                entry.consumer = group
                entry.protocol_type = entry.protocol_name = entry.leader_id = None
            return install, group
        if self._validate_online_upgrade(entry):  # type: ignore[attr-defined]
            try:
                return self._plan_upgrade(entry, records)  # type: ignore[attr-defined,no-any-return]
            except MigrationRefused:
                pass
        raise Refused(E.GROUP_ID_NOT_FOUND, f"Group {group_id} is not a consumer group.")

    @staticmethod
    def _check_epoch(member: ConsumerGroupMember, epoch: int, owned: OwnedPartitions | None) -> None:
        if epoch > member.member_epoch:
            raise Refused(E.FENCED_MEMBER_EPOCH, f"The consumer group member has a greater member epoch ({epoch}) "
                           f"than the one known by the group coordinator ({member.member_epoch}).")
        if epoch < member.member_epoch and (epoch != member.previous_member_epoch
                                            or not is_subset(owned, member.assigned)):
            raise Refused(E.FENCED_MEMBER_EPOCH, f"The consumer group member has a smaller member epoch ({epoch}) "
                           f"than the one known by the group coordinator ({member.member_epoch}).")

    def _dynamic_member(self, group: ConsumerGroup, member_id: str, epoch: int,
                        owned: OwnedPartitions | None) -> ConsumerGroupMember:
        member = group.members.get(member_id)
        if member is None:
            if epoch != 0:
                raise Refused(E.UNKNOWN_MEMBER_ID, f"Member {member_id} is not a member of group {group.group_id}.")
            log.info("consumer group %s: member %s joins", group.group_id, member_id)
            return ConsumerGroupMember(member_id)
        self._check_epoch(member, epoch, owned)
        return member

    def _static_member(self, group: ConsumerGroup, member_id: str, epoch: int, instance_id: str,
                       owned: OwnedPartitions | None) -> tuple[ConsumerGroupMember, ConsumerGroupMember | None]:
        """(the member, the previous member of the instance it replaces or None)."""
        existing = group.static_member(instance_id)
        if epoch == 0:
            if existing is None:
                return group.members.get(member_id) or ConsumerGroupMember(member_id), None
            if existing.member_id == member_id:
                self._check_epoch(existing, epoch, owned)
                return existing, None
            if existing.member_epoch != LEAVE_GROUP_STATIC_MEMBER_EPOCH:
                raise Refused(E.UNRELEASED_INSTANCE_ID, f"Static member {member_id} with instance id "
                               f"{instance_id} cannot join the group because the instance id is owned by "
                               f"{existing.member_id} member.")
            # The instance comes back under a new member id: it takes over the previous member's assignment.
            return replace(existing, member_id=member_id, member_epoch=0, previous_member_epoch=0), existing
        if existing is None:
            raise Refused(E.UNKNOWN_MEMBER_ID, f"Instance id {instance_id} is unknown.")
        if existing.member_id != member_id:
            raise Refused(E.FENCED_INSTANCE_ID, f"Static member {member_id} with instance id {instance_id} was "
                           f"fenced by member {existing.member_id}.")
        self._check_epoch(existing, epoch, owned)
        return existing, None

    def _resolved_regexes(self, group: ConsumerGroup, members: Iterable[ConsumerGroupMember],
                          describable: TopicFilter | None) -> tuple[dict[str, frozenset[str]], frozenset[str] | None]:
        """Kafka's regex refresh: (each regex the members subscribe to -> its topics, the topic names a refresh
        saw or None). A heartbeat refreshes every regex of the group at once when one is unresolved or topics
        came or went since the last refresh, keeping the topics its member may DESCRIBE (Kafka 4.0,
        KAFKA-18813); other paths (fencing, classic members) keep the last resolution."""
        patterns = {m.subscribed_topic_regex for m in members if m.subscribed_topic_regex}
        cached = {p: topics for p, topics in group.resolved_regexes.items() if p in patterns}
        if describable is None or not patterns:
            return cached, None
        names = frozenset(self.topics_image.names())
        if names == group.regexes_resolved_against and patterns <= cached.keys():
            return cached, None
        matched = resolve(patterns, names)
        allowed = frozenset(describable(set().union(*matched.values())))
        return {p: topics & allowed for p, topics in matched.items()}, names

    @staticmethod
    def _member_topics(member: ConsumerGroupMember, resolved: dict[str, frozenset[str]]) -> set[str]:
        names = set(member.subscribed_topic_names)
        if member.subscribed_topic_regex:
            names.update(resolved.get(member.subscribed_topic_regex, ()))
        return names

    def _subscription_metadata(self, members: Iterable[ConsumerGroupMember],
                               resolved: dict[str, frozenset[str]]) -> dict[str, tuple[uuid.UUID, int]]:
        subscribed: set[str] = set()
        for m in members:
            subscribed.update(self._member_topics(m, resolved))
        out = {}
        for name in sorted(subscribed):
            found = self.topics_image.topic(name)
            if found is not None and found[1] > 0:
                out[name] = found
        return out

    def _compute_target(self, group: ConsumerGroup, members: dict[str, ConsumerGroupMember],
                        metadata: dict[str, tuple[uuid.UUID, int]], resolved: dict[str, frozenset[str]],
                        old: ConsumerGroupMember, updated: ConsumerGroupMember) -> dict[str, Assignment]:
        counts = group.server_assignors.copy()
        if old.member_id in group.members and old.server_assignor:
            counts[old.server_assignor] -= 1
        if updated.server_assignor:
            counts[updated.server_assignor] += 1
        preferred = [(n, name) for name, n in counts.items() if n > 0]
        name = max(preferred)[1] if preferred else self._assignors()[0]
        specs = {mid: AssignmentMember(m.instance_id, frozenset(metadata[t][0] for t in self._member_topics(m, resolved)
                                                                 if t in metadata))
                 for mid, m in members.items()}
        topics = {tid: count for tid, count in metadata.values()}
        current = {mid: group.target_assignment.get(mid, {}) for mid in members}
        if updated.member_id not in group.target_assignment and old.member_id != updated.member_id:
            current[updated.member_id] = group.target_assignment.get(old.member_id, {})  # a static replacement
        target = ASSIGNORS[name](specs, topics, current)
        log.info("consumer group %s: target assignment with %s assignor for %d members", group.group_id, name,
                 len(members))
        return target

    # ---------------------------------------------------------------- leaving and fencing
    def _consumer_group_leave(self, group_id: str, member_id: str, member_epoch: int,
                              instance_id: str | None, records: list[Record]) -> ConsumerGroupHeartbeatResult:
        entry = self.manager.groups.get(group_id)
        group = entry.consumer if entry is not None and not entry.is_in(GroupState.DEAD) else None
        if group is None:
            raise Refused(E.GROUP_ID_NOT_FOUND, f"Consumer group {group_id} not found.")
        if instance_id is None:
            member = group.members.get(member_id)
            if member is None:
                raise Refused(E.UNKNOWN_MEMBER_ID, f"Member {member_id} is not a member of group {group_id}.")
        else:
            member = group.static_member(instance_id)
            if member is None:
                raise Refused(E.UNKNOWN_MEMBER_ID, f"Instance id {instance_id} is unknown.")
            if member.member_id != member_id:
                raise Refused(E.FENCED_INSTANCE_ID, f"Static member {member_id} with instance id {instance_id} "
                               f"was fenced by member {member.member_id}.")
            if member_epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH:
                # A static member leaving temporarily keeps its partitions (no one else gets them) until its
                # session times out or its instance rejoins.
                log.info("consumer group %s: static member %s leaves temporarily", group_id, member_id)
                leaving = replace(member, member_epoch=LEAVE_GROUP_STATIC_MEMBER_EPOCH, pending_revocation={})
                records.append(current_assignment_record(group_id, leaving))
                group.update_member(leaving)
                _cancel(group.rebalance_timers, member_id)
                return ConsumerGroupHeartbeatResult(E.NONE, None, member_id, LEAVE_GROUP_STATIC_MEMBER_EPOCH)
        log.info("consumer group %s: member %s leaves", group_id, member.member_id)
        records.extend(self._fence(group, member.member_id))
        return ConsumerGroupHeartbeatResult(E.NONE, None, member_id, member_epoch)

    def _fence(self, group: ConsumerGroup, member_id: str) -> list[Record]:
        """Remove a member; the group epoch moves so the others get its partitions, or the group becomes a
        classic group when only classic members stay (migration.py). Returns the records."""
        entry = self.manager.groups.get(group.group_id)
        if (entry is not None and entry.consumer is group
                and self._validate_online_downgrade(group, member_id)):  # type: ignore[attr-defined]
            return self._convert_to_classic_group(entry, group, member_id)  # type: ignore[attr-defined,no-any-return]
        records = member_tombstones(group.group_id, member_id)
        group.remove_member(member_id)
        group.cancel_timers(member_id)
        group.resolved_regexes = self._resolved_regexes(group, group.members.values(), None)[0]
        metadata = self._subscription_metadata(group.members.values(), group.resolved_regexes)
        if metadata != group.subscription_metadata:
            group.subscription_metadata = metadata
            records.append(partition_metadata_record(group.group_id, metadata))
        group.group_epoch += 1
        return [*records, group_epoch_record(group.group_id, group.group_epoch)]

    def _fence_if(self, group: ConsumerGroup, member_id: str, reason: str,
                  still: Callable[[ConsumerGroupMember], bool] = lambda m: True) -> None:
        entry = self.manager.groups.get(group.group_id)
        member = group.members.get(member_id)
        if entry is None or entry.consumer is not group or member is None or not still(member):
            return
        log.info("consumer group %s: member %s fenced: %s", group.group_id, member_id, reason)
        records = self._fence(group, member_id)
        self.manager.spawn(self.manager.append_group_records(entry.partition, records), "fence a member")

    def _schedule_session_timeout(self, group: ConsumerGroup, member_id: str, timeout_ms: int | None = None) -> None:
        """The member's session: `group.consumer.session.timeout.ms`, or a classic member's own timeout."""
        _cancel(group.session_timers, member_id)
        group.session_timers[member_id] = asyncio.get_running_loop().call_later(
            (timeout_ms if timeout_ms is not None else self.config.consumer_group_session_timeout_ms) / 1000,
            lambda: self._fence_if(group, member_id, "its session expired"))

    def _schedule_rebalance_timeout(self, group: ConsumerGroup, member: ConsumerGroupMember) -> None:
        _cancel(group.rebalance_timers, member.member_id)
        epoch = member.member_epoch
        group.rebalance_timers[member.member_id] = asyncio.get_running_loop().call_later(
            max(member.rebalance_timeout_ms, 0) / 1000,
            lambda: self._fence_if(group, member.member_id, f"it did not leave epoch {epoch} in time",
                                   lambda m: m.member_epoch == epoch))

    def on_consumer_group_loaded(self, group: ConsumerGroup) -> None:
        """A group loaded from `__consumer_offsets`: its members' sessions start now (Kafka), and those
        waiting to revoke get their rebalance timeout again. Its regexes count as resolved to the topics of its
        subscription they match (Kafka stores the resolution; we do not) until a heartbeat refreshes them."""
        patterns = {m.subscribed_topic_regex for m in group.members.values() if m.subscribed_topic_regex}
        group.resolved_regexes = resolve(patterns, group.subscription_metadata)
        group.regexes_resolved_against = None
        for member in group.members.values():
            self._schedule_session_timeout(group, member.member_id,
                                           member.classic.session_timeout_ms if member.classic is not None else None)
            if member.state is MemberState.UNREVOKED_PARTITIONS:
                self._schedule_rebalance_timeout(group, member)

    # ---------------------------------------------------------------- ConsumerGroupDescribe
    async def consumer_group_describe(self, group_ids: list[str]) -> list[tuple[str, int, ConsumerGroup | None]]:
        """Per group id: (id, error code, the group). INVALID_GROUP_ID for an empty id (Kafka), the
        coordinator's errors, GROUP_ID_NOT_FOUND for no group or a classic one."""
        out: list[tuple[str, int, ConsumerGroup | None]] = []
        for group_id in group_ids:
            if not group_id:
                out.append((group_id, E.INVALID_GROUP_ID, None))
                continue
            error = E.COORDINATOR_NOT_AVAILABLE if self.manager.shutting_down else self.manager.partition_error(
                group_id)
            if error is not None:
                out.append((group_id, error, None))
                continue
            entry = self.manager.groups.get(group_id)
            if entry is None or entry.consumer is None or entry.is_in(GroupState.DEAD):
                out.append((group_id, E.GROUP_ID_NOT_FOUND, None))
            else:
                out.append((group_id, E.NONE, entry.consumer))
        return out

    def consumer_group_assignor(self, group: ConsumerGroup) -> str:
        return group.preferred_server_assignor() or self._assignors()[0]


def _cancel(timers: dict[str, asyncio.TimerHandle], member_id: str) -> None:
    handle = timers.pop(member_id, None)
    if handle is not None:
        handle.cancel()

"""Classic and KIP-848 consumer groups side by side (Kafka 4.x's GroupMetadataManager migration paths):
online upgrade and downgrade of a group with members, and classic members inside a consumer group.

Contract:
- `MigrationRequests` is mixed into `GroupCoordinator` with `ConsumerGroupRequests`; it provides the config,
  `manager`, `rebalance` (the classic Rebalancer) and `topics_image`.
- `group.consumer.migration.policy` (disabled / upgrade / downgrade / bidirectional) decides the conversions:
  - Upgrade: a ConsumerGroupHeartbeat joining (epoch 0) a classic group with members converts it when the policy
    allows upgrades, its protocol type is "consumer" and it has at most `group.consumer.max.size` members;
    otherwise GROUP_ID_NOT_FOUND ("Group g is not a consumer group."), as is a malformed embedded subscription.
    Every classic member becomes a consumer-group member at epoch = the generation, Stable, its target and
    current assignment its last classic assignment (topics unknown to the broker dropped); waiting
    JoinGroup/SyncGroup calls answer REBALANCE_IN_PROGRESS. Records: the classic group's tombstone, then each
    member's subscription (with its ClassicMemberMetadata), the group epoch, the target assignment with its
    epoch, each member's current assignment (Kafka's order).
  - Downgrade: when a member using the consumer protocol leaves or is fenced and every remaining member uses
    the classic protocol, the policy allows downgrades and they are at most `group.max.size`, the group becomes
    a classic group: generation = the group epoch, protocol type "consumer", the protocol all members vote
    for, each member's assignment its target assignment in its subscription's version; then it rebalances.
    Records: the consumer group's tombstones, then the classic group's metadata record. A classic static member
    replacing (same instance id) the last member using the consumer protocol downgrades the group too, the
    joining member in it (Kafka 4.x).
- Classic members of a consumer group (Kafka's classicGroup*ToConsumerGroup): JoinGroup (GROUP_MAX_SIZE_REACHED,
  INCONSISTENT_GROUP_PROTOCOL when its protocol type is not "consumer" or no protocol is shared with the other
  classic members, MEMBER_ID_REQUIRED for a dynamic member's first v4+ join) updates the member from its
  embedded subscription and reconciles it like a heartbeat, with the owned partitions it reports; the answer
  (after the records are stored) carries its member epoch as the generation and no leader, so it syncs as a
  follower. SyncGroup answers its assigned partitions (REBALANCE_IN_PROGRESS while the group epoch is ahead
  and it is not revoking). Heartbeat answers REBALANCE_IN_PROGRESS while it is behind the group epoch, must
  revoke, or may collect released partitions: it then rejoins, revoking before it is assigned more (Kafka's
  reconciliation through rejoins). LeaveGroup removes it and bumps the group epoch. UNKNOWN_MEMBER_ID for a
  member not in the group or not using the classic protocol, FENCED_INSTANCE_ID, ILLEGAL_GENERATION when the
  generation is not its epoch, INCONSISTENT_GROUP_PROTOCOL for a SyncGroup naming another protocol.
  Timers: its own session timeout; the rebalance timeout to rejoin once told to, and to sync after joining.
- Gaps: a failed append leaves the in-memory conversion in place (Kafka reverts it).
"""

from __future__ import annotations

import asyncio
import base64
import logging
import uuid
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from broker.coordinator.group.config import GroupCoordinatorConfig
from broker.coordinator.group.consumer_group import (
    CONSUMER_GROUP_TYPE,
    ClassicMemberMetadata,
    ConsumerGroup,
    ConsumerGroupMember,
    MemberState,
)
from broker.coordinator.group.consumer_protocol import (
    decode_assignment,
    decode_subscription,
    encode_assignment,
    subscription_version,
)
from broker.coordinator.group.consumer_records import (
    Record,
    current_assignment_record,
    group_epoch_record,
    group_tombstones,
    member_metadata_record,
    target_epoch_record,
    target_member_record,
)
from broker.coordinator.group.errors import GroupErrorCode as E
from broker.coordinator.group.metadata import GroupMetadata, GroupState, MemberMetadata
from broker.coordinator.group.metadata_manager import GroupMetadataManager, group_metadata_record
from broker.coordinator.group.rebalance import Rebalancer
from broker.coordinator.group.results import (
    JoinGroupResult,
    LeaveGroupResult,
    LeaveMember,
    LeaveMemberResult,
    SyncGroupResult,
)
from broker.coordinator.group.schema import GroupMetadataKey, SchemaError, encode_group_metadata_key

if TYPE_CHECKING:
    from broker.coordinator.group.consumer_requests import TopicsImage

log = logging.getLogger(__name__)


class MigrationRefused(Exception):
    """A classic request to a consumer group (or a conversion) refused with this error code."""

    def __init__(self, code: int) -> None:
        super().__init__(code)
        self.code = code


class MigrationRequests:
    config: GroupCoordinatorConfig
    manager: GroupMetadataManager
    rebalance: Rebalancer
    topics_image: TopicsImage
    _fence: Callable[[ConsumerGroup, str], list[Record]]
    _update_member: Callable[..., ConsumerGroupMember]
    _schedule_session_timeout: Callable[..., None]

    # ---------------------------------------------------------------- policy
    def _upgrade_enabled(self) -> bool:
        return self.config.consumer_group_migration_policy in ("upgrade", "bidirectional")

    def _downgrade_enabled(self) -> bool:
        return self.config.consumer_group_migration_policy in ("downgrade", "bidirectional")

    # ---------------------------------------------------------------- upgrade
    def _validate_online_upgrade(self, entry: GroupMetadata) -> bool:
        reason = None
        if not self._upgrade_enabled():
            reason = "online upgrade is disabled"
        elif entry.protocol_type != CONSUMER_GROUP_TYPE:
            reason = "the group does not use the consumer embedded protocol"
        elif entry.size > self.config.consumer_group_max_size:
            reason = "its size exceeds the consumer group maximum size"
        if reason is not None:
            log.info("cannot upgrade classic group %s to a consumer group: %s", entry.group_id, reason)
        return reason is None

    def _consumer_group_from_classic(self, entry: GroupMetadata) -> ConsumerGroup:
        """The consumer group a classic group becomes (Kafka's ConsumerGroup.fromClassicGroup); the classic
        group is not changed. Raises SchemaError for a malformed embedded protocol."""
        epoch = entry.generation_id
        group = ConsumerGroup(entry.group_id, group_epoch=epoch, assignment_epoch=epoch)
        for m in entry.members.values():
            protocol = entry.protocol_name or (m.protocol_names() or [""])[0]
            subscription = decode_subscription(m.metadata_for(protocol))
            assigned: dict[uuid.UUID, frozenset[int]] = {}
            for topic, parts in decode_assignment(m.assignment):
                found = self.topics_image.topic(topic)
                if found is not None:
                    valid = frozenset(p for p in parts if 0 <= p < found[1])
                    if valid:
                        assigned[found[0]] = assigned.get(found[0], frozenset()) | valid
            member = ConsumerGroupMember(
                m.member_id, instance_id=m.group_instance_id, rack_id=subscription.rack_id, client_id=m.client_id,
                client_host=m.client_host, rebalance_timeout_ms=m.rebalance_timeout_ms,
                subscribed_topic_names=subscription.topics, member_epoch=epoch, previous_member_epoch=epoch,
                assigned=assigned, classic=ClassicMemberMetadata(m.session_timeout_ms, tuple(m.supported_protocols)))
            group.target_assignment[m.member_id] = assigned
            group.update_member(member)
        return group

    def _plan_upgrade(self, entry: GroupMetadata, records: list[Record]) -> tuple[Callable[[], None], ConsumerGroup]:
        """Kafka's convertToConsumerGroup: the records go to `records` now; the returned callable applies the
        conversion to the cache once the heartbeat that triggered it is accepted."""
        try:
            group = self._consumer_group_from_classic(entry)
        except (SchemaError, KeyError) as exc:
            log.warning("cannot upgrade classic group %s: malformed embedded consumer protocol: %s",
                        entry.group_id, exc)
            raise MigrationRefused(E.GROUP_ID_NOT_FOUND) from None
        group_id = entry.group_id
        records.append((encode_group_metadata_key(GroupMetadataKey(group_id)), None))
        records.extend(member_metadata_record(group_id, m) for m in group.members.values())
        records.append(group_epoch_record(group_id, group.group_epoch))
        records.extend(target_member_record(group_id, mid, group.target_assignment[mid]) for mid in group.members)
        records.append(target_epoch_record(group_id, group.group_epoch))
        records.extend(current_assignment_record(group_id, m) for m in group.members.values())

        def apply() -> None:
            log.info("classic group %s upgraded to a consumer group at epoch %d with %d members", group_id,
                     group.group_epoch, len(group.members))
            for m in entry.members.values():
                # A rebalance in progress ends: the members rejoin the consumer group.
                self.rebalance.complete_join(m, JoinGroupResult.failed(E.REBALANCE_IN_PROGRESS, m.member_id))
                self.rebalance.complete_sync(m, SyncGroupResult(E.REBALANCE_IN_PROGRESS))
            entry.cancel_timers()
            _clear_classic(entry, self.manager.clock_ms())
            entry.consumer = group
            for m in group.members.values():
                assert m.classic is not None
                self._schedule_session_timeout(group, m.member_id, m.classic.session_timeout_ms)
        return apply, group

    # ---------------------------------------------------------------- downgrade
    def _validate_online_downgrade(self, group: ConsumerGroup, member_id: str) -> bool:
        if not group.all_members_use_classic_protocol_except(member_id):
            return False
        reason = None
        if len(group.members) <= 1:
            return False  # the group becomes empty: nothing to downgrade
        if not self._downgrade_enabled():
            reason = "online downgrade is disabled"
        elif len(group.members) - 1 > self.config.group_max_size:
            reason = "its size is greater than the classic group maximum size"
        if reason is not None:
            log.info("cannot downgrade consumer group %s to a classic group: %s", group.group_id, reason)
        return reason is None

    def _convert_to_classic_group(self, entry: GroupMetadata, group: ConsumerGroup, leaving_id: str) -> list[Record]:
        """Kafka's convertToClassicGroup: the group without `leaving_id` becomes a classic group that rebalances.
        Returns the records (the consumer group's tombstones, then the classic group's record)."""
        staying = [m for mid, m in group.members.items() if mid != leaving_id]
        classic = [MemberMetadata(
            member_id=m.member_id, group_instance_id=m.instance_id, client_id=m.client_id, client_host=m.client_host,
            rebalance_timeout_ms=m.rebalance_timeout_ms, session_timeout_ms=m.classic.session_timeout_ms,  # type: ignore[union-attr]
            protocol_type=CONSUMER_GROUP_TYPE, supported_protocols=list(m.classic.supported_protocols))  # type: ignore[union-attr]
            for m in staying]
        records = group_tombstones(group)
        group.cancel_timers()
        entry.consumer = None
        _clear_classic(entry, self.manager.clock_ms())
        entry.generation_id = group.group_epoch
        entry.protocol_type = CONSUMER_GROUP_TYPE
        for member in classic:
            entry.add(member)
        entry.protocol_name = entry.select_protocol()
        entry.subscribed_topics = entry._compute_subscribed_topics()
        name_of = self.topics_image.name_of
        for member in classic:
            target = group.target_assignment.get(member.member_id, {})
            topics = [(name, parts) for tid, parts in target.items() if (name := name_of(tid)) is not None]
            version = subscription_version(member.metadata_for(entry.protocol_name))
            member.assignment = encode_assignment(topics, version)
        entry.state = GroupState.STABLE
        records.append(group_metadata_record(entry, {m.member_id: m.assignment for m in classic}))
        log.info("consumer group %s downgraded to a classic group at generation %d with %d members",
                 entry.group_id, entry.generation_id, len(classic))
        for member in classic:
            self.rebalance.schedule_heartbeat(entry, member)
        self.rebalance.prepare(entry, f"downgrade of group {entry.group_id} from consumer to classic")
        return records

    # ---------------------------------------------------------------- classic members of a consumer group
    def _classic_member(self, group: ConsumerGroup, member_id: str, instance_id: str | None) -> ConsumerGroupMember:
        """Kafka's validateConsumerGroupMember plus the classic-protocol check."""
        if instance_id is None:
            member = group.members.get(member_id)
        else:
            member = group.static_member(instance_id)
            if member is not None and member_id and member.member_id != member_id:
                raise MigrationRefused(E.FENCED_INSTANCE_ID)
        if member is None or member.classic is None:
            raise MigrationRefused(E.UNKNOWN_MEMBER_ID)
        return member

    async def _classic_join_to_consumer_group(
            self, entry: GroupMetadata, member_id: str, instance_id: str | None, client_id: str, client_host: str,
            rebalance_timeout_ms: int, session_timeout_ms: int, protocol_type: str,
            protocols: Sequence[tuple[str, bytes]], api_version: int) -> JoinGroupResult:
        group: ConsumerGroup = entry.consumer
        group_id = entry.group_id
        unknown = member_id == ""
        if unknown:
            member_id = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if member_id not in group.members and len(group.members) >= self.config.consumer_group_max_size:
            return JoinGroupResult.failed(E.GROUP_MAX_SIZE_REACHED, member_id)
        if not group.supports_classic_protocols(protocol_type, [name for name, _ in protocols]):
            return JoinGroupResult.failed(E.INCONSISTENT_GROUP_PROTOCOL, member_id)
        if unknown and instance_id is None and api_version >= 4:
            return JoinGroupResult.failed(E.MEMBER_ID_REQUIRED, member_id)
        try:
            subscription = decode_subscription(protocols[0][1])
        except SchemaError:
            return JoinGroupResult.failed(E.INCONSISTENT_GROUP_PROTOCOL, member_id)

        records: list[Record] = []
        replaced: ConsumerGroupMember | None = None
        if instance_id is None:
            member = group.members.get(member_id) or ConsumerGroupMember(member_id)
        elif unknown:
            existing = group.static_member(instance_id)
            if existing is None:
                member = ConsumerGroupMember(member_id)
            else:
                # The instance comes back under a new member id: it takes over the previous member's assignment.
                member = replace(existing, member_id=member_id, member_epoch=0, previous_member_epoch=0)
                replaced = existing
        else:
            try:
                member = self._classic_member(group, member_id, instance_id)
            except MigrationRefused as refused:
                return JoinGroupResult.failed(refused.code, member_id)
        updated = replace(
            member, instance_id=instance_id if instance_id is not None else member.instance_id,
            rack_id=subscription.rack_id if subscription.rack_id is not None else member.rack_id,
            rebalance_timeout_ms=rebalance_timeout_ms, server_assignor=None,
            subscribed_topic_names=subscription.topics, client_id=client_id, client_host=client_host,
            classic=ClassicMemberMetadata(session_timeout_ms, tuple((n, bytes(m)) for n, m in protocols)))
        owned = []
        for topic, parts in subscription.owned_partitions:
            found = self.topics_image.topic(topic)
            if found is not None:
                owned.append((found[0], list(parts)))
        reconciled = self._update_member(group_id, None, group, member, updated, replaced, owned, records)
        if (replaced is not None and replaced.classic is None and self._downgrade_enabled()
                and all(m.classic is not None for m in group.members.values())
                and len(group.members) <= self.config.group_max_size):
            # Kafka 4.x: the last member using the consumer protocol was a static member this classic member
            # replaces; the group goes back to the classic protocol, this member in it.
            records.extend(self._convert_to_classic_group(entry, group, ""))
            error = await self.manager.append_group_records(entry.partition, records)
            if error != E.NONE:
                return JoinGroupResult.failed(error, member_id)
            return JoinGroupResult(error_code=E.NONE, member_id=reconciled.member_id,
                                   generation_id=reconciled.member_epoch, protocol_type=CONSUMER_GROUP_TYPE,
                                   protocol_name=protocols[0][0], leader="", skip_assignment=False, members=[])
        # The session starts now, so a member whose join could not be stored still expires.
        self._schedule_session_timeout(group, reconciled.member_id, session_timeout_ms)
        error = await self.manager.append_group_records(entry.partition, records)
        if error != E.NONE:
            return JoinGroupResult.failed(error, member_id)
        if entry.consumer is group and group.members.get(reconciled.member_id) is not None:
            _cancel(group.join_timers, reconciled.member_id)
            self._schedule_session_timeout(group, reconciled.member_id, session_timeout_ms)
            self._schedule_classic_timer(group.sync_timers, group, reconciled.member_id, rebalance_timeout_ms,
                                         "it did not sync within the rebalance timeout")
        return JoinGroupResult(error_code=E.NONE, member_id=reconciled.member_id,
                               generation_id=reconciled.member_epoch, protocol_type=CONSUMER_GROUP_TYPE,
                               protocol_name=protocols[0][0], leader="", skip_assignment=False, members=[])

    def _classic_sync_to_consumer_group(self, group: ConsumerGroup, generation_id: int, member_id: str,
                                        instance_id: str | None, protocol_type: str | None,
                                        protocol_name: str | None) -> SyncGroupResult:
        try:
            member = self._classic_member(group, member_id, instance_id)
        except MigrationRefused as refused:
            return SyncGroupResult(refused.code)
        assert member.classic is not None
        if generation_id != member.member_epoch:
            return SyncGroupResult(E.ILLEGAL_GENERATION)
        chosen = member.classic.supported_protocols[0]
        if (protocol_type is not None and protocol_type != CONSUMER_GROUP_TYPE) or (
                protocol_name is not None and protocol_name != chosen[0]):
            return SyncGroupResult(E.INCONSISTENT_GROUP_PROTOCOL)
        if group.group_epoch > member.member_epoch and member.state is not MemberState.UNREVOKED_PARTITIONS:
            return SyncGroupResult(E.REBALANCE_IN_PROGRESS)
        _cancel(group.sync_timers, member.member_id)
        self._schedule_session_timeout(group, member.member_id, member.classic.session_timeout_ms)
        name_of = self.topics_image.name_of
        topics = [(name, parts) for tid, parts in member.assigned.items() if (name := name_of(tid)) is not None]
        return SyncGroupResult(E.NONE, CONSUMER_GROUP_TYPE, chosen[0],
                               encode_assignment(topics, subscription_version(chosen[1])))

    def _classic_heartbeat_to_consumer_group(self, group: ConsumerGroup, member_id: str, instance_id: str | None,
                                             generation_id: int) -> int:
        try:
            member = self._classic_member(group, member_id, instance_id)
        except MigrationRefused as refused:
            return refused.code
        assert member.classic is not None
        if generation_id != member.member_epoch:
            return E.ILLEGAL_GENERATION
        self._schedule_session_timeout(group, member.member_id, member.classic.session_timeout_ms)
        if (member.member_epoch < group.group_epoch or member.state is MemberState.UNREVOKED_PARTITIONS
                or (member.state is MemberState.UNRELEASED_PARTITIONS
                    and not group.waiting_on_unreleased_partition(member))):
            # The member must rejoin: to catch up with the group epoch, to revoke, or to collect partitions.
            if member.member_id not in group.join_timers:
                self._schedule_classic_timer(group.join_timers, group, member.member_id, member.rebalance_timeout_ms,
                                             "the classic member failed to join within the rebalance timeout")
            return E.REBALANCE_IN_PROGRESS
        return E.NONE

    async def _classic_leave_to_consumer_group(self, entry: GroupMetadata,
                                               members: Sequence[LeaveMember]) -> LeaveGroupResult:
        group: ConsumerGroup = entry.consumer
        records: list[Record] = []
        results = []
        for leaving in members:
            try:
                member = self._classic_member(group, leaving.member_id, leaving.group_instance_id)
            except MigrationRefused as refused:
                results.append(LeaveMemberResult(leaving.member_id, leaving.group_instance_id, refused.code))
                continue
            log.info("consumer group %s: classic member %s leaves", entry.group_id, member.member_id)
            records.extend(self._fence(group, member.member_id))
            results.append(LeaveMemberResult(member.member_id, leaving.group_instance_id, E.NONE))
        error = await self.manager.append_group_records(entry.partition, records)
        return LeaveGroupResult(error) if error != E.NONE else LeaveGroupResult(E.NONE, results)

    def _schedule_classic_timer(self, timers: dict[str, asyncio.TimerHandle], group: ConsumerGroup, member_id: str,
                                timeout_ms: int, reason: str) -> None:
        _cancel(timers, member_id)
        fence_if: Callable[[ConsumerGroup, str, str], None] = self._fence_if  # type: ignore[attr-defined]
        timers[member_id] = asyncio.get_running_loop().call_later(
            max(timeout_ms, 0) / 1000, lambda: (timers.pop(member_id, None), fence_if(group, member_id, reason)))


def _clear_classic(entry: GroupMetadata, now_ms: int) -> None:
    """Forget a cache entry's classic membership (its offsets stay): the entry changes protocol."""
    entry.members.clear()
    entry.static_members.clear()
    entry.pending_members.clear()
    entry.pending_sync_members.clear()
    entry.supported_protocols = Counter()
    entry.protocol_type = entry.protocol_name = entry.leader_id = None
    entry.subscribed_topics = None
    # Kafka replaces the group object; the entry is reused here so in-flight offset commits keep their group.
    entry.state = GroupState.EMPTY
    entry.state_timestamp_ms = now_ms


def _cancel(timers: dict[str, asyncio.TimerHandle], member_id: str) -> None:
    handle = timers.pop(member_id, None)
    if handle is not None:
        handle.cancel()

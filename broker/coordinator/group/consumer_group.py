"""The state of one KIP-848 consumer group (Kafka's modern ConsumerGroup / ConsumerGroupMember) and the
member reconciliation rules (Kafka's CurrentAssignmentBuilder).

Contract:
- Partitions are named by topic id: an `Assignment` maps topic id -> frozenset of partition indexes.
- `ConsumerGroupMember` is immutable; a change is a new member (`dataclasses.replace`) handed to
  `ConsumerGroup.update_member`, which keeps the group's indexes (static members, the epoch that owns each
  partition, the server assignors members prefer) consistent. `remove_member` drops a member and its
  target assignment.
- The group's state is derived, as Kafka's: Empty (no members), Assigning (group epoch ahead of the target
  assignment epoch), Reconciling (some member not yet at the target epoch in the STABLE member state),
  Stable otherwise.
- `reconcile(member, target_epoch, target, partition_epoch, owned)` moves a member towards the target
  assignment revoke-before-assign: partitions it must give up are pending revocation (member state
  UNREVOKED_PARTITIONS, epoch unchanged) until the member reports it no longer owns them; partitions still
  owned by another member at some epoch (`partition_epoch` != -1) are withheld (UNRELEASED_PARTITIONS)
  until released. `owned` None means the member did not report its partitions (it cannot be trusted to
  have revoked anything).
- `validate_offset_commit` / `validate_offset_fetch`: Kafka 3.9's member checks for offset requests,
  returning an error code or None (a classic member's stale epoch is ILLEGAL_GENERATION).
- A member with `classic` set speaks the classic protocol (JoinGroup/SyncGroup/Heartbeat); the group helpers
  for them (`supports_classic_protocols`, `all_members_use_classic_protocol_except`,
  `waiting_on_unreleased_partition`) are Kafka's, used by migration.py.
- Nothing here does I/O or keeps time; the coordinator (consumer_requests.py) owns timers.
"""

from __future__ import annotations

import asyncio
import uuid
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from enum import Enum

from broker.coordinator.group.errors import GroupErrorCode as E

Assignment = Mapping[uuid.UUID, frozenset[int]]
EMPTY_ASSIGNMENT: Assignment = {}
LEAVE_GROUP_MEMBER_EPOCH = -1
LEAVE_GROUP_STATIC_MEMBER_EPOCH = -2
CONSUMER_GROUP_TYPE = "consumer"


class MemberState(Enum):
    STABLE = "stable"
    UNREVOKED_PARTITIONS = "unrevoked_partitions"
    UNRELEASED_PARTITIONS = "unreleased_partitions"


class ConsumerGroupState(Enum):
    EMPTY = "Empty"
    ASSIGNING = "Assigning"
    RECONCILING = "Reconciling"
    STABLE = "Stable"
    DEAD = "Dead"


@dataclass(frozen=True, slots=True)
class ClassicMemberMetadata:
    """What a member speaking the classic protocol (JoinGroup/SyncGroup/Heartbeat) in a consumer group brings:
    its session timeout and its JoinGroup protocols (name, embedded consumer protocol subscription)."""
    session_timeout_ms: int
    supported_protocols: tuple[tuple[str, bytes], ...]

    def protocol_names(self) -> list[str]:
        return [name for name, _ in self.supported_protocols]


@dataclass(frozen=True, slots=True)
class ConsumerGroupMember:
    member_id: str
    instance_id: str | None = None
    rack_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    rebalance_timeout_ms: int = -1
    subscribed_topic_names: tuple[str, ...] = ()
    subscribed_topic_regex: str | None = None
    server_assignor: str | None = None
    member_epoch: int = 0
    previous_member_epoch: int = 0
    state: MemberState = MemberState.STABLE
    assigned: Assignment = field(default_factory=dict)
    pending_revocation: Assignment = field(default_factory=dict)
    # Set for a member using the classic protocol (Kafka's ClassicMemberMetadata); None for the consumer protocol.
    classic: ClassicMemberMetadata | None = None

    @property
    def uses_classic_protocol(self) -> bool:
        return self.classic is not None

    def is_reconciled_to(self, target_epoch: int) -> bool:
        return self.state is MemberState.STABLE and self.member_epoch == target_epoch

    def with_epoch(self, epoch: int, **changes: object) -> ConsumerGroupMember:
        """Kafka's updateMemberEpoch: the current epoch becomes the previous one."""
        return replace(self, member_epoch=epoch, previous_member_epoch=self.member_epoch, **changes)  # type: ignore[arg-type]


def _partitions(assignment: Assignment) -> Iterable[tuple[uuid.UUID, int]]:
    for topic_id, parts in assignment.items():
        for p in parts:
            yield topic_id, p


def is_subset(owned: list[tuple[uuid.UUID, list[int]]] | None, assignment: Assignment) -> bool:
    """Whether every partition the member reports owning is in `assignment` (None: not reported)."""
    if owned is None:
        return False
    return all(p in assignment.get(topic_id, ()) for topic_id, parts in owned for p in parts)


def _owns_any(owned: list[tuple[uuid.UUID, list[int]]] | None, assignment: Assignment) -> bool:
    if owned is None:
        return True  # unreported: assume it still holds them
    return any(p in assignment.get(topic_id, ()) for topic_id, parts in owned for p in parts)


def reconcile(member: ConsumerGroupMember, target_epoch: int, target: Assignment,
              partition_epoch: Callable[[uuid.UUID, int], int],
              owned: list[tuple[uuid.UUID, list[int]]] | None) -> ConsumerGroupMember:
    """The member's next state towards (`target_epoch`, `target`); the member itself when nothing changes."""
    if member.state is MemberState.STABLE:
        if member.member_epoch == target_epoch:
            return member
        return _next_assignment(member, member.member_epoch, target_epoch, target, partition_epoch, owned)
    if member.state is MemberState.UNREVOKED_PARTITIONS:
        if _owns_any(owned, member.pending_revocation):
            return member
        # Revocation acknowledged: the member moves to the next epoch.
        return _next_assignment(member, member.member_epoch + 1, target_epoch, target, partition_epoch, owned)
    return _next_assignment(member, member.member_epoch, target_epoch, target, partition_epoch, owned)


def _next_assignment(member: ConsumerGroupMember, member_epoch: int, target_epoch: int, target: Assignment,
                     partition_epoch: Callable[[uuid.UUID, int], int],
                     owned: list[tuple[uuid.UUID, list[int]]] | None) -> ConsumerGroupMember:
    unreleased = False
    assigned: dict[uuid.UUID, frozenset[int]] = {}
    revoking: dict[uuid.UUID, frozenset[int]] = {}
    to_assign: dict[uuid.UUID, frozenset[int]] = {}
    for topic_id in set(target) | set(member.assigned):
        wanted = target.get(topic_id, frozenset())
        current = member.assigned.get(topic_id, frozenset())
        kept = current & wanted
        gone = current - kept
        new = {p for p in wanted - kept if partition_epoch(topic_id, p) == -1}
        unreleased = unreleased or len(new) < len(wanted - kept)
        if kept:
            assigned[topic_id] = kept
        if gone:
            revoking[topic_id] = frozenset(gone)
        if new:
            to_assign[topic_id] = frozenset(new)
    if revoking and _owns_any(owned, revoking):
        # Revoke first: the member keeps its epoch until it confirms the revocation.
        return member.with_epoch(member_epoch, state=MemberState.UNREVOKED_PARTITIONS, assigned=assigned,
                                 pending_revocation=revoking)
    for topic_id, parts in to_assign.items():
        assigned[topic_id] = assigned.get(topic_id, frozenset()) | parts
    state = MemberState.UNRELEASED_PARTITIONS if unreleased else MemberState.STABLE
    return member.with_epoch(target_epoch, state=state, assigned=assigned, pending_revocation={})


@dataclass(eq=False)
class ConsumerGroup:
    group_id: str
    group_epoch: int = 0
    assignment_epoch: int = 0
    members: dict[str, ConsumerGroupMember] = field(default_factory=dict)
    static_members: dict[str, str] = field(default_factory=dict)  # instance id -> member id
    target_assignment: dict[str, Assignment] = field(default_factory=dict)
    # (topic id, partition) -> epoch of the member that holds it (assigned or pending revocation)
    partition_epochs: dict[tuple[uuid.UUID, int], int] = field(default_factory=dict)
    server_assignors: Counter[str] = field(default_factory=Counter)
    # topic name -> (topic id, partition count) of the topics members subscribe to, as last assigned
    subscription_metadata: dict[str, tuple[uuid.UUID, int]] = field(default_factory=dict)
    # Kafka's resolved regular expressions: each subscribed regex -> the topics it resolved to (those the member
    # whose heartbeat resolved it may DESCRIBE), and the topic names that resolution saw (None: refresh it).
    resolved_regexes: dict[str, frozenset[str]] = field(default_factory=dict)
    regexes_resolved_against: frozenset[str] | None = None
    session_timers: dict[str, asyncio.TimerHandle] = field(default_factory=dict)
    rebalance_timers: dict[str, asyncio.TimerHandle] = field(default_factory=dict)
    # Classic members: the time to rejoin once told to (JoinGroup) and to sync after joining (SyncGroup).
    join_timers: dict[str, asyncio.TimerHandle] = field(default_factory=dict)
    sync_timers: dict[str, asyncio.TimerHandle] = field(default_factory=dict)

    @property
    def state(self) -> ConsumerGroupState:
        if not self.members:
            return ConsumerGroupState.EMPTY
        if self.group_epoch > self.assignment_epoch:
            return ConsumerGroupState.ASSIGNING
        if any(not m.is_reconciled_to(self.assignment_epoch) for m in self.members.values()):
            return ConsumerGroupState.RECONCILING
        return ConsumerGroupState.STABLE

    def partition_epoch(self, topic_id: uuid.UUID, partition: int) -> int:
        return self.partition_epochs.get((topic_id, partition), -1)

    def static_member(self, instance_id: str | None) -> ConsumerGroupMember | None:
        member_id = self.static_members.get(instance_id) if instance_id is not None else None
        return self.members.get(member_id) if member_id is not None else None

    def update_member(self, member: ConsumerGroupMember) -> None:
        old = self.members.get(member.member_id)
        if old is not None:
            self._release(old)
            if old.server_assignor:
                self.server_assignors[old.server_assignor] -= 1
        self.members[member.member_id] = member
        if member.instance_id is not None:
            self.static_members[member.instance_id] = member.member_id
        if member.server_assignor:
            self.server_assignors[member.server_assignor] += 1
        for tp in _partitions(member.assigned):
            self.partition_epochs[tp] = member.member_epoch
        for tp in _partitions(member.pending_revocation):
            self.partition_epochs[tp] = member.member_epoch

    def remove_member(self, member_id: str) -> ConsumerGroupMember | None:
        old = self.members.pop(member_id, None)
        if old is None:
            return None
        self._release(old)
        if old.server_assignor:
            self.server_assignors[old.server_assignor] -= 1
        if old.instance_id is not None and self.static_members.get(old.instance_id) == member_id:
            del self.static_members[old.instance_id]
        self.target_assignment.pop(member_id, None)
        return old

    def _release(self, member: ConsumerGroupMember) -> None:
        for tp in (*_partitions(member.assigned), *_partitions(member.pending_revocation)):
            if self.partition_epochs.get(tp) == member.member_epoch:
                del self.partition_epochs[tp]

    # ---- members using the classic protocol (Kafka's ConsumerGroup migration helpers)
    def classic_members(self) -> list[ConsumerGroupMember]:
        return [m for m in self.members.values() if m.classic is not None]

    def supports_classic_protocols(self, protocol_type: str, protocols: Iterable[str]) -> bool:
        """A classic member may join with protocol type "consumer" and a protocol every classic member
        supports (any protocol when the group is empty or has no classic member)."""
        names = set(protocols)
        if protocol_type != CONSUMER_GROUP_TYPE or not names:
            return False
        classic = self.classic_members()
        return any(all(n in m.classic.protocol_names() for m in classic) for n in names)  # type: ignore[union-attr]

    def all_members_use_classic_protocol_except(self, member_id: str) -> bool:
        member = self.members.get(member_id)
        return (member is not None and member.classic is None
                and all(m.classic is not None for mid, m in self.members.items() if mid != member_id))

    def waiting_on_unreleased_partition(self, member: ConsumerGroupMember) -> bool:
        """Whether a member still waits for a partition of its target that another member holds."""
        if member.state is not MemberState.UNRELEASED_PARTITIONS:
            return False
        for topic_id, parts in self.target_assignment.get(member.member_id, {}).items():
            mine = member.assigned.get(topic_id, frozenset())
            if any(p not in mine and self.partition_epoch(topic_id, p) != -1 for p in parts):
                return True
        return False

    def preferred_server_assignor(self) -> str | None:
        """The server assignor most members ask for (Kafka: the most popular one), or None."""
        counts = [(n, name) for name, n in self.server_assignors.items() if n > 0]
        return max(counts)[1] if counts else None

    def subscribed_topic_names(self, topic_names: Iterable[str] = ()) -> set[str]:
        """Every topic some member subscribes to by name (regexes: `resolved_regexes`)."""
        names = set(topic_names)
        for m in self.members.values():
            names.update(m.subscribed_topic_names)
        return names

    def is_subscribed_to_topic(self, topic: str) -> bool:
        return topic in self.subscription_metadata

    # ---- offset requests (Kafka 3.9's ConsumerGroup.validateOffsetCommit / validateOffsetFetch)
    def validate_offset_commit(self, member_id: str, member_epoch: int, api_version: int,
                               is_transactional: bool) -> int | None:
        if member_epoch < 0 and not self.members:
            return None  # the admin client or a consumer without group management
        member = self.members.get(member_id)
        if member is None:
            return E.UNKNOWN_MEMBER_ID
        if not is_transactional and api_version < 9 and member.classic is None:
            return E.UNSUPPORTED_VERSION
        return self._stale_epoch(member) if member_epoch != member.member_epoch else None

    def validate_offset_fetch(self, member_id: str | None, member_epoch: int) -> int | None:
        if member_id is None and member_epoch < 0:
            return None
        member = self.members.get(member_id or "")
        if member is None:
            return E.UNKNOWN_MEMBER_ID
        return self._stale_epoch(member) if member_epoch != member.member_epoch else None

    @staticmethod
    def _stale_epoch(member: ConsumerGroupMember) -> int:
        # A classic member's epoch is its generation: Kafka answers it as the classic protocol would.
        return E.ILLEGAL_GENERATION if member.classic is not None else E.STALE_MEMBER_EPOCH

    def cancel_timers(self, member_id: str | None = None) -> None:
        for timers in (self.session_timers, self.rebalance_timers, self.join_timers, self.sync_timers):
            for mid in list(timers) if member_id is None else [member_id]:
                handle = timers.pop(mid, None)
                if handle is not None:
                    handle.cancel()

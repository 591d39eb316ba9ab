"""The state of one classic consumer group and its members (Kafka's GroupMetadata / MemberMetadata).

Contract:
- `GroupState` holds Kafka's five states and `VALID_PREVIOUS_STATES` the transitions table;
  `GroupMetadata.transition_to` refuses any other transition with `IllegalStateTransition`.
- `GroupMetadata` does the bookkeeping that does not need a clock: adding and removing members
  (static membership: group.instance.id -> member id, replacing a static member's id), pending members
  (KIP-394 MEMBER_ID_REQUIRED), the vote over supported protocols, leader choice, the next generation,
  the subscribed topics of a consumer group, committed offsets, and the summary DescribeGroups shows.
- Members that wait for a JoinGroup or SyncGroup answer hold an `asyncio.Future`; `complete_join`
  and `complete_sync` resolve it at most once. Timers (session, rebalance, sync) are handles stored
  here, scheduled by the coordinator; `cancel_timers` stops them all when the group dies or is unloaded.
- Nothing here does I/O; the asyncio loop that owns the coordinator owns these objects (no locks).
"""

from __future__ import annotations

import asyncio
import struct
from collections import Counter
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from storage.values import TopicPartition

CONSUMER_PROTOCOL_TYPE = "consumer"


class GroupState(Enum):
    EMPTY = "Empty"
    PREPARING_REBALANCE = "PreparingRebalance"
    COMPLETING_REBALANCE = "CompletingRebalance"
    STABLE = "Stable"
    DEAD = "Dead"


VALID_PREVIOUS_STATES: dict[GroupState, frozenset[GroupState]] = {
    GroupState.DEAD: frozenset(GroupState),
    GroupState.COMPLETING_REBALANCE: frozenset({GroupState.PREPARING_REBALANCE}),
    GroupState.STABLE: frozenset({GroupState.COMPLETING_REBALANCE}),
    GroupState.PREPARING_REBALANCE: frozenset(
        {GroupState.STABLE, GroupState.COMPLETING_REBALANCE, GroupState.EMPTY}),
    GroupState.EMPTY: frozenset({GroupState.PREPARING_REBALANCE}),
}


class IllegalStateTransition(RuntimeError):
    """A transition the state table forbids: a coordinator bug, never a client's fault."""


@dataclass(slots=True)
class OffsetAndMetadata:
    offset: int
    leader_epoch: int
    metadata: str
    commit_timestamp: int
    expire_timestamp: int = -1
    # Where the commit's batch starts in __consumer_offsets (-1: not appended yet). Kafka's
    # CommitRecordMetadataAndOffset: a transactional commit completed by a marker replaces the committed
    # offset only if its batch is newer than the one that wrote the current offset.
    record_offset: int = field(default=-1, compare=False)

    def older_than(self, other: OffsetAndMetadata) -> bool:
        return self.record_offset < other.record_offset


@dataclass(eq=False)
class MemberMetadata:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    protocol_type: str
    supported_protocols: list[tuple[str, bytes]]
    assignment: bytes = b""
    is_new: bool = False
    join_future: asyncio.Future[Any] | None = None
    sync_future: asyncio.Future[Any] | None = None
    heartbeat_timer: asyncio.TimerHandle | None = None

    @property
    def is_static(self) -> bool:
        return self.group_instance_id is not None

    @property
    def is_awaiting_join(self) -> bool:
        return self.join_future is not None and not self.join_future.done()

    @property
    def is_awaiting_sync(self) -> bool:
        return self.sync_future is not None and not self.sync_future.done()

    def protocol_names(self) -> list[str]:
        return [name for name, _ in self.supported_protocols]

    def metadata_for(self, protocol: str) -> bytes:
        for name, metadata in self.supported_protocols:
            if name == protocol:
                return metadata
        raise KeyError(f"member {self.member_id} does not support protocol {protocol}")

    def matches(self, protocols: list[tuple[str, bytes]]) -> bool:
        return list(protocols) == list(self.supported_protocols)

    def vote(self, candidates: set[str]) -> str:
        """The first protocol in this member's preference order that every member supports."""
        for name, _ in self.supported_protocols:
            if name in candidates:
                return name
        raise ValueError(f"member {self.member_id} supports none of {sorted(candidates)}")


@dataclass(eq=False)
class GroupMetadata:
    group_id: str
    partition: int
    state: GroupState = GroupState.EMPTY
    state_timestamp_ms: int = -1
    generation_id: int = 0
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader_id: str | None = None
    members: dict[str, MemberMetadata] = field(default_factory=dict)
    static_members: dict[str, str] = field(default_factory=dict)
    pending_members: set[str] = field(default_factory=set)
    pending_sync_members: set[str] = field(default_factory=set)
    supported_protocols: Counter[str] = field(default_factory=Counter)
    offsets: dict[TopicPartition, OffsetAndMetadata] = field(default_factory=dict)
    # Offset commits whose append is in flight (the latest staged per partition).
    pending_offset_commits: dict[TopicPartition, OffsetAndMetadata] = field(default_factory=dict)
    # Transactional offset commits waiting for their transaction's marker, per producer id (KIP-98).
    pending_txn_offsets: dict[int, dict[TopicPartition, OffsetAndMetadata]] = field(default_factory=dict)
    subscribed_topics: frozenset[str] | None = None
    new_member_added: bool = False
    join_timer: asyncio.TimerHandle | None = None
    initial_delay_active: bool = False
    sync_timer: asyncio.TimerHandle | None = None
    pending_member_timers: dict[str, asyncio.TimerHandle] = field(default_factory=dict)
    # A KIP-848 consumer group (consumer_group.ConsumerGroup) living on this entry: its committed offsets stay
    # here, its membership there; None for a classic group.
    consumer: Any = None

    # -- state ----------------------------------------------------------------------------------------
    def is_in(self, *states: GroupState) -> bool:
        return self.state in states

    def transition_to(self, state: GroupState, now_ms: int) -> None:
        if self.state not in VALID_PREVIOUS_STATES[state]:
            raise IllegalStateTransition(
                f"group {self.group_id}: {self.state.value} -> {state.value} is not a valid transition")
        self.state = state
        self.state_timestamp_ms = now_ms

    def cancel_timers(self) -> None:
        """Stop the group's join, sync and pending-member timers and every member's session timer."""
        for handle in (self.join_timer, self.sync_timer, *self.pending_member_timers.values()):
            if handle is not None:
                handle.cancel()
        self.join_timer = self.sync_timer = None
        self.initial_delay_active = False
        self.pending_member_timers.clear()
        for member in self.members.values():
            if member.heartbeat_timer is not None:
                member.heartbeat_timer.cancel()
                member.heartbeat_timer = None
        if self.consumer is not None:
            self.consumer.cancel_timers()

    @property
    def has_consumer_members(self) -> bool:
        """A KIP-848 consumer group with members lives on this (classically Empty) entry."""
        return self.consumer is not None and bool(self.consumer.members)

    def can_rebalance(self) -> bool:
        return self.state in VALID_PREVIOUS_STATES[GroupState.PREPARING_REBALANCE]

    # -- membership -----------------------------------------------------------------------------------
    def has(self, member_id: str) -> bool:
        return member_id in self.members

    def is_leader(self, member_id: str) -> bool:
        return self.leader_id == member_id

    @property
    def size(self) -> int:
        return len(self.members)

    def num_awaiting_join(self) -> int:
        return sum(1 for m in self.members.values() if m.is_awaiting_join)

    def has_all_members_joined(self) -> bool:
        return not self.pending_members and all(m.is_awaiting_join for m in self.members.values())

    def not_yet_rejoined(self) -> list[MemberMetadata]:
        return [m for m in self.members.values() if not m.is_awaiting_join]

    def add(self, member: MemberMetadata) -> None:
        if not self.members:
            self.protocol_type = member.protocol_type
        if self.leader_id is None:
            self.leader_id = member.member_id
        self.members[member.member_id] = member
        self.supported_protocols.update(member.protocol_names())
        if member.group_instance_id is not None:
            self.static_members[member.group_instance_id] = member.member_id
        self.pending_members.discard(member.member_id)

    def remove(self, member_id: str) -> MemberMetadata | None:
        member = self.members.pop(member_id, None)
        if member is not None:
            self.supported_protocols.subtract(member.protocol_names())
            self.supported_protocols += Counter()  # drop the names that reached zero
            if member.group_instance_id is not None:
                self.static_members.pop(member.group_instance_id, None)
        if self.is_leader(member_id):
            self.leader_id = next(iter(self.members), None)
        self.pending_members.discard(member_id)
        self.pending_sync_members.discard(member_id)
        return member

    def update_member(self, member: MemberMetadata, protocols: list[tuple[str, bytes]],
                      rebalance_timeout_ms: int, session_timeout_ms: int) -> None:
        self.supported_protocols.subtract(member.protocol_names())
        self.supported_protocols += Counter()
        member.supported_protocols = list(protocols)
        self.supported_protocols.update(member.protocol_names())
        member.rebalance_timeout_ms = rebalance_timeout_ms
        member.session_timeout_ms = session_timeout_ms

    def static_member_id(self, group_instance_id: str | None) -> str | None:
        if group_instance_id is None:
            return None
        return self.static_members.get(group_instance_id)

    def has_static_member(self, group_instance_id: str | None) -> bool:
        return group_instance_id is not None and group_instance_id in self.static_members

    def is_static_member_fenced(self, group_instance_id: str | None, member_id: str) -> bool:
        """A known group.instance.id presented with a member id that is not its current one."""
        current = self.static_member_id(group_instance_id)
        return current is not None and current != member_id

    def replace_static_member(self, group_instance_id: str, old_member_id: str,
                              new_member_id: str) -> MemberMetadata:
        """Give a static member a new member id; keeps its assignment. Returns the (renamed) member."""
        member = self.members.pop(old_member_id)
        member.member_id = new_member_id
        self.members[new_member_id] = member
        if self.is_leader(old_member_id):
            self.leader_id = new_member_id
        self.static_members[group_instance_id] = new_member_id
        if old_member_id in self.pending_sync_members:
            self.pending_sync_members.discard(old_member_id)
            self.pending_sync_members.add(new_member_id)
        return member

    def rebalance_timeout_ms(self) -> int:
        return max((m.rebalance_timeout_ms for m in self.members.values()), default=0)

    def maybe_elect_new_joined_leader(self) -> bool:
        """Keep a leader that rejoined, else pick any rejoined member; False when nobody rejoined."""
        if self.leader_id is None:
            return False
        leader = self.members.get(self.leader_id)
        if leader is not None and leader.is_awaiting_join:
            return True
        for member in self.members.values():
            if member.is_awaiting_join:
                self.leader_id = member.member_id
                return True
        return False

    # -- protocols ------------------------------------------------------------------------------------
    def supports_protocols(self, protocol_type: str, protocols: list[tuple[str, bytes]]) -> bool:
        if self.state is GroupState.EMPTY or not self.members:
            return bool(protocol_type) and bool(protocols)
        return protocol_type == self.protocol_type and any(
            self.supported_protocols[name] == len(self.members) for name, _ in protocols)

    def candidate_protocols(self) -> list[str]:
        """Protocols every member supports, in the first member's preference order."""
        n = len(self.members)
        first = next(iter(self.members.values()), None)
        if first is None:
            return []
        return [name for name in first.protocol_names() if self.supported_protocols[name] == n]

    def select_protocol(self) -> str:
        """Each member votes for its preferred candidate; most votes wins (ties: candidate order)."""
        candidates = self.candidate_protocols()
        if not candidates:
            raise ValueError(f"group {self.group_id}: no protocol supported by all members")
        votes = Counter(m.vote(set(candidates)) for m in self.members.values())
        return max(candidates, key=lambda name: (votes[name], -candidates.index(name)))

    def init_next_generation(self, now_ms: int) -> None:
        self.generation_id += 1
        if self.members:
            self.protocol_name = self.select_protocol()
            self.subscribed_topics = self._compute_subscribed_topics()
            self.transition_to(GroupState.COMPLETING_REBALANCE, now_ms)
        else:
            self.protocol_name = None
            self.subscribed_topics = None
            self.transition_to(GroupState.EMPTY, now_ms)

    def _compute_subscribed_topics(self) -> frozenset[str] | None:
        if self.protocol_type != CONSUMER_PROTOCOL_TYPE or self.protocol_name is None:
            return None
        topics: set[str] = set()
        for member in self.members.values():
            parsed = consumer_subscription_topics(member.metadata_for(self.protocol_name))
            if parsed is None:
                return None
            topics.update(parsed)
        return frozenset(topics)

    def is_subscribed_to_topic(self, topic: str) -> bool:
        # Unknown subscriptions (non-consumer protocol, unparsable metadata) count as subscribed,
        # so OffsetDelete never drops offsets a member may still use.
        return self.subscribed_topics is None or topic in self.subscribed_topics

    # -- views ----------------------------------------------------------------------------------------
    def current_member_metadata(self) -> list[tuple[str, str | None, bytes]]:
        """(member_id, group_instance_id, metadata of the chosen protocol) for the leader's JoinGroup."""
        protocol = self.protocol_name or ""
        return [(m.member_id, m.group_instance_id, m.metadata_for(protocol)) for m in self.members.values()]


    # -- transactional offset commits (Kafka's pendingTransactionalOffsetCommits) -------------------------
    def prepare_txn_offset_commit(self, producer_id: int, offsets: dict[TopicPartition, OffsetAndMetadata]) -> None:
        """Stage a producer's commits before their batch is appended (record_offset -1 until it is)."""
        self.pending_txn_offsets.setdefault(producer_id, {}).update(offsets)

    def on_txn_offset_commit_append(self, producer_id: int, tp: TopicPartition, appended: OffsetAndMetadata) -> None:
        """The staged commit's batch is in the log at `appended.record_offset` (unless a newer commit of the
        same producer replaced it meanwhile, or its partition moved away)."""
        pending = self.pending_txn_offsets.get(producer_id)
        if pending is not None and pending.get(tp) == appended:
            pending[tp] = appended

    def fail_pending_txn_offset_commit(self, producer_id: int, tp: TopicPartition) -> None:
        """The staged commit was not appended: forget it (the client retries)."""
        pending = self.pending_txn_offsets.get(producer_id)
        if pending is not None:
            pending.pop(tp, None)
            if not pending:
                del self.pending_txn_offsets[producer_id]

    def complete_pending_txn_offset_commit(self, producer_id: int, is_commit: bool) -> list[TopicPartition]:
        """The producer's transaction ended (its marker is in the log): a commit makes its offsets the
        committed ones unless a newer commit already is; an abort drops them. Returns what became visible.
        A commit whose batch never reached the log (record_offset -1) is skipped: the marker cannot cover it."""
        pending = self.pending_txn_offsets.pop(producer_id, None)
        if not is_commit or not pending:
            return []
        visible = []
        for tp, o in pending.items():
            if o.record_offset < 0:
                continue
            current = self.offsets.get(tp)
            if current is None or current.older_than(o):
                self.offsets[tp] = o
                visible.append(tp)
        return visible

    @property
    def has_offsets(self) -> bool:
        """Committed offsets or transactional ones pending (Kafka's hasOffsets: such a group is kept)."""
        return bool(self.offsets or self.pending_txn_offsets)

    def has_pending_offset_commits(self, tp: TopicPartition) -> bool:
        """A commit of `tp` being appended, or a transactional one waiting for its marker (KIP-447's unstable)."""
        return tp in self.pending_offset_commits or any(tp in p for p in self.pending_txn_offsets.values())

    def remove_pending_offsets(self, tps: list[TopicPartition]) -> None:
        """Offsets being deleted: their in-flight and transactional commits go too (Kafka's removeOffsets)."""
        for tp in tps:
            self.pending_offset_commits.pop(tp, None)
        for producer_id in list(self.pending_txn_offsets):
            pending = self.pending_txn_offsets[producer_id]
            for tp in tps:
                pending.pop(tp, None)
            if not pending:
                del self.pending_txn_offsets[producer_id]


def consumer_subscription_topics(metadata: bytes) -> list[str] | None:
    """Topics of a ConsumerProtocolSubscription (any version), or None when it does not parse."""
    try:
        pos = 2  # int16 version; every version starts with the topics array
        (count,) = struct.unpack_from(">i", metadata, pos)
        pos += 4
        if count < 0 or count > len(metadata):
            return None
        topics = []
        for _ in range(count):
            (n,) = struct.unpack_from(">h", metadata, pos)
            pos += 2
            if n < 0 or pos + n > len(metadata):
                return None
            topics.append(metadata[pos:pos + n].decode("utf-8"))
            pos += n
        return topics
    except (struct.error, UnicodeDecodeError):
        return None

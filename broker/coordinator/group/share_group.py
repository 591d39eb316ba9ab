"""Share groups (KIP-932) in the group coordinator: the group, its members and the simple assignor.

Contract:
- A `ShareGroup` holds Kafka's share-group state: the group epoch (bumped by every membership or subscription
  change), the target assignment and its epoch, and the members with their member epochs, subscriptions and
  assigned partitions (topic id -> partitions). Share groups need no revocation: partitions may be consumed by
  several members at once, so a member moves to the target assignment and its epoch in one step.
- `simple_assign` is Kafka's share-group SimpleAssignor rule set: for each topic, its subscribers share its
  partitions; with at least as many partitions as subscribers each partition goes to one member (spread
  round-robin), with more subscribers than partitions each member gets one partition and a partition is
  shared by several members. Members keep what they had when the counts allow (stickiness is by sorting the
  previous owners first).
- `ShareGroupConfig`: Kafka's group.share.* broker properties the coordinator and share-partition leaders use.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field

from broker.coordinator.group.share_state_metadata import StatePartitionMetadata

Assignment = dict[uuid.UUID, frozenset[int]]

LEAVE_GROUP_MEMBER_EPOCH = -1


@dataclass(frozen=True, slots=True)
class ShareGroupConfig:
    session_timeout_ms: int = 45000
    heartbeat_interval_ms: int = 5000
    max_size: int = 200
    record_lock_duration_ms: int = 30000
    delivery_count_limit: int = 5
    partition_max_record_locks: int = 2000


@dataclass(slots=True)
class ShareGroupMember:
    member_id: str
    member_epoch: int = 0
    previous_member_epoch: int = 0
    rack_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    subscribed_topic_names: tuple[str, ...] = ()
    assigned: Assignment = field(default_factory=dict)


@dataclass
class ShareGroup:
    group_id: str
    group_epoch: int = 0
    assignment_epoch: int = 0
    members: dict[str, ShareGroupMember] = field(default_factory=dict)
    subscription_metadata: dict[str, tuple[uuid.UUID, int]] = field(default_factory=dict)
    target_assignment: dict[str, Assignment] = field(default_factory=dict)
    session_timers: dict[str, asyncio.TimerHandle] = field(default_factory=dict)
    # Kafka 4.1's ShareGroupStatePartitionMetadata: the partitions with share-partition state.
    state_metadata: StatePartitionMetadata = field(default_factory=StatePartitionMetadata)

    @property
    def state(self) -> str:
        """Kafka's ShareGroupState names: Empty, Stable (a share group never rebalances), Dead."""
        return "Stable" if self.members else "Empty"

    def cancel_timer(self, member_id: str) -> None:
        handle = self.session_timers.pop(member_id, None)
        if handle is not None:
            handle.cancel()

    def cancel_timers(self) -> None:
        for member_id in list(self.session_timers):
            self.cancel_timer(member_id)


def simple_assign(members: Mapping[str, frozenset[uuid.UUID]], topics: Mapping[uuid.UUID, int | frozenset[int]],
                  current: Mapping[str, Assignment]) -> dict[str, Assignment]:
    """member id -> its target assignment. `members`: member id -> subscribed topic ids; `topics`: topic id
    -> partition count, or the set of its assignable partitions (Kafka 4.1: those with initialized share-group
    state); `current`: the previous target assignment (for stickiness)."""
    out: dict[str, dict[uuid.UUID, set[int]]] = {m: {} for m in members}
    for tid in sorted(topics, key=str):
        spec = topics[tid]
        partitions = list(range(spec)) if isinstance(spec, int) else sorted(spec)
        subscribers = sorted(m for m, subscribed in members.items() if tid in subscribed)
        if not subscribers or not partitions:
            continue
        if len(partitions) >= len(subscribers):
            _spread_partitions(tid, partitions, subscribers, current, out)
        else:
            _share_partitions(tid, partitions, subscribers, current, out)
    return {m: {tid: frozenset(ps) for tid, ps in topics_.items()} for m, topics_ in out.items()}


def _spread_partitions(tid: uuid.UUID, partitions: list[int], subscribers: list[str],
                       current: Mapping[str, Assignment], out: dict[str, dict[uuid.UUID, set[int]]]) -> None:
    """Each partition to one member; each member gets floor or ceil of partitions/members, keeping its own."""
    quota, extra = divmod(len(partitions), len(subscribers))
    limits = {m: quota + (1 if i < extra else 0) for i, m in enumerate(subscribers)}
    unassigned = set(partitions)
    for m in subscribers:
        kept = sorted(p for p in current.get(m, {}).get(tid, ()) if p in unassigned)[:limits[m]]
        if kept:
            out[m].setdefault(tid, set()).update(kept)
            unassigned.difference_update(kept)
    remaining = sorted(unassigned)
    for m in subscribers:
        have = out[m].get(tid, set())
        while len(have) < limits[m] and remaining:
            have.add(remaining.pop(0))
        if have:
            out[m][tid] = have


def _share_partitions(tid: uuid.UUID, partitions: list[int], subscribers: list[str],
                      current: Mapping[str, Assignment], out: dict[str, dict[uuid.UUID, set[int]]]) -> None:
    """More members than partitions: one partition per member, each partition shared by floor or ceil of
    members/partitions members; a member keeps its previous partition while that partition has room."""
    quota, extra = divmod(len(subscribers), len(partitions))
    room = {p: quota + (1 if i < extra else 0) for i, p in enumerate(partitions)}
    pending = []
    for m in subscribers:
        previous = sorted(current.get(m, {}).get(tid, ()))
        chosen = next((p for p in previous if room.get(p, 0) > 0), None)
        if chosen is None:
            pending.append(m)
            continue
        room[chosen] -= 1
        out[m][tid] = {chosen}
    for m in pending:
        p = max(room, key=lambda q: (room[q], -q))
        room[p] -= 1
        out[m][tid] = {p}


def share_group_config(cfg: Mapping[str, object]) -> ShareGroupConfig:
    """The share-group settings from the broker's properties (Kafka's group.share.* names)."""
    def get(key: str, default: int) -> int:
        try:
            return int(cfg[key])  # type: ignore[call-overload]
        except KeyError:
            return default
    return ShareGroupConfig(
        session_timeout_ms=get("group.share.session.timeout.ms", 45000),
        heartbeat_interval_ms=get("group.share.heartbeat.interval.ms", 5000),
        max_size=get("group.share.max.size", 200),
        record_lock_duration_ms=get("group.share.record.lock.duration.ms", 30000),
        delivery_count_limit=get("group.share.delivery.count.limit", 5),
        partition_max_record_locks=get("group.share.partition.max.record.locks", 2000))

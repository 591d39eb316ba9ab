"""The server-side partition assignors of KIP-848 consumer groups: `uniform` (Kafka's default) and `range`.

Contract: an assignor is `assign(members, topics, current) -> {member id: Assignment}` where
- `members` maps member id -> `AssignmentMember` (its instance id and the topic ids it subscribes to, only
  topics that exist),
- `topics` maps topic id -> partition count,
- `current` is the group's present target assignment (member id -> Assignment), for stickiness.
Every member gets an entry (possibly empty); every partition of a subscribed topic goes to exactly one member
subscribed to it. `ASSIGNORS` maps Kafka's names to them; `assignor_name` reads Kafka's class names too
(`group.consumer.assignors` lists class names in Kafka 3.x and short names in 4.x).

- `uniform`: balanced and sticky. With every member subscribed to the same topics (Kafka's homogeneous
  case) each member gets floor(P/M) or one more partitions and keeps as many of its current partitions as
  that allows; otherwise each partition goes to the least loaded subscribed member, its current owner
  first when that keeps the balance.
- `range`: Kafka's: per topic, members sorted (static members by instance id first, then by member id)
  take contiguous ranges, the first P % M members one partition more.
"""

from __future__ import annotations

import itertools
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from broker.coordinator.group.consumer_group import Assignment


@dataclass(frozen=True, slots=True)
class AssignmentMember:
    instance_id: str | None
    topics: frozenset[uuid.UUID]


Assignor = Callable[[Mapping[str, AssignmentMember], Mapping[uuid.UUID, int], Mapping[str, Assignment]],
                    dict[str, Assignment]]


def _freeze(raw: dict[str, dict[uuid.UUID, set[int]]]) -> dict[str, Assignment]:
    return {m: {t: frozenset(ps) for t, ps in a.items() if ps} for m, a in raw.items()}


def _sorted_members(members: Mapping[str, AssignmentMember]) -> list[str]:
    def key(member_id: str) -> tuple[int, str]:
        instance = members[member_id].instance_id
        return (0, instance) if instance is not None else (1, member_id)
    return sorted(members, key=key)


def range_assign(members: Mapping[str, AssignmentMember], topics: Mapping[uuid.UUID, int],
                 current: Mapping[str, Assignment]) -> dict[str, Assignment]:
    out: dict[str, dict[uuid.UUID, set[int]]] = {m: {} for m in members}
    order = _sorted_members(members)
    for topic_id, count in topics.items():
        subscribed = [m for m in order if topic_id in members[m].topics]
        if not subscribed:
            continue
        quota, extra = divmod(count, len(subscribed))
        start = 0
        for i, m in enumerate(subscribed):
            n = quota + (1 if i < extra else 0)
            if n:
                out[m][topic_id] = set(range(start, start + n))
            start += n
    return _freeze(out)


def uniform_assign(members: Mapping[str, AssignmentMember], topics: Mapping[uuid.UUID, int],
                   current: Mapping[str, Assignment]) -> dict[str, Assignment]:
    if not members:
        return {}
    subscriptions = {m.topics for m in members.values()}
    if len(subscriptions) == 1:
        return _uniform_homogeneous(members, topics, current)
    return _uniform_heterogeneous(members, topics, current)


def _uniform_homogeneous(members: Mapping[str, AssignmentMember], topics: Mapping[uuid.UUID, int],
                         current: Mapping[str, Assignment]) -> dict[str, Assignment]:
    subscribed = next(iter(members.values())).topics
    partitions = [(t, p) for t in sorted(subscribed) if t in topics for p in range(topics[t])]
    order = sorted(members)
    quota, extra = divmod(len(partitions), len(order))
    valid = set(partitions)
    # Members keep their current partitions up to their quota; those with the most current partitions are
    # the ones allowed the extra partition, so as little as possible moves.
    kept: dict[str, list[tuple[uuid.UUID, int]]] = {}
    for m in order:
        kept[m] = sorted((t, p) for t, ps in current.get(m, {}).items() for p in ps if (t, p) in valid)
    by_size = sorted(order, key=lambda m: (-len(kept[m]), m))
    quotas = {m: quota + (1 if i < extra else 0) for i, m in enumerate(by_size)}
    taken: set[tuple[uuid.UUID, int]] = set()
    out: dict[str, list[tuple[uuid.UUID, int]]] = {}
    for m in order:
        mine = [tp for tp in kept[m] if tp not in taken][:quotas[m]]
        taken.update(mine)
        out[m] = mine
    free = iter([tp for tp in partitions if tp not in taken])
    for m in order:
        out[m].extend(itertools.islice(free, quotas[m] - len(out[m])))
    return _to_assignment(out)


def _uniform_heterogeneous(members: Mapping[str, AssignmentMember], topics: Mapping[uuid.UUID, int],
                           current: Mapping[str, Assignment]) -> dict[str, Assignment]:
    owner = {(t, p): m for m, a in current.items() if m in members for t, ps in a.items() for p in ps}
    out: dict[str, list[tuple[uuid.UUID, int]]] = {m: [] for m in members}
    # Topics with the fewest subscribers first: their partitions have the fewest places to go.
    order = sorted(topics, key=lambda t: (sum(t in m.topics for m in members.values()), str(t)))
    for topic_id in order:
        subscribed = sorted(m for m, spec in members.items() if topic_id in spec.topics)
        if not subscribed:
            continue
        for p in range(topics[topic_id]):
            least = min(len(out[m]) for m in subscribed)
            previous = owner.get((topic_id, p))
            if previous in subscribed and len(out[previous]) <= least:
                chosen = previous
            else:
                chosen = min(subscribed, key=lambda m: (len(out[m]), m))
            out[chosen].append((topic_id, p))
    return _to_assignment(out)


def _to_assignment(out: dict[str, list[tuple[uuid.UUID, int]]]) -> dict[str, Assignment]:
    raw: dict[str, dict[uuid.UUID, set[int]]] = {m: {} for m in out}
    for m, tps in out.items():
        for t, p in tps:
            raw[m].setdefault(t, set()).add(p)
    return _freeze(raw)


ASSIGNORS: dict[str, Assignor] = {"uniform": uniform_assign, "range": range_assign}
_CLASS_NAMES = {"org.apache.kafka.coordinator.group.assignor.UniformAssignor": "uniform",
                "org.apache.kafka.coordinator.group.assignor.RangeAssignor": "range"}


def assignor_name(configured: str) -> str | None:
    """Kafka's short name of a `group.consumer.assignors` entry (class or short name), None if unknown."""
    name = _CLASS_NAMES.get(configured.strip(), configured.strip())
    return name if name in ASSIGNORS else None

"""Which replica a consumer should fetch from (KIP-392), as Kafka's `replica.selector.class`.

Contract: `replica_selector(class_name)` returns the selector Kafka's class name stands for, or None when the
setting is empty (consumers always fetch from the leader); an unknown class is a configuration error, as a
missing class is for Kafka. `RackAwareReplicaSelector` (Kafka's `org.apache.kafka.common.replica.
RackAwareReplicaSelector`): with no client rack, the leader; else among the candidates (the leader and the
in-sync followers that hold the fetch offset) those in the client's rack: the leader if it is one of them,
else the most caught-up of them (highest log end offset, then the shortest time since it last caught up);
the leader when none is in that rack. `LeaderSelector` always answers the leader.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True)
class ReplicaView:
    broker_id: int
    rack: str | None
    log_end_offset: int
    time_since_last_caught_up_ms: int


class ReplicaSelector(Protocol):
    def select(self, client_rack: str, leader: ReplicaView, candidates: Sequence[ReplicaView]) -> ReplicaView: ...


class LeaderSelector:
    def select(self, client_rack: str, leader: ReplicaView, candidates: Sequence[ReplicaView]) -> ReplicaView:
        return leader


class RackAwareReplicaSelector:
    def select(self, client_rack: str, leader: ReplicaView, candidates: Sequence[ReplicaView]) -> ReplicaView:
        if not client_rack:
            return leader
        same_rack = [r for r in candidates if r.rack == client_rack]
        if not same_rack or leader in same_rack:
            return leader
        return max(same_rack, key=lambda r: (r.log_end_offset, -r.time_since_last_caught_up_ms))


SELECTORS: dict[str, type] = {
    "org.apache.kafka.common.replica.RackAwareReplicaSelector": RackAwareReplicaSelector,
    "org.apache.kafka.common.replica.LeaderSelector": LeaderSelector,
}


def replica_selector(class_name: str | None) -> ReplicaSelector | None:
    if not class_name:
        return None
    cls = SELECTORS.get(class_name)
    if cls is None:
        raise ValueError(f"replica.selector.class {class_name}: class not found (known: {', '.join(SELECTORS)})")
    selector: ReplicaSelector = cls()
    return selector

"""What the active controller knows about the cluster (Kafka's ControllerContext).

Contract: plain state, owned by the controller's event queue (every change happens in a controller event, so
nothing is locked), refreshed from the metadata store on election and kept current by the controller's own
writes and the store's watches:
- `epoch`: the controller epoch this controller won; stamped on every partition state it writes and every
  request it sends.
- `live_brokers`: registered brokers and their endpoints; `broker_epochs` their broker epochs (KIP-380: the
  czxid of the registration znode; a changed one means the broker restarted between two watch events; every
  control request to a broker carries its epoch, and requests from brokers are checked against it);
  `shutting_down`: brokers in a controlled shutdown, which may not lead.
- `topics`: assignments (with a reassignment's adding/removing replicas) and topic ids; `states` and
  `versions`: each partition's LeaderAndIsr and its state znode version (the partition epoch, which every
  conditional write names); `reassigning`: partitions being reassigned and their target replicas (TRS).
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, field

from broker.metadata import LeaderAndIsr, TopicInfo
from broker.metadata.metadata_cache import BrokerEndpoint
from storage import TopicPartition


@dataclass
class ControllerContext:
    epoch: int = 0
    live_brokers: dict[int, BrokerEndpoint] = field(default_factory=dict)
    broker_epochs: dict[int, int] = field(default_factory=dict)
    shutting_down: set[int] = field(default_factory=set)
    topics: dict[str, TopicInfo] = field(default_factory=dict)
    states: dict[TopicPartition, LeaderAndIsr] = field(default_factory=dict)
    versions: dict[TopicPartition, int] = field(default_factory=dict)
    reassigning: dict[TopicPartition, tuple[int, ...]] = field(default_factory=dict)

    def replicas(self, tp: TopicPartition) -> tuple[int, ...]:
        """The partition's assigned replicas in assignment order (empty for an unknown partition)."""
        info = self.topics.get(tp.topic)
        return tuple(info.assignment.get(tp.partition, ())) if info is not None else ()

    def live_broker_ids(self, exclude: Collection[int] = ()) -> set[int]:
        """Brokers that may lead: live, not shutting down, not in `exclude`."""
        return set(self.live_brokers) - self.shutting_down - set(exclude)

    def is_broker_epoch_stale(self, broker_id: int, broker_epoch: int) -> bool:
        """A request from a broker carrying an older epoch than its current registration (-1: a sender that
        predates KIP-380, accepted as Kafka does)."""
        return broker_epoch != -1 and broker_epoch < self.broker_epochs.get(broker_id, -1)

    def partitions_of(self, topic: str) -> list[TopicPartition]:
        return [tp for tp in self.states if tp.topic == topic]

"""The broker's view of the cluster: live brokers, topics, partition leaders, ISR (Kafka's MetadataCache).

Filled by UpdateMetadata from the controller (or directly by the local controller in the embedded
default) and read by Metadata, FindCoordinator, DescribeCluster and the produce/fetch error hints.
Holds no I/O; values are replaced wholesale per partition so readers never see half an update.

What a client is told is Kafka's snapshot: the controller, the live brokers and the partition states from
the controller's UpdateMetadata. Until the first one is applied (it records its controller epoch) no broker
is listed, as Kafka lists none: a client that bootstraps at a broker that has just joined retries rather
than take a view with only that broker in it, and later send to a controller or leader it cannot reach.
And a response never names a broker it does not list: `live_leader` is a partition's leader only while
that broker is listed, `listed_controller_id` the controller only while it is listed (the controller id
is also learned from the ZooKeeper watch, which runs ahead of UpdateMetadata).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass, field, replace

INTERNAL_TOPICS = frozenset({"__consumer_offsets", "__transaction_state", "__share_group_state"})


# Kafka's SecurityProtocol ids, as UpdateMetadata carries them.
SECURITY_PROTOCOL_IDS = {"PLAINTEXT": 0, "SSL": 1, "SASL_PLAINTEXT": 2, "SASL_SSL": 3}


@dataclass(frozen=True)
class ListenerEndpoint:
    listener: str
    host: str
    port: int
    security_protocol: str


@dataclass(frozen=True)
class BrokerEndpoint:
    """A live broker. `host`/`port` are its inter-broker listener's (what other brokers connect to);
    `listeners` all its advertised endpoints (empty: only host/port are known, whatever the listener)."""

    broker_id: int
    host: str
    port: int
    rack: str | None = None
    listeners: tuple[ListenerEndpoint, ...] = ()

    def on_listener(self, listener: str | None) -> BrokerEndpoint | None:
        """This broker as a client that came in on `listener` must see it (Kafka's getAliveBrokerNode(listener
        name)): that listener's host and port, or None when the broker has no such listener."""
        if listener is None or not self.listeners:
            return self
        for ep in self.listeners:
            if ep.listener == listener:
                return self if (ep.host, ep.port) == (self.host, self.port) else replace(self, host=ep.host,
                                                                                          port=ep.port)
        return None


@dataclass(frozen=True)
class PartitionMetadata:
    partition: int
    leader: int
    leader_epoch: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    offline_replicas: tuple[int, ...] = ()
    partition_epoch: int = 0  # the state znode version (UpdateMetadata's ZkVersion)
    # KIP-966 (KRaft): eligible leader replicas and the last known ELR; empty in ZooKeeper mode
    eligible_leader_replicas: tuple[int, ...] = ()
    last_known_elr: tuple[int, ...] = ()


@dataclass
class TopicMetadata:
    name: str
    topic_id: uuid.UUID
    partitions: dict[int, PartitionMetadata] = field(default_factory=dict)

    @property
    def is_internal(self) -> bool:
        return self.name in INTERNAL_TOPICS


class MetadataCache:
    def __init__(self, broker_id: int, cluster_id: str) -> None:
        self.broker_id = broker_id
        self.cluster_id = cluster_id
        self.controller_id = -1
        self.controller_epoch = -1
        self.brokers: dict[int, BrokerEndpoint] = {}
        self.topics: dict[str, TopicMetadata] = {}
        self.topic_names: dict[uuid.UUID, str] = {}
        # Told the id of each topic removed (deleted), on the broker's loop: the share coordinator forgets the
        # state of its share partitions.
        self.on_topic_removed: list[Callable[[uuid.UUID], None]] = []

    def set_brokers(self, brokers: list[BrokerEndpoint]) -> None:
        self.brokers = {b.broker_id: b for b in brokers}

    def update_partition(self, topic: str, topic_id: uuid.UUID, pm: PartitionMetadata) -> None:
        tm = self.topics.get(topic)
        if tm is None or tm.topic_id != topic_id:
            if tm is not None:
                self.topic_names.pop(tm.topic_id, None)
            tm = TopicMetadata(topic, topic_id)
            self.topics[topic] = tm
            self.topic_names[topic_id] = topic
        tm.partitions[pm.partition] = pm

    def remove_topic(self, topic: str) -> None:
        tm = self.topics.pop(topic, None)
        if tm is not None:
            self.topic_names.pop(tm.topic_id, None)
            for listener in self.on_topic_removed:
                listener(tm.topic_id)

    def topic_id(self, topic: str) -> uuid.UUID | None:
        tm = self.topics.get(topic)
        return tm.topic_id if tm else None

    def topic_name(self, topic_id: uuid.UUID) -> str | None:
        return self.topic_names.get(topic_id)

    def partition(self, topic: str, partition: int) -> PartitionMetadata | None:
        tm = self.topics.get(topic)
        return tm.partitions.get(partition) if tm else None

    def alive_broker(self, broker_id: int) -> BrokerEndpoint | None:
        return self.brokers.get(broker_id)

    def listed_brokers(self, listener: str | None = None) -> dict[int, BrokerEndpoint]:
        """The live brokers as Metadata and DescribeCluster list them: none before the first UpdateMetadata.
        With a listener name, each broker's endpoint on that listener (brokers without it are left out)."""
        if self.controller_epoch < 0:
            return {}
        if listener is None:
            return self.brokers
        out = {}
        for bid, b in self.brokers.items():
            ep = b.on_listener(listener)
            if ep is not None:
                out[bid] = ep
        return out

    def live_leader(self, pm: PartitionMetadata) -> int:
        """The partition's leader, or -1 when that broker is not listed as alive (LEADER_NOT_AVAILABLE)."""
        return pm.leader if pm.leader >= 0 and pm.leader in self.listed_brokers() else -1

    def listed_controller_id(self) -> int:
        """The controller as Metadata and DescribeCluster name it: -1 unless it is a listed broker."""
        return self.controller_id if self.controller_id in self.listed_brokers() else -1

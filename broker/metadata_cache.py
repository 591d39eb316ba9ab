"""The broker's view of the cluster: live brokers, topics, partition leaders, ISR (Kafka's MetadataCache).

Filled by UpdateMetadata from the controller (or directly by the local controller in the embedded
default) and read by Metadata, FindCoordinator, DescribeCluster and the produce/fetch error hints.
Holds no I/O; values are replaced wholesale per partition so readers never see half an update.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field

INTERNAL_TOPICS = frozenset({"__consumer_offsets", "__transaction_state"})


@dataclass(frozen=True)
class BrokerEndpoint:
    broker_id: int
    host: str
    port: int
    rack: str | None = None


@dataclass(frozen=True)
class PartitionMetadata:
    partition: int
    leader: int
    leader_epoch: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    offline_replicas: tuple[int, ...] = ()


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

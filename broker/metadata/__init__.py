"""Cluster metadata: the MetadataStore (ZooKeeper or local engine), replica placement, ZooKeeper runner, and
the broker's view of the cluster (the metadata cache).

Public API (see each module's docstring for the contract):
- store/: MetadataStore (Protocol), ZkMetadataStore, LocalMetadataStore, cut by znode family (import them
  from broker.metadata.store: the store builds on this package, not the other way round)
- types.py: LeaderAndIsr, BrokerInfo, TopicInfo and the MetadataError hierarchy
- assignment.py: assign_replicas_to_brokers, assign_additional_partitions, validate_manual_assignment
- znodes.py: Kafka 3.x ZooKeeper paths and JSON codecs
- zookeeper_server.py: start_zookeeper / ZooKeeperServer (Debian's ZooKeeper on loopback)
- isr_propagation.py: IsrChangePropagator (Kafka's batching of ISR change notifications)
- zk_dump.py: `python -m broker.metadata.zk_dump CONNECT [PATH]` prints a subtree with data
- metadata_cache.py: MetadataCache, the brokers, topics and partition leaders this broker knows (Kafka's
  MetadataCache, org.apache.kafka.metadata in Kafka 4)

The lowest room of the broker with broker.common: it imports nothing else of broker/.
"""

from broker.metadata.types import (
    AdminOperationError,
    BadVersionError,
    BrokerIdInUseError,
    BrokerInfo,
    ControllerMovedError,
    InvalidPartitionsError,
    InvalidReplicaAssignmentError,
    InvalidReplicationFactorError,
    InvalidTopicError,
    LeaderAndIsr,
    MetadataCorruptError,
    MetadataError,
    MetadataUnavailableError,
    NodeExistsError,
    NoNodeError,
    PartitionStateExistsError,
    TopicExistsError,
    TopicInfo,
    UnknownTopicError,
)

__all__ = [
    "BadVersionError",
    "BrokerIdInUseError",
    "BrokerInfo",
    "ControllerMovedError",
    "InvalidPartitionsError",
    "InvalidReplicaAssignmentError",
    "AdminOperationError",
    "InvalidReplicationFactorError",
    "InvalidTopicError",
    "LeaderAndIsr",
    "MetadataCorruptError",
    "MetadataError",
    "MetadataUnavailableError",
    "NodeExistsError",
    "NoNodeError",
    "PartitionStateExistsError",
    "TopicExistsError",
    "TopicInfo",
    "UnknownTopicError",
]

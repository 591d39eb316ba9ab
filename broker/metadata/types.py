"""Value types and typed errors of the metadata store (Kafka's vocabulary, no I/O).

Contract: every value is immutable (frozen dataclasses, tuples); every failure the store can report
is a subclass of `MetadataError`, so callers map them to Kafka error codes without catching
anything from kazoo or the standard library.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field

from storage.values import TopicPartition


@dataclass(frozen=True, slots=True)
class LeaderAndIsr:
    """A partition's state as /brokers/topics/<t>/partitions/<p>/state holds it.

    `partition_epoch` is the state znode's version (Kafka's zkVersion); conditional updates name it.
    `leader` is -1 when no replica can lead (LeaderAndIsr.NoLeader).
    """

    leader: int
    leader_epoch: int
    isr: tuple[int, ...]
    controller_epoch: int
    partition_epoch: int = 0
    leader_recovery_state: int = 0  # 0 RECOVERED, 1 RECOVERING (KIP-704)


NO_LEADER = -1


@dataclass(frozen=True, slots=True)
class BrokerInfo:
    """A live broker's registration from /brokers/ids/<id>."""

    broker_id: int
    endpoints: tuple[str, ...]  # "LISTENER://host:port"
    rack: str | None
    listener_security_protocol_map: dict[str, str] = field(default_factory=dict, hash=False, compare=False)
    version: int = 5
    timestamp_ms: int = -1
    epoch: int = -1  # the broker epoch (KIP-380): the registration znode's czxid; -1 when not read

    def endpoint(self, listener: str | None = None) -> tuple[str, int] | None:
        """(host, port) of the named listener, or of the first endpoint if `listener` is None."""
        for endpoint in self.endpoints:
            name, _, address = endpoint.partition("://")
            if listener is None or name == listener:
                host, _, port = address.rpartition(":")
                return host.strip("[]"), int(port)
        return None


@dataclass(frozen=True, slots=True)
class TopicInfo:
    """A topic's replica assignment from /brokers/topics/<topic>; `zk_version` is that znode's version."""

    name: str
    topic_id: uuid.UUID | None
    assignment: dict[int, tuple[int, ...]] = field(hash=False)
    adding_replicas: dict[int, tuple[int, ...]] = field(default_factory=dict, hash=False)
    removing_replicas: dict[int, tuple[int, ...]] = field(default_factory=dict, hash=False)
    zk_version: int = 0

    def partitions(self) -> list[TopicPartition]:
        return [TopicPartition(self.name, p) for p in sorted(self.assignment)]


class MetadataError(Exception):
    """Base of every error the metadata store raises."""


class MetadataCorruptError(MetadataError):
    """A znode or the local state file holds data that is not what Kafka writes there."""


class MetadataUnavailableError(MetadataError):
    """The coordination service cannot be reached (connection loss, session expired, timeout)."""


class NodeExistsError(MetadataError):
    """The node to create already exists."""


class NoNodeError(MetadataError):
    """The node (or its parent) does not exist."""


class BadVersionError(MetadataError):
    """A conditional update named a version that is no longer current: someone else wrote first."""


class NotEmptyError(MetadataError):
    """A node with children cannot be deleted non-recursively."""


class TopicExistsError(MetadataError):
    """create_topic: the topic is already assigned (Kafka's TOPIC_ALREADY_EXISTS)."""


class UnknownTopicError(MetadataError):
    """The topic has no /brokers/topics node (Kafka's UNKNOWN_TOPIC_OR_PARTITION)."""


class PartitionStateExistsError(MetadataError):
    """create_partition_state: the state node already exists."""


class ControllerMovedError(MetadataError):
    """A controller write was fenced: /controller_epoch moved on, another controller was elected."""


class BrokerIdInUseError(MetadataError):
    """register_broker: another live session holds /brokers/ids/<id>."""


class InvalidTopicError(MetadataError):
    """The topic name is not a legal Kafka topic name (INVALID_TOPIC_EXCEPTION)."""


class InvalidReplicationFactorError(MetadataError):
    """Replication factor < 1 or greater than the number of live brokers (INVALID_REPLICATION_FACTOR)."""


class InvalidPartitionsError(MetadataError):
    """Partition count < 1 (INVALID_PARTITIONS)."""


class InvalidReplicaAssignmentError(MetadataError):
    """A manual assignment is inconsistent (INVALID_REPLICA_ASSIGNMENT)."""


class AdminOperationError(MetadataError):
    """Kafka's AdminOperationException: e.g. some brokers have a rack and some not (UNKNOWN_SERVER_ERROR)."""

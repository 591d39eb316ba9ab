"""The metadata image a KRaft broker keeps: the cluster's state as of one offset of `__cluster_metadata`.

Contract (Kafka's org.apache.kafka.image and PartitionRegistration, 3.9):
- Images are immutable values: a `MetadataDelta` (delta.py) builds the next one; nothing mutates an image
  in place, so a reader holding one sees a consistent cluster.
- `PartitionRegistration.merge(PartitionChangeRecord)` is Kafka's rule for the epochs: a record with a
  leader (anything but -2, "no change"; -1 means "no leader" and is a change) bumps the leader epoch by one;
  every PartitionChangeRecord bumps the partition epoch by one, whatever it changes; fields the record
  leaves null (ISR, replicas, adding/removing replicas, directories, ELR, last known ELR) keep their
  values; leader recovery state -1 keeps it, 0/1 set it. Directories follow the replicas: none given, or
  all MIGRATING, means MIGRATING for every replica.
- The zero UUID decodes as None in our codec; directory lists and ids are normalized back to UUID(int=0)
  (Kafka's DirectoryId.MIGRATING) here.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from enum import IntEnum
from typing import Any

from protocol.metadata_records import PartitionChangeRecord, PartitionRecord

NO_LEADER = -1
NO_LEADER_CHANGE = -2

# Kafka's DirectoryId reserved values.
MIGRATING = uuid.UUID(int=0)
UNASSIGNED = uuid.UUID(int=1)
LOST = uuid.UUID(int=2)

# Kafka's ConfigResource.Type ids as ConfigRecord.ResourceType carries them.
CONFIG_RESOURCE_TOPIC = 2
CONFIG_RESOURCE_BROKER = 4
CONFIG_RESOURCE_BROKER_LOGGER = 8
CONFIG_RESOURCE_CLIENT_METRICS = 16
CONFIG_RESOURCE_GROUP = 32

METADATA_VERSION_FEATURE = 'metadata.version'


class LeaderRecoveryState(IntEnum):
    RECOVERED = 0
    RECOVERING = 1

    def change_to(self, value: int) -> LeaderRecoveryState:
        """-1 keeps the state (Kafka's NO_CHANGE); 0 and 1 set it; anything else is invalid."""
        if value == -1:
            return self
        return LeaderRecoveryState(value)


def _uuid(value: uuid.UUID | None) -> uuid.UUID:
    return MIGRATING if value is None else value


def _java_uuid_order(value: uuid.UUID) -> tuple[int, int]:
    """Kafka's Uuid.compareTo: the two halves as signed longs."""
    msb, lsb = value.int >> 64, value.int & (2**64 - 1)
    return (msb - 2**64 if msb >= 2**63 else msb, lsb - 2**64 if lsb >= 2**63 else lsb)


def _sorted_dirs(values: Sequence[uuid.UUID | None]) -> tuple[uuid.UUID, ...]:
    return tuple(sorted((_uuid(v) for v in values), key=_java_uuid_order))


def _ints(values: Sequence[int] | None) -> tuple[int, ...]:
    return () if values is None else tuple(values)


def _migrating_directories(directories: Sequence[uuid.UUID] | None) -> bool:
    return directories is None or all(d == MIGRATING for d in directories)


def _default_to_migrating(directories: Sequence[uuid.UUID] | None, replicas: int) -> tuple[uuid.UUID, ...]:
    if _migrating_directories(directories):
        return (MIGRATING,) * replicas
    return tuple(directories)  # type: ignore[arg-type]


class InvalidReplicaDirectoriesError(ValueError):
    """A record whose directories do not match its replicas one for one."""


@dataclass(frozen=True)
class PartitionRegistration:
    replicas: tuple[int, ...]
    directories: tuple[uuid.UUID, ...]
    isr: tuple[int, ...]
    removing_replicas: tuple[int, ...] = ()
    adding_replicas: tuple[int, ...] = ()
    leader: int = NO_LEADER
    leader_recovery_state: LeaderRecoveryState = LeaderRecoveryState.RECOVERED
    leader_epoch: int = 0
    partition_epoch: int = 0
    elr: tuple[int, ...] = ()
    last_known_elr: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        if self.directories and len(self.directories) != len(self.replicas):
            raise InvalidReplicaDirectoriesError(
                f'{len(self.directories)} directories for {len(self.replicas)} replicas')

    @classmethod
    def from_record(cls, record: Any) -> PartitionRegistration:
        """A PartitionRecord (any version) as a registration."""
        directories = [_uuid(d) for d in record.directories] if record.directories else None
        if directories and len(directories) != len(record.replicas):
            raise InvalidReplicaDirectoriesError(f'PartitionRecord {record.topic_id}:{record.partition_id}: '
                                                 f'{len(directories)} directories for {len(record.replicas)} replicas')
        return cls(
            replicas=_ints(record.replicas),
            directories=_default_to_migrating(directories, len(record.replicas)),
            isr=_ints(record.isr),
            removing_replicas=_ints(record.removing_replicas),
            adding_replicas=_ints(record.adding_replicas),
            leader=record.leader,
            leader_recovery_state=LeaderRecoveryState(record.leader_recovery_state),
            leader_epoch=record.leader_epoch,
            partition_epoch=record.partition_epoch,
            elr=_ints(record.eligible_leader_replicas),
            last_known_elr=_ints(record.last_known_elr),
        )

    def merge(self, record: Any) -> PartitionRegistration:
        """This partition after a PartitionChangeRecord (Kafka's PartitionRegistration.merge)."""
        replicas = self.replicas if record.replicas is None else tuple(record.replicas)
        if record.directories is None:
            directories: Sequence[uuid.UUID] = self.directories
        else:
            directories = [_uuid(d) for d in record.directories]
            if record.replicas is not None and directories and len(record.replicas) != len(directories):
                raise InvalidReplicaDirectoriesError(
                    f'PartitionChangeRecord {record.topic_id}:{record.partition_id}: '
                    f'{len(directories)} directories for {len(record.replicas)} replicas')
        if record.leader == NO_LEADER_CHANGE:
            leader, leader_epoch = self.leader, self.leader_epoch
        else:
            leader, leader_epoch = record.leader, self.leader_epoch + 1
        return PartitionRegistration(
            replicas=replicas,
            directories=_default_to_migrating(directories, len(replicas)),
            isr=self.isr if record.isr is None else tuple(record.isr),
            removing_replicas=(self.removing_replicas if record.removing_replicas is None
                               else tuple(record.removing_replicas)),
            adding_replicas=self.adding_replicas if record.adding_replicas is None else tuple(record.adding_replicas),
            leader=leader,
            leader_recovery_state=self.leader_recovery_state.change_to(record.leader_recovery_state),
            leader_epoch=leader_epoch,
            partition_epoch=self.partition_epoch + 1,
            elr=self.elr if record.eligible_leader_replicas is None else tuple(record.eligible_leader_replicas),
            last_known_elr=self.last_known_elr if record.last_known_elr is None else tuple(record.last_known_elr),
        )

    def without_elr(self) -> PartitionRegistration:
        """This partition after a ClearElrRecord (Kafka 4.0+): merged with a change setting only an empty ELR and
        last-known ELR, so the partition epoch moves as for any PartitionChangeRecord (TopicDelta.maybeClearElr)."""
        return self.merge(_CLEAR_ELR_CHANGE)

    @staticmethod
    def election_was_clean(new_leader: int, isr: Sequence[int]) -> bool:
        return new_leader == NO_LEADER or new_leader in isr

    @property
    def has_leader(self) -> bool:
        return self.leader != NO_LEADER

    @property
    def preferred_replica(self) -> int:
        return self.replicas[0] if self.replicas else NO_LEADER

    @property
    def has_preferred_leader(self) -> bool:
        return self.leader == self.preferred_replica

    def is_reassigning(self) -> bool:
        return bool(self.removing_replicas or self.adding_replicas)

    def has_same_assignment(self, other: PartitionRegistration) -> bool:
        return (self.replicas == other.replicas and self.directories == other.directories
                and self.removing_replicas == other.removing_replicas
                and self.adding_replicas == other.adding_replicas)

    def directory(self, replica: int) -> uuid.UUID:
        try:
            return self.directories[self.replicas.index(replica)]
        except ValueError:
            raise ValueError(f'replica {replica} is not assigned to this partition') from None

    def to_record(self, topic_id: uuid.UUID, partition_id: int, version: int = 2) -> PartitionRecord:
        """The PartitionRecord a snapshot writes for this partition (ELR only when set, as Kafka does)."""
        values: dict[str, Any] = dict(
            partition_id=partition_id, topic_id=topic_id, replicas=list(self.replicas), isr=list(self.isr),
            removing_replicas=list(self.removing_replicas), adding_replicas=list(self.adding_replicas),
            leader=self.leader, leader_recovery_state=int(self.leader_recovery_state),
            leader_epoch=self.leader_epoch, partition_epoch=self.partition_epoch)
        if version >= 1:
            values['directories'] = list(self.directories)
        if version >= 2:
            values['eligible_leader_replicas'] = list(self.elr) if self.elr else None
            values['last_known_elr'] = list(self.last_known_elr) if self.last_known_elr else None
        return PartitionRecord(**values, version=version)

    def change_record(self, topic_id: uuid.UUID, partition_id: int, **changes: Any) -> PartitionChangeRecord:
        """A PartitionChangeRecord for this partition (tests and the test controller build them this way)."""
        return PartitionChangeRecord(partition_id=partition_id, topic_id=topic_id, **changes)


@dataclass(frozen=True)
class TopicImage:
    name: str
    topic_id: uuid.UUID
    partitions: Mapping[int, PartitionRegistration] = field(default_factory=dict)


@dataclass(frozen=True)
class TopicsImage:
    by_id: Mapping[uuid.UUID, TopicImage] = field(default_factory=dict)
    by_name: Mapping[str, TopicImage] = field(default_factory=dict)

    def get_topic(self, key: uuid.UUID | str) -> TopicImage | None:
        return self.by_name.get(key) if isinstance(key, str) else self.by_id.get(key)

    def get_partition(self, topic: uuid.UUID | str, partition: int) -> PartitionRegistration | None:
        image = self.get_topic(topic)
        return None if image is None else image.partitions.get(partition)


@dataclass(frozen=True)
class Endpoint:
    name: str
    host: str
    port: int
    security_protocol: int


@dataclass(frozen=True)
class BrokerRegistration:
    id: int
    epoch: int
    incarnation_id: uuid.UUID
    listeners: Mapping[str, Endpoint]
    supported_features: Mapping[str, tuple[int, int]]
    rack: str | None
    fenced: bool
    in_controlled_shutdown: bool
    is_migrating_zk_broker: bool = False
    directories: tuple[uuid.UUID, ...] = ()  # sorted as Kafka sorts them (Uuid.compareTo)
    # KIP-1066 (metadata.version 4.3-IV0): directories taking no new replicas; None until the broker sends them
    cordoned_directories: tuple[uuid.UUID, ...] | None = None

    @classmethod
    def from_record(cls, record: Any) -> BrokerRegistration:
        cordoned = getattr(record, "cordoned_log_dirs", None)
        return cls(
            id=record.broker_id,
            epoch=record.broker_epoch,
            incarnation_id=_uuid(record.incarnation_id),
            listeners={e.name: Endpoint(e.name, e.host, e.port, e.security_protocol) for e in record.end_points},
            supported_features={f.name: (f.min_supported_version, f.max_supported_version) for f in record.features},
            rack=record.rack,
            fenced=bool(record.fenced),
            in_controlled_shutdown=bool(record.in_controlled_shutdown),
            is_migrating_zk_broker=bool(record.is_migrating_zk_broker),
            directories=_sorted_dirs(record.log_dirs or ()),
            cordoned_directories=None if cordoned is None else _sorted_dirs(cordoned),
        )

    def clone_with(self, fenced: bool | None = None, in_controlled_shutdown: bool | None = None,
                   directories: Sequence[uuid.UUID] | None = None,
                   cordoned_directories: Sequence[uuid.UUID] | None = None) -> BrokerRegistration:
        """Kafka's cloneWith: None leaves a property unchanged; the same object back when nothing changes."""
        new_fenced = self.fenced if fenced is None else fenced
        new_shutdown = self.in_controlled_shutdown if in_controlled_shutdown is None else in_controlled_shutdown
        new_dirs = self.directories if directories is None else _sorted_dirs(directories)
        new_cordoned = (self.cordoned_directories if cordoned_directories is None
                        else _sorted_dirs(cordoned_directories))
        if (new_fenced, new_shutdown, new_dirs, new_cordoned) == (
                self.fenced, self.in_controlled_shutdown, self.directories, self.cordoned_directories):
            return self
        return replace(self, fenced=new_fenced, in_controlled_shutdown=new_shutdown, directories=new_dirs,
                       cordoned_directories=new_cordoned)

    def has_uncordoned_dirs(self) -> bool:
        """Whether new replicas may be placed on this broker (KIP-1066): a broker that lists no directories, or has
        never reported cordoned ones, has room; otherwise one of its directories must not be cordoned."""
        if not self.directories or self.cordoned_directories is None:
            return True
        return bool(set(self.directories) - set(self.cordoned_directories))

    def cordoned_changed(self, cordoned: Sequence[uuid.UUID]) -> bool:
        """Whether a heartbeat's cordoned directories differ from the registration's (never reported: changed)."""
        return self.cordoned_directories is None or set(self.cordoned_directories) != set(cordoned)


@dataclass(frozen=True)
class ControllerRegistration:
    id: int
    incarnation_id: uuid.UUID
    zk_migration_ready: bool
    listeners: Mapping[str, Endpoint]
    supported_features: Mapping[str, tuple[int, int]]

    @classmethod
    def from_record(cls, record: Any) -> ControllerRegistration:
        return cls(
            id=record.controller_id,
            incarnation_id=_uuid(record.incarnation_id),
            zk_migration_ready=bool(record.zk_migration_ready),
            listeners={e.name: Endpoint(e.name, e.host, e.port, e.security_protocol) for e in record.end_points},
            supported_features={f.name: (f.min_supported_version, f.max_supported_version) for f in record.features},
        )


@dataclass(frozen=True)
class ClusterImage:
    brokers: Mapping[int, BrokerRegistration] = field(default_factory=dict)
    controllers: Mapping[int, ControllerRegistration] = field(default_factory=dict)

    def broker(self, broker_id: int) -> BrokerRegistration | None:
        return self.brokers.get(broker_id)

    def unfenced_brokers(self) -> list[BrokerRegistration]:
        """The brokers Metadata and DescribeCluster list (Kafka lists only unfenced ones)."""
        return [b for _, b in sorted(self.brokers.items()) if not b.fenced]

    def broker_epoch(self, broker_id: int) -> int:
        broker = self.brokers.get(broker_id)
        return -1 if broker is None else broker.epoch


@dataclass(frozen=True)
class FeaturesImage:
    finalized_versions: Mapping[str, int] = field(default_factory=dict)  # besides metadata.version
    metadata_version: int | None = None  # the metadata.version feature level; None before any is set
    zk_migration_state: int = 0  # Kafka's ZkMigrationState.NONE


@dataclass(frozen=True)
class ConfigurationsImage:
    # (ConfigRecord.ResourceType, resource name) -> {config name: value}; never an empty mapping.
    resources: Mapping[tuple[int, str], Mapping[str, str]] = field(default_factory=dict)

    def config(self, resource_type: int, name: str) -> Mapping[str, str]:
        return self.resources.get((resource_type, name), {})

    def topic_config(self, topic: str) -> Mapping[str, str]:
        return self.config(CONFIG_RESOURCE_TOPIC, topic)


@dataclass(frozen=True)
class ProducerIdsImage:
    next_producer_id: int = -1  # the first id of the next block the controller hands out


@dataclass(frozen=True)
class ScramCredential:
    salt: bytes
    stored_key: bytes
    server_key: bytes
    iterations: int


@dataclass(frozen=True)
class AclEntry:
    resource_type: int
    resource_name: str
    pattern_type: int
    principal: str
    host: str
    operation: int
    permission_type: int


@dataclass(frozen=True)
class DelegationTokenData:
    token_id: str
    owner: str
    requester: str
    renewers: tuple[str, ...]
    issue_timestamp: int
    max_timestamp: int
    expiration_timestamp: int


# A client quota entity: ((entity type, entity name or None for the default), ...) sorted by type.
QuotaEntity = tuple[tuple[str, str | None], ...]


@dataclass(frozen=True)
class MetadataProvenance:
    last_contained_offset: int = -1
    last_contained_epoch: int = -1
    last_contained_log_time_ms: int = -1


@dataclass(frozen=True)
class MetadataImage:
    provenance: MetadataProvenance = field(default_factory=MetadataProvenance)
    features: FeaturesImage = field(default_factory=FeaturesImage)
    cluster: ClusterImage = field(default_factory=ClusterImage)
    topics: TopicsImage = field(default_factory=TopicsImage)
    configs: ConfigurationsImage = field(default_factory=ConfigurationsImage)
    client_quotas: Mapping[QuotaEntity, Mapping[str, float]] = field(default_factory=dict)
    producer_ids: ProducerIdsImage = field(default_factory=ProducerIdsImage)
    acls: Mapping[uuid.UUID, AclEntry] = field(default_factory=dict)
    scram: Mapping[tuple[int, str], ScramCredential] = field(default_factory=dict)  # (mechanism, user)
    delegation_tokens: Mapping[str, DelegationTokenData] = field(default_factory=dict)

    @property
    def offset(self) -> int:
        return self.provenance.last_contained_offset

    def is_empty(self) -> bool:
        return self == EMPTY_IMAGE


EMPTY_IMAGE = MetadataImage()


class _ClearElrChange:
    """The PartitionChangeRecord a ClearElrRecord amounts to for one partition."""

    replicas = directories = isr = removing_replicas = adding_replicas = None
    leader = NO_LEADER_CHANGE
    leader_recovery_state = -1  # no change
    eligible_leader_replicas: tuple[int, ...] = ()
    last_known_elr: tuple[int, ...] = ()


_CLEAR_ELR_CHANGE = _ClearElrChange()

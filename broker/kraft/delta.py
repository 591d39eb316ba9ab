"""Metadata deltas: records of `__cluster_metadata` replayed one by one on top of an image.

Contract (Kafka's MetadataDelta and the per-area deltas of org.apache.kafka.image, 3.9):
- `MetadataDelta(image)`; `replay(message)` for each metadata record in log order; `apply(provenance)`
  returns the next `MetadataImage`. The image given at construction is never modified.
- Topics: a TopicRecord starts a topic (replacing any delta of the same id); PartitionRecord sets a
  partition; PartitionChangeRecord merges into the partition as of this delta, else the image
  (`PartitionRegistration.merge`: a new leader bumps the leader epoch, every change the partition epoch);
  RemoveTopicRecord drops the topic and, if it was in the image, deletes it and its topic configs.
  ClearElrRecord (Kafka 4.0+) empties the ELR and last-known ELR of the named topic's partitions (every
  topic's when the name is empty; an unknown name raises), bumping the partition epoch of those that had one.
- Cluster: RegisterBrokerRecord replaces a registration; Fence/Unfence/BrokerRegistrationChange must name
  the registered broker epoch (else `MetadataReplayError`, Kafka's IllegalStateException);
  BrokerRegistrationChange's Fenced is 1 fence / -1 unfence / 0 no change, InControlledShutdown 1 / 0,
  CordonedLogDirs (v3, Kafka 4.3) null for no change. Register/UnregisterControllerRecord (4.4) add and remove a
  controller registration.
- Features: FeatureLevelRecord of `metadata.version` sets the image's metadata version level; of another
  feature, its finalized level (0 removes it). Configs: a null value deletes a key; a resource without keys
  disappears. ProducerIds: the record's NextProducerId is the image's.
- `finish_snapshot()` after replaying a whole snapshot onto a delta: everything of the old image that the
  snapshot did not mention is removed (Kafka's finishSnapshot).
- Metadata transactions (Begin/End/AbortTransaction) are not records of a delta: `MetadataLoader`
  (loader.py) handles them; replaying one here raises `MetadataReplayError`, as Kafka's MetadataDelta does.
- `local_changes(broker_id)` is Kafka's TopicsDelta.localChanges: the partitions this broker must delete
  (no longer a replica, or topic deleted), lead (it is the leader and the partition epoch changed; also
  `elected_leaders` when the leader epoch changed too), or follow (a replica, not the leader, and the
  partition epoch changed). An ISR-only change of a partition we lead therefore lands in `leaders` (with
  its new partition epoch) but not in `elected_leaders`.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from broker.kraft.image import (
    CONFIG_RESOURCE_TOPIC,
    METADATA_VERSION_FEATURE,
    AclEntry,
    BrokerRegistration,
    ClusterImage,
    ConfigurationsImage,
    ControllerRegistration,
    DelegationTokenData,
    FeaturesImage,
    MetadataImage,
    MetadataProvenance,
    PartitionRegistration,
    ProducerIdsImage,
    QuotaEntity,
    ScramCredential,
    TopicImage,
    TopicsImage,
)
from protocol.metadata_records import MetadataRecordType as T
from storage import TopicPartition

if TYPE_CHECKING:
    from broker.cluster.partition import PartitionState

_REMOVED: Any = object()


class MetadataReplayError(RuntimeError):
    """A record that cannot apply to the current metadata (Kafka raises and the fault handler logs it)."""


class _KeyedDelta:
    """Changes to a mapping of the image: key -> new value, or removal."""

    def __init__(self, base: Mapping[Any, Any]) -> None:
        self.base = base
        self.changes: dict[Any, Any] = {}

    def get(self, key: Any) -> Any:
        if key in self.changes:
            value = self.changes[key]
            return None if value is _REMOVED else value
        return self.base.get(key)

    def set(self, key: Any, value: Any) -> None:
        self.changes[key] = value

    def remove(self, key: Any) -> None:
        self.changes[key] = _REMOVED

    def finish_snapshot(self) -> None:
        for key in self.base:
            self.changes.setdefault(key, _REMOVED)

    def apply(self) -> dict[Any, Any]:
        out = dict(self.base)
        for key, value in self.changes.items():
            if value is _REMOVED:
                out.pop(key, None)
            else:
                out[key] = value
        return out


# --- topics ------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class PartitionInfo:
    topic_id: uuid.UUID
    partition: PartitionRegistration

    def partition_state(self, is_new: bool) -> PartitionState:
        """What ReplicaManager's become-leader/become-follower paths take (Kafka's
        toLeaderAndIsrPartitionState: controller epoch -1 in KRaft)."""
        from broker.cluster.partition import PartitionState  # the replication layer, loaded only when publishing

        p = self.partition
        return PartitionState(leader=p.leader, leader_epoch=p.leader_epoch, isr=list(p.isr), replicas=list(p.replicas),
                              partition_epoch=p.partition_epoch, controller_epoch=-1,
                              adding_replicas=list(p.adding_replicas), removing_replicas=list(p.removing_replicas),
                              is_new=is_new, leader_recovery_state=int(p.leader_recovery_state))


@dataclass
class LocalReplicaChanges:
    deletes: set[TopicPartition] = field(default_factory=set)
    elected_leaders: dict[TopicPartition, PartitionInfo] = field(default_factory=dict)
    leaders: dict[TopicPartition, PartitionInfo] = field(default_factory=dict)
    followers: dict[TopicPartition, PartitionInfo] = field(default_factory=dict)
    topic_ids: dict[str, uuid.UUID] = field(default_factory=dict)
    directory_ids: dict[TopicPartition, uuid.UUID] = field(default_factory=dict)

    def update(self, other: LocalReplicaChanges) -> None:
        self.deletes |= other.deletes
        self.elected_leaders.update(other.elected_leaders)
        self.leaders.update(other.leaders)
        self.followers.update(other.followers)
        self.topic_ids.update(other.topic_ids)
        self.directory_ids.update(other.directory_ids)


class TopicDelta:
    def __init__(self, image: TopicImage) -> None:
        self.image = image
        self.partition_changes: dict[int, PartitionRegistration] = {}

    @property
    def name(self) -> str:
        return self.image.name

    @property
    def topic_id(self) -> uuid.UUID:
        return self.image.topic_id

    def replay_partition(self, record: Any) -> None:
        self.partition_changes[record.partition_id] = PartitionRegistration.from_record(record)

    def replay_partition_change(self, record: Any) -> None:
        partition = self.partition_changes.get(record.partition_id) or self.image.partitions.get(record.partition_id)
        if partition is None:
            raise MetadataReplayError(f'unable to find partition {record.topic_id}:{record.partition_id}')
        self.partition_changes[record.partition_id] = partition.merge(record)

    def clear_elr(self) -> None:
        """ClearElrRecord on this topic: every partition with an ELR or a last-known ELR is merged with a change
        emptying both, which bumps its partition epoch as any PartitionChangeRecord (Kafka's maybeClearElr)."""
        partitions = dict(self.image.partitions)
        partitions.update(self.partition_changes)
        for partition_id, partition in partitions.items():
            if partition.elr or partition.last_known_elr:
                self.partition_changes[partition_id] = partition.without_elr()

    def new_partitions(self) -> dict[int, PartitionRegistration]:
        return {p: r for p, r in self.partition_changes.items() if p not in self.image.partitions}

    def apply(self) -> TopicImage:
        partitions = dict(self.image.partitions)
        partitions.update(self.partition_changes)
        return TopicImage(self.image.name, self.image.topic_id, partitions)

    def has_partitions_with_assignment_changes(self) -> bool:
        for partition_id, current in self.partition_changes.items():
            previous = self.image.partitions.get(partition_id)
            if previous is None or not previous.has_same_assignment(current):
                return True
        return False

    def local_changes(self, broker_id: int) -> LocalReplicaChanges:
        out = LocalReplicaChanges()
        for partition_id, current in self.partition_changes.items():
            tp = TopicPartition(self.name, partition_id)
            previous = self.image.partitions.get(partition_id)
            if broker_id not in current.replicas:
                if previous is not None and broker_id in previous.replicas:
                    out.deletes.add(tp)
            elif previous is None or previous.partition_epoch != current.partition_epoch:
                info = PartitionInfo(self.topic_id, current)
                if current.leader == broker_id:
                    out.leaders[tp] = info
                    if previous is None or previous.leader_epoch != current.leader_epoch:
                        out.elected_leaders[tp] = info
                else:
                    out.followers[tp] = info
                out.topic_ids.setdefault(self.name, self.topic_id)
            if broker_id in current.replicas:
                directory = current.directory(broker_id)
                if previous is None or broker_id not in previous.replicas or previous.directory(broker_id) != directory:
                    out.directory_ids[tp] = directory
        return out


class TopicsDelta:
    def __init__(self, image: TopicsImage) -> None:
        self.image = image
        self.changed_topics: dict[uuid.UUID, TopicDelta] = {}
        self.deleted_topic_ids: set[uuid.UUID] = set()
        self.created_topic_ids: set[uuid.UUID] = set()

    def replay_topic(self, record: Any) -> None:
        self.changed_topics[record.topic_id] = TopicDelta(TopicImage(record.name, record.topic_id, {}))
        self.created_topic_ids.add(record.topic_id)

    def _topic_delta(self, topic_id: uuid.UUID) -> TopicDelta:
        delta = self.changed_topics.get(topic_id)
        if delta is None:
            image = self.image.by_id.get(topic_id)
            if image is None:
                raise MetadataReplayError(f'no topic with id {topic_id}')
            delta = self.changed_topics[topic_id] = TopicDelta(image)
        return delta

    def replay_partition(self, record: Any) -> None:
        self._topic_delta(record.topic_id).replay_partition(record)

    def replay_partition_change(self, record: Any) -> None:
        self._topic_delta(record.topic_id).replay_partition_change(record)

    def replay_clear_elr(self, record: Any) -> None:
        """ClearElrRecord (Kafka 4.0+): the named topic (the one created in this delta first, else the image's),
        or every topic not deleted in this delta when the name is empty."""
        if record.topic_name:
            topic_id = next((t for t in self.created_topic_ids if t in self.changed_topics
                             and self.changed_topics[t].name == record.topic_name), None)
            if topic_id is None:
                image = self.image.by_name.get(record.topic_name)
                topic_id = None if image is None else image.topic_id
            if topic_id is None:
                raise MetadataReplayError(f'unable to clear elr for topic with name {record.topic_name}: '
                                          f'no such topic found')
            topic_ids = [topic_id]
        else:
            topic_ids = list(self.image.by_id) + [t for t in self.created_topic_ids if t in self.changed_topics]
        for topic_id in dict.fromkeys(topic_ids):
            if topic_id not in self.deleted_topic_ids:
                self._topic_delta(topic_id).clear_elr()

    def replay_remove_topic(self, record: Any) -> str:
        """Returns the removed topic's name."""
        delta = self.changed_topics.pop(record.topic_id, None)
        if delta is not None:
            if record.topic_id in self.image.by_id:
                self.deleted_topic_ids.add(record.topic_id)
            return delta.name
        image = self.image.by_id.get(record.topic_id)
        if image is None:
            raise MetadataReplayError(f'unable to delete topic with id {record.topic_id}: no such topic found')
        self.deleted_topic_ids.add(record.topic_id)
        return image.name

    def finish_snapshot(self) -> None:
        self.deleted_topic_ids.update(t for t in self.image.by_id if t not in self.changed_topics)

    def changed_topic(self, topic_id: uuid.UUID) -> TopicDelta | None:
        return self.changed_topics.get(topic_id)

    def topic_was_deleted(self, name: str) -> bool:
        image = self.image.by_name.get(name)
        return image is not None and image.topic_id in self.deleted_topic_ids

    def apply(self) -> TopicsImage:
        by_id = dict(self.image.by_id)
        by_name = dict(self.image.by_name)
        for topic_id in self.deleted_topic_ids:
            deleted = by_id.pop(topic_id)
            by_name.pop(deleted.name, None)
        for topic_id, delta in self.changed_topics.items():
            topic = delta.apply()
            by_id[topic_id] = topic
            by_name[topic.name] = topic
        return TopicsImage(by_id, by_name)

    def local_changes(self, broker_id: int) -> LocalReplicaChanges:
        out = LocalReplicaChanges()
        for delta in self.changed_topics.values():
            out.update(delta.local_changes(broker_id))
        for topic_id in self.deleted_topic_ids:
            topic = self.image.by_id[topic_id]
            for partition_id, previous in topic.partitions.items():
                if broker_id in previous.replicas:
                    out.deletes.add(TopicPartition(topic.name, partition_id))
        return out


# --- cluster -----------------------------------------------------------------------------------------------

_FENCING_CHANGE = {1: True, 0: None, -1: False}
_SHUTDOWN_CHANGE = {0: None, 1: True}


class ClusterDelta:
    def __init__(self, image: ClusterImage) -> None:
        self.image = image
        self.brokers = _KeyedDelta(image.brokers)
        self.controllers = _KeyedDelta(image.controllers)

    def broker(self, broker_id: int) -> BrokerRegistration | None:
        return self.brokers.get(broker_id)

    def _broker_or_raise(self, broker_id: int, epoch: int, action: str) -> BrokerRegistration:
        broker = self.broker(broker_id)
        if broker is None:
            raise MetadataReplayError(f'tried to {action} broker {broker_id}, but that broker was not registered')
        if broker.epoch != epoch:
            raise MetadataReplayError(f'tried to {action} broker {broker_id}, but the given epoch, {epoch}, did '
                                      f'not match the current broker epoch, {broker.epoch}')
        return broker

    def replay(self, record_type: int, record: Any) -> None:
        if record_type == T.REGISTER_BROKER_RECORD:
            self.brokers.set(record.broker_id, BrokerRegistration.from_record(record))
        elif record_type == T.UNREGISTER_BROKER_RECORD:
            self.brokers.remove(record.broker_id)
        elif record_type == T.REGISTER_CONTROLLER_RECORD:
            self.controllers.set(record.controller_id, ControllerRegistration.from_record(record))
        elif record_type == T.UNREGISTER_CONTROLLER_RECORD:
            self.controllers.remove(record.controller_id)
        elif record_type in (T.FENCE_BROKER_RECORD, T.UNFENCE_BROKER_RECORD):
            fence = record_type == T.FENCE_BROKER_RECORD
            broker = self._broker_or_raise(record.id, record.epoch, 'fence' if fence else 'unfence')
            self.brokers.set(record.id, broker.clone_with(fenced=fence))
        elif record_type == T.BROKER_REGISTRATION_CHANGE_RECORD:
            broker = self._broker_or_raise(record.broker_id, record.broker_epoch, 'change')
            if record.fenced not in _FENCING_CHANGE:
                raise MetadataReplayError(f'unknown value for fenced field: {record.fenced}')
            if record.in_controlled_shutdown not in _SHUTDOWN_CHANGE:
                raise MetadataReplayError(
                    f'unknown value for inControlledShutdown field: {record.in_controlled_shutdown}')
            log_dirs = record.log_dirs
            cordoned = getattr(record, "cordoned_log_dirs", None)  # v3+; null: no change
            changed = broker.clone_with(
                fenced=_FENCING_CHANGE[record.fenced],
                in_controlled_shutdown=_SHUTDOWN_CHANGE[record.in_controlled_shutdown],
                directories=[d if d is not None else uuid.UUID(int=0) for d in log_dirs] if log_dirs else None,
                cordoned_directories=cordoned,
            )
            if changed is not broker:
                self.brokers.set(record.broker_id, changed)

    def finish_snapshot(self) -> None:
        self.brokers.finish_snapshot()
        self.controllers.finish_snapshot()

    def apply(self) -> ClusterImage:
        return ClusterImage(self.brokers.apply(), self.controllers.apply())


# --- features, configs, producer ids, quotas, ACLs, SCRAM, delegation tokens ---------------------------------

class FeaturesDelta:
    def __init__(self, image: FeaturesImage) -> None:
        self.image = image
        self.changes = _KeyedDelta(image.finalized_versions)
        self.metadata_version_change: int | None = None
        self.zk_migration_state_change: int | None = None

    def replay(self, record_type: int, record: Any) -> None:
        if record_type == T.ZK_MIGRATION_STATE_RECORD:
            self.zk_migration_state_change = record.zk_migration_state
        elif record.name == METADATA_VERSION_FEATURE:
            self.metadata_version_change = record.feature_level
        elif record.feature_level == 0:
            self.changes.remove(record.name)
        else:
            self.changes.set(record.name, record.feature_level)

    def finish_snapshot(self) -> None:
        self.changes.finish_snapshot()

    def apply(self) -> FeaturesImage:
        mv = self.image.metadata_version if self.metadata_version_change is None else self.metadata_version_change
        zk = self.image.zk_migration_state if self.zk_migration_state_change is None else self.zk_migration_state_change
        return FeaturesImage(self.changes.apply(), mv, zk)


class ConfigurationsDelta:
    def __init__(self, image: ConfigurationsImage) -> None:
        self.image = image
        self.changes: dict[tuple[int, str], _KeyedDelta] = {}

    def _resource(self, key: tuple[int, str]) -> _KeyedDelta:
        delta = self.changes.get(key)
        if delta is None:
            delta = self.changes[key] = _KeyedDelta(self.image.resources.get(key, {}))
        return delta

    def replay_config(self, record: Any) -> None:
        delta = self._resource((record.resource_type, record.resource_name))
        if record.value is None:
            delta.remove(record.name)
        else:
            delta.set(record.name, record.value)

    def replay_remove_topic(self, topic: str) -> None:
        # Kafka drops only configs the image holds; a topic created, configured and removed within one delta
        # would keep its configs there, so this drops this delta's changes too.
        delta = self._resource((CONFIG_RESOURCE_TOPIC, topic))
        delta.changes.clear()
        delta.finish_snapshot()

    def finish_snapshot(self) -> None:
        for key in self.image.resources:
            self._resource(key).finish_snapshot()

    def apply(self) -> ConfigurationsImage:
        resources = dict(self.image.resources)
        for key, delta in self.changes.items():
            data = delta.apply()
            if data:
                resources[key] = data
            else:
                resources.pop(key, None)
        return ConfigurationsImage(resources)


def quota_entity(record: Any) -> QuotaEntity:
    return tuple(sorted((e.entity_type, e.entity_name) for e in record.entity))


class ClientQuotasDelta:
    def __init__(self, image: Mapping[QuotaEntity, Mapping[str, float]]) -> None:
        self.image = image
        self.changes: dict[QuotaEntity, _KeyedDelta] = {}

    def replay(self, record: Any) -> None:
        entity = quota_entity(record)
        delta = self.changes.get(entity)
        if delta is None:
            delta = self.changes[entity] = _KeyedDelta(self.image.get(entity, {}))
        if record.remove:
            delta.remove(record.key)
        else:
            delta.set(record.key, record.value)

    def finish_snapshot(self) -> None:
        for entity in self.image:
            self.changes.setdefault(entity, _KeyedDelta(self.image[entity])).finish_snapshot()

    def apply(self) -> dict[QuotaEntity, Mapping[str, float]]:
        out = dict(self.image)
        for entity, delta in self.changes.items():
            data = delta.apply()
            if data:
                out[entity] = data
            else:
                out.pop(entity, None)
        return out


def _acl(record: Any) -> AclEntry:
    return AclEntry(record.resource_type, record.resource_name, record.pattern_type, record.principal,
                    record.host, record.operation, record.permission_type)


def _scram(record: Any) -> ScramCredential:
    return ScramCredential(bytes(record.salt), bytes(record.stored_key), bytes(record.server_key), record.iterations)


def _token(record: Any) -> DelegationTokenData:
    return DelegationTokenData(record.token_id, record.owner, record.requester, tuple(record.renewers),
                               record.issue_timestamp, record.max_timestamp, record.expiration_timestamp)


# --- the whole delta ---------------------------------------------------------------------------------------

class MetadataDelta:
    def __init__(self, image: MetadataImage) -> None:
        self.image = image
        self.features_delta: FeaturesDelta | None = None
        self.cluster_delta: ClusterDelta | None = None
        self.topics_delta: TopicsDelta | None = None
        self.configs_delta: ConfigurationsDelta | None = None
        self.client_quotas_delta: ClientQuotasDelta | None = None
        self.next_producer_id: int | None = None
        self.acls_delta = _KeyedDelta(image.acls)
        self.scram_delta = _KeyedDelta(image.scram)
        self.delegation_tokens_delta = _KeyedDelta(image.delegation_tokens)

    # The per-area deltas, created on first use as in Kafka (None means "this area did not change").
    def features(self) -> FeaturesDelta:
        if self.features_delta is None:
            self.features_delta = FeaturesDelta(self.image.features)
        return self.features_delta

    def cluster(self) -> ClusterDelta:
        if self.cluster_delta is None:
            self.cluster_delta = ClusterDelta(self.image.cluster)
        return self.cluster_delta

    def topics(self) -> TopicsDelta:
        if self.topics_delta is None:
            self.topics_delta = TopicsDelta(self.image.topics)
        return self.topics_delta

    def configs(self) -> ConfigurationsDelta:
        if self.configs_delta is None:
            self.configs_delta = ConfigurationsDelta(self.image.configs)
        return self.configs_delta

    def client_quotas(self) -> ClientQuotasDelta:
        if self.client_quotas_delta is None:
            self.client_quotas_delta = ClientQuotasDelta(self.image.client_quotas)
        return self.client_quotas_delta

    def metadata_version_changed(self) -> int | None:
        return None if self.features_delta is None else self.features_delta.metadata_version_change

    def replay(self, message: Any) -> None:
        """Apply one metadata record (a `protocol.metadata_records` message)."""
        rtype = getattr(type(message), 'record_type', -1)
        if rtype == T.TOPIC_RECORD:
            self.topics().replay_topic(message)
        elif rtype == T.PARTITION_RECORD:
            self.topics().replay_partition(message)
        elif rtype == T.PARTITION_CHANGE_RECORD:
            self.topics().replay_partition_change(message)
        elif rtype == T.REMOVE_TOPIC_RECORD:
            name = self.topics().replay_remove_topic(message)
            self.configs().replay_remove_topic(name)
        elif rtype == T.CLEAR_ELR_RECORD:
            self.topics().replay_clear_elr(message)
        elif rtype == T.CONFIG_RECORD:
            self.configs().replay_config(message)
        elif rtype in (T.REGISTER_BROKER_RECORD, T.UNREGISTER_BROKER_RECORD, T.REGISTER_CONTROLLER_RECORD,
                       T.UNREGISTER_CONTROLLER_RECORD, T.FENCE_BROKER_RECORD, T.UNFENCE_BROKER_RECORD,
                       T.BROKER_REGISTRATION_CHANGE_RECORD):
            self.cluster().replay(rtype, message)
        elif rtype in (T.FEATURE_LEVEL_RECORD, T.ZK_MIGRATION_STATE_RECORD):
            self.features().replay(rtype, message)
        elif rtype == T.PRODUCER_IDS_RECORD:
            self.next_producer_id = message.next_producer_id
        elif rtype == T.CLIENT_QUOTA_RECORD:
            self.client_quotas().replay(message)
        elif rtype == T.ACCESS_CONTROL_ENTRY_RECORD:
            self.acls_delta.set(message.id, _acl(message))
        elif rtype == T.REMOVE_ACCESS_CONTROL_ENTRY_RECORD:
            if self.acls_delta.get(message.id) is None:
                raise MetadataReplayError(f'unable to remove ACL {message.id}: no such ACL')
            self.acls_delta.remove(message.id)
        elif rtype == T.USER_SCRAM_CREDENTIAL_RECORD:
            self.scram_delta.set((message.mechanism, message.name), _scram(message))
        elif rtype == T.REMOVE_USER_SCRAM_CREDENTIAL_RECORD:
            self.scram_delta.remove((message.mechanism, message.name))
        elif rtype == T.DELEGATION_TOKEN_RECORD:
            self.delegation_tokens_delta.set(message.token_id, _token(message))
        elif rtype == T.REMOVE_DELEGATION_TOKEN_RECORD:
            self.delegation_tokens_delta.remove(message.token_id)
        elif rtype == T.NO_OP_RECORD:
            pass  # written by the controller to advance the log; nothing to apply
        else:
            raise MetadataReplayError(f'cannot replay {type(message).__name__} on a metadata delta')

    def finish_snapshot(self) -> None:
        self.features().finish_snapshot()
        self.cluster().finish_snapshot()
        self.topics().finish_snapshot()
        self.configs().finish_snapshot()
        self.client_quotas().finish_snapshot()
        if self.next_producer_id is None:
            self.next_producer_id = self.image.producer_ids.next_producer_id
        self.acls_delta.finish_snapshot()
        self.scram_delta.finish_snapshot()
        self.delegation_tokens_delta.finish_snapshot()

    def local_changes(self, broker_id: int) -> LocalReplicaChanges:
        return LocalReplicaChanges() if self.topics_delta is None else self.topics_delta.local_changes(broker_id)

    def apply(self, provenance: MetadataProvenance | None = None) -> MetadataImage:
        image = self.image
        return replace(
            image,
            provenance=image.provenance if provenance is None else provenance,
            features=image.features if self.features_delta is None else self.features_delta.apply(),
            cluster=image.cluster if self.cluster_delta is None else self.cluster_delta.apply(),
            topics=image.topics if self.topics_delta is None else self.topics_delta.apply(),
            configs=image.configs if self.configs_delta is None else self.configs_delta.apply(),
            client_quotas=(image.client_quotas if self.client_quotas_delta is None
                           else self.client_quotas_delta.apply()),
            producer_ids=(image.producer_ids if self.next_producer_id is None
                          else ProducerIdsImage(self.next_producer_id)),
            acls=self.acls_delta.apply() if self.acls_delta.changes else image.acls,
            scram=self.scram_delta.apply() if self.scram_delta.changes else image.scram,
            delegation_tokens=(self.delegation_tokens_delta.apply() if self.delegation_tokens_delta.changes
                               else image.delegation_tokens),
        )

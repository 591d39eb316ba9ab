"""Metadata snapshots as records: an image written as Kafka's ImageWriter writes it, and snapshot files read
back into records (storage/snapshot_file.py moves the bytes, protocol/metadata_records.py encodes them).

Contract:
- `image_records(image)` lists the records that rebuild `image` on an empty one (replayed onto a delta
  followed by `finish_snapshot()`), in Kafka's order: features (metadata.version first), cluster (brokers,
  controllers), topics (each TopicRecord then its PartitionRecords), configs, client quotas, producer ids,
  ACLs, SCRAM credentials, delegation tokens. Record versions follow the image's metadata.version as
  Kafka's MetadataVersion picks them (PartitionRecord 1 and RegisterBrokerRecord 3 from 3.7-IV2, ELR
  fields from 4.0-IV1, RegisterBrokerRecord 4 with the cordoned log dirs from 4.3-IV0, ...); what a level
  cannot carry (controller registrations before 3.7-IV0, SCRAM before 3.5-IV2, delegation tokens before
  3.6-IV2, ELR before 4.0-IV1) is left out, as Kafka's ImageWriter drops it with a logged loss.
- `write_snapshot(log_dir, snapshot_id, records, ...)` writes a `.checkpoint` (SnapshotHeader with the
  last contained log timestamp first, SnapshotFooter last); `read_snapshot_records(path)` returns the
  header and the decoded metadata records of a snapshot or `bootstrap.checkpoint`; `read_snapshot_contents`
  the same and its KRaft control records (KRaftVersion, Voters) as (type, message) pairs.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from broker.kraft.image import METADATA_VERSION_FEATURE, BrokerRegistration, ControllerRegistration, MetadataImage
from protocol.metadata_records import (
    AccessControlEntryRecord,
    ApiMessageAndVersion,
    ClientQuotaRecord,
    ConfigRecord,
    DelegationTokenRecord,
    FeatureLevelRecord,
    MetadataRecord,
    ProducerIdsRecord,
    RegisterBrokerRecord,
    RegisterControllerRecord,
    SnapshotFooterRecord,
    SnapshotHeaderRecord,
    TopicRecord,
    UserScramCredentialRecord,
    ZkMigrationStateRecord,
    decode_control_record,
    decode_metadata_record,
    encode_control_record,
    encode_metadata_record,
)
from storage.snapshot_file import SnapshotId, SnapshotWriter, read_snapshot

# metadata.version feature levels (Kafka's MetadataVersion) at which record layouts change.
IBP_3_3_IV3 = 7  # RegisterBrokerRecord v1 (InControlledShutdown)
IBP_3_4_IV0 = 8  # RegisterBrokerRecord v2 (IsMigratingZkBroker)
IBP_3_5_IV2 = 11  # SCRAM credentials in the metadata log
IBP_3_6_IV2 = 14  # delegation tokens in the metadata log
IBP_3_7_IV0 = 15  # controller registrations
IBP_3_7_IV2 = 17  # directory assignment: PartitionRecord/PartitionChangeRecord v1, RegisterBrokerRecord v3
IBP_4_0_IV1 = 23  # ELR (KIP-966, Kafka 4.0; 3.9 had it at 4.0-IV0): PartitionRecord/PartitionChangeRecord v2
IBP_4_3_IV0 = 30  # cordoned log dirs (KIP-1066): RegisterBrokerRecord v4


def register_broker_record_version(level: int) -> int:
    if level >= IBP_4_3_IV0:
        return 4
    if level >= IBP_3_7_IV2:
        return 3
    if level >= IBP_3_4_IV0:
        return 2
    return 1 if level >= IBP_3_3_IV3 else 0


def partition_record_version(level: int) -> int:
    """PartitionRecord and PartitionChangeRecord share their versions."""
    if level >= IBP_4_0_IV1:
        return 2
    return 1 if level >= IBP_3_7_IV2 else 0


def broker_record(broker: BrokerRegistration, version: int) -> RegisterBrokerRecord:
    values: dict[str, Any] = dict(
        broker_id=broker.id, incarnation_id=broker.incarnation_id, broker_epoch=broker.epoch,
        end_points=[RegisterBrokerRecord.BrokerEndpoint(name=e.name, host=e.host, port=e.port,
                                                        security_protocol=e.security_protocol)
                    for e in broker.listeners.values()],
        features=[RegisterBrokerRecord.BrokerFeature(name=name, min_supported_version=lo, max_supported_version=hi)
                  for name, (lo, hi) in sorted(broker.supported_features.items())],
        rack=broker.rack, fenced=broker.fenced)
    if version >= 1:
        values['in_controlled_shutdown'] = broker.in_controlled_shutdown
    if version >= 2:
        values['is_migrating_zk_broker'] = broker.is_migrating_zk_broker
    if version >= 3:
        values['log_dirs'] = list(broker.directories)
    if version >= 4 and broker.cordoned_directories is not None:
        values['cordoned_log_dirs'] = list(broker.cordoned_directories)
    return RegisterBrokerRecord(**values, version=version)


def controller_record(controller: ControllerRegistration) -> RegisterControllerRecord:
    return RegisterControllerRecord(
        controller_id=controller.id, incarnation_id=controller.incarnation_id,
        zk_migration_ready=controller.zk_migration_ready,
        end_points=[RegisterControllerRecord.ControllerEndpoint(name=e.name, host=e.host, port=e.port,
                                                                security_protocol=e.security_protocol)
                    for e in controller.listeners.values()],
        features=[RegisterControllerRecord.ControllerFeature(name=n, min_supported_version=lo,
                                                             max_supported_version=hi)
                  for n, (lo, hi) in sorted(controller.supported_features.items())],
        version=0)


def image_records(image: MetadataImage) -> list[MetadataRecord]:
    level = image.features.metadata_version or 0
    out: list[MetadataRecord] = []
    if image.features.metadata_version is not None:
        out.append(FeatureLevelRecord(name=METADATA_VERSION_FEATURE, feature_level=level, version=0))
    for name, feature_level in sorted(image.features.finalized_versions.items()):
        out.append(FeatureLevelRecord(name=name, feature_level=feature_level, version=0))
    if image.features.zk_migration_state:
        out.append(ZkMigrationStateRecord(zk_migration_state=image.features.zk_migration_state, version=0))
    broker_version = register_broker_record_version(level)
    out.extend(broker_record(b, broker_version) for _, b in sorted(image.cluster.brokers.items()))
    if level >= IBP_3_7_IV0:
        out.extend(controller_record(c) for _, c in sorted(image.cluster.controllers.items()))
    partition_version = partition_record_version(level)
    for topic in sorted(image.topics.by_id.values(), key=lambda t: t.name):
        out.append(TopicRecord(name=topic.name, topic_id=topic.topic_id, version=0))
        out.extend(p.to_record(topic.topic_id, pid, partition_version) for pid, p in sorted(topic.partitions.items()))
    for (resource_type, resource_name), data in sorted(image.configs.resources.items()):
        out.extend(ConfigRecord(resource_type=resource_type, resource_name=resource_name, name=k, value=v, version=0)
                   for k, v in sorted(data.items()))
    for entity, quotas in sorted(image.client_quotas.items(), key=lambda e: repr(e[0])):
        for key, value in sorted(quotas.items()):
            out.append(ClientQuotaRecord(
                entity=[ClientQuotaRecord.EntityData(entity_type=t, entity_name=n) for t, n in entity],
                key=key, value=value, remove=False, version=0))
    if image.producer_ids.next_producer_id >= 0:
        out.append(ProducerIdsRecord(broker_id=-1, broker_epoch=-1,
                                     next_producer_id=image.producer_ids.next_producer_id, version=0))
    for acl_id, acl in sorted(image.acls.items()):
        out.append(AccessControlEntryRecord(
            id=acl_id, resource_type=acl.resource_type, resource_name=acl.resource_name,
            pattern_type=acl.pattern_type, principal=acl.principal, host=acl.host, operation=acl.operation,
            permission_type=acl.permission_type, version=0))
    for (mechanism, user), cred in sorted(image.scram.items() if level >= IBP_3_5_IV2 else ()):
        out.append(UserScramCredentialRecord(name=user, mechanism=mechanism, salt=cred.salt,
                                             stored_key=cred.stored_key, server_key=cred.server_key,
                                             iterations=cred.iterations, version=0))
    for token_id, token in sorted(image.delegation_tokens.items() if level >= IBP_3_6_IV2 else ()):
        out.append(DelegationTokenRecord(
            owner=token.owner, requester=token.requester, renewers=list(token.renewers),
            issue_timestamp=token.issue_timestamp, max_timestamp=token.max_timestamp,
            expiration_timestamp=token.expiration_timestamp, token_id=token_id, version=0))
    return out


def write_snapshot(
    log_dir: Path,
    snapshot_id: SnapshotId,
    records: Iterable[MetadataRecord],
    *,
    last_contained_log_timestamp: int,
    timestamp_ms: int,
    header_extras: Sequence[MetadataRecord] = (),
    final_path: Path | None = None,
) -> Path:
    """A snapshot of `records` (each at the version it was built or decoded with)."""
    header = encode_control_record(SnapshotHeaderRecord(record_version=0,
                                                        last_contained_log_timestamp=last_contained_log_timestamp))
    with SnapshotWriter(log_dir, snapshot_id, header, timestamp_ms=timestamp_ms, final_path=final_path,
                        header_extras=[encode_control_record(m) for m in header_extras]) as writer:
        writer.append(encode_metadata_record(r) for r in records)
        return writer.freeze(encode_control_record(SnapshotFooterRecord(record_version=0)))


def read_snapshot_records(path: Path) -> tuple[Any, list[ApiMessageAndVersion]]:
    """The header and the metadata records of a snapshot file (the other control records are dropped)."""
    header, records, _ = read_snapshot_contents(path)
    return header, records


def read_snapshot_contents(path: Path) -> tuple[Any, list[ApiMessageAndVersion], list[tuple[int, Any]]]:
    """The header, the metadata records and the other KRaft control records (header and footer left out)."""
    snapshot = read_snapshot(path)
    controls = [decode_control_record(*pair) for pair in snapshot.control_records]
    return controls[0][1], [decode_metadata_record(v) for v in snapshot.values()], controls[1:-1]

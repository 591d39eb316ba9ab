"""An image written as a snapshot (Kafka's ImageWriter order and record versions) and read back gives the same
image: the image, the delta and the record codecs agree (TopicsImageTest's testToImage, over a real file)."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from broker.kraft.delta import MetadataDelta
from broker.kraft.image import (
    CONFIG_RESOURCE_BROKER,
    CONFIG_RESOURCE_TOPIC,
    EMPTY_IMAGE,
    MIGRATING,
    MetadataImage,
    PartitionRegistration,
)
from broker.kraft.loader import MetadataLoader
from broker.kraft.snapshot import image_records, read_snapshot_contents, read_snapshot_records, write_snapshot
from protocol.metadata_records import (
    AccessControlEntryRecord,
    ClientQuotaRecord,
    ConfigRecord,
    DelegationTokenRecord,
    FeatureLevelRecord,
    KRaftControlRecordType,
    KRaftVersionRecord,
    PartitionRecord,
    ProducerIdsRecord,
    RegisterBrokerRecord,
    RegisterControllerRecord,
    TopicRecord,
    UnfenceBrokerRecord,
    UserScramCredentialRecord,
)
from storage.snapshot_file import BOOTSTRAP_FILE, BOOTSTRAP_SNAPSHOT_ID, SnapshotId

FOO, BAR = uuid.UUID(int=0xF00), uuid.UUID(int=0xBA2)
DIR = uuid.UUID(int=0xD1)


def _image(level: int) -> MetadataImage:
    directories = (DIR, MIGRATING, DIR) if level >= 17 else (MIGRATING,) * 3
    elr = (2,) if level >= 23 else ()
    records = [
        FeatureLevelRecord(name='metadata.version', feature_level=level),
        FeatureLevelRecord(name='kraft.version', feature_level=1),
    ]
    for broker_id in (1, 2, 3):
        records.append(RegisterBrokerRecord(
            broker_id=broker_id, incarnation_id=uuid.UUID(int=broker_id), broker_epoch=broker_id * 10,
            end_points=[RegisterBrokerRecord.BrokerEndpoint(name='PLAINTEXT', host='h', port=9090 + broker_id,
                                                            security_protocol=0)],
            features=[RegisterBrokerRecord.BrokerFeature(name='metadata.version', min_supported_version=7,
                                                         max_supported_version=21)],
            rack=None, fenced=True, log_dirs=[DIR] if level >= 17 else []))
    records.append(UnfenceBrokerRecord(id=2, epoch=20))
    if level >= 15:
        records.append(RegisterControllerRecord(
            controller_id=3000, incarnation_id=uuid.UUID(int=3000), zk_migration_ready=False,
            end_points=[RegisterControllerRecord.ControllerEndpoint(name='CONTROLLER', host='h', port=9093,
                                                                    security_protocol=0)], features=[]))
    records += [
        TopicRecord(name='foo', topic_id=FOO),
        TopicRecord(name='bar', topic_id=BAR),
    ]
    for topic_id, count in ((FOO, 3), (BAR, 1)):
        for p in range(count):
            records.append(PartitionRegistration(
                replicas=(1, 2, 3), directories=directories, isr=(1, 3), leader=1 + p % 3, leader_epoch=p,
                partition_epoch=2 * p, elr=elr).to_record(topic_id, p, 2))
    records += [
        ConfigRecord(resource_type=CONFIG_RESOURCE_TOPIC, resource_name='foo', name='cleanup.policy', value='compact'),
        ConfigRecord(resource_type=CONFIG_RESOURCE_BROKER, resource_name='1', name='log.retention.ms', value='10'),
        ClientQuotaRecord(entity=[ClientQuotaRecord.EntityData(entity_type='user', entity_name=None)],
                          key='producer_byte_rate', value=1024.0, remove=False),
        ProducerIdsRecord(broker_id=1, broker_epoch=10, next_producer_id=5000),
        AccessControlEntryRecord(id=uuid.UUID(int=44), resource_type=2, resource_name='foo', pattern_type=3,
                                 principal='User:alice', host='*', operation=3, permission_type=3),
    ]
    if level >= 11:
        records.append(UserScramCredentialRecord(name='alice', mechanism=1, salt=b's', stored_key=b'k',
                                                 server_key=b'v', iterations=4096))
    if level >= 14:
        records.append(DelegationTokenRecord(owner='User:alice', requester='User:alice', renewers=['User:bob'],
                                             issue_timestamp=1, max_timestamp=3, expiration_timestamp=2,
                                             token_id='t1'))
    delta = MetadataDelta(EMPTY_IMAGE)
    for record in records:
        delta.replay(record)
    return delta.apply()


@pytest.mark.parametrize('level', [7, 8, 11, 14, 15, 17, 21, 22, 23, 25, 27])
def test_image_to_snapshot_and_back(tmp_path: Path, level: int) -> None:
    image = _image(level)
    path = write_snapshot(tmp_path, SnapshotId(120, 4), image_records(image), last_contained_log_timestamp=55,
                          timestamp_ms=66)
    header, records = read_snapshot_records(path)
    assert header.last_contained_log_timestamp == 55
    assert records[0].message.name == 'metadata.version'
    versions = {type(r.message).__name__: r.version for r in records}
    assert versions['PartitionRecord'] == (2 if level >= 23 else 1 if level >= 17 else 0)
    assert versions['RegisterBrokerRecord'] == (3 if level >= 17 else 2 if level >= 8 else 1)
    # Loaded on top of an unrelated image, the snapshot replaces it entirely.
    loader = MetadataLoader(_image(21 if level != 21 else 17))
    loaded = loader.load_snapshot(120, 4, 55, [r.message for r in records])
    assert loaded.provenance.last_contained_offset == 119
    assert loaded.features == image.features and loaded.cluster == image.cluster
    assert loaded.topics == image.topics and loaded.configs == image.configs
    assert loaded.producer_ids == image.producer_ids and loaded.client_quotas == image.client_quotas
    assert (loaded.acls, loaded.scram, loaded.delegation_tokens) == (image.acls, image.scram,
                                                                     image.delegation_tokens)
    assert image_records(loaded) == image_records(image)


def test_bootstrap_checkpoint_with_kraft_version(tmp_path: Path) -> None:
    path = write_snapshot(tmp_path, BOOTSTRAP_SNAPSHOT_ID,
                          [FeatureLevelRecord(name='metadata.version', feature_level=19, version=0)],
                          last_contained_log_timestamp=-1, timestamp_ms=1, final_path=tmp_path / BOOTSTRAP_FILE,
                          header_extras=[KRaftVersionRecord(record_version=0, k_raft_version=1)])
    header, records = read_snapshot_records(path)
    assert [r.message.feature_level for r in records] == [19]
    loader = MetadataLoader()
    image = loader.load_snapshot(0, 0, -1, [r.message for r in records])
    assert image.features.metadata_version == 19
    # kraft.version lives in the header batch's control records, not in the image
    _, _, controls = read_snapshot_contents(path)
    assert [(t, m.k_raft_version) for t, m in controls] == [(KRaftControlRecordType.KRAFT_VERSION, 1)]
    assert loader.kraft_version == 0
    loader.load_control_records(controls)
    assert loader.kraft_version == 1


def test_empty_image_writes_no_records() -> None:
    assert image_records(EMPTY_IMAGE) == []


def test_what_a_metadata_version_cannot_carry_is_left_out() -> None:
    image = _image(27)
    delta = MetadataDelta(image)
    delta.replay(FeatureLevelRecord(name='metadata.version', feature_level=7))
    names = {type(r).__name__ for r in image_records(delta.apply())}
    assert not names & {'RegisterControllerRecord', 'UserScramCredentialRecord', 'DelegationTokenRecord'}
    partitions = [r for r in image_records(delta.apply()) if isinstance(r, PartitionRecord)]
    assert partitions and all(r.version == 0 for r in partitions)

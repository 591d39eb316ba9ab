"""The metadata image and its deltas, pinned to Kafka 3.9's rules (PartitionRegistrationTest, TopicsImageTest,
ClusterDeltaTest-like cases): how a PartitionChangeRecord moves the epochs, which partitions a broker must
lead, follow or delete, and how the other areas of the image follow their records."""

from __future__ import annotations

import uuid

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from broker.kraft.delta import MetadataDelta, MetadataReplayError, TopicsDelta
from broker.kraft.image import (
    CONFIG_RESOURCE_BROKER,
    CONFIG_RESOURCE_TOPIC,
    EMPTY_IMAGE,
    MIGRATING,
    UNASSIGNED,
    InvalidReplicaDirectoriesError,
    LeaderRecoveryState,
    MetadataImage,
    PartitionRegistration,
    TopicImage,
    TopicsImage,
)
from protocol.metadata_records import (
    BrokerRegistrationChangeRecord,
    ConfigRecord,
    FeatureLevelRecord,
    FenceBrokerRecord,
    NoOpRecord,
    PartitionChangeRecord,
    PartitionRecord,
    ProducerIdsRecord,
    RegisterBrokerRecord,
    RemoveTopicRecord,
    TopicRecord,
    UnfenceBrokerRecord,
    UnregisterBrokerRecord,
    decode_metadata_record,
    encode_metadata_record,
)
from storage import TopicPartition

LOCAL = 3
ZOO = uuid.UUID('d2170fa9-fe59-4360-97c1-f7c1f1c86fd3')
DIR1, DIR2, DIR3 = (uuid.UUID(int=0x100 + i) for i in range(3))


def _p(replicas: list[int], isr: list[int] | None = None, leader: int | None = None, leader_epoch: int = 0,
       partition_epoch: int = 0, **kw: object) -> PartitionRegistration:
    return PartitionRegistration(
        replicas=tuple(replicas), directories=(MIGRATING,) * len(replicas),
        isr=tuple(replicas if isr is None else isr), leader=replicas[0] if leader is None else leader,
        leader_epoch=leader_epoch, partition_epoch=partition_epoch, **kw)  # type: ignore[arg-type]


def _change(partition: int = 0, topic_id: uuid.UUID = ZOO, **fields: object) -> PartitionChangeRecord:
    return PartitionChangeRecord(partition_id=partition, topic_id=topic_id, **fields)


def _topics(*partitions: PartitionRegistration, name: str = 'zoo', topic_id: uuid.UUID = ZOO) -> TopicsImage:
    topic = TopicImage(name, topic_id, dict(enumerate(partitions)))
    return TopicsImage({topic_id: topic}, {name: topic})


def _replay_all(delta: TopicsDelta | MetadataDelta, *records: object) -> None:
    for record in records:
        # Every record goes through the wire form first, as it comes from the metadata log.
        message = decode_metadata_record(encode_metadata_record(record)).message  # type: ignore[arg-type]
        if isinstance(delta, MetadataDelta):
            delta.replay(message)
        elif isinstance(message, TopicRecord):
            delta.replay_topic(message)
        elif isinstance(message, PartitionRecord):
            delta.replay_partition(message)
        elif isinstance(message, PartitionChangeRecord):
            delta.replay_partition_change(message)
        else:
            delta.replay_remove_topic(message)


# --- PartitionRegistration.merge -------------------------------------------------------------------------

def test_merge_with_new_leader_bumps_leader_and_partition_epochs() -> None:
    a = _p([1, 2, 3], isr=[1, 2], leader=1, leader_epoch=0, partition_epoch=0)
    b = a.merge(_change(leader=3, isr=[3]))
    assert b == _p([1, 2, 3], isr=[3], leader=3, leader_epoch=1, partition_epoch=1)


def test_isr_only_change_keeps_the_leader_epoch() -> None:
    a = _p([1, 2, 3], leader=1, leader_epoch=7, partition_epoch=11)
    b = a.merge(_change(isr=[1, 2]))
    assert (b.leader, b.leader_epoch, b.partition_epoch, b.isr) == (1, 7, 12, (1, 2))


def test_every_change_bumps_the_partition_epoch() -> None:
    a = _p([1, 2, 3], leader_epoch=4, partition_epoch=9)
    for change in (_change(), _change(replicas=[1, 2, 3, 4]), _change(adding_replicas=[4]),
                   _change(removing_replicas=[3]), _change(leader_recovery_state=1),
                   _change(eligible_leader_replicas=[2]), _change(last_known_elr=[3])):
        merged = a.merge(change)
        assert merged.partition_epoch == 10 and merged.leader_epoch == 4


def test_leader_to_none_and_same_leader_are_leader_changes() -> None:
    a = _p([1, 2], leader=1, leader_epoch=5, partition_epoch=5)
    offline = a.merge(_change(leader=-1, isr=[]))
    assert (offline.leader, offline.leader_epoch, offline.has_leader) == (-1, 6, False)
    # Naming the current leader is a change too (Kafka compares with -2, not with the current leader).
    assert a.merge(_change(leader=1)).leader_epoch == 6
    assert a.merge(_change(leader=-2)).leader_epoch == 5


def test_leader_recovery_state() -> None:
    a = _p([1, 2], leader_recovery_state=LeaderRecoveryState.RECOVERING)
    assert a.merge(_change()).leader_recovery_state == LeaderRecoveryState.RECOVERING  # -1: no change
    assert a.merge(_change(leader_recovery_state=0)).leader_recovery_state == LeaderRecoveryState.RECOVERED
    assert _p([1]).merge(_change(leader_recovery_state=1)).leader_recovery_state == LeaderRecoveryState.RECOVERING
    with pytest.raises(ValueError):
        a.merge(_change(leader_recovery_state=2))


def test_eligible_leader_replicas_merge() -> None:
    a = _p([1, 2, 3], isr=[1, 2], leader=1)
    c = a.merge(_change(isr=[1], eligible_leader_replicas=[2], last_known_elr=[3]))
    assert (c.isr, c.elr, c.last_known_elr, c.leader_epoch, c.partition_epoch) == ((1,), (2,), (3,), 0, 1)
    d = c.merge(_change(isr=[1, 2]))  # null ELR fields keep their values
    assert (d.elr, d.last_known_elr) == ((2,), (3,))
    e = d.merge(_change(eligible_leader_replicas=[], last_known_elr=[]))
    assert (e.elr, e.last_known_elr) == ((), ())


def test_merge_with_reassignment_data() -> None:
    p0 = PartitionRegistration(replicas=(1, 2, 3), directories=(DIR1, DIR2, DIR3), isr=(1, 2, 3), leader=1,
                               leader_epoch=100, partition_epoch=200)
    p1 = p0.merge(_change(removing_replicas=[3], adding_replicas=[4], replicas=[1, 2, 3, 4],
                          directories=[DIR1, DIR2, DIR3, UNASSIGNED]))
    assert p1 == PartitionRegistration(replicas=(1, 2, 3, 4), directories=(DIR1, DIR2, DIR3, UNASSIGNED),
                                       isr=(1, 2, 3), removing_replicas=(3,), adding_replicas=(4,), leader=1,
                                       leader_epoch=100, partition_epoch=201)
    assert p1.is_reassigning() and not p1.has_same_assignment(p0)
    p2 = p1.merge(_change(isr=[1, 2, 4], removing_replicas=[], adding_replicas=[], replicas=[1, 2, 4],
                          directories=[DIR1, DIR2, UNASSIGNED]))
    assert p2 == PartitionRegistration(replicas=(1, 2, 4), directories=(DIR1, DIR2, UNASSIGNED), isr=(1, 2, 4),
                                       leader=1, leader_epoch=100, partition_epoch=202)
    assert p2.directory(4) == UNASSIGNED
    with pytest.raises(ValueError):
        p2.directory(3)


def test_directories_default_to_migrating() -> None:
    a = PartitionRegistration.from_record(PartitionRecord(
        partition_id=0, topic_id=ZOO, replicas=[1, 2], isr=[1, 2], removing_replicas=[], adding_replicas=[],
        leader=1, leader_epoch=0, partition_epoch=0, version=0))
    assert a.directories == (MIGRATING, MIGRATING)
    # New replicas without directories stay MIGRATING for all of them.
    assert a.merge(_change(replicas=[1, 2, 3])).directories == (MIGRATING,) * 3
    with pytest.raises(InvalidReplicaDirectoriesError):
        a.merge(_change(replicas=[1, 2, 3], directories=[DIR1, DIR2]))
    with pytest.raises(InvalidReplicaDirectoriesError):
        PartitionRegistration.from_record(PartitionRecord(partition_id=0, topic_id=ZOO, replicas=[1, 2], isr=[1],
                                                          directories=[DIR1], version=1))


def test_election_was_clean() -> None:
    assert PartitionRegistration.election_was_clean(1, [1, 2])
    assert not PartitionRegistration.election_was_clean(1, [0, 2])
    assert not PartitionRegistration.election_was_clean(1, [])
    assert PartitionRegistration.election_was_clean(3, [1, 2, 3, 4, 5, 6])
    assert PartitionRegistration.election_was_clean(-1, [])


@pytest.mark.parametrize('version', [0, 1, 2])
def test_partition_record_round_trip(version: int) -> None:
    a = PartitionRegistration(replicas=(1, 2, 3), directories=(DIR1, DIR2, DIR3) if version else (MIGRATING,) * 3,
                              isr=(1, 2), removing_replicas=(1,), leader=1, leader_epoch=3, partition_epoch=4,
                              elr=(3,) if version == 2 else (), last_known_elr=())
    record = decode_metadata_record(encode_metadata_record(a.to_record(ZOO, 4, version))).message
    assert PartitionRegistration.from_record(record) == a
    if version == 2:
        assert record.last_known_elr is None  # empty ELR fields are left out, as Kafka does


# --- TopicsDelta.local_changes (TopicsImageTest) ----------------------------------------------------------

def test_basic_local_changes() -> None:
    bar, baz, bam = uuid.UUID(int=1), uuid.UUID(int=2), uuid.UUID(int=3)
    bar_topic = TopicImage('bar', bar, {0: _p([0, 1, LOCAL], leader=0, partition_epoch=1)})
    image = TopicsImage({bar: bar_topic}, {'bar': bar_topic})
    delta = TopicsDelta(image)
    _replay_all(
        delta,
        _change(0, bar, isr=[0, LOCAL]),  # bar-0: stays follower, new partition epoch
        TopicRecord(name='baz', topic_id=baz),
        _p([LOCAL, 1, 2], leader=LOCAL).to_record(baz, 0),  # baz-0: a new partition we lead
        _p([4, 2, LOCAL], leader=4, leader_epoch=2, partition_epoch=1).to_record(baz, 1),  # baz-1: we follow
        TopicRecord(name='bam', topic_id=bam),
        _p([0, 1, 2]).to_record(bam, 0),  # bam-0: not ours
        _p([0, 1, LOCAL]).to_record(bam, 1),  # bam-1: we follow
    )
    changes = delta.local_changes(LOCAL)
    assert changes.deletes == set()
    assert set(changes.elected_leaders) == set(changes.leaders) == {TopicPartition('baz', 0)}
    assert set(changes.followers) == {TopicPartition('baz', 1), TopicPartition('bar', 0), TopicPartition('bam', 1)}
    assert changes.topic_ids == {'bar': bar, 'baz': baz, 'bam': bam}
    assert changes.followers[TopicPartition('bar', 0)].partition.partition_epoch == 2
    final = delta.apply()
    assert set(final.by_name) == {'bar', 'baz', 'bam'}
    assert final.get_partition('baz', 1).leader_epoch == 2  # type: ignore[union-attr]


def test_delete_after_changes() -> None:
    delta = TopicsDelta(_topics(_p([LOCAL, 1, 2])))
    _replay_all(delta, _change(0, leader=1), RemoveTopicRecord(topic_id=ZOO))
    changes = delta.local_changes(LOCAL)
    assert changes.deletes == {TopicPartition('zoo', 0)}
    assert (changes.elected_leaders, changes.leaders, changes.followers) == ({}, {}, {})
    assert delta.apply() == TopicsImage({}, {})


def test_isr_only_change_of_a_partition_we_lead_is_a_leader_change_without_election() -> None:
    delta = TopicsDelta(_topics(_p([LOCAL, 1, 2])))
    _replay_all(delta, _change(0, isr=[LOCAL, 1]))
    changes = delta.local_changes(LOCAL)
    assert changes.deletes == set() and changes.elected_leaders == {} and changes.followers == {}
    info = changes.leaders[TopicPartition('zoo', 0)]
    assert (info.topic_id, info.partition.isr, info.partition.leader_epoch, info.partition.partition_epoch) == (
        ZOO, (LOCAL, 1), 0, 1)


def test_partition_info_as_a_partition_state() -> None:
    delta = TopicsDelta(_topics(_p([1, LOCAL, 2], leader=1, leader_epoch=4, partition_epoch=6)))
    _replay_all(delta, _change(0, leader=LOCAL, isr=[LOCAL, 2], adding_replicas=[], leader_recovery_state=1))
    state = delta.local_changes(LOCAL).elected_leaders[TopicPartition('zoo', 0)].partition_state(is_new=False)
    assert (state.leader, state.leader_epoch, state.partition_epoch, state.controller_epoch) == (LOCAL, 5, 7, -1)
    assert (state.isr, state.replicas, state.is_new, state.leader_recovery_state) == ([LOCAL, 2], [1, LOCAL, 2],
                                                                                     False, 1)


def test_local_reassignment_changes() -> None:
    delta = TopicsDelta(_topics(_p([0, 1, LOCAL]), _p([LOCAL, 1, 2]), _p([0, 1, LOCAL]), _p([LOCAL, 1, 2]),
                                _p([0, 1, 2]), _p([0, 1, 2])))
    _replay_all(
        delta,
        _change(0, leader=LOCAL),  # follower to leader
        _change(1, leader=1),  # leader to follower
        _change(2, isr=[0, 1, 2], replicas=[0, 1, 2]),  # follower to removed
        _change(3, leader=0, isr=[0, 1, 2], replicas=[0, 1, 2]),  # leader to removed
        _change(4, leader=LOCAL, isr=[LOCAL, 1, 2], replicas=[LOCAL, 1, 2]),  # not a replica to leader
        _change(5, isr=[0, 1, LOCAL], replicas=[0, 1, LOCAL]),  # not a replica to follower
    )
    changes = delta.local_changes(LOCAL)
    zoo = [TopicPartition('zoo', p) for p in range(6)]
    assert changes.deletes == {zoo[2], zoo[3]}
    assert set(changes.elected_leaders) == {zoo[0], zoo[4]}
    assert set(changes.leaders) == {zoo[0], zoo[4]}
    assert set(changes.followers) == {zoo[1], zoo[5]}


def test_unchanged_partition_epoch_is_no_local_change() -> None:
    # A PartitionRecord that restates a partition exactly (as a snapshot does) changes nothing locally.
    p = _p([LOCAL, 1], partition_epoch=3)
    delta = TopicsDelta(_topics(p))
    _replay_all(delta, p.to_record(ZOO, 0))
    changes = delta.local_changes(LOCAL)
    assert (changes.leaders, changes.followers, changes.deletes) == ({}, {}, set())


def test_topic_deleted_and_recreated_with_another_id() -> None:
    new_id = uuid.UUID(int=99)
    delta = TopicsDelta(_topics(_p([LOCAL, 1])))
    _replay_all(delta, RemoveTopicRecord(topic_id=ZOO), TopicRecord(name='zoo', topic_id=new_id),
                _p([1, LOCAL], leader=1).to_record(new_id, 0))
    changes = delta.local_changes(LOCAL)
    assert changes.deletes == {TopicPartition('zoo', 0)}
    assert changes.followers[TopicPartition('zoo', 0)].topic_id == new_id
    assert delta.topic_was_deleted('zoo')
    final = delta.apply()
    assert final.by_name['zoo'].topic_id == new_id and ZOO not in final.by_id


def test_unknown_topic_or_partition_is_a_replay_error() -> None:
    delta = TopicsDelta(_topics(_p([1])))
    with pytest.raises(MetadataReplayError):
        _replay_all(delta, _change(0, uuid.UUID(int=5), leader=1))
    with pytest.raises(MetadataReplayError):
        _replay_all(delta, _change(7, leader=1))
    with pytest.raises(MetadataReplayError):
        _replay_all(delta, RemoveTopicRecord(topic_id=uuid.UUID(int=5)))


# --- the other areas of MetadataDelta --------------------------------------------------------------------

def _register(broker_id: int, epoch: int, fenced: bool = True, version: int = 3) -> RegisterBrokerRecord:
    return RegisterBrokerRecord(
        broker_id=broker_id, incarnation_id=uuid.UUID(int=broker_id * 1000 + epoch), broker_epoch=epoch,
        end_points=[RegisterBrokerRecord.BrokerEndpoint(name='PLAINTEXT', host='localhost', port=9092 + broker_id,
                                                        security_protocol=0)],
        features=[RegisterBrokerRecord.BrokerFeature(name='metadata.version', min_supported_version=1,
                                                     max_supported_version=21)],
        rack='r1', fenced=fenced, in_controlled_shutdown=False, log_dirs=[DIR1] if version >= 3 else [],
        version=version)


def _apply(image: MetadataImage, *records: object) -> MetadataImage:
    delta = MetadataDelta(image)
    _replay_all(delta, *records)
    return delta.apply()


def test_broker_registration_fencing_and_epochs() -> None:
    image = _apply(EMPTY_IMAGE, _register(1, 10), _register(2, 20, fenced=False))
    b1 = image.cluster.broker(1)
    assert b1 is not None and b1.fenced and b1.epoch == 10 and b1.rack == 'r1'
    assert b1.listeners['PLAINTEXT'].port == 9093 and b1.supported_features['metadata.version'] == (1, 21)
    assert b1.directories == (DIR1,)
    assert [b.id for b in image.cluster.unfenced_brokers()] == [2]
    image = _apply(image, UnfenceBrokerRecord(id=1, epoch=10), FenceBrokerRecord(id=2, epoch=20))
    assert [b.id for b in image.cluster.unfenced_brokers()] == [1]
    with pytest.raises(MetadataReplayError, match='did not match'):
        _apply(image, FenceBrokerRecord(id=1, epoch=11))
    with pytest.raises(MetadataReplayError, match='not registered'):
        _apply(image, UnfenceBrokerRecord(id=7, epoch=1))
    # BrokerRegistrationChange: 1 fences, -1 unfences, 0 leaves it; controlled shutdown 1 sets it.
    image = _apply(image, BrokerRegistrationChangeRecord(broker_id=1, broker_epoch=10, fenced=0,
                                                         in_controlled_shutdown=1))
    b1 = image.cluster.broker(1)
    assert b1 is not None and not b1.fenced and b1.in_controlled_shutdown
    image = _apply(image, BrokerRegistrationChangeRecord(broker_id=2, broker_epoch=20, fenced=-1,
                                                         log_dirs=[DIR2, DIR3]))
    b2 = image.cluster.broker(2)
    assert b2 is not None and not b2.fenced and b2.directories == (DIR2, DIR3)
    with pytest.raises(MetadataReplayError, match='fenced field'):
        _apply(image, BrokerRegistrationChangeRecord(broker_id=2, broker_epoch=20, fenced=2))
    # A re-registration replaces the broker with its new epoch (fenced again); unregistering removes it.
    image = _apply(image, _register(1, 30), UnregisterBrokerRecord(broker_id=2, broker_epoch=20))
    assert image.cluster.broker_epoch(1) == 30 and image.cluster.broker(2) is None


def test_features_configs_and_producer_ids() -> None:
    image = _apply(
        EMPTY_IMAGE,
        FeatureLevelRecord(name='metadata.version', feature_level=19),
        FeatureLevelRecord(name='kraft.version', feature_level=1),
        FeatureLevelRecord(name='group.version', feature_level=1),
        TopicRecord(name='zoo', topic_id=ZOO),
        _p([1]).to_record(ZOO, 0),
        ConfigRecord(resource_type=CONFIG_RESOURCE_TOPIC, resource_name='zoo', name='cleanup.policy', value='compact'),
        ConfigRecord(resource_type=CONFIG_RESOURCE_TOPIC, resource_name='zoo', name='retention.ms', value='1000'),
        ConfigRecord(resource_type=CONFIG_RESOURCE_BROKER, resource_name='', name='log.retention.ms', value='5'),
        ProducerIdsRecord(broker_id=1, broker_epoch=10, next_producer_id=1000),
        NoOpRecord(),
    )
    assert image.features.metadata_version == 19
    assert image.features.finalized_versions == {'kraft.version': 1, 'group.version': 1}
    assert image.configs.topic_config('zoo') == {'cleanup.policy': 'compact', 'retention.ms': '1000'}
    assert image.producer_ids.next_producer_id == 1000
    image = _apply(
        image,
        FeatureLevelRecord(name='group.version', feature_level=0),  # level 0 removes a feature
        ConfigRecord(resource_type=CONFIG_RESOURCE_TOPIC, resource_name='zoo', name='retention.ms', value=None),
        ProducerIdsRecord(broker_id=2, broker_epoch=5, next_producer_id=2000),
    )
    assert image.features.finalized_versions == {'kraft.version': 1}
    assert image.configs.topic_config('zoo') == {'cleanup.policy': 'compact'}
    assert image.producer_ids.next_producer_id == 2000
    # Removing a topic removes its configs with it; broker configs stay.
    image = _apply(image, RemoveTopicRecord(topic_id=ZOO))
    assert image.configs.topic_config('zoo') == {} and (CONFIG_RESOURCE_TOPIC, 'zoo') not in image.configs.resources
    assert image.configs.config(CONFIG_RESOURCE_BROKER, '') == {'log.retention.ms': '5'}
    assert image.topics.get_topic('zoo') is None


def test_a_delta_never_changes_its_image() -> None:
    before = _apply(EMPTY_IMAGE, TopicRecord(name='zoo', topic_id=ZOO), _p([1, 2]).to_record(ZOO, 0),
                    _register(1, 10))
    snapshot = repr(before)
    after = _apply(before, _change(0, leader=2), FenceBrokerRecord(id=1, epoch=10), RemoveTopicRecord(topic_id=ZOO))
    assert repr(before) == snapshot
    assert after.topics.get_topic('zoo') is None and before.topics.get_partition('zoo', 0).leader == 1  # type: ignore[union-attr]


def test_finish_snapshot_removes_what_the_snapshot_does_not_mention() -> None:
    other = uuid.UUID(int=77)
    image = _apply(EMPTY_IMAGE, TopicRecord(name='zoo', topic_id=ZOO), _p([LOCAL]).to_record(ZOO, 0),
                   TopicRecord(name='old', topic_id=other), _p([LOCAL]).to_record(other, 0),
                   _register(1, 10), _register(2, 20), FeatureLevelRecord(name='group.version', feature_level=1),
                   ConfigRecord(resource_type=CONFIG_RESOURCE_TOPIC, resource_name='zoo', name='a', value='b'))
    delta = MetadataDelta(image)
    _replay_all(delta, TopicRecord(name='zoo', topic_id=ZOO), _p([LOCAL]).to_record(ZOO, 0), _register(1, 10))
    delta.finish_snapshot()
    assert delta.local_changes(LOCAL).deletes == {TopicPartition('old', 0)}
    final = delta.apply()
    assert set(final.topics.by_name) == {'zoo'}
    assert set(final.cluster.brokers) == {1}
    assert final.features.finalized_versions == {} and final.configs.resources == {}


def test_transaction_records_are_not_delta_records() -> None:
    from protocol.metadata_records import BeginTransactionRecord

    with pytest.raises(MetadataReplayError):
        MetadataDelta(EMPTY_IMAGE).replay(BeginTransactionRecord(name='x'))


_CHANGES = st.lists(st.fixed_dictionaries({}, optional={
    'leader': st.sampled_from([-2, -1, 1, 2, 3]),
    'isr': st.lists(st.sampled_from([1, 2, 3]), unique=True, max_size=3),
    'leader_recovery_state': st.sampled_from([-1, 0, 1]),
    'eligible_leader_replicas': st.lists(st.sampled_from([1, 2, 3]), unique=True, max_size=2),
}), max_size=12)


@settings(max_examples=60, deadline=None, derandomize=True)
@given(changes=_CHANGES)
def test_epochs_count_leader_changes_and_records(changes: list[dict[str, object]]) -> None:
    """Over any sequence of PartitionChangeRecords the leader epoch grows by the number naming a leader
    (Leader != -2) and the partition epoch by the number of records; unnamed fields keep the last value."""
    start = _p([1, 2, 3], leader=1, leader_epoch=10, partition_epoch=20)
    current = start
    for change in changes:
        current = current.merge(_change(**change))
    assert current.leader_epoch == 10 + sum(1 for c in changes if c.get('leader', -2) != -2)
    assert current.partition_epoch == 20 + len(changes)
    leaders = [c['leader'] for c in changes if c.get('leader', -2) != -2]
    assert current.leader == (leaders[-1] if leaders else 1)
    isrs = [tuple(c['isr']) for c in changes if 'isr' in c]  # type: ignore[arg-type]
    assert current.isr == (isrs[-1] if isrs else (1, 2, 3))
    states = [c['leader_recovery_state'] for c in changes if c.get('leader_recovery_state', -1) != -1]
    assert current.leader_recovery_state == (states[-1] if states else 0)
    assert current.replicas == start.replicas and current.directories == start.directories


def test_broker_log_dirs_are_sorted_as_kafka_sorts_uuids() -> None:
    high = uuid.UUID('80000000-0000-0000-0000-000000000000')  # a negative most significant long in Java
    low = uuid.UUID('00000000-0000-0000-0000-000000000005')
    record = _register(1, 10)
    record.log_dirs = [low, high]
    image = _apply(EMPTY_IMAGE, record)
    assert image.cluster.brokers[1].directories == (high, low)

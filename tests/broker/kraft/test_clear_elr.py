"""ClearElrRecord (Kafka 4.0+, KIP-966) on a metadata delta, as Kafka's TopicsDelta replays it: the named
topic's partitions, or every topic's, lose their ELR and last-known ELR; each partition that had one gets a
new partition epoch (the change is a PartitionChangeRecord merge), the leader epoch stays."""

from __future__ import annotations

import uuid

import pytest

from broker.kraft.delta import MetadataDelta, MetadataReplayError
from broker.kraft.image import MetadataImage
from protocol.metadata_records import (
    ClearElrRecord,
    PartitionChangeRecord,
    RemoveTopicRecord,
    TopicRecord,
    decode_metadata_record,
    encode_metadata_record,
)
from storage import TopicPartition
from tests.broker.kraft.test_image import ZOO, _p, _topics

FOO = uuid.UUID(int=0xF00)


def _image() -> MetadataImage:
    zoo = _topics(_p([1, 2, 3], isr=[1], leader=1, leader_epoch=4, partition_epoch=7, elr=(2,),
                     last_known_elr=(3,)),
                  _p([1, 2], leader=1, partition_epoch=2),
                  _p([3, 1, 2], isr=[3], leader=3, partition_epoch=5, last_known_elr=(1,)))
    foo = _topics(_p([2, 3], isr=[2], leader=2, partition_epoch=1, elr=(3,)), name='foo', topic_id=FOO)
    return MetadataImage(topics=type(zoo)({**zoo.by_id, **foo.by_id}, {**zoo.by_name, **foo.by_name}))


def _delta(image: MetadataImage, *records: object) -> MetadataDelta:
    delta = MetadataDelta(image)
    for record in records:
        delta.replay(decode_metadata_record(encode_metadata_record(record)).message)  # type: ignore[arg-type]
    return delta


def test_clear_elr_of_one_topic() -> None:
    image = _image()
    after = _delta(image, ClearElrRecord(topic_name='zoo')).apply()
    zoo = after.topics.by_name['zoo'].partitions
    assert [(p.elr, p.last_known_elr) for p in zoo.values()] == [((), ())] * 3
    # Partitions that had an ELR or a last-known ELR move to a new partition epoch; the others do not.
    assert [p.partition_epoch for p in zoo.values()] == [8, 2, 6]
    assert [p.leader_epoch for p in zoo.values()] == [4, 0, 0]
    assert (zoo[0].isr, zoo[0].leader) == ((1,), 1)
    assert after.topics.by_name['foo'] is image.topics.by_name['foo']


def test_clear_elr_of_every_topic() -> None:
    after = _delta(_image(), ClearElrRecord(topic_name='')).apply()
    for topic in after.topics.by_id.values():
        assert all((p.elr, p.last_known_elr) == ((), ()) for p in topic.partitions.values())
    assert after.topics.by_name['foo'].partitions[0].partition_epoch == 2


def test_clear_elr_applies_to_changes_of_the_same_delta_and_new_topics() -> None:
    bar = uuid.UUID(int=0xBA4)
    delta = _delta(_image(),
                   PartitionChangeRecord(partition_id=1, topic_id=ZOO, isr=[1], eligible_leader_replicas=[2]),
                   TopicRecord(name='bar', topic_id=bar),
                   _p([1, 2], isr=[1], elr=(2,)).to_record(bar, 0, 2),
                   ClearElrRecord(topic_name=''))
    after = delta.apply()
    assert after.topics.by_name['zoo'].partitions[1].elr == ()
    assert after.topics.by_name['zoo'].partitions[1].partition_epoch == 4  # the change, then the clear
    assert after.topics.by_name['bar'].partitions[0].elr == ()


def test_clear_elr_by_name_prefers_the_topic_recreated_in_the_delta() -> None:
    new_id = uuid.UUID(int=0x2E)
    delta = _delta(_image(), RemoveTopicRecord(topic_id=FOO), TopicRecord(name='foo', topic_id=new_id),
                   _p([2, 3], isr=[2], elr=(3,)).to_record(new_id, 0, 2), ClearElrRecord(topic_name='foo'))
    after = delta.apply()
    assert after.topics.by_name['foo'].topic_id == new_id
    assert after.topics.by_name['foo'].partitions[0].elr == ()
    assert FOO not in after.topics.by_id


def test_clear_elr_skips_topics_deleted_in_the_delta() -> None:
    after = _delta(_image(), RemoveTopicRecord(topic_id=FOO), ClearElrRecord(topic_name='')).apply()
    assert set(after.topics.by_name) == {'zoo'}


def test_clear_elr_of_an_unknown_topic_is_a_replay_error() -> None:
    with pytest.raises(MetadataReplayError, match='no such topic found'):
        _delta(_image(), ClearElrRecord(topic_name='nope'))


def test_clear_elr_is_a_local_follower_change() -> None:
    # Broker 2 follows zoo-0: the new partition epoch reaches its replica manager, as Kafka's localChanges does.
    changes = _delta(_image(), ClearElrRecord(topic_name='zoo')).local_changes(2)
    assert set(changes.followers) == {TopicPartition('zoo', 0), TopicPartition('zoo', 2)}
    assert not changes.elected_leaders

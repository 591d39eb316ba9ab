"""The metadata loader: batches of committed records become published images; metadata transactions (KIP-868)
are applied all at once or not at all."""

from __future__ import annotations

import uuid

import pytest

from broker.kraft.delta import MetadataDelta
from broker.kraft.image import EMPTY_IMAGE, MIGRATING, MetadataImage, PartitionRegistration
from broker.kraft.loader import MetadataLoader
from protocol.metadata_records import (
    AbortTransactionRecord,
    BeginTransactionRecord,
    EndTransactionRecord,
    FeatureLevelRecord,
    PartitionChangeRecord,
    TopicRecord,
)
from storage import TopicPartition

ZOO = uuid.UUID(int=0xABC)
LOCAL = 3


def _partition(partition_id: int, leader: int = LOCAL) -> object:
    return PartitionRegistration(replicas=(LOCAL, 1, 2), directories=(MIGRATING,) * 3, isr=(LOCAL, 1, 2),
                                 leader=leader).to_record(ZOO, partition_id)


class Published:
    def __init__(self) -> None:
        self.images: list[MetadataImage] = []
        self.deltas: list[MetadataDelta] = []

    def __call__(self, delta: MetadataDelta, image: MetadataImage) -> None:
        self.deltas.append(delta)
        self.images.append(image)


def _raise(message: str, error: BaseException) -> None:
    raise AssertionError(f'{message}: {error}')


def test_batches_are_published_on_flush_with_provenance() -> None:
    published = Published()
    loader = MetadataLoader(on_publish=published, fault_handler=_raise)
    loader.load_batch(0, 1, 1000, [FeatureLevelRecord(name='metadata.version', feature_level=19)])
    loader.load_batch(1, 2, 2000, [TopicRecord(name='zoo', topic_id=ZOO), _partition(0)])
    assert published.images == [] and loader.has_pending
    image = loader.flush()
    assert image is not None and published.images == [image] and loader.image is image
    assert (image.provenance.last_contained_offset, image.provenance.last_contained_epoch,
            image.provenance.last_contained_log_time_ms) == (2, 2, 2000)
    assert image.features.metadata_version == 19 and image.topics.get_partition('zoo', 0) is not None
    assert set(published.deltas[0].local_changes(LOCAL).elected_leaders) == {TopicPartition('zoo', 0)}
    assert loader.flush() is None  # nothing new


def test_a_committed_transaction_is_published_at_once() -> None:
    published = Published()
    loader = MetadataLoader(on_publish=published, fault_handler=_raise)
    loader.load_batch(0, 1, 1, [FeatureLevelRecord(name='metadata.version', feature_level=19),
                                BeginTransactionRecord(name='create zoo'), TopicRecord(name='zoo', topic_id=ZOO)])
    # Begin published what preceded it, so the transaction starts a delta of its own.
    assert len(published.images) == 1 and published.images[0].offset == 0
    assert published.images[0].features.metadata_version == 19
    loader.load_batch(3, 1, 2, [_partition(0)])
    assert loader.flush() is None  # the transaction is open: nothing is published
    assert loader.image.topics.get_topic('zoo') is None
    loader.load_batch(4, 1, 3, [_partition(1), EndTransactionRecord()])
    image = loader.flush()
    assert image is not None and image.offset == 5
    assert sorted(image.topics.by_name['zoo'].partitions) == [0, 1]
    assert set(published.deltas[-1].local_changes(LOCAL).leaders) == {TopicPartition('zoo', 0),
                                                                      TopicPartition('zoo', 1)}


def test_an_aborted_transaction_leaves_no_trace() -> None:
    published = Published()
    loader = MetadataLoader(on_publish=published, fault_handler=_raise)
    loader.load_batch(0, 1, 1, [TopicRecord(name='zoo', topic_id=ZOO), _partition(0)])
    loader.flush()
    loader.load_batch(2, 1, 1, [BeginTransactionRecord(), PartitionChangeRecord(partition_id=0, topic_id=ZOO,
                                                                                 leader=1)])
    loader.load_batch(4, 2, 5, [TopicRecord(name='other', topic_id=uuid.UUID(int=1)), AbortTransactionRecord()])
    image = loader.flush()
    assert image is not None and image.offset == 5 and image.provenance.last_contained_epoch == 2
    assert image.topics.get_partition('zoo', 0).leader == LOCAL  # type: ignore[union-attr]
    assert image.topics.get_topic('other') is None
    assert published.deltas[-1].local_changes(LOCAL).leaders == {}
    # Records after the abort apply normally.
    loader.load_batch(6, 2, 6, [PartitionChangeRecord(partition_id=0, topic_id=ZOO, leader=1)])
    image = loader.flush()
    assert image is not None and image.topics.get_partition('zoo', 0).leader_epoch == 1  # type: ignore[union-attr]


@pytest.mark.parametrize(('records', 'message'), [
    ([BeginTransactionRecord(), BeginTransactionRecord()], 'already in a transaction'),
    ([EndTransactionRecord()], 'without a BeginTransactionRecord'),
    ([AbortTransactionRecord()], 'without a BeginTransactionRecord'),
    ([PartitionChangeRecord(partition_id=0, topic_id=ZOO, leader=1)], 'no topic with id'),
])
def test_faults_are_reported_with_their_offset_and_skipped(records: list[object], message: str) -> None:
    faults: list[str] = []
    loader = MetadataLoader(fault_handler=lambda m, e: faults.append(f'{m}: {e}'))
    loader.load_batch(10, 1, 1, [*records, TopicRecord(name='zoo', topic_id=ZOO)])
    assert len(faults) == 1 and message in faults[0] and f'offset {10 + len(records) - 1}' in faults[0]
    loader.load_batch(20, 1, 1, [EndTransactionRecord()] if loader.in_transaction else [])
    image = loader.flush()
    assert image is not None and image.topics.get_topic('zoo') is not None


def test_a_snapshot_replaces_the_image() -> None:
    published = Published()
    loader = MetadataLoader(on_publish=published, fault_handler=_raise)
    loader.load_batch(0, 1, 1, [TopicRecord(name='old', topic_id=uuid.UUID(int=9)),
                                PartitionRegistration(replicas=(LOCAL,), directories=(MIGRATING,), isr=(LOCAL,),
                                                      leader=LOCAL).to_record(uuid.UUID(int=9), 0)])
    loader.flush()
    image = loader.load_snapshot(100, 4, 777, [TopicRecord(name='zoo', topic_id=ZOO), _partition(0, leader=1)])
    assert image.offset == 99 and image.provenance.last_contained_epoch == 4
    assert set(image.topics.by_name) == {'zoo'}
    changes = published.deltas[-1].local_changes(LOCAL)
    assert changes.deletes == {TopicPartition('old', 0)} and set(changes.followers) == {TopicPartition('zoo', 0)}
    assert loader.image is image and not loader.has_pending


def test_loader_starts_from_a_given_image() -> None:
    loader = MetadataLoader(EMPTY_IMAGE)
    assert loader.flush() is None and loader.image is EMPTY_IMAGE


def test_a_metadata_log_from_its_bytes() -> None:
    """Batches as the quorum leader writes them (a LeaderChange control batch, data batches, a transaction)
    decoded and loaded in order."""
    from protocol.metadata_records import (
        LeaderChangeMessage,
        decode_metadata_batches,
        encode_control_record,
        encode_metadata_record,
    )
    from records import build_batch

    def data(base: int, *messages: object) -> bytes:
        return build_batch([(None, encode_metadata_record(m), (), 1000 + base) for m in messages],  # type: ignore[arg-type]
                           base_offset=base, partition_leader_epoch=2)

    leader_change = LeaderChangeMessage(record_version=0, leader_id=3000,
                                        voters=[LeaderChangeMessage.Voter(voter_id=3000)], granting_voters=[])
    log = (build_batch([(*encode_control_record(leader_change), (), 999)], is_control=True, partition_leader_epoch=2)
           + data(1, FeatureLevelRecord(name='metadata.version', feature_level=19, version=0))
           + data(2, BeginTransactionRecord(version=0), TopicRecord(name='zoo', topic_id=ZOO, version=0))
           + data(4, _partition(0), EndTransactionRecord(version=0)))
    published = Published()
    loader = MetadataLoader(on_publish=published, fault_handler=_raise)
    for batch in decode_metadata_batches(log):
        loader.load_metadata_batch(batch)
        loader.flush()
    # Published after each batch: the control batch (nothing to apply), metadata.version, then nothing while
    # the transaction is open, then the whole transaction.
    assert [i.offset for i in published.images] == [0, 1, 5]
    image = loader.image
    assert image.provenance.last_contained_epoch == 2 and image.provenance.last_contained_log_time_ms == 1004
    assert image.features.metadata_version == 19 and image.topics.get_partition('zoo', 0) is not None

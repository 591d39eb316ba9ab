"""The publisher's isReplicaIsrEligible (Kafka's KRaft rule for the HW and ISR admission of a follower)."""

from __future__ import annotations

import uuid

from broker.kraft.loader import MetadataLoader
from broker.kraft.publisher import MetadataPublisher
from protocol.metadata_records import BrokerRegistrationChangeRecord, RegisterBrokerRecord


def register(broker_id: int, epoch: int) -> RegisterBrokerRecord:
    return RegisterBrokerRecord(broker_id=broker_id, incarnation_id=uuid.uuid4(), broker_epoch=epoch, end_points=[],
                                features=[], rack=None, fenced=False, in_controlled_shutdown=False, version=1)


def test_eligible_only_unfenced_not_shutting_down_and_at_its_current_epoch() -> None:
    publisher = MetadataPublisher(None, 1)  # type: ignore[arg-type] - replica_eligible reads only the image
    loader = MetadataLoader(on_publish=lambda delta, image: setattr(publisher, "image", image))
    loader.load_batch(0, 1, 0, [register(2, 10), register(3, 11), register(4, 12),
                                BrokerRegistrationChangeRecord(broker_id=3, broker_epoch=11, fenced=1, version=0),
                                BrokerRegistrationChangeRecord(broker_id=4, broker_epoch=12, in_controlled_shutdown=1,
                                                               version=1)])
    loader.flush()
    assert publisher.replica_eligible(2)
    assert not publisher.replica_eligible(3)  # fenced
    assert not publisher.replica_eligible(4)  # in controlled shutdown
    assert not publisher.replica_eligible(5)  # not registered
    publisher.follower_epochs[2] = 10
    assert publisher.replica_eligible(2)
    publisher.follower_epochs[2] = 9  # fetching with an earlier registration's epoch
    assert not publisher.replica_eligible(2)
    publisher.follower_epochs[2] = -1  # no epoch sent: Kafka accepts it
    assert publisher.replica_eligible(2)

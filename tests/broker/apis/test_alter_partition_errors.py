"""AlterPartition: every code of `broker.apis.alter_partition.ERRORS`, over a real socket with our codec, as a
partition leader sends it to the controller. The session's single broker is its own controller and the leader
of the topic's one replica; each proposal is refused, so nothing changes."""

from __future__ import annotations

import uuid
from typing import Any

from broker.apis import alter_partition
from protocol import ApiKey, request_class
from protocol.errors import ErrorCode
from storage import TopicPartition

from .acl_support import denied
from .support import Brokers, Producer, error_path_test

Req = request_class(ApiKey.ALTER_PARTITION)
T = Req.TopicData
TOPIC = "alter-partition-plain"
RECOVERING = 1


def send(b: Brokers, *, version: int = 1, topic: str | uuid.UUID | None = None, leader_epoch_delta: int = 0,
         partition_epoch_delta: int = 0, isr: tuple[int, ...] = (0, 5), recovery: int = 0,
         broker_epoch: int | None = None, port: int | None = None) -> Any:
    """A proposal for partition 0 of TOPIC from broker 0 at the controller's current epochs (plus the deltas)."""
    b.topic(TOPIC)
    ctx = b.single.server.controller.ctx
    tp = TopicPartition(TOPIC, 0)
    state, partition_epoch = ctx.states[tp], ctx.versions.get(tp, 0)
    if topic is None:
        topic = ctx.topics[TOPIC].topic_id if version >= 2 else TOPIC
    part = T.PartitionData(partition_index=0, leader_epoch=state.leader_epoch + leader_epoch_delta,
                           new_isr=list(isr), leader_recovery_state=recovery,
                           partition_epoch=partition_epoch + partition_epoch_delta)
    topic_data = T(topic_id=topic, partitions=[part]) if version >= 2 else T(topic_name=topic, partitions=[part])
    epoch = ctx.broker_epochs[0] if broker_epoch is None else broker_epoch
    return b.call(Req[version](broker_id=0, broker_epoch=epoch, topics=[topic_data]), port)


PRODUCERS: dict[ErrorCode, Producer] = {
    ErrorCode.NOT_CONTROLLER: lambda b: b.call(Req[1](broker_id=1, broker_epoch=-1, topics=[]),
                                               b.not_controller_port()),
    ErrorCode.STALE_BROKER_EPOCH: lambda b: send(b, broker_epoch=0),
    ErrorCode.UNKNOWN_TOPIC_ID: lambda b: send(b, version=2, topic=uuid.uuid4()),
    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION: lambda b: send(b, topic="alter-partition-missing"),
    ErrorCode.FENCED_LEADER_EPOCH: lambda b: send(b, leader_epoch_delta=-1),
    ErrorCode.INVALID_UPDATE_VERSION: lambda b: send(b, partition_epoch_delta=-1),
    ErrorCode.INVALID_REQUEST: lambda b: send(b, recovery=RECOVERING),  # recovering with two replicas in the ISR
    ErrorCode.INELIGIBLE_REPLICA: lambda b: send(b, version=2),  # broker 5 is not live
    ErrorCode.OPERATION_NOT_ATTEMPTED: lambda b: send(b, version=1),  # the same, before v2
}

PRODUCERS.update({
    ErrorCode.CLUSTER_AUTHORIZATION_FAILED: lambda b: b.call(Req[1](broker_id=0, broker_epoch=-1, topics=[]),
                                                             denied(b)),
})

test_errors = error_path_test(alter_partition, PRODUCERS)


def test_newer_epochs_than_the_controllers_answer_not_controller(brokers: Brokers) -> None:
    response = send(brokers, partition_epoch_delta=1)
    assert response.error_code == ErrorCode.NONE
    assert response.topics[0].partitions[0].error_code == ErrorCode.NOT_CONTROLLER

"""OffsetForLeaderEpoch: every code of `broker.apis.offset_for_leader_epoch.ERRORS`, over a real socket with
our codec."""

from __future__ import annotations

from typing import Any

from broker.apis import offset_for_leader_epoch
from protocol import ApiKey, request_class
from protocol.errors import ErrorCode

from .acl_support import denied
from .support import LED_BY_2, Brokers, Producer, error_path_test

Req = request_class(ApiKey.OFFSET_FOR_LEADER_EPOCH)
T = Req.OffsetForLeaderTopic


def send(b: Brokers, topic: str, *, current_epoch: int = -1, port: int | None = None) -> Any:
    return b.call(Req[4](replica_id=-1, topics=[T(topic=topic, partitions=[T.OffsetForLeaderPartition(
        partition=0, current_leader_epoch=current_epoch, leader_epoch=0)])]), port)


PRODUCERS: dict[ErrorCode, Producer] = {
    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION: lambda b: send(b, "epoch-missing"),
    ErrorCode.NOT_LEADER_OR_FOLLOWER: lambda b: send(b, b.led_by_other("epoch-on-1"), port=b.cluster.ports[0]),
    ErrorCode.FENCED_LEADER_EPOCH: lambda b: send(b, LED_BY_2, current_epoch=b.fenced_epoch(),
                                                  port=b.cluster.ports[0]),
    ErrorCode.UNKNOWN_LEADER_EPOCH: lambda b: send(b, b.topic("epoch-plain"), current_epoch=7),
}

PRODUCERS.update({
    ErrorCode.TOPIC_AUTHORIZATION_FAILED: lambda b: send(b, "epoch-denied", port=denied(b)),
})

test_errors = error_path_test(offset_for_leader_epoch, PRODUCERS)

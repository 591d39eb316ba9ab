"""ListOffsets: every code of `broker.apis.list_offsets.ERRORS`, over a real socket with our codec."""

from __future__ import annotations

from typing import Any

from broker.apis import list_offsets
from protocol import ApiKey, request_class
from protocol.errors import ErrorCode

from .acl_support import denied
from .support import LED_BY_2, Brokers, Producer, error_path_test

Req = request_class(ApiKey.LIST_OFFSETS)
Topic = Req.ListOffsetsTopic
LATEST = -1


def send(b: Brokers, topic: str, *, timestamp: int = LATEST, epoch: int = -1, port: int | None = None) -> Any:
    return b.call(Req[7](replica_id=-1, isolation_level=0, topics=[Topic(name=topic, partitions=[
        Topic.ListOffsetsPartition(partition_index=0, current_leader_epoch=epoch, timestamp=timestamp)])]), port)


PRODUCERS: dict[ErrorCode, Producer] = {
    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION: lambda b: send(b, "list-offsets-missing"),
    ErrorCode.NOT_LEADER_OR_FOLLOWER: lambda b: send(b, b.led_by_other("list-offsets-on-1"),
                                                     port=b.cluster.ports[0]),
    ErrorCode.FENCED_LEADER_EPOCH: lambda b: send(b, LED_BY_2, epoch=b.fenced_epoch(), port=b.cluster.ports[0]),
    ErrorCode.UNKNOWN_LEADER_EPOCH: lambda b: send(b, b.topic("list-offsets-plain"), epoch=5),
    ErrorCode.INVALID_REQUEST: lambda b: send(b, b.topic("list-offsets-plain"), timestamp=-42),
}

PRODUCERS.update({
    ErrorCode.TOPIC_AUTHORIZATION_FAILED: lambda b: send(b, "list-offsets-denied", port=denied(b)),
})

test_errors = error_path_test(list_offsets, PRODUCERS)

"""AlterPartitionReassignments: every code of `broker.apis.alter_partition_reassignments.ERRORS`, over a real
socket with our codec."""

from __future__ import annotations

from typing import Any

from broker.apis import alter_partition_reassignments
from protocol import ApiKey, request_class
from protocol.errors import ErrorCode

from .acl_support import denied
from .support import Brokers, Producer, error_path_test

Req = request_class(ApiKey.ALTER_PARTITION_REASSIGNMENTS)
T = Req.ReassignableTopic


def send(b: Brokers, topic: str, replicas: list[int] | None, port: int | None = None) -> Any:
    return b.call(Req[0](timeout_ms=10000, topics=[T(name=topic, partitions=[T.ReassignablePartition(
        partition_index=0, replicas=replicas)])]), port)


PRODUCERS: dict[ErrorCode, Producer] = {
    ErrorCode.NOT_CONTROLLER: lambda b: send(b, "reassign-any", [0], b.not_controller_port()),
    ErrorCode.INVALID_REPLICA_ASSIGNMENT: lambda b: send(b, b.topic("reassign-plain"), [0, 0]),
    ErrorCode.NO_REASSIGNMENT_IN_PROGRESS: lambda b: send(b, b.topic("reassign-plain"), None),
    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION: lambda b: send(b, "reassign-missing", [0]),
}

PRODUCERS.update({
    ErrorCode.CLUSTER_AUTHORIZATION_FAILED: lambda b: send(b, "reassign-denied", [0], denied(b)),
})

test_errors = error_path_test(alter_partition_reassignments, PRODUCERS)

"""ListPartitionReassignments: every code of `broker.apis.list_partition_reassignments.ERRORS`, over a real
socket with our codec."""

from __future__ import annotations

from broker.apis import list_partition_reassignments
from protocol import ApiKey, request_class
from protocol.errors import ErrorCode

from .acl_support import denied
from .support import Producer, error_path_test

Req = request_class(ApiKey.LIST_PARTITION_REASSIGNMENTS)

PRODUCERS: dict[ErrorCode, Producer] = {
    ErrorCode.NOT_CONTROLLER: lambda b: b.call(Req[0](timeout_ms=10000, topics=None), b.not_controller_port()),
}

PRODUCERS.update({
    ErrorCode.CLUSTER_AUTHORIZATION_FAILED: lambda b: b.call(Req[0](timeout_ms=10000, topics=None), denied(b)),
})

test_errors = error_path_test(list_partition_reassignments, PRODUCERS)

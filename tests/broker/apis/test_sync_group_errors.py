"""SyncGroup: every code of `broker.apis.sync_group.ERRORS`, over a real socket with our codec."""

from __future__ import annotations

from typing import Any

from broker.apis import sync_group
from protocol import ApiKey, request_class
from protocol.errors import ErrorCode

from .acl_support import denied
from .group_support import Member, during_rebalance, not_coordinator, shut_down
from .support import Brokers, Producer, error_path_test

Req = request_class(ApiKey.SYNC_GROUP)


def send(b: Brokers, group: str, member_id: str = "m", generation: int = 1, instance: str | None = None,
         protocol_name: str = "range", port: int | None = None) -> Any:
    return b.call(Req[5](group_id=group, generation_id=generation, member_id=member_id, group_instance_id=instance,
                         protocol_type="consumer", protocol_name=protocol_name, assignments=[]), port)


def joined(b: Brokers, group: str, instance: str | None = None) -> Member:
    return Member.join(b, group, instance=instance)


PRODUCERS: dict[ErrorCode, Producer] = {
    ErrorCode.INVALID_GROUP_ID: lambda b: send(b, ""),
    ErrorCode.NOT_COORDINATOR: lambda b: send(b, "sync-any", port=not_coordinator(b)),
    ErrorCode.COORDINATOR_NOT_AVAILABLE: lambda b: send(b, "sync-any", port=shut_down(b)),
    ErrorCode.UNKNOWN_MEMBER_ID: lambda b: send(b, joined(b, "sync-unknown").group, "nobody"),
    ErrorCode.FENCED_INSTANCE_ID: lambda b: send(b, joined(b, "sync-static", "static-1").group, "someone-else",
                                                 instance="static-1"),
    ErrorCode.ILLEGAL_GENERATION: lambda b: (lambda m: send(b, m.group, m.member_id, m.generation + 1))(
        joined(b, "sync-generation")),
    ErrorCode.INCONSISTENT_GROUP_PROTOCOL: lambda b: (lambda m: send(b, m.group, m.member_id, m.generation,
                                                                     protocol_name="roundrobin"))(
        joined(b, "sync-protocol")),
    ErrorCode.REBALANCE_IN_PROGRESS: lambda b: during_rebalance(
        b, "sync-rebalance", lambda m: send(b, m.group, m.member_id, m.generation)),
}

PRODUCERS.update({
    ErrorCode.GROUP_AUTHORIZATION_FAILED: lambda b: send(b, "sync-denied", port=denied(b)),
})

test_errors = error_path_test(sync_group, PRODUCERS)

"""JoinGroup: every code of `broker.apis.join_group.ERRORS`, over a real socket with our codec."""

from __future__ import annotations

from typing import Any

from broker.apis import join_group
from protocol.errors import ErrorCode

from .acl_support import denied
from .group_support import Member, coordinator_ready, join_request, loading, not_coordinator, shut_down
from .support import Brokers, Producer, error_path_test


def send(b: Brokers, group: str, member_id: str = "", port: int | None = None, **kw: Any) -> Any:
    if port is None and group:
        coordinator_ready(b, b.single.port, group)
    return b.call(join_request(group, member_id, **kw), port)


def group_full(b: Brokers) -> Any:
    port = b.other(group_max_size="1").port
    Member.join(b, "join-full", port=port)
    return send(b, "join-full", port=port)  # refused before it is given a member id, as Kafka


PRODUCERS: dict[ErrorCode, Producer] = {
    ErrorCode.INVALID_GROUP_ID: lambda b: send(b, ""),
    ErrorCode.NOT_COORDINATOR: lambda b: send(b, "join-any", port=not_coordinator(b)),
    ErrorCode.COORDINATOR_LOAD_IN_PROGRESS: lambda b: send(b, "join-loading", port=loading(b, "join-loading")),
    ErrorCode.COORDINATOR_NOT_AVAILABLE: lambda b: send(b, "join-any", port=shut_down(b)),
    ErrorCode.INVALID_SESSION_TIMEOUT: lambda b: send(b, "join-session", session_timeout_ms=1),
    ErrorCode.INVALID_REQUEST: lambda b: send(b, "join-long", protocol_type="p" * 40000, version=6),
    ErrorCode.UNKNOWN_MEMBER_ID: lambda b: send(b, "join-never-existed", "nobody"),
    ErrorCode.FENCED_INSTANCE_ID: lambda b: send(b, Member.join(b, "join-static", instance="static-1").group,
                                                 "someone-else", instance="static-1"),
    ErrorCode.INCONSISTENT_GROUP_PROTOCOL: lambda b: send(b, Member.join(b, "join-consumers").group,
                                                          protocol_type="connect", version=3),
    ErrorCode.GROUP_MAX_SIZE_REACHED: group_full,
    ErrorCode.MEMBER_ID_REQUIRED: lambda b: send(b, "join-first"),
}

PRODUCERS.update({
    ErrorCode.GROUP_AUTHORIZATION_FAILED: lambda b: send(b, "join-denied", port=denied(b)),
})

test_errors = error_path_test(join_group, PRODUCERS)

"""DeleteGroups: every code of `broker.apis.delete_groups.ERRORS`, over a real socket with our codec."""

from __future__ import annotations

from typing import Any

from broker.apis import delete_groups
from protocol import ApiKey, request_class
from protocol.errors import ErrorCode

from .acl_support import denied
from .group_support import Member, coordinator_ready, loading, not_coordinator, shut_down
from .support import Brokers, Producer, error_path_test

Req = request_class(ApiKey.DELETE_GROUPS)


def send(b: Brokers, group: str, port: int | None = None) -> Any:
    if port is None:
        coordinator_ready(b, b.single.port, group)
    return b.call(Req[2](groups_names=[group]), port)


PRODUCERS: dict[ErrorCode, Producer] = {
    ErrorCode.INVALID_GROUP_ID: lambda b: send(b, "g" * 40000),
    ErrorCode.NOT_COORDINATOR: lambda b: send(b, "delete-any", port=not_coordinator(b)),
    ErrorCode.COORDINATOR_LOAD_IN_PROGRESS: lambda b: send(b, "delete-loading", port=loading(b, "delete-loading")),
    ErrorCode.COORDINATOR_NOT_AVAILABLE: lambda b: send(b, "delete-any", port=shut_down(b)),
    ErrorCode.GROUP_ID_NOT_FOUND: lambda b: send(b, "delete-never-existed"),
    ErrorCode.NON_EMPTY_GROUP: lambda b: send(b, Member.join(b, "delete-with-member").group),
}

PRODUCERS.update({
    ErrorCode.GROUP_AUTHORIZATION_FAILED: lambda b: send(b, "delete-denied", denied(b)),
})

test_errors = error_path_test(delete_groups, PRODUCERS)

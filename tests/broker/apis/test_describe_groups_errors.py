"""DescribeGroups: every code of `broker.apis.describe_groups.ERRORS`, over a real socket with our codec."""

from __future__ import annotations

from typing import Any

from broker.apis import describe_groups
from protocol import ApiKey, request_class
from protocol.errors import ErrorCode

from .acl_support import denied
from .group_support import loading, not_coordinator, shut_down
from .support import Brokers, Producer, error_path_test

Req = request_class(ApiKey.DESCRIBE_GROUPS)


def send(b: Brokers, group: str, port: int | None = None) -> Any:
    return b.call(Req[5](groups=[group], include_authorized_operations=False), port)


PRODUCERS: dict[ErrorCode, Producer] = {
    ErrorCode.INVALID_GROUP_ID: lambda b: send(b, "g" * 40000),
    ErrorCode.NOT_COORDINATOR: lambda b: send(b, "describe-any", port=not_coordinator(b)),
    ErrorCode.COORDINATOR_LOAD_IN_PROGRESS: lambda b: send(b, "describe-loading",
                                                           port=loading(b, "describe-loading")),
    ErrorCode.COORDINATOR_NOT_AVAILABLE: lambda b: send(b, "describe-any", port=shut_down(b)),
}

PRODUCERS.update({
    ErrorCode.GROUP_AUTHORIZATION_FAILED: lambda b: send(b, "describe-denied", denied(b)),
})

test_errors = error_path_test(describe_groups, PRODUCERS)

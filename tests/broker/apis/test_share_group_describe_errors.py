"""ShareGroupDescribe: every code of `broker.apis.share_group_describe.ERRORS`, over a real socket with our
codec."""

from __future__ import annotations

from typing import Any

from broker.apis import share_group_describe
from protocol import ApiKey, request_class
from protocol.errors import ErrorCode

from .acl_support import denied
from .group_support import coordinator_ready, loading, not_coordinator, shut_down
from .support import Brokers, Producer, error_path_test

Req = request_class(ApiKey.SHARE_GROUP_DESCRIBE)


def describe(b: Brokers, group: str, port: int | None = None) -> Any:
    return b.call(Req[1](group_ids=[group], include_authorized_operations=False), port)


def ready(b: Brokers, group: str) -> str:
    coordinator_ready(b, b.single.port, group)
    return group


PRODUCERS: dict[ErrorCode, Producer] = {
    ErrorCode.INVALID_GROUP_ID: lambda b: describe(b, ""),
    ErrorCode.NOT_COORDINATOR: lambda b: describe(b, "sgd-any", port=not_coordinator(b)),
    ErrorCode.COORDINATOR_LOAD_IN_PROGRESS: lambda b: describe(b, "sgd-loading", port=loading(b, "sgd-loading")),
    ErrorCode.COORDINATOR_NOT_AVAILABLE: lambda b: describe(b, "sgd-any", port=shut_down(b)),
    ErrorCode.GROUP_ID_NOT_FOUND: lambda b: describe(b, ready(b, "sgd-none")),
    ErrorCode.GROUP_AUTHORIZATION_FAILED: lambda b: describe(b, "sgd-denied", port=denied(b)),
}

test_errors = error_path_test(share_group_describe, PRODUCERS)

"""OffsetFetch: every code of `broker.apis.offset_fetch.ERRORS`, over a real socket with our codec."""

from __future__ import annotations

from typing import Any

from broker.apis import offset_fetch
from protocol import ApiKey, request_class
from protocol.errors import ErrorCode

from .group_support import loading, not_coordinator, shut_down
from .support import Brokers, Producer, error_path_test

Req = request_class(ApiKey.OFFSET_FETCH)


def send(b: Brokers, group: str, port: int | None = None) -> Any:
    return b.call(Req[7](group_id=group, topics=None, require_stable=False), port)


PRODUCERS: dict[ErrorCode, Producer] = {
    ErrorCode.INVALID_GROUP_ID: lambda b: send(b, "g" * 40000),
    ErrorCode.NOT_COORDINATOR: lambda b: send(b, "fetch-any", port=not_coordinator(b)),
    ErrorCode.COORDINATOR_LOAD_IN_PROGRESS: lambda b: send(b, "fetch-loading", port=loading(b, "fetch-loading")),
    ErrorCode.COORDINATOR_NOT_AVAILABLE: lambda b: send(b, "fetch-any", port=shut_down(b)),
}

test_errors = error_path_test(offset_fetch, PRODUCERS)

"""ListGroups: every code of `broker.apis.list_groups.ERRORS`, over a real socket with our codec."""

from __future__ import annotations

from typing import Any

from broker.apis import list_groups
from protocol import ApiKey, request_class
from protocol.errors import ErrorCode

from .group_support import loading, shut_down
from .support import Brokers, Producer, error_path_test

Req = request_class(ApiKey.LIST_GROUPS)


def send(b: Brokers, port: int) -> Any:
    return b.call(Req[4](states_filter=[]), port)


PRODUCERS: dict[ErrorCode, Producer] = {
    ErrorCode.COORDINATOR_LOAD_IN_PROGRESS: lambda b: send(b, loading(b, "list-loading")),
    ErrorCode.COORDINATOR_NOT_AVAILABLE: lambda b: send(b, shut_down(b)),
}

test_errors = error_path_test(list_groups, PRODUCERS)

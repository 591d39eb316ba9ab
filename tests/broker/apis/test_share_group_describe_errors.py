"""ShareGroupDescribe: every code of `broker.apis.share_group_describe.ERRORS`, over a real socket with our
codec."""

from __future__ import annotations

from typing import Any

from broker.apis import share_group_describe
from protocol import ApiKey, request_class
from protocol.errors import ErrorCode

from .acl_support import denied, deny_topic_describe, partial
from .group_support import coordinator_ready, loading, not_coordinator, shut_down
from .share_support import assigned_member
from .support import Brokers, Producer, error_path_test

Req = request_class(ApiKey.SHARE_GROUP_DESCRIBE)


def describe(b: Brokers, group: str, port: int | None = None) -> Any:
    return b.call(Req[1](group_ids=[group], include_authorized_operations=False), port)


def ready(b: Brokers, group: str) -> str:
    coordinator_ready(b, b.single.port, group)
    return group


def topic_denied(b: Brokers) -> Any:
    """A share group assigned a topic whose DESCRIBE is denied afterwards: the group is hidden."""
    port = partial(b)
    b.topic("sgd-hidden", port=port)
    assigned_member(b, "sgd-topic-denied", "sgd-hidden", port=port)
    deny_topic_describe(b, port, "sgd-hidden")
    response = describe(b, "sgd-topic-denied", port=port)
    assert response.groups[0].error_message == (
        "The group has described topic(s) that the client is not authorized to describe."), response
    return response


PRODUCERS: dict[ErrorCode, Producer] = {
    ErrorCode.INVALID_GROUP_ID: lambda b: describe(b, ""),
    ErrorCode.NOT_COORDINATOR: lambda b: describe(b, "sgd-any", port=not_coordinator(b)),
    ErrorCode.COORDINATOR_LOAD_IN_PROGRESS: lambda b: describe(b, "sgd-loading", port=loading(b, "sgd-loading")),
    ErrorCode.COORDINATOR_NOT_AVAILABLE: lambda b: describe(b, "sgd-any", port=shut_down(b)),
    ErrorCode.GROUP_ID_NOT_FOUND: lambda b: describe(b, ready(b, "sgd-none")),
    ErrorCode.GROUP_AUTHORIZATION_FAILED: lambda b: describe(b, "sgd-denied", port=denied(b)),
    ErrorCode.TOPIC_AUTHORIZATION_FAILED: topic_denied,
}

test_errors = error_path_test(share_group_describe, PRODUCERS)

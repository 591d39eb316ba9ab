"""ConsumerGroupDescribe: every code of `broker.apis.consumer_group_describe.ERRORS`, over a real socket with our
codec."""

from __future__ import annotations

from typing import Any

from broker.apis import consumer_group_describe
from protocol import ApiKey, request_class
from protocol.errors import ErrorCode

from .acl_support import denied, deny_topic_describe, partial
from .group_support import ConsumerMember, Member, loading, not_coordinator, shut_down
from .support import Brokers, Producer, error_path_test

Req = request_class(ApiKey.CONSUMER_GROUP_DESCRIBE)


def send(b: Brokers, group: str, port: int | None = None) -> Any:
    return b.call(Req[0](group_ids=[group], include_authorized_operations=False), port)


def classic_group(b: Brokers) -> Any:
    response = send(b, Member.join(b, "cgd-classic").group)
    assert response.groups[0].error_message == "Group cgd-classic is not a consumer group.", response
    return response


def topic_denied(b: Brokers) -> Any:
    """A group formed on a topic whose DESCRIBE is denied afterwards: the group is hidden, not its topic."""
    port = partial(b)
    b.topic("cgd-hidden", port=port)
    ConsumerMember.join(b, "cgd-topic-denied", topics=("cgd-hidden",), port=port)
    deny_topic_describe(b, port, "cgd-hidden")
    response = send(b, "cgd-topic-denied", port=port)
    assert response.groups[0].error_message == (
        "The group has described topic(s) that the client is not authorized to describe."), response
    return response


PRODUCERS: dict[ErrorCode, Producer] = {
    ErrorCode.INVALID_GROUP_ID: lambda b: send(b, ""),
    ErrorCode.NOT_COORDINATOR: lambda b: send(b, "cgd-any", port=not_coordinator(b)),
    ErrorCode.COORDINATOR_LOAD_IN_PROGRESS: lambda b: send(b, "cgd-loading", port=loading(b, "cgd-loading")),
    ErrorCode.COORDINATOR_NOT_AVAILABLE: lambda b: send(b, "cgd-any", port=shut_down(b)),
    # a classic group is not a consumer group (Kafka answers the same for no group at all)
    ErrorCode.GROUP_ID_NOT_FOUND: lambda b: classic_group(b),
    ErrorCode.GROUP_AUTHORIZATION_FAILED: lambda b: send(b, "cgd-denied", port=denied(b)),
    ErrorCode.TOPIC_AUTHORIZATION_FAILED: topic_denied,
}


test_errors = error_path_test(consumer_group_describe, PRODUCERS)

"""DescribeShareGroupOffsets: every code of `broker.apis.describe_share_group_offsets.ERRORS`, over a real socket
with our codec."""

from __future__ import annotations

from typing import Any

from broker.apis import describe_share_group_offsets
from protocol import ApiKey, request_class
from protocol.errors import ErrorCode

from .acl_support import denied
from .group_support import coordinator_ready, loading, not_coordinator, shut_down
from .share_support import read_denied_topic
from .support import Brokers, Producer, error_path_test

Req = request_class(ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS)
Heartbeat = request_class(ApiKey.SHARE_GROUP_HEARTBEAT)


def describe(b: Brokers, group: str, topics: dict[str, list[int]] | None = None, port: int | None = None) -> Any:
    G = Req.DescribeShareGroupOffsetsRequestGroup
    asked = None if topics is None else [G.DescribeShareGroupOffsetsRequestTopic(topic_name=t, partitions=ps)
                                         for t, ps in topics.items()]
    return b.call(Req[0](groups=[G(group_id=group, topics=asked)]), port)


def share_group(b: Brokers, group: str, port: int | None = None) -> str:
    coordinator_ready(b, port or b.single.port, group)
    resp = b.call(Heartbeat[1](group_id=group, member_id="m1", member_epoch=0, subscribed_topic_names=["any"]),
                  port)
    assert resp.error_code == ErrorCode.NONE, resp
    return group


def topic_denied(b: Brokers) -> Any:
    port, _ = read_denied_topic(b)
    return describe(b, share_group(b, "dsgo-acl", port), {"share-read-denied": [0]}, port)


PRODUCERS: dict[ErrorCode, Producer] = {
    # An empty group id with named topics (Kafka 4.4's answer; all topics asked answer no error).
    ErrorCode.UNKNOWN_SERVER_ERROR: lambda b: describe(b, "", {b.topic("dsgo-one"): [0]}),
    ErrorCode.NOT_COORDINATOR: lambda b: describe(b, "dsgo-any", port=not_coordinator(b)),
    ErrorCode.COORDINATOR_LOAD_IN_PROGRESS: lambda b: describe(b, "dsgo-loading",
                                                               port=loading(b, "dsgo-loading")),
    ErrorCode.COORDINATOR_NOT_AVAILABLE: lambda b: describe(b, "dsgo-any", port=shut_down(b)),
    ErrorCode.GROUP_AUTHORIZATION_FAILED: lambda b: describe(b, "dsgo-denied", port=denied(b)),
    ErrorCode.TOPIC_AUTHORIZATION_FAILED: topic_denied,
    # A partition beyond an existing topic's count (an unknown topic answers start offset -1, no error).
    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION: lambda b: describe(b, share_group(b, "dsgo-unknown"),
                                                             {b.topic("dsgo-one"): [5]}),
}

test_errors = error_path_test(describe_share_group_offsets, PRODUCERS)

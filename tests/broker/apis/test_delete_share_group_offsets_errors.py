"""DeleteShareGroupOffsets: every code of `broker.apis.delete_share_group_offsets.ERRORS`, over a real socket
with our codec."""

from __future__ import annotations

from typing import Any

from broker.apis import delete_share_group_offsets
from protocol import ApiKey, request_class
from protocol.errors import ErrorCode

from .acl_support import denied
from .group_support import coordinator_ready, loading, not_coordinator, shut_down
from .share_support import read_denied_topic
from .support import Brokers, Producer, error_path_test
from .test_alter_share_group_offsets_errors import empty_share_group
from .test_describe_share_group_offsets_errors import share_group

Req = request_class(ApiKey.DELETE_SHARE_GROUP_OFFSETS)
Heartbeat = request_class(ApiKey.SHARE_GROUP_HEARTBEAT)


def delete(b: Brokers, group: str, topic: str = "any", port: int | None = None) -> Any:
    return b.call(Req[0](group_id=group, topics=[Req.DeleteShareGroupOffsetsRequestTopic(topic_name=topic)]), port)


def topic_denied(b: Brokers) -> Any:
    port, _ = read_denied_topic(b)
    return delete(b, empty_share_group(b, "dsgo2-acl", port), "share-read-denied", port)


PRODUCERS: dict[ErrorCode, Producer] = {
    ErrorCode.INVALID_GROUP_ID: lambda b: delete(b, ""),
    ErrorCode.NOT_COORDINATOR: lambda b: delete(b, "dsgo2-any", port=not_coordinator(b)),
    ErrorCode.COORDINATOR_LOAD_IN_PROGRESS: lambda b: delete(b, "dsgo2-loading", port=loading(b, "dsgo2-loading")),
    ErrorCode.COORDINATOR_NOT_AVAILABLE: lambda b: delete(b, "dsgo2-any", port=shut_down(b)),
    ErrorCode.GROUP_ID_NOT_FOUND: lambda b: (coordinator_ready(b, b.single.port, "dsgo2-none"),
                                             delete(b, "dsgo2-none"))[1],
    ErrorCode.NON_EMPTY_GROUP: lambda b: delete(b, share_group(b, "dsgo2-busy")),
    ErrorCode.GROUP_AUTHORIZATION_FAILED: lambda b: delete(b, "dsgo2-denied", port=denied(b)),
    ErrorCode.TOPIC_AUTHORIZATION_FAILED: topic_denied,
    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION: lambda b: delete(b, empty_share_group(b, "dsgo2-unknown"), "no-such-topic"),
}

test_errors = error_path_test(delete_share_group_offsets, PRODUCERS)

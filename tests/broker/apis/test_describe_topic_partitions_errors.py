"""DescribeTopicPartitions: every code of `broker.apis.describe_topic_partitions.ERRORS`, over a real socket with
our codec."""

from __future__ import annotations

from broker.apis import describe_topic_partitions
from protocol import ApiKey, request_class
from protocol.errors import ErrorCode

from .acl_support import denied
from .support import Producer, error_path_test

Req = request_class(ApiKey.DESCRIBE_TOPIC_PARTITIONS)


def describe(*names: str, cursor: tuple[str, int] | None = None) -> object:
    return Req[0](topics=[Req.TopicRequest(name=n) for n in names], response_partition_limit=2000,
                  cursor=None if cursor is None else Req.Cursor(topic_name=cursor[0], partition_index=cursor[1]))


PRODUCERS: dict[ErrorCode, Producer] = {
    # the cursor names a topic the request does not
    ErrorCode.INVALID_REQUEST: lambda b: b.call(describe(b.topic("dtp-a"), cursor=("dtp-elsewhere", 0))),
    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION: lambda b: b.call(describe("dtp-no-such-topic")),
    ErrorCode.INVALID_TOPIC_EXCEPTION: lambda b: b.call(describe("not a valid name!")),
    ErrorCode.TOPIC_AUTHORIZATION_FAILED: lambda b: b.call(describe("dtp-denied"), denied(b)),
}

test_errors = error_path_test(describe_topic_partitions, PRODUCERS)

"""DescribeProducers: every code of `broker.apis.describe_producers.ERRORS`, over a real socket with our codec."""

from __future__ import annotations

from typing import Any

from broker.apis import describe_producers
from protocol import ApiKey, request_class
from protocol.errors import ErrorCode

from .acl_support import denied
from .support import Brokers, Producer, error_path_test

Req = request_class(ApiKey.DESCRIBE_PRODUCERS)


def send(b: Brokers, topic: str, partition: int = 0, port: int | None = None) -> Any:
    return b.call(Req[0](topics=[Req.TopicRequest(name=topic, partition_indexes=[partition])]), port)


PRODUCERS: dict[ErrorCode, Producer] = {
    ErrorCode.INVALID_TOPIC_EXCEPTION: lambda b: send(b, "bad name!"),
    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION: lambda b: send(b, "describe-producers-missing"),
    # the metadata knows the partition, this broker holds no replica of it
    ErrorCode.NOT_LEADER_OR_FOLLOWER: lambda b: send(b, b.led_by_other("describe-producers-on-1"),
                                                     port=b.cluster.ports[0]),
}

PRODUCERS.update({
    ErrorCode.TOPIC_AUTHORIZATION_FAILED: lambda b: send(b, "producers-denied", port=denied(b)),
})

test_errors = error_path_test(describe_producers, PRODUCERS)


def test_a_partition_the_topic_does_not_have_is_unknown(brokers: Brokers) -> None:
    response = send(brokers, brokers.topic("describe-producers-plain"), partition=5)
    assert response.topics[0].partitions[0].error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION

"""DescribeQuorum: every code of `broker.apis.describe_quorum.ERRORS`, over a real socket with our codec; not
enabled outside KRaft mode."""

from __future__ import annotations

import socket

import pytest

from broker.apis import describe_quorum
from protocol import ApiKey, request_class
from protocol.errors import ErrorCode
from tests.broker.wire import recv, send

from .support import Brokers, Producer, error_path_test

Req = request_class(ApiKey.DESCRIBE_QUORUM)


def describe() -> object:
    Topic = Req.TopicData
    return Req[2](topics=[Topic(topic_name="__cluster_metadata",
                                partitions=[Topic.PartitionData(partition_index=0)])])


PRODUCERS: dict[ErrorCode, Producer] = {
    ErrorCode.CLUSTER_AUTHORIZATION_FAILED: lambda b: b.call(describe(), b.kraft_without_controller(False)),
    # sent on to the controller, which has gone
    ErrorCode.REQUEST_TIMED_OUT: lambda b: b.call(describe(), b.kraft_without_controller()),
}

test_errors = error_path_test(describe_quorum, PRODUCERS)


def test_a_zookeeper_mode_broker_does_not_enable_it(brokers: Brokers) -> None:
    with socket.create_connection(("127.0.0.1", brokers.single.port), timeout=10) as sock:
        send(sock, describe(), 1)
        with pytest.raises((ConnectionError, OSError, EOFError)):
            recv(sock, ApiKey.DESCRIBE_QUORUM, 2)

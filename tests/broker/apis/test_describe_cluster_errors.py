"""DescribeCluster: every code of `broker.apis.describe_cluster.ERRORS`, over a real socket with our codec."""

from __future__ import annotations

from broker.apis import describe_cluster
from protocol import ApiKey, request_class
from protocol.errors import ErrorCode

from .support import Producer, error_path_test

Req = request_class(ApiKey.DESCRIBE_CLUSTER)
CONTROLLERS = 2  # KRaft controller endpoints: none in ZooKeeper mode

PRODUCERS: dict[ErrorCode, Producer] = {
    ErrorCode.UNSUPPORTED_ENDPOINT_TYPE: lambda b: b.call(Req[1](include_cluster_authorized_operations=False,
                                                                 endpoint_type=CONTROLLERS)),
}

test_errors = error_path_test(describe_cluster, PRODUCERS)

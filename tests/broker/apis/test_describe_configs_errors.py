"""DescribeConfigs: every code of `broker.apis.describe_configs.ERRORS`, over a real socket with our codec."""

from __future__ import annotations

from typing import Any

from broker.apis import describe_configs
from protocol import ApiKey, request_class
from protocol.errors import ErrorCode

from .acl_support import denied
from .support import Brokers, Producer, error_path_test

Req = request_class(ApiKey.DESCRIBE_CONFIGS)
TOPIC, BROKER = 2, 4


def send(b: Brokers, resource_type: int, name: str) -> Any:
    return b.call(Req[4](resources=[Req.DescribeConfigsResource(
        resource_type=resource_type, resource_name=name, configuration_keys=None)],
        include_synonyms=False, include_documentation=False))


PRODUCERS: dict[ErrorCode, Producer] = {
    ErrorCode.INVALID_TOPIC_EXCEPTION: lambda b: send(b, TOPIC, "bad name!"),
    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION: lambda b: send(b, TOPIC, "describe-missing"),
    ErrorCode.INVALID_REQUEST: lambda b: send(b, BROKER, "not-a-number"),
}

def describe_raw(b: Brokers, resource_type: int, name: str) -> Any:
    return b.call(Req[4](resources=[Req.DescribeConfigsResource(
        resource_type=resource_type, resource_name=name, configuration_keys=None)],
        include_synonyms=False, include_documentation=False), denied(b))

PRODUCERS.update({
    ErrorCode.TOPIC_AUTHORIZATION_FAILED: lambda b: describe_raw(b, TOPIC, "describe-denied"),
    ErrorCode.CLUSTER_AUTHORIZATION_FAILED: lambda b: describe_raw(b, BROKER, ""),
})

test_errors = error_path_test(describe_configs, PRODUCERS)

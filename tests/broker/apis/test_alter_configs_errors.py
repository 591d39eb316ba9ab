"""AlterConfigs: every code of `broker.apis.alter_configs.ERRORS`, over a real socket with our codec."""

from __future__ import annotations

from typing import Any

from broker.apis import alter_configs
from protocol import ApiKey, request_class
from protocol.errors import ErrorCode

from .acl_support import denied
from .support import Brokers, Producer, error_path_test

Req = request_class(ApiKey.ALTER_CONFIGS)
R = Req.AlterConfigsResource
TOPIC = 2


def send(b: Brokers, *resources: tuple[str, dict[str, str]]) -> Any:
    return b.call(Req[2](resources=[R(resource_type=TOPIC, resource_name=name, configs=[
        R.AlterableConfig(name=k, value=v) for k, v in configs.items()]) for name, configs in resources],
        validate_only=False))


PRODUCERS: dict[ErrorCode, Producer] = {
    ErrorCode.INVALID_REQUEST: lambda b: send(b, (b.topic("alter-plain"), {}), ("alter-plain", {})),
    ErrorCode.INVALID_CONFIG: lambda b: send(b, (b.topic("alter-plain"), {"retention.ms": "soon"})),
    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION: lambda b: send(b, ("alter-missing", {"retention.ms": "1000"})),
    # 10,001 configs over two resources: a record each in Kafka's controller, over its 10,000 per operation
    ErrorCode.POLICY_VIOLATION: lambda b: send(b, (b.topic("alter-plain"), {f"k{i}": "1" for i in range(5_000)}),
                                               ("alter-missing", {f"k{i}": "1" for i in range(5_001)})),
}

def alter_raw(b: Brokers, resource_type: int, name: str) -> Any:
    return b.call(Req[2](resources=[R(resource_type=resource_type, resource_name=name, configs=[
        R.AlterableConfig(name="retention.ms", value="1000")])], validate_only=False), denied(b))

PRODUCERS.update({
    ErrorCode.TOPIC_AUTHORIZATION_FAILED: lambda b: alter_raw(b, TOPIC, "alter-denied"),
    ErrorCode.CLUSTER_AUTHORIZATION_FAILED: lambda b: alter_raw(b, 4, ""),
    # A KRaft broker sets the cluster default on the controller, which has gone.
    ErrorCode.REQUEST_TIMED_OUT: lambda b: b.call(Req[2](resources=[R(resource_type=4, resource_name="", configs=[
        R.AlterableConfig(name="message.max.bytes", value="2000000")])], validate_only=False),
        b.kraft_without_controller()),
})

test_errors = error_path_test(alter_configs, PRODUCERS)

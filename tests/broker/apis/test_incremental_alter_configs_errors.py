"""IncrementalAlterConfigs: every code of `broker.apis.incremental_alter_configs.ERRORS`, over a real socket
with our codec."""

from __future__ import annotations

from typing import Any

from broker.apis import incremental_alter_configs
from protocol import ApiKey, request_class
from protocol.errors import ErrorCode

from .acl_support import denied
from .support import Brokers, Producer, error_path_test

Req = request_class(ApiKey.INCREMENTAL_ALTER_CONFIGS)
R = Req.AlterConfigsResource
TOPIC = 2
SET, APPEND = 0, 2


def send(b: Brokers, name: str, key: str, value: str, op: int = SET) -> Any:
    return b.call(Req[1](resources=[R(resource_type=TOPIC, resource_name=name, configs=[
        R.AlterableConfig(name=key, config_operation=op, value=value)])], validate_only=False))


PRODUCERS: dict[ErrorCode, Producer] = {
    ErrorCode.INVALID_REQUEST: lambda b: send(b, b.topic("incremental-plain"), "retention.ms", "1", op=9),
    ErrorCode.INVALID_CONFIG: lambda b: send(b, b.topic("incremental-plain"), "retention.ms", "1", op=APPEND),
    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION: lambda b: send(b, "incremental-missing", "retention.ms", "1000"),
    # 10,001 configs: a record each in Kafka's controller, over its 10,000 per operation
    ErrorCode.POLICY_VIOLATION: lambda b: b.call(Req[1](resources=[R(
        resource_type=TOPIC, resource_name=b.topic("incremental-plain"), configs=[
            R.AlterableConfig(name=f"retention.ms.{i}", config_operation=SET, value="1") for i in range(10_001)])],
        validate_only=False)),
}

def alter_raw(b: Brokers, resource_type: int, name: str) -> Any:
    return b.call(Req[1](resources=[R(resource_type=resource_type, resource_name=name, configs=[
        R.AlterableConfig(name="retention.ms", config_operation=SET, value="1000")])], validate_only=False),
        denied(b))

PRODUCERS.update({
    ErrorCode.TOPIC_AUTHORIZATION_FAILED: lambda b: alter_raw(b, TOPIC, "alter-denied"),
    ErrorCode.CLUSTER_AUTHORIZATION_FAILED: lambda b: alter_raw(b, 4, ""),
    # A KRaft broker sets the cluster default on the controller, which has gone.
    ErrorCode.REQUEST_TIMED_OUT: lambda b: b.call(Req[1](resources=[R(resource_type=4, resource_name="", configs=[
        R.AlterableConfig(name="message.max.bytes", config_operation=SET, value="2000000")])], validate_only=False),
        b.kraft_without_controller()),
})

test_errors = error_path_test(incremental_alter_configs, PRODUCERS)

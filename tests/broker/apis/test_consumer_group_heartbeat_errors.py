"""ConsumerGroupHeartbeat: every code of `broker.apis.consumer_group_heartbeat.ERRORS`, over a real socket with
our codec."""

from __future__ import annotations

from typing import Any

from broker.apis import consumer_group_heartbeat
from protocol import ApiKey, request_class
from protocol.errors import ErrorCode

from .acl_support import DENIED_TOPIC, denied, partial
from .group_support import ConsumerMember, coordinator_ready, loading, not_coordinator, shut_down
from .support import Brokers, Producer, error_path_test

Req = request_class(ApiKey.CONSUMER_GROUP_HEARTBEAT)


def send(b: Brokers, group: str, member_id: str = "member-1", epoch: int = 0, *, instance: str | None = None,
         assignor: str | None = None, topics: list[str] | None = None, regex: str | None = None,
         port: int | None = None) -> Any:
    joining = epoch == 0
    return b.call(Req[1](group_id=group, member_id=member_id, member_epoch=epoch, instance_id=instance,
                         rebalance_timeout_ms=30000 if joining else -1,
                         subscribed_topic_names=(topics or []) if joining and regex is None else topics,
                         subscribed_topic_regex=regex, server_assignor=assignor,
                         topic_partitions=[] if joining else None), port)


def group_full(b: Brokers) -> Any:
    port = b.other(**{"group.consumer.max.size": "1"}).port
    ConsumerMember.join(b, "cgh-full", "first", port=port)
    return send(b, "cgh-full", "second", port=port)


def unreleased_instance(b: Brokers) -> Any:
    ConsumerMember.join(b, "cgh-unreleased", "first", instance="instance-1")
    return send(b, "cgh-unreleased", "second", instance="instance-1")


def fenced_instance(b: Brokers) -> Any:
    member = ConsumerMember.join(b, "cgh-fenced-instance", "first", instance="instance-1")
    return send(b, member.group, "second", member.epoch, instance="instance-1")


def topic_denied(b: Brokers) -> Any:
    port = partial(b)
    coordinator_ready(b, port, "cgh-acl")
    return send(b, "cgh-acl", topics=[DENIED_TOPIC], port=port)


def ready(b: Brokers, group: str) -> str:
    coordinator_ready(b, b.single.port, group)
    return group


PRODUCERS: dict[ErrorCode, Producer] = {
    ErrorCode.INVALID_REQUEST: lambda b: send(b, "cgh-invalid", member_id=""),
    ErrorCode.UNSUPPORTED_ASSIGNOR: lambda b: send(b, "cgh-assignor", assignor="sticky"),
    ErrorCode.NOT_COORDINATOR: lambda b: send(b, "cgh-any", port=not_coordinator(b)),
    ErrorCode.COORDINATOR_LOAD_IN_PROGRESS: lambda b: send(b, "cgh-loading", port=loading(b, "cgh-loading")),
    ErrorCode.COORDINATOR_NOT_AVAILABLE: lambda b: send(b, "cgh-any", port=shut_down(b)),
    ErrorCode.GROUP_ID_NOT_FOUND: lambda b: send(b, ready(b, "cgh-never-joined"), epoch=1),
    ErrorCode.GROUP_MAX_SIZE_REACHED: group_full,
    ErrorCode.UNKNOWN_MEMBER_ID: lambda b: send(b, ConsumerMember.join(b, "cgh-unknown").group, "nobody", 1),
    ErrorCode.FENCED_MEMBER_EPOCH: lambda b: send(b, ConsumerMember.join(b, "cgh-fenced").group, epoch=7),
    ErrorCode.UNRELEASED_INSTANCE_ID: unreleased_instance,
    ErrorCode.FENCED_INSTANCE_ID: fenced_instance,
    ErrorCode.GROUP_AUTHORIZATION_FAILED: lambda b: send(b, "cgh-denied", port=denied(b)),
    ErrorCode.TOPIC_AUTHORIZATION_FAILED: topic_denied,
    # A lookahead: Python's `re` would take it, RE2 (Kafka's RE2/J) does not.
    ErrorCode.INVALID_REGULAR_EXPRESSION: lambda b: send(b, ready(b, "cgh-regex"), regex="cgh-(?=x).*"),
}

test_errors = error_path_test(consumer_group_heartbeat, PRODUCERS)

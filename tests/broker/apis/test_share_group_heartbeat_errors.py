"""ShareGroupHeartbeat: every code of `broker.apis.share_group_heartbeat.ERRORS`, over a real socket with our
codec."""

from __future__ import annotations

from typing import Any

from broker.apis import share_group_heartbeat
from protocol import ApiKey, request_class
from protocol.errors import ErrorCode

from .acl_support import DENIED_TOPIC, denied, partial
from .group_support import coordinator_ready, loading, not_coordinator, shut_down
from .support import Brokers, Producer, error_path_test

Req = request_class(ApiKey.SHARE_GROUP_HEARTBEAT)


def send(b: Brokers, group: str, member_id: str = "member-1", epoch: int = 0, *, topics: list[str] | None = None,
         port: int | None = None) -> Any:
    names = (topics or ["any-topic"]) if epoch == 0 else topics
    return b.call(Req[1](group_id=group, member_id=member_id, member_epoch=epoch, rack_id=None,
                         subscribed_topic_names=names), port)


def joined(b: Brokers, group: str, member_id: str = "member-1", port: int | None = None) -> Any:
    coordinator_ready(b, port or b.single.port, group)
    resp = send(b, group, member_id, port=port)
    assert resp.error_code == ErrorCode.NONE, resp
    return resp


def group_full(b: Brokers) -> Any:
    port = b.other(**{"group.share.max.size": "10"}).port
    for i in range(10):
        joined(b, "sgh-full", f"member-{i}", port)
    return send(b, "sgh-full", "one-too-many", port=port)


def topic_denied(b: Brokers) -> Any:
    port = partial(b)
    coordinator_ready(b, port, "sgh-acl")
    return send(b, "sgh-acl", topics=[DENIED_TOPIC], port=port)


def ready(b: Brokers, group: str) -> str:
    coordinator_ready(b, b.single.port, group)
    return group


def fenced(b: Brokers) -> Any:
    resp = joined(b, "sgh-fenced")
    return send(b, "sgh-fenced", epoch=resp.member_epoch + 5)


PRODUCERS: dict[ErrorCode, Producer] = {
    ErrorCode.INVALID_REQUEST: lambda b: send(b, "sgh-invalid", member_id=""),
    ErrorCode.NOT_COORDINATOR: lambda b: send(b, "sgh-any", port=not_coordinator(b)),
    ErrorCode.COORDINATOR_LOAD_IN_PROGRESS: lambda b: send(b, "sgh-loading", port=loading(b, "sgh-loading")),
    ErrorCode.COORDINATOR_NOT_AVAILABLE: lambda b: send(b, "sgh-any", port=shut_down(b)),
    ErrorCode.GROUP_ID_NOT_FOUND: lambda b: send(b, ready(b, "sgh-never-joined"), epoch=1),
    ErrorCode.GROUP_MAX_SIZE_REACHED: group_full,
    ErrorCode.UNKNOWN_MEMBER_ID: lambda b: send(b, joined(b, "sgh-unknown") and "sgh-unknown", "nobody", 1),
    ErrorCode.FENCED_MEMBER_EPOCH: fenced,
    ErrorCode.GROUP_AUTHORIZATION_FAILED: lambda b: send(b, "sgh-denied", port=denied(b)),
    ErrorCode.TOPIC_AUTHORIZATION_FAILED: topic_denied,
}

test_errors = error_path_test(share_group_heartbeat, PRODUCERS)

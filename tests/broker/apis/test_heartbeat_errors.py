"""Heartbeat: every code of `broker.apis.heartbeat.ERRORS`, over a real socket with our codec."""

from __future__ import annotations

from typing import Any

from broker.apis import heartbeat
from protocol import ApiKey, request_class
from protocol.errors import ErrorCode

from .acl_support import denied
from .group_support import Member, during_rebalance, not_coordinator, shut_down
from .support import Brokers, Producer, error_path_test

Req = request_class(ApiKey.HEARTBEAT)


def send(b: Brokers, group: str, member_id: str = "m", generation: int = 1, instance: str | None = None,
         port: int | None = None) -> Any:
    return b.call(Req[4](group_id=group, generation_id=generation, member_id=member_id,
                         group_instance_id=instance), port)


def fenced(b: Brokers) -> Any:
    member = Member.join(b, "heartbeat-static", instance="static-1")
    return send(b, member.group, "someone-else", member.generation, instance="static-1")


def illegal_generation(b: Brokers) -> Any:
    member = Member.join(b, "heartbeat-generation")
    return send(b, member.group, member.member_id, member.generation + 1)


PRODUCERS: dict[ErrorCode, Producer] = {
    ErrorCode.INVALID_GROUP_ID: lambda b: send(b, ""),
    ErrorCode.NOT_COORDINATOR: lambda b: send(b, "heartbeat-any", port=not_coordinator(b)),
    ErrorCode.COORDINATOR_NOT_AVAILABLE: lambda b: send(b, "heartbeat-any", port=shut_down(b)),
    ErrorCode.UNKNOWN_MEMBER_ID: lambda b: send(b, Member.join(b, "heartbeat-unknown").group, "nobody"),
    ErrorCode.FENCED_INSTANCE_ID: fenced,
    ErrorCode.ILLEGAL_GENERATION: illegal_generation,
    ErrorCode.REBALANCE_IN_PROGRESS: lambda b: during_rebalance(
        b, "heartbeat-rebalance", lambda m: send(b, m.group, m.member_id, m.generation)),
}

PRODUCERS.update({
    ErrorCode.GROUP_AUTHORIZATION_FAILED: lambda b: send(b, "heartbeat-denied", port=denied(b)),
})

test_errors = error_path_test(heartbeat, PRODUCERS)

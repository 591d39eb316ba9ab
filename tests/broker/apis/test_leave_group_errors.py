"""LeaveGroup: every code of `broker.apis.leave_group.ERRORS`, over a real socket with our codec."""

from __future__ import annotations

from typing import Any

from broker.apis import leave_group
from protocol import ApiKey, request_class
from protocol.errors import ErrorCode

from .acl_support import denied
from .group_support import Member, loading, not_coordinator, shut_down
from .support import Brokers, Producer, error_path_test

Req = request_class(ApiKey.LEAVE_GROUP)


def send(b: Brokers, group: str, member_id: str = "m", instance: str | None = None, port: int | None = None) -> Any:
    return b.call(Req[4](group_id=group, members=[Req.MemberIdentity(member_id=member_id,
                                                                     group_instance_id=instance)]), port)


PRODUCERS: dict[ErrorCode, Producer] = {
    ErrorCode.INVALID_GROUP_ID: lambda b: send(b, ""),
    ErrorCode.NOT_COORDINATOR: lambda b: send(b, "leave-any", port=not_coordinator(b)),
    ErrorCode.COORDINATOR_LOAD_IN_PROGRESS: lambda b: send(b, "leave-loading", port=loading(b, "leave-loading")),
    ErrorCode.COORDINATOR_NOT_AVAILABLE: lambda b: send(b, "leave-any", port=shut_down(b)),
    ErrorCode.UNKNOWN_MEMBER_ID: lambda b: send(b, Member.join(b, "leave-unknown").group, "nobody"),
    ErrorCode.FENCED_INSTANCE_ID: lambda b: send(b, Member.join(b, "leave-static", instance="static-1").group,
                                                 "someone-else", instance="static-1"),
}

PRODUCERS.update({
    ErrorCode.GROUP_AUTHORIZATION_FAILED: lambda b: send(b, "leave-denied", port=denied(b)),
})

test_errors = error_path_test(leave_group, PRODUCERS)

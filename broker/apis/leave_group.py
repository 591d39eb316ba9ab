"""LeaveGroup (key 13), versions 0–5.

v0–v2 remove one member (by member id); v3+ remove a batch of members, each by member id or by
group.instance.id (static members), each with its own error code. The group rebalances.
"""

from __future__ import annotations

from typing import Any

from broker.apis.base import RequestContext, response_for, response_type
from broker.group.results import LeaveMember

API_KEY = 13
MIN_VERSION = 0
MAX_VERSION = 5


async def handle(ctx: RequestContext, request: Any) -> Any:
    v = request.API_VERSION
    coordinator = ctx.server.group_coordinator.coordinator
    if v >= 3:
        members = [LeaveMember(m.member_id, m.group_instance_id) for m in request.members]
    else:
        members = [LeaveMember(request.member_id)]
    result = await coordinator.leave_group(request.group_id, members)
    if v < 3:
        error = result.error_code or (result.members[0].error_code if result.members else 0)
        return response_for(request, throttle_time_ms=0, error_code=error)
    Resp = response_type(request)
    return response_for(request, throttle_time_ms=0, error_code=result.error_code, members=[
        Resp.MemberResponse(member_id=m.member_id, group_instance_id=m.group_instance_id, error_code=m.error_code)
        for m in result.members])

"""JoinGroup (key 11), versions 0–9 — classic consumer groups.

Delegates to the group coordinator (`broker.group`): generations, rebalance and session timeouts,
leader election and protocol choice by vote, static membership (v5+, group.instance.id),
MEMBER_ID_REQUIRED on a first join with an empty member id (v4+, KIP-394), skip_assignment for a
rejoining static leader (v9+, KIP-814), `group.initial.rebalance.delay.ms` for a new group.
The answer comes when the rebalance's join phase completes (the request waits).
"""

from __future__ import annotations

from typing import Any

from broker.apis.base import RequestContext, response_for, response_type

API_KEY = 11
MIN_VERSION = 0
MAX_VERSION = 9


async def handle(ctx: RequestContext, request: Any) -> Any:
    v = request.API_VERSION
    coordinator = ctx.server.group_coordinator.coordinator
    result = await coordinator.join_group(
        request.group_id, request.member_id, request.group_instance_id if v >= 5 else None,
        ctx.client_id or "", f"/{ctx.client_host}",
        request.rebalance_timeout_ms if v >= 1 else request.session_timeout_ms, request.session_timeout_ms,
        request.protocol_type, [(p.name, bytes(p.metadata)) for p in request.protocols], api_version=v)
    Resp = response_type(request)
    members = [Resp.JoinGroupResponseMember(member_id=m.member_id, group_instance_id=m.group_instance_id,
                                            metadata=m.metadata) for m in result.members]
    return response_for(
        request, throttle_time_ms=0, error_code=result.error_code, generation_id=result.generation_id,
        protocol_type=result.protocol_type, protocol_name=result.protocol_name if v >= 7 else
        (result.protocol_name or ""), leader=result.leader, skip_assignment=result.skip_assignment,
        member_id=result.member_id, members=members)

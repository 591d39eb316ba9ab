"""Heartbeat (key 12), versions 0–4.

Keeps a member's session alive; REBALANCE_IN_PROGRESS tells it to rejoin, ILLEGAL_GENERATION /
UNKNOWN_MEMBER_ID / FENCED_INSTANCE_ID (v3+) that it is out of the group.
"""

from __future__ import annotations

from typing import Any

from broker.apis.base import RequestContext, response_for

API_KEY = 12
MIN_VERSION = 0
MAX_VERSION = 4


async def handle(ctx: RequestContext, request: Any) -> Any:
    coordinator = ctx.server.group_coordinator.coordinator
    error = await coordinator.heartbeat(request.group_id, request.member_id,
                                        request.group_instance_id if request.API_VERSION >= 3 else None,
                                        request.generation_id)
    return response_for(request, throttle_time_ms=0, error_code=error)

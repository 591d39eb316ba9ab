"""ListGroups (key 16), versions 0–5.

The groups this broker coordinates, with protocol type, state (v4+, filterable by `states_filter`)
and type (v5+, always "classic", filterable by `types_filter`).
"""

from __future__ import annotations

from typing import Any

from broker.apis.base import RequestContext, response_for, response_type

API_KEY = 16
MIN_VERSION = 0
MAX_VERSION = 5


async def handle(ctx: RequestContext, request: Any) -> Any:
    v = request.API_VERSION
    coordinator = ctx.server.group_coordinator.coordinator
    result = await coordinator.list_groups(request.states_filter if v >= 4 else None,
                                           request.types_filter if v >= 5 else None)
    Resp = response_type(request)
    return response_for(request, throttle_time_ms=0, error_code=result.error_code, groups=[
        Resp.ListedGroup(group_id=g.group_id, protocol_type=g.protocol_type, group_state=g.group_state,
                         group_type=g.group_type) for g in result.groups])

"""DeleteGroups (key 42), versions 0–2.

Deletes empty groups and their offsets (tombstones in `__consumer_offsets`); NON_EMPTY_GROUP while
members remain, GROUP_ID_NOT_FOUND for unknown groups, NOT_COORDINATOR for groups coordinated elsewhere.
"""

from __future__ import annotations

from typing import Any

from broker.apis.base import RequestContext, response_for, response_type

API_KEY = 42
MIN_VERSION = 0
MAX_VERSION = 2


async def handle(ctx: RequestContext, request: Any) -> Any:
    coordinator = ctx.server.group_coordinator.coordinator
    results = await coordinator.delete_groups(list(request.groups_names))
    Resp = response_type(request)
    return response_for(request, throttle_time_ms=0, results=[
        Resp.DeletableGroupResult(group_id=g, error_code=results.get(g, 0)) for g in request.groups_names])

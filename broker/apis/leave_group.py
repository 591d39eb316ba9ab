"""LeaveGroup (key 13), versions 0–5.

v0–v2 remove one member (by member id); v3+ remove a batch of members, each by member id or by
group.instance.id (static members), each with its own error code. The group rebalances.
"""

from __future__ import annotations

from typing import Any

from broker.apis.base import RequestContext
from broker.coordinator.group import api as group_api

API_KEY = 13
MIN_VERSION = 0
MAX_VERSION = 5


async def handle(ctx: RequestContext, request: Any) -> Any:
    coordinator = ctx.server.group_coordinator.coordinator
    return await group_api.leave_group(coordinator, request, request.API_VERSION)

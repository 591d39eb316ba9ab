"""ListGroups (key 16), versions 0–5.

The groups this broker coordinates, with protocol type, state (v4+, filterable by `states_filter`)
and type (v5+, always "classic", filterable by `types_filter`).
"""

from __future__ import annotations

from typing import Any

from broker.apis.base import RequestContext
from broker.coordinator.group import api as group_api

API_KEY = 16
MIN_VERSION = 0
MAX_VERSION = 5


async def handle(ctx: RequestContext, request: Any) -> Any:
    coordinator = ctx.server.group_coordinator.coordinator
    return await group_api.list_groups(coordinator, request, request.API_VERSION)

"""DeleteGroups (key 42), versions 0–2.

Deletes empty groups and their offsets (tombstones in `__consumer_offsets`); NON_EMPTY_GROUP while
members remain, GROUP_ID_NOT_FOUND for unknown groups, NOT_COORDINATOR for groups coordinated elsewhere.
"""

from __future__ import annotations

from typing import Any

from broker.apis.base import RequestContext
from broker.coordinator.group import api as group_api

API_KEY = 42
MIN_VERSION = 0
MAX_VERSION = 2


async def handle(ctx: RequestContext, request: Any) -> Any:
    coordinator = ctx.server.group_coordinator.coordinator
    return await group_api.delete_groups(coordinator, request, request.API_VERSION)

"""OffsetDelete (key 47), version 0.

Deletes a group's committed offsets for the given partitions, unless the group is actively subscribed
to the topic (GROUP_SUBSCRIBED_TO_TOPIC per partition); unknown group GROUP_ID_NOT_FOUND.
"""

from __future__ import annotations

from typing import Any

from broker.apis.base import RequestContext
from broker.coordinator.group import api as group_api

API_KEY = 47
MIN_VERSION = 0
MAX_VERSION = 0


async def handle(ctx: RequestContext, request: Any) -> Any:
    coordinator = ctx.server.group_coordinator.coordinator
    return await group_api.offset_delete(coordinator, request, request.API_VERSION)

"""ListGroups (key 16), versions 0–5.

The groups this broker coordinates, with protocol type, state (v4+, filterable by `states_filter`)
and type (v5+, always "classic", filterable by `types_filter`). COORDINATOR_LOAD_IN_PROGRESS (with the groups
known) while a coordinator partition loads; COORDINATOR_NOT_AVAILABLE once the coordinator has shut down.
"""

from __future__ import annotations

from typing import Any

from broker.apis.base import RequestContext
from broker.coordinator.group import api as group_api
from protocol.errors import ErrorCode

API_KEY = 16
MIN_VERSION = 0
MAX_VERSION = 5
ERRORS: tuple[ErrorCode, ...] = (
    ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, ErrorCode.COORDINATOR_NOT_AVAILABLE,
)


async def handle(ctx: RequestContext, request: Any) -> Any:
    coordinator = ctx.server.group_coordinator.coordinator
    return await group_api.list_groups(coordinator, request, request.API_VERSION)

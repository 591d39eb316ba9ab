"""LeaveGroup (key 13), versions 0–5.

v0–v2 remove one member (by member id); v3+ remove a batch of members, each by member id or by
group.instance.id (static members), each with its own error code (UNKNOWN_MEMBER_ID, FENCED_INSTANCE_ID).
The group rebalances. INVALID_GROUP_ID, NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE
for the whole request, as every group API.
"""

from __future__ import annotations

from typing import Any

from broker.apis.base import RequestContext
from broker.coordinator.group import api as group_api
from protocol.errors import ErrorCode

API_KEY = 13
MIN_VERSION = 0
MAX_VERSION = 5
ERRORS: tuple[ErrorCode, ...] = (
    ErrorCode.INVALID_GROUP_ID, ErrorCode.NOT_COORDINATOR, ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
    ErrorCode.COORDINATOR_NOT_AVAILABLE, ErrorCode.UNKNOWN_MEMBER_ID, ErrorCode.FENCED_INSTANCE_ID,
)


async def handle(ctx: RequestContext, request: Any) -> Any:
    coordinator = ctx.server.group_coordinator.coordinator
    return await group_api.leave_group(coordinator, request, request.API_VERSION)

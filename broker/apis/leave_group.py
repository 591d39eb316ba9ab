"""LeaveGroup (key 13), versions 0–5.

v0–v2 remove one member (by member id); v3+ remove a batch of members, each by member id or by
group.instance.id (static members), each with its own error code (UNKNOWN_MEMBER_ID, FENCED_INSTANCE_ID).
The group rebalances (a KIP-848 consumer group's classic member: its group epoch moves). INVALID_GROUP_ID,
NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE
for the whole request, as every group API.
With an authorizer: READ on the group, else GROUP_AUTHORIZATION_FAILED (Kafka).
"""

from __future__ import annotations

from typing import Any

from broker.apis.base import RequestContext, response_for
from broker.coordinator.group import api as group_api
from broker.security.acl import AclOperation, ResourceType
from protocol.errors import ErrorCode

API_KEY = 13
MIN_VERSION = 0
MAX_VERSION = 5
ERRORS: tuple[ErrorCode, ...] = (
    ErrorCode.INVALID_GROUP_ID, ErrorCode.NOT_COORDINATOR, ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
    ErrorCode.COORDINATOR_NOT_AVAILABLE, ErrorCode.UNKNOWN_MEMBER_ID, ErrorCode.FENCED_INSTANCE_ID,
    ErrorCode.GROUP_AUTHORIZATION_FAILED,
)


async def handle(ctx: RequestContext, request: Any) -> Any:
    if not ctx.authorize(AclOperation.READ, ResourceType.GROUP, request.group_id):
        return response_for(request, throttle_time_ms=0, error_code=ErrorCode.GROUP_AUTHORIZATION_FAILED,
                            members=[])
    coordinator = ctx.server.group_coordinator.coordinator
    return await group_api.leave_group(coordinator, request, request.API_VERSION)

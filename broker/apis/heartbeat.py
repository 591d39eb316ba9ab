"""Heartbeat (key 12), versions 0–4.

Keeps a member's session alive; REBALANCE_IN_PROGRESS tells it to rejoin, ILLEGAL_GENERATION /
UNKNOWN_MEMBER_ID / FENCED_INSTANCE_ID (v3+) that it is out of the group. INVALID_GROUP_ID for an empty
group id; NOT_COORDINATOR / COORDINATOR_NOT_AVAILABLE as every group API. A group whose partition is loading
answers NONE (the member keeps its session), as Kafka. A classic member of a KIP-848 consumer group hears
REBALANCE_IN_PROGRESS while it must rejoin to reconcile (behind the group epoch, revoking, or partitions freed
for it), and ILLEGAL_GENERATION for a generation other than its member epoch (Kafka 4.x).
With an authorizer: READ on the group, else GROUP_AUTHORIZATION_FAILED (Kafka).
"""

from __future__ import annotations

from typing import Any

from broker.apis.base import RequestContext, response_for
from broker.coordinator.group import api as group_api
from broker.security.acl import AclOperation, ResourceType
from protocol.errors import ErrorCode

API_KEY = 12
MIN_VERSION = 0
MAX_VERSION = 4
ERRORS: tuple[ErrorCode, ...] = (
    ErrorCode.INVALID_GROUP_ID, ErrorCode.NOT_COORDINATOR, ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.UNKNOWN_MEMBER_ID, ErrorCode.FENCED_INSTANCE_ID, ErrorCode.ILLEGAL_GENERATION,
    ErrorCode.REBALANCE_IN_PROGRESS,
    ErrorCode.GROUP_AUTHORIZATION_FAILED,
)


async def handle(ctx: RequestContext, request: Any) -> Any:
    if not ctx.authorize(AclOperation.READ, ResourceType.GROUP, request.group_id):
        return response_for(request, throttle_time_ms=0, error_code=ErrorCode.GROUP_AUTHORIZATION_FAILED)
    coordinator = ctx.server.group_coordinator.coordinator
    return await group_api.heartbeat(coordinator, request, request.API_VERSION)

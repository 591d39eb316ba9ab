"""SyncGroup (key 14), versions 0–5.

The leader sends the assignment; every member of the generation gets its own once the leader's
assignment is stored in `__consumer_offsets` (the request waits). ILLEGAL_GENERATION,
UNKNOWN_MEMBER_ID, REBALANCE_IN_PROGRESS, FENCED_INSTANCE_ID (v3+), INCONSISTENT_GROUP_PROTOCOL
(v5+ protocol type/name checks) as Kafka; INVALID_GROUP_ID, NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE as
every group API, and REBALANCE_IN_PROGRESS while the group's partition is loading (the member rejoins).
A classic member of a KIP-848 consumer group gets the partitions the coordinator assigned it at once, in its
subscription's ConsumerProtocolAssignment version (Kafka 4.x).
With an authorizer: READ on the group, else GROUP_AUTHORIZATION_FAILED (Kafka).
"""

from __future__ import annotations

from typing import Any

from broker.apis.base import RequestContext, response_for
from broker.coordinator.group import api as group_api
from broker.security.acl import AclOperation, ResourceType
from protocol.errors import ErrorCode

API_KEY = 14
MIN_VERSION = 0
MAX_VERSION = 5
ERRORS: tuple[ErrorCode, ...] = (
    ErrorCode.INVALID_GROUP_ID, ErrorCode.NOT_COORDINATOR, ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.UNKNOWN_MEMBER_ID, ErrorCode.FENCED_INSTANCE_ID, ErrorCode.ILLEGAL_GENERATION,
    ErrorCode.INCONSISTENT_GROUP_PROTOCOL, ErrorCode.REBALANCE_IN_PROGRESS,
    ErrorCode.GROUP_AUTHORIZATION_FAILED,
)


async def handle(ctx: RequestContext, request: Any) -> Any:
    if not ctx.authorize(AclOperation.READ, ResourceType.GROUP, request.group_id):
        return response_for(request, throttle_time_ms=0, error_code=ErrorCode.GROUP_AUTHORIZATION_FAILED,
                            protocol_type=None, protocol_name=None, assignment=b"")
    coordinator = ctx.server.group_coordinator.coordinator
    return await group_api.sync_group(coordinator, request, request.API_VERSION)

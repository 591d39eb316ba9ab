"""JoinGroup (key 11), versions 0–9 — classic consumer groups.

Delegates to the group coordinator (`broker.coordinator.group`): generations, rebalance and session timeouts,
leader election and protocol choice by vote, static membership (v5+, group.instance.id),
MEMBER_ID_REQUIRED on a first join with an empty member id (v4+, KIP-394), skip_assignment for a
rejoining static leader (v9+, KIP-814), `group.initial.rebalance.delay.ms` for a new group.
The answer comes when the rebalance's join phase completes (the request waits).
A KIP-848 consumer group with members takes the member as a classic member of it (Kafka 4.x, whatever
`group.consumer.migration.policy`): the coordinator assigns it, the answer comes once stored with its member
epoch as the generation and no leader, and it reconciles by rejoining (broker/coordinator/group/migration.py).
Errors: INVALID_GROUP_ID, NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE as every
group API; INVALID_SESSION_TIMEOUT outside group.min/max.session.timeout.ms; INVALID_REQUEST for strings too
long to store (flexible versions); UNKNOWN_MEMBER_ID, FENCED_INSTANCE_ID, INCONSISTENT_GROUP_PROTOCOL,
GROUP_MAX_SIZE_REACHED (group.max.size), MEMBER_ID_REQUIRED; UNKNOWN_MEMBER_ID too for a share group's id (Kafka).
With an authorizer: READ on the group, else GROUP_AUTHORIZATION_FAILED (Kafka).
"""

from __future__ import annotations

from typing import Any

from broker.apis.base import RequestContext, response_for
from broker.coordinator.group import api as group_api
from broker.security.acl import AclOperation, ResourceType
from protocol.errors import ErrorCode

API_KEY = 11
MIN_VERSION = 0
MAX_VERSION = 9
ERRORS: tuple[ErrorCode, ...] = (
    ErrorCode.INVALID_GROUP_ID, ErrorCode.NOT_COORDINATOR, ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
    ErrorCode.COORDINATOR_NOT_AVAILABLE, ErrorCode.INVALID_SESSION_TIMEOUT, ErrorCode.INVALID_REQUEST,
    ErrorCode.UNKNOWN_MEMBER_ID, ErrorCode.FENCED_INSTANCE_ID, ErrorCode.INCONSISTENT_GROUP_PROTOCOL,
    ErrorCode.GROUP_MAX_SIZE_REACHED, ErrorCode.MEMBER_ID_REQUIRED,
    ErrorCode.GROUP_AUTHORIZATION_FAILED,
)


async def handle(ctx: RequestContext, request: Any) -> Any:
    if not ctx.authorize(AclOperation.READ, ResourceType.GROUP, request.group_id):
        v = request.API_VERSION
        return response_for(request, throttle_time_ms=0, error_code=ErrorCode.GROUP_AUTHORIZATION_FAILED,
                            generation_id=-1, protocol_type=None, protocol_name=None if v >= 7 else "",
                            leader="", skip_assignment=False, member_id="", members=[])
    coordinator = ctx.server.group_coordinator.coordinator
    if coordinator.is_share_group(request.group_id):
        # Kafka: a share group is not a classic group; the joining member hears UNKNOWN_MEMBER_ID.
        v = request.API_VERSION
        return response_for(request, throttle_time_ms=0, error_code=ErrorCode.UNKNOWN_MEMBER_ID, generation_id=-1,
                            protocol_type=None, protocol_name=None if v >= 7 else "", leader="",
                            skip_assignment=False, member_id=request.member_id, members=[])
    return await group_api.join_group(coordinator, request, request.API_VERSION, ctx.client_id or "",
                                       f"/{ctx.client_host}")

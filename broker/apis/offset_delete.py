"""OffsetDelete (key 47), version 0.

Deletes a group's committed offsets for the given partitions, unless the group is actively subscribed
to the topic (GROUP_SUBSCRIBED_TO_TOPIC per partition); unknown group GROUP_ID_NOT_FOUND; a group with members
and a protocol type other than "consumer" NON_EMPTY_GROUP; INVALID_GROUP_ID, NOT_COORDINATOR,
COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE as every group API.
With an authorizer (Kafka): DELETE on the group (else GROUP_AUTHORIZATION_FAILED), READ on each topic
(else TOPIC_AUTHORIZATION_FAILED for its partitions).
"""

from __future__ import annotations

from typing import Any

from broker.apis.base import RequestContext, response_for
from broker.coordinator.group import api as group_api
from broker.security.acl import AclOperation, ResourceType
from protocol.errors import ErrorCode

API_KEY = 47
MIN_VERSION = 0
MAX_VERSION = 0
ERRORS: tuple[ErrorCode, ...] = (
    ErrorCode.INVALID_GROUP_ID, ErrorCode.NOT_COORDINATOR, ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
    ErrorCode.COORDINATOR_NOT_AVAILABLE, ErrorCode.GROUP_ID_NOT_FOUND, ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC,
    ErrorCode.NON_EMPTY_GROUP,
    ErrorCode.GROUP_AUTHORIZATION_FAILED, ErrorCode.TOPIC_AUTHORIZATION_FAILED,
)


async def handle(ctx: RequestContext, request: Any) -> Any:
    coordinator = ctx.server.group_coordinator.coordinator
    if not ctx.authorize(AclOperation.DELETE, ResourceType.GROUP, request.group_id):
        return response_for(request, error_code=ErrorCode.GROUP_AUTHORIZATION_FAILED, throttle_time_ms=0, topics=[])
    allowed = ctx.filter_authorized(AclOperation.READ, ResourceType.TOPIC, (t.name for t in request.topics or []))
    return await group_api.offset_delete(
        coordinator, request, request.API_VERSION,
        lambda topic: ErrorCode.NONE if topic in allowed else ErrorCode.TOPIC_AUTHORIZATION_FAILED)

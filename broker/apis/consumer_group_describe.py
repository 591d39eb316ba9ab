"""ConsumerGroupDescribe (key 69), version 0 — KIP-848 consumer groups.

Per group: state (Empty, Assigning, Reconciling, Stable), group epoch, target assignment epoch, the assignor
in use, and each member's ids, rack, epoch, client, subscription, current and target assignment (topic ids
with their names). Per group errors, as Kafka: INVALID_GROUP_ID (an empty id), NOT_COORDINATOR,
COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE, GROUP_ID_NOT_FOUND (no group, or a classic one).
With an authorizer: DESCRIBE on each group, else GROUP_AUTHORIZATION_FAILED for it; authorized operations
(when asked) are the principal's.
"""

from __future__ import annotations

from typing import Any

from broker.apis.base import RequestContext
from broker.coordinator.group import api as group_api
from broker.security.acl import AclOperation, ResourceType
from protocol.errors import ErrorCode

API_KEY = 69
MIN_VERSION = 0
MAX_VERSION = 0
ERRORS: tuple[ErrorCode, ...] = (
    ErrorCode.INVALID_GROUP_ID, ErrorCode.NOT_COORDINATOR, ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
    ErrorCode.COORDINATOR_NOT_AVAILABLE, ErrorCode.GROUP_ID_NOT_FOUND,
    ErrorCode.GROUP_AUTHORIZATION_FAILED,
)


async def handle(ctx: RequestContext, request: Any) -> Any:
    coordinator = ctx.server.group_coordinator.coordinator
    return await group_api.consumer_group_describe(
        coordinator, request, request.API_VERSION,
        lambda group: ErrorCode.NONE if ctx.authorize(AclOperation.DESCRIBE, ResourceType.GROUP, group)
        else ErrorCode.GROUP_AUTHORIZATION_FAILED,
        lambda group: ctx.authorized_operations(ResourceType.GROUP, group))

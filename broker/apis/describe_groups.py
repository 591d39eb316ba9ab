"""DescribeGroups (key 15), versions 0–5.

State, protocol type and chosen protocol, and members (id, group.instance.id v4+, client id/host,
metadata and assignment bytes) of each group; unknown groups are described as Dead with no members,
as Kafka does. Per group: INVALID_GROUP_ID, NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS,
COORDINATOR_NOT_AVAILABLE, as every group API. Gaps: authorized operations are not computed.
With an authorizer (Kafka): DESCRIBE on each group, else GROUP_AUTHORIZATION_FAILED for it;
`authorized_operations` (v3+) are the principal's.
"""

from __future__ import annotations

from typing import Any

from broker.apis.base import RequestContext
from broker.coordinator.group import api as group_api
from broker.security.acl import AclOperation, ResourceType
from protocol.errors import ErrorCode

API_KEY = 15
MIN_VERSION = 0
MAX_VERSION = 5
ERRORS: tuple[ErrorCode, ...] = (
    ErrorCode.INVALID_GROUP_ID, ErrorCode.NOT_COORDINATOR, ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
    ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.GROUP_AUTHORIZATION_FAILED,
)


async def handle(ctx: RequestContext, request: Any) -> Any:
    coordinator = ctx.server.group_coordinator.coordinator
    return await group_api.describe_groups(
        coordinator, request, request.API_VERSION,
        lambda group: ErrorCode.NONE if ctx.authorize(AclOperation.DESCRIBE, ResourceType.GROUP, group)
        else ErrorCode.GROUP_AUTHORIZATION_FAILED,
        lambda group: ctx.authorized_operations(ResourceType.GROUP, group))

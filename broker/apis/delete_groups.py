"""DeleteGroups (key 42), versions 0–2.

Deletes empty groups and their offsets (tombstones in `__consumer_offsets`); NON_EMPTY_GROUP while
members remain, GROUP_ID_NOT_FOUND for unknown groups, NOT_COORDINATOR for groups coordinated elsewhere;
INVALID_GROUP_ID, COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE as every group API.
With an authorizer (Kafka): DELETE on each group, else GROUP_AUTHORIZATION_FAILED for it.
"""

from __future__ import annotations

from typing import Any

from broker.apis.base import RequestContext
from broker.coordinator.group import api as group_api
from broker.security.acl import AclOperation, ResourceType
from protocol.errors import ErrorCode

API_KEY = 42
MIN_VERSION = 0
MAX_VERSION = 2
ERRORS: tuple[ErrorCode, ...] = (
    ErrorCode.INVALID_GROUP_ID, ErrorCode.NOT_COORDINATOR, ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
    ErrorCode.COORDINATOR_NOT_AVAILABLE, ErrorCode.GROUP_ID_NOT_FOUND, ErrorCode.NON_EMPTY_GROUP,
    ErrorCode.GROUP_AUTHORIZATION_FAILED,
)


async def handle(ctx: RequestContext, request: Any) -> Any:
    coordinator = ctx.server.group_coordinator.coordinator
    return await group_api.delete_groups(
        coordinator, request, request.API_VERSION,
        lambda group: ErrorCode.NONE if ctx.authorize(AclOperation.DELETE, ResourceType.GROUP, group)
        else ErrorCode.GROUP_AUTHORIZATION_FAILED)

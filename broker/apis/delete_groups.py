"""DeleteGroups (key 42), versions 0–2.

Deletes empty groups and their offsets (tombstones in `__consumer_offsets`), share groups (KIP-932) with the
share-partition state of every partition the group coordinator initialized, through the persister (a failure:
COORDINATOR_NOT_AVAILABLE); NON_EMPTY_GROUP while members remain, GROUP_ID_NOT_FOUND for
unknown groups, NOT_COORDINATOR for groups coordinated elsewhere;
INVALID_GROUP_ID, COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE as every group API.
With an authorizer (Kafka): DELETE on each group, else GROUP_AUTHORIZATION_FAILED for it.
"""

from __future__ import annotations

from typing import Any

from broker.apis.base import RequestContext
from broker.coordinator.group import api as group_api
from broker.security.acl import AclOperation, ResourceType
from broker.share.manager import share_partition_manager
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

    def refusal(group: str) -> int:
        return ErrorCode.NONE if ctx.authorize(AclOperation.DELETE, ResourceType.GROUP, group) \
            else ErrorCode.GROUP_AUTHORIZATION_FAILED
    # KIP-932 share groups are the share-group half of the coordinator's (share_requests.py).
    shared = {g: await _delete_share_group(ctx, coordinator, g) for g in dict.fromkeys(request.groups_names or [])
              if g in coordinator.share_groups and not coordinator.manager.partition_error(g) and not refusal(g)}
    response = await group_api.delete_groups(coordinator, request, request.API_VERSION, refusal)
    for result in response.results:
        if result.group_id in shared:
            result.error_code = shared[result.group_id]
    return response


async def _delete_share_group(ctx: RequestContext, coordinator: Any, group_id: str) -> int:
    error = await coordinator.delete_share_group(group_id)
    if error == ErrorCode.NONE:
        await share_partition_manager(ctx.server).delete_group(group_id)
    return error

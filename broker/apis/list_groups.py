"""ListGroups (key 16), versions 0–5.

The groups this broker coordinates, with protocol type, state (v4+, filterable by `states_filter`)
and type (v5+, "classic", "consumer" or "share", filterable by `types_filter`). A KIP-848 consumer group is listed as
Kafka lists it: protocol type "consumer", its own state (Empty, Assigning, Reconciling, Stable).
COORDINATOR_LOAD_IN_PROGRESS (with the groups known) while a coordinator partition loads;
COORDINATOR_NOT_AVAILABLE once the coordinator has shut down.
With an authorizer (Kafka): all groups with DESCRIBE on the cluster, else those the principal may
DESCRIBE.
"""

from __future__ import annotations

from typing import Any

from broker.apis.base import RequestContext, response_type
from broker.coordinator.group import api as group_api
from broker.security.acl import AclOperation, ResourceType
from protocol.errors import ErrorCode

API_KEY = 16
MIN_VERSION = 0
MAX_VERSION = 5
ERRORS: tuple[ErrorCode, ...] = (
    ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, ErrorCode.COORDINATOR_NOT_AVAILABLE,
)


async def handle(ctx: RequestContext, request: Any) -> Any:
    coordinator = ctx.server.group_coordinator.coordinator
    response = await group_api.list_groups(coordinator, request, request.API_VERSION)
    if response.error_code != ErrorCode.COORDINATOR_NOT_AVAILABLE:
        v = request.API_VERSION
        # KIP-932 share groups are listed with protocol type and group type "share", as Kafka.
        listed = response_type(request).ListedGroup
        response.groups.extend(listed(group_id=g, protocol_type="share", group_state=state, group_type="share")
                               for g, state in coordinator.listed_share_groups(
                                   request.states_filter if v >= 4 else None,
                                   request.types_filter if v >= 5 else None))
    if ctx.server.authorizer is not None and not ctx.authorize_cluster(AclOperation.DESCRIBE):
        # Kafka: without DESCRIBE on the cluster, only the groups the principal may DESCRIBE are listed.
        response.groups = [g for g in response.groups
                           if ctx.authorize(AclOperation.DESCRIBE, ResourceType.GROUP, g.group_id)]
    return response

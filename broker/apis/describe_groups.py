"""DescribeGroups (key 15), versions 0–5.

State, protocol type and chosen protocol, and members (id, group.instance.id v4+, client id/host,
metadata and assignment bytes) of each group; unknown groups are described as Dead with no members,
as Kafka does. Gaps: authorized operations are not computed.
"""

from __future__ import annotations

from typing import Any

from broker.apis.base import RequestContext
from broker.coordinator.group import api as group_api

API_KEY = 15
MIN_VERSION = 0
MAX_VERSION = 5


async def handle(ctx: RequestContext, request: Any) -> Any:
    coordinator = ctx.server.group_coordinator.coordinator
    return await group_api.describe_groups(coordinator, request, request.API_VERSION)

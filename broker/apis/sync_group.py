"""SyncGroup (key 14), versions 0–5.

The leader sends the assignment; every member of the generation gets its own once the leader's
assignment is stored in `__consumer_offsets` (the request waits). ILLEGAL_GENERATION,
UNKNOWN_MEMBER_ID, REBALANCE_IN_PROGRESS, FENCED_INSTANCE_ID (v3+), INCONSISTENT_GROUP_PROTOCOL
(v5+ protocol type/name checks) as Kafka; INVALID_GROUP_ID, NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE as
every group API, and REBALANCE_IN_PROGRESS while the group's partition is loading (the member rejoins).
"""

from __future__ import annotations

from typing import Any

from broker.apis.base import RequestContext
from broker.coordinator.group import api as group_api
from protocol.errors import ErrorCode

API_KEY = 14
MIN_VERSION = 0
MAX_VERSION = 5
ERRORS: tuple[ErrorCode, ...] = (
    ErrorCode.INVALID_GROUP_ID, ErrorCode.NOT_COORDINATOR, ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.UNKNOWN_MEMBER_ID, ErrorCode.FENCED_INSTANCE_ID, ErrorCode.ILLEGAL_GENERATION,
    ErrorCode.INCONSISTENT_GROUP_PROTOCOL, ErrorCode.REBALANCE_IN_PROGRESS,
)


async def handle(ctx: RequestContext, request: Any) -> Any:
    coordinator = ctx.server.group_coordinator.coordinator
    return await group_api.sync_group(coordinator, request, request.API_VERSION)

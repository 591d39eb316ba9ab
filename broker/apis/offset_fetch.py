"""OffsetFetch (key 9), versions 0–9.

A group's committed offsets (with leader epoch v5+ and metadata) for the given partitions, or all of
them (null topics, v2+); unknown partitions answer offset -1. v8+ asks for several groups at once.
`require_stable` (v7+, KIP-447): a partition with a transactional commit still waiting for its
transaction's marker answers UNSTABLE_OFFSET_COMMIT (offset -1); without it the last committed offset.
Errors (per group from v8, for the request in v2-v7, per partition in v0-v1): INVALID_GROUP_ID,
NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS and COORDINATOR_NOT_AVAILABLE, as every group API.
"""

from __future__ import annotations

from typing import Any

from broker.apis.base import RequestContext
from broker.coordinator.group import api as group_api
from protocol.errors import ErrorCode

API_KEY = 9
MIN_VERSION = 0
MAX_VERSION = 9
ERRORS: tuple[ErrorCode, ...] = (
    ErrorCode.INVALID_GROUP_ID, ErrorCode.NOT_COORDINATOR, ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
    ErrorCode.COORDINATOR_NOT_AVAILABLE, ErrorCode.UNSTABLE_OFFSET_COMMIT,
)


async def handle(ctx: RequestContext, request: Any) -> Any:
    coordinator = ctx.server.group_coordinator.coordinator
    return await group_api.offset_fetch(coordinator, request, request.API_VERSION)

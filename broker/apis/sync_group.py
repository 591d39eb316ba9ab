"""SyncGroup (key 14), versions 0–5.

The leader sends the assignment; every member of the generation gets its own once the leader's
assignment is stored in `__consumer_offsets` (the request waits). ILLEGAL_GENERATION,
UNKNOWN_MEMBER_ID, REBALANCE_IN_PROGRESS, FENCED_INSTANCE_ID (v3+), INCONSISTENT_GROUP_PROTOCOL
(v5+ protocol type/name checks) as Kafka.
"""

from __future__ import annotations

from typing import Any

from broker.apis.base import RequestContext, response_for

API_KEY = 14
MIN_VERSION = 0
MAX_VERSION = 5


async def handle(ctx: RequestContext, request: Any) -> Any:
    v = request.API_VERSION
    coordinator = ctx.server.group_coordinator.coordinator
    result = await coordinator.sync_group(
        request.group_id, request.generation_id, request.member_id,
        request.group_instance_id if v >= 3 else None,
        request.protocol_type if v >= 5 else None, request.protocol_name if v >= 5 else None,
        [(a.member_id, bytes(a.assignment)) for a in request.assignments])
    return response_for(request, throttle_time_ms=0, error_code=result.error_code,
                        protocol_type=result.protocol_type, protocol_name=result.protocol_name,
                        assignment=result.assignment)

"""OffsetDelete (key 47), version 0.

Deletes a group's committed offsets for the given partitions, unless the group is actively subscribed
to the topic (GROUP_SUBSCRIBED_TO_TOPIC per partition); unknown group GROUP_ID_NOT_FOUND.
"""

from __future__ import annotations

from typing import Any

from broker.apis.base import RequestContext, response_for, response_type

API_KEY = 47
MIN_VERSION = 0
MAX_VERSION = 0


async def handle(ctx: RequestContext, request: Any) -> Any:
    coordinator = ctx.server.group_coordinator.coordinator
    partitions = [(t.name, p.partition_index) for t in request.topics for p in t.partitions]
    result = await coordinator.delete_offsets(request.group_id, partitions)
    Resp = response_type(request)
    T = Resp.OffsetDeleteResponseTopic
    P = T.OffsetDeleteResponsePartition
    by_topic: dict[str, list] = {}
    for topic, p in partitions:
        by_topic.setdefault(topic, []).append(P(partition_index=p, error_code=result.partitions.get((topic, p), 0)))
    return response_for(request, error_code=result.error_code, throttle_time_ms=0,
                        topics=[T(name=n, partitions=ps) for n, ps in by_topic.items()])

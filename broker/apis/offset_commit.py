"""OffsetCommit (key 8), versions 0–9.

Commits offsets (with leader epoch v6+ and metadata) for a group, checked against its generation and
member (ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID, REBALANCE_IN_PROGRESS, FENCED_INSTANCE_ID v7+);
simple consumers commit with generation -1 and an empty member id. Stored in `__consumer_offsets`
and acknowledged once committed there. Metadata over `offset.metadata.max.bytes`:
OFFSET_METADATA_TOO_LARGE. v2–v4 `retention_time_ms` is honoured.
"""

from __future__ import annotations

from typing import Any

from broker.apis.base import RequestContext, response_for, response_type
from broker.group.results import OffsetCommitEntry

API_KEY = 8
MIN_VERSION = 0
MAX_VERSION = 9


async def handle(ctx: RequestContext, request: Any) -> Any:
    v = request.API_VERSION
    coordinator = ctx.server.group_coordinator.coordinator
    generation = getattr(request, "generation_id_or_member_epoch", getattr(request, "generation_id", -1)) \
        if v >= 1 else -1
    entries = []
    for t in request.topics:
        for p in t.partitions:
            entries.append(OffsetCommitEntry(t.name, p.partition_index, p.committed_offset,
                                             p.committed_leader_epoch if v >= 6 else -1, p.committed_metadata))
    retention = request.retention_time_ms if 2 <= v <= 4 else -1
    results = await coordinator.commit_offsets(
        request.group_id, request.member_id if v >= 1 else "",
        request.group_instance_id if v >= 7 else None, generation, entries, retention)
    Resp = response_type(request)
    TopicResp = Resp.OffsetCommitResponseTopic
    by_topic: dict[str, list] = {}
    for e in entries:
        by_topic.setdefault(e.topic, []).append(TopicResp.OffsetCommitResponsePartition(
            partition_index=e.partition, error_code=results.get((e.topic, e.partition), 0)))
    return response_for(request, throttle_time_ms=0,
                        topics=[TopicResp(name=n, partitions=ps) for n, ps in by_topic.items()])

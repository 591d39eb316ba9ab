"""OffsetFetch (key 9), versions 0–9.

A group's committed offsets (with leader epoch v5+ and metadata) for the given partitions, or all of
them (null topics, v2+); unknown partitions answer offset -1. v8+ asks for several groups at once.
`require_stable` (v7+) is accepted (there are no pending transactional commits).
"""

from __future__ import annotations

from typing import Any

from broker.apis.base import RequestContext, response_for, response_type

API_KEY = 9
MIN_VERSION = 0
MAX_VERSION = 9


async def _fetch(coordinator: Any, group_id: str, topics: Any, require_stable: bool) -> Any:
    partitions = None if topics is None else [(t.name, p) for t in topics for p in t.partition_indexes]
    return await coordinator.fetch_offsets(group_id, partitions, require_stable)


def _by_topic(result: Any) -> dict[str, list]:
    out: dict[str, list] = {}
    for fo in result.partitions:
        out.setdefault(fo.topic, []).append(fo)
    return out


async def handle(ctx: RequestContext, request: Any) -> Any:
    v = request.API_VERSION
    coordinator = ctx.server.group_coordinator.coordinator
    Resp = response_type(request)
    require_stable = bool(request.require_stable) if v >= 7 else False
    if v >= 8:
        groups = []
        G = Resp.OffsetFetchResponseGroup
        T = G.OffsetFetchResponseTopics
        P = T.OffsetFetchResponsePartitions
        for g in request.groups:
            result = await _fetch(coordinator, g.group_id, g.topics, require_stable)
            topics = [T(name=name, partitions=[
                P(partition_index=fo.partition, committed_offset=fo.offset, committed_leader_epoch=fo.leader_epoch,
                  metadata=fo.metadata, error_code=fo.error_code) for fo in fos])
                for name, fos in _by_topic(result).items()]
            groups.append(G(group_id=g.group_id, topics=topics, error_code=result.error_code))
        return response_for(request, throttle_time_ms=0, groups=groups)
    result = await _fetch(coordinator, request.group_id, request.topics, require_stable)
    T = Resp.OffsetFetchResponseTopic
    P = T.OffsetFetchResponsePartition
    topics = []
    for name, fos in _by_topic(result).items():
        topics.append(T(name=name, partitions=[
            P(partition_index=fo.partition, committed_offset=fo.offset, committed_leader_epoch=fo.leader_epoch,
              metadata=fo.metadata,
              # before v2 there is no group-level error: it is repeated in every partition
              error_code=fo.error_code or (result.error_code if v < 2 else 0)) for fo in fos]))
    return response_for(request, throttle_time_ms=0, topics=topics, error_code=result.error_code)

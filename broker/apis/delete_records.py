"""DeleteRecords (key 21), versions 0–2.

Moves each partition's log start offset up to the given offset (-1: the high watermark) on its leader
(`ReplicaManager.delete_records`), deleting whole segments below it, and answers the low watermark: the
lowest log start offset of the leader and of every replica on a live broker. As Kafka's DelayedDeleteRecords,
the answer waits until that low watermark reaches the offset asked for, i.e. until the followers have moved
their log start offset too (they learn the leader's from its fetch responses), or answers REQUEST_TIMED_OUT
at `timeout_ms`. An offset above the high watermark is OFFSET_OUT_OF_RANGE; a partition not led here
NOT_LEADER_OR_FOLLOWER (also when leadership moves while waiting); UNKNOWN_TOPIC_OR_PARTITION when no broker
has it.
With an authorizer (Kafka): DELETE on each topic, else TOPIC_AUTHORIZATION_FAILED for its partitions.
"""

from __future__ import annotations

import asyncio
from typing import Any

from broker.apis.base import RequestContext, response_for, response_type
from broker.security.acl import AclOperation, ResourceType
from broker.server.delayed_delete_records import DeleteRecordsPartitionResult
from protocol.errors import ErrorCode
from storage import TopicPartition

API_KEY = 21
MIN_VERSION = 0
MAX_VERSION = 2
ERRORS: tuple[ErrorCode, ...] = (
    ErrorCode.OFFSET_OUT_OF_RANGE, ErrorCode.NOT_LEADER_OR_FOLLOWER,
    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode.REQUEST_TIMED_OUT,
    ErrorCode.TOPIC_AUTHORIZATION_FAILED,
)


def handle(ctx: RequestContext, request: Any) -> Any:
    offsets = {TopicPartition(t.name, p.partition_index): p.offset for t in request.topics for p in t.partitions}
    refused: dict[TopicPartition, DeleteRecordsPartitionResult] = {}
    if ctx.server.authorizer is not None:
        deletable = ctx.filter_authorized(AclOperation.DELETE, ResourceType.TOPIC, (tp.topic for tp in offsets))
        refused = {tp: DeleteRecordsPartitionResult(ErrorCode.TOPIC_AUTHORIZATION_FAILED) for tp in offsets
                   if tp.topic not in deletable}
        offsets = {tp: o for tp, o in offsets.items() if tp not in refused}
    results = ctx.server.replica_manager.delete_records(request.timeout_ms, offsets)
    if isinstance(results, asyncio.Future):
        async def wait() -> Any:
            return _response(request, {**refused, **await results})
        return wait()
    return _response(request, {**refused, **results})


def _response(request: Any, results: dict[TopicPartition, DeleteRecordsPartitionResult]) -> Any:
    TopicResult = response_type(request).DeleteRecordsTopicResult
    PartResult = TopicResult.DeleteRecordsPartitionResult
    by_topic: dict[str, list[Any]] = {}
    for tp, r in results.items():
        by_topic.setdefault(tp.topic, []).append(
            PartResult(partition_index=tp.partition, low_watermark=r.low_watermark, error_code=r.error))
    return response_for(request, throttle_time_ms=0,
                        topics=[TopicResult(name=name, partitions=parts) for name, parts in by_topic.items()])

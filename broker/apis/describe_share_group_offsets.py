"""DescribeShareGroupOffsets (key 90), versions 0–1 — KIP-932's share-group offsets for admin clients
(`kafka-share-groups.sh --describe`, Admin.listShareGroupOffsets).

Per group, per partition: the share-partition start offset (the first offset not yet acknowledged or
archived) and its leader epoch, read through the share-state persister (ReadShareGroupStateSummary). Topics
null: every partition of the topics the group subscribes to that has state; named topics: those partitions,
start offset -1 where the group has no state yet.
Errors: per group INVALID_GROUP_ID (an empty id), NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS,
COORDINATOR_NOT_AVAILABLE, GROUP_ID_NOT_FOUND (no share group of that id), GROUP_AUTHORIZATION_FAILED
(DESCRIBE on the group, with an authorizer); per partition TOPIC_AUTHORIZATION_FAILED (DESCRIBE on the topic),
UNKNOWN_TOPIC_OR_PARTITION, or the persister's error.
v1 (Kafka 4.2, KIP-1226) adds each partition's Lag: the records from the start offset to the high watermark
not yet acknowledged or archived; -1 where it is unknown.
Gaps: with the in-memory persister (broker/share/persisters.py) only state held on this broker is seen; the lag
is computed only where this broker leads the partition and holds its share partition (else -1).
"""

from __future__ import annotations

import uuid
from typing import Any

from broker.apis.base import RequestContext, response_for, response_type
from broker.security.acl import AclOperation, ResourceType
from broker.share.manager import persister_error_code, share_partition_manager
from broker.share.persister import PersisterError, RecordState
from protocol.errors import ErrorCode
from storage import TopicPartition

API_KEY = 90
MIN_VERSION = 0
MAX_VERSION = 1
ERRORS: tuple[ErrorCode, ...] = (
    ErrorCode.INVALID_GROUP_ID, ErrorCode.NOT_COORDINATOR, ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
    ErrorCode.COORDINATOR_NOT_AVAILABLE, ErrorCode.GROUP_ID_NOT_FOUND, ErrorCode.GROUP_AUTHORIZATION_FAILED,
    ErrorCode.TOPIC_AUTHORIZATION_FAILED, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
)
_ZERO = uuid.UUID(int=0)


async def handle(ctx: RequestContext, request: Any) -> Any:
    Group = response_type(request).DescribeShareGroupOffsetsResponseGroup
    coordinator = ctx.server.group_coordinator.coordinator
    groups = []
    for asked in request.groups or []:
        group_id = asked.group_id
        if not ctx.authorize(AclOperation.DESCRIBE, ResourceType.GROUP, group_id):
            groups.append(Group(group_id=group_id, topics=[], error_code=ErrorCode.GROUP_AUTHORIZATION_FAILED))
            continue
        [(_, code, group)] = await coordinator.share_group_describe([group_id])
        if group is None:
            groups.append(Group(group_id=group_id, topics=[], error_code=code))
            continue
        if asked.topics is None:
            wanted = {name: list(range(count)) for name, (_, count) in sorted(group.subscription_metadata.items())}
        else:
            wanted = {t.topic_name: list(t.partitions or []) for t in asked.topics}
        topics = [await _topic(ctx, Group, group_id, name, partitions, all_topics=asked.topics is None)
                  for name, partitions in wanted.items()]
        groups.append(Group(group_id=group_id, topics=[t for t in topics if t.partitions], error_code=0))
    return response_for(request, throttle_time_ms=0, groups=groups)


async def _topic(ctx: RequestContext, Group: Any, group_id: str, name: str, partitions: list[int], *,
                 all_topics: bool) -> Any:
    Topic = Group.DescribeShareGroupOffsetsResponseTopic
    Partition = Topic.DescribeShareGroupOffsetsResponsePartition
    cache = ctx.server.metadata_cache
    persister = share_partition_manager(ctx.server).persister
    topic_id = cache.topic_id(name)
    allowed = ctx.authorize(AclOperation.DESCRIBE, ResourceType.TOPIC, name)
    out = []
    for p in partitions:
        error, start, epoch = ErrorCode.NONE, -1, -1
        if not allowed:
            error = ErrorCode.TOPIC_AUTHORIZATION_FAILED
        elif topic_id is None or cache.partition(name, p) is None:
            error = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        else:
            try:
                summary = await persister.read_summary(group_id, topic_id.bytes, p, -1)
                start, epoch = summary.start_offset, summary.leader_epoch
            except PersisterError as e:
                error = persister_error_code(e.error_code)
            if all_topics and start < 0 and error == ErrorCode.NONE:
                continue  # no state for this partition yet: not listed when all are asked for
        lag = _lag(ctx, group_id, name, p) if error == ErrorCode.NONE and start >= 0 else -1
        out.append(Partition(partition_index=p, start_offset=start, leader_epoch=epoch, lag=lag, error_code=error))
    return Topic(topic_name=name, topic_id=topic_id or _ZERO, partitions=out)



def _lag(ctx: RequestContext, group_id: str, name: str, p: int) -> int:
    """The high watermark less the start offset and the in-flight records already acknowledged or archived
    (Kafka 4.2's lag), from the share partition this broker holds; -1 without one."""
    tp = TopicPartition(name, p)
    entry = share_partition_manager(ctx.server).partitions.get((group_id, tp))
    partition = ctx.server.replica_manager.partitions.get(tp)
    if entry is None or partition is None or not partition.is_leader:
        return -1
    share = entry.share
    done = sum(1 for o, i in share.records.items() if o >= share.start_offset
               and i.state in (RecordState.ACKNOWLEDGED, RecordState.ARCHIVED))
    return max(0, int(partition.high_watermark) - share.start_offset - done)

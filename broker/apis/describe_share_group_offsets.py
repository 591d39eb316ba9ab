"""DescribeShareGroupOffsets (key 90), versions 0–1 — KIP-932's share-group offsets for admin clients
(`kafka-share-groups.sh --describe`, Admin.listShareGroupOffsets).

Per group, per partition: the share-partition start offset (the first offset not yet acknowledged or
archived) and its leader epoch, read through the share-state persister (ReadShareGroupStateSummary). Topics
null: every partition of the topics the group subscribes to that has state, and the initialized ones; named
topics: those partitions, start offset -1 where the group has no state yet.
As Kafka 4.2-4.4, the group need not exist: the offsets are the share-partition state, so a group id with no
share group (never created, or a classic or consumer group) answers no error, with no topics when all are asked
for and start offset -1 for named partitions; a named topic that does not exist answers the same (start
offset -1, no topic id, no error).
An empty group id is answered as Kafka 4.4 does: no error and no topics when all are asked for,
UNKNOWN_SERVER_ERROR ("The server experienced an unexpected error ...") for named topics.
Errors: per group UNKNOWN_SERVER_ERROR (an empty id with named topics), NOT_COORDINATOR,
COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE, GROUP_AUTHORIZATION_FAILED (DESCRIBE on the group, with
an authorizer); per partition TOPIC_AUTHORIZATION_FAILED (DESCRIBE on the topic), UNKNOWN_TOPIC_OR_PARTITION (a
partition beyond an existing topic's count: Kafka 4.4 leaves that request unanswered), or the persister's error.
v1 (Kafka 4.2, KIP-1226) adds each partition's Lag: the records from the start offset to the high watermark
not yet acknowledged or archived (negative for a start offset above the high watermark, as Kafka 4.4); -1 where
it is unknown (no state, the leader unreachable).
The lag is exact where this broker holds the share partition; elsewhere it is the leader's high watermark
(ListOffsets to it) less the start offset and the share coordinator's delivery-complete count
(ReadShareGroupStateSummary v1).
Gaps: with the in-memory persister (broker/share/persisters.py) only state held on this broker is seen.
"""

from __future__ import annotations

import uuid
from typing import Any

from broker.apis.base import RequestContext, response_for, response_type
from broker.coordinator.share.persister import PersisterError, RecordState, persister_error_code
from broker.network.inter_broker import BrokerConnection, BrokerUnavailable
from broker.security.acl import AclOperation, ResourceType
from broker.share.manager import share_partition_manager
from protocol import ApiKey, request_class
from protocol.errors import ErrorCode
from storage import TopicPartition

API_KEY = 90
MIN_VERSION = 0
MAX_VERSION = 1
ERRORS: tuple[ErrorCode, ...] = (
    ErrorCode.UNKNOWN_SERVER_ERROR, ErrorCode.NOT_COORDINATOR, ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
    ErrorCode.COORDINATOR_NOT_AVAILABLE, ErrorCode.GROUP_AUTHORIZATION_FAILED,
    ErrorCode.TOPIC_AUTHORIZATION_FAILED, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
)
_ZERO = uuid.UUID(int=0)


async def handle(ctx: RequestContext, request: Any) -> Any:
    Group = response_type(request).DescribeShareGroupOffsetsResponseGroup
    coordinator = ctx.server.group_coordinator.coordinator
    groups = []
    lags = _Lags(ctx)
    for asked in request.groups or []:
        group_id = asked.group_id
        if not group_id:
            # Kafka 4.4 does not refuse an empty id: all topics asked answer no error and nothing (no state can
            # exist under it); named topics fail in its share-state read, answered as an unexpected error.
            groups.append(Group(group_id=group_id, topics=[], error_code=0) if asked.topics is None else Group(
                group_id=group_id, topics=[], error_code=ErrorCode.UNKNOWN_SERVER_ERROR,
                error_message="The server experienced an unexpected error when processing the request."))
            continue
        if not ctx.authorize(AclOperation.DESCRIBE, ResourceType.GROUP, group_id):
            groups.append(Group(group_id=group_id, topics=[], error_code=ErrorCode.GROUP_AUTHORIZATION_FAILED))
            continue
        [(_, code, group)] = await coordinator.share_group_describe([group_id])
        if code not in (ErrorCode.NONE, ErrorCode.GROUP_ID_NOT_FOUND):
            groups.append(Group(group_id=group_id, topics=[], error_code=code))
            continue
        if asked.topics is None:
            if group is None:  # no share group: no state, nothing listed (Kafka 4.2+ answers no error)
                groups.append(Group(group_id=group_id, topics=[], error_code=0))
                continue
            # Every partition with state (Kafka: the initialized ones) and of the subscribed topics.
            wanted = {name: list(range(count)) for name, (_, count) in sorted(group.subscription_metadata.items())}
            for tid, v in group.state_metadata.initialized.items():
                name = coordinator.topics_image.name_of(tid)
                if name is not None:
                    wanted[name] = sorted(set(wanted.get(name, [])) | v.partitions)
        else:
            wanted = {t.topic_name: list(t.partitions or []) for t in asked.topics}
        topics = [await _topic(ctx, Group, group_id, name, partitions, all_topics=asked.topics is None,
                               lags=request.API_VERSION >= 1 and lags)
                  for name, partitions in wanted.items()]
        groups.append(Group(group_id=group_id, topics=[t for t in topics if t.partitions], error_code=0))
    lags.close()
    return response_for(request, throttle_time_ms=0, groups=groups)


async def _topic(ctx: RequestContext, Group: Any, group_id: str, name: str, partitions: list[int], *,
                 all_topics: bool, lags: Any) -> Any:
    Topic = Group.DescribeShareGroupOffsetsResponseTopic
    Partition = Topic.DescribeShareGroupOffsetsResponsePartition
    cache = ctx.server.metadata_cache
    persister = share_partition_manager(ctx.server).persister
    topic_id = cache.topic_id(name)
    allowed = ctx.authorize(AclOperation.DESCRIBE, ResourceType.TOPIC, name)
    out = []
    for p in partitions:
        error, start, epoch, done = ErrorCode.NONE, -1, -1, -1
        if not allowed:
            error = ErrorCode.TOPIC_AUTHORIZATION_FAILED
        elif topic_id is None:
            epoch = 0  # Kafka 4.2+: an unknown topic has no state: start offset -1, leader epoch 0, no error
        elif cache.partition(name, p) is None:
            error = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        else:
            try:
                summary = await persister.read_summary(group_id, topic_id.bytes, p, -1)
                start, epoch, done = summary.start_offset, summary.leader_epoch, summary.delivery_complete_count
            except PersisterError as e:
                error = persister_error_code(e.error_code)
            if all_topics and start < 0 and error == ErrorCode.NONE:
                continue  # no state for this partition yet: not listed when all are asked for
        lag = await lags.lag(group_id, TopicPartition(name, p), start, done) if lags and error == ErrorCode.NONE \
            and start >= 0 else -1
        out.append(Partition(partition_index=p, start_offset=start, leader_epoch=epoch, lag=lag, error_code=error))
    return Topic(topic_name=name, topic_id=topic_id or _ZERO, partitions=out)



class _Lags:
    """Kafka 4.2's lag of a share partition: its high watermark less the start offset and the delivery-complete
    count (offsets after the start already acknowledged or archived). From the share partition this broker
    holds when it leads it (exact now), else from the share coordinator's count and the leader's high
    watermark (ListOffsets to it, as Kafka's group coordinator asks); -1 when either is unknown."""

    def __init__(self, ctx: RequestContext) -> None:
        self.ctx = ctx
        self.connections: dict[int, BrokerConnection] = {}

    async def lag(self, group_id: str, tp: TopicPartition, start: int, done: int) -> int:
        server = self.ctx.server
        entry = share_partition_manager(server).partitions.get((group_id, tp))
        partition = server.replica_manager.partitions.get(tp)
        if partition is not None and partition.is_leader:
            if entry is not None:
                share = entry.share
                start = share.start_offset
                done = sum(1 for o, i in share.records.items() if o >= start
                           and i.state in (RecordState.ACKNOWLEDGED, RecordState.ARCHIVED))
            high_watermark = int(partition.high_watermark)
        else:
            high_watermark = await self._remote_high_watermark(tp)
        if done < 0 or high_watermark < 0:
            return -1
        # Negative when the start offset was set above the high watermark (AlterShareGroupOffsets allows it):
        # Kafka 4.4 answers the difference as it is.
        return high_watermark - start - done

    async def _remote_high_watermark(self, tp: TopicPartition) -> int:
        server = self.ctx.server
        pm = server.metadata_cache.partition(tp.topic, tp.partition)
        leader = server.metadata_cache.alive_broker(pm.leader) if pm is not None and pm.leader >= 0 else None
        if leader is None:
            return -1
        conn = self.connections.get(pm.leader)
        if conn is None:
            conn = self.connections[pm.leader] = BrokerConnection(
                leader.host, leader.port, f"broker-{server.broker_id}-share-lag",
                timeout_s=server.config["request.timeout.ms"] / 1000, version_caps={ApiKey.LIST_OFFSETS: 7},
                security=server.inter_broker_security)
        Req = request_class(ApiKey.LIST_OFFSETS)
        T = Req.ListOffsetsTopic
        try:
            asked = [T(name=tp.topic, partitions=[T.ListOffsetsPartition(
                partition_index=tp.partition, current_leader_epoch=-1, timestamp=-1)])]
            resp = await conn.send(lambda v: Req[v](replica_id=-1, isolation_level=0, topics=asked),
                                   ApiKey.LIST_OFFSETS)
        except BrokerUnavailable:
            return -1
        p = resp.topics[0].partitions[0]
        return int(p.offset) if p.error_code == ErrorCode.NONE else -1

    def close(self) -> None:
        for conn in self.connections.values():
            conn.close()

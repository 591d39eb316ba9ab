"""OffsetForLeaderEpoch (key 23), versions 0–4.

For each partition, on its leader: the largest epoch ≤ the requested one that this log knows, and the
end offset of that epoch (the start offset of the next epoch, or the log end offset for the current
epoch) — what a follower (KIP-101/KIP-279) or a consumer (KIP-320, v3+ with replica_id -1) needs to
find where its log diverged. `current_leader_epoch` (v2+) is checked: FENCED_LEADER_EPOCH /
UNKNOWN_LEADER_EPOCH. Unknown epochs answer epoch -1 / offset -1 (UNDEFINED), as Kafka. Only the
leader answers (`Partition.last_offset_for_leader_epoch`), for followers and consumers alike, as Kafka's
broker does; elsewhere NOT_LEADER_OR_FOLLOWER (UNKNOWN_TOPIC_OR_PARTITION when no broker has it).
With an authorizer (Kafka, KIP-320): CLUSTER_ACTION on the cluster (followers), or DESCRIBE on each
topic (consumers), else TOPIC_AUTHORIZATION_FAILED.
"""

from __future__ import annotations

from typing import Any

from broker.apis.base import RequestContext, response_for, response_type
from broker.common.errors import KafkaApiError
from broker.security.acl import AclOperation, ResourceType
from protocol.errors import ErrorCode
from storage import TopicPartition

API_KEY = 23
MIN_VERSION = 0
MAX_VERSION = 4
ERRORS: tuple[ErrorCode, ...] = (
    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode.NOT_LEADER_OR_FOLLOWER,
    ErrorCode.FENCED_LEADER_EPOCH, ErrorCode.UNKNOWN_LEADER_EPOCH,
    ErrorCode.TOPIC_AUTHORIZATION_FAILED,
)


def handle(ctx: RequestContext, request: Any) -> Any:
    v = request.API_VERSION
    rm = ctx.server.replica_manager
    Resp = response_type(request)
    TopicResult = Resp.OffsetForLeaderTopicResult
    PartResult = TopicResult.EpochEndOffset
    topics = []
    refused: set[str] = set()
    if ctx.server.authorizer is not None and not ctx.authorize_cluster(AclOperation.CLUSTER_ACTION):
        names = [t.topic for t in request.topics]
        refused = set(names) - ctx.filter_authorized(AclOperation.DESCRIBE, ResourceType.TOPIC, names)
    for topic in request.topics:
        parts = []
        for p in topic.partitions:
            tp = TopicPartition(topic.topic, p.partition)
            try:
                if refused and topic.topic in refused:
                    raise KafkaApiError(ErrorCode.TOPIC_AUTHORIZATION_FAILED)
                epoch, end = rm.get_partition_or_error(tp).last_offset_for_leader_epoch(
                    p.current_leader_epoch if v >= 2 else -1, p.leader_epoch)
                parts.append(PartResult(error_code=0, partition=tp.partition, leader_epoch=epoch, end_offset=end))
            except KafkaApiError as e:
                parts.append(PartResult(error_code=e.code, partition=tp.partition, leader_epoch=-1, end_offset=-1))
        topics.append(TopicResult(topic=topic.topic, partitions=parts))
    return response_for(request, throttle_time_ms=0, topics=topics)

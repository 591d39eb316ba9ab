"""OffsetForLeaderEpoch (key 23), versions 0–4.

For each partition, on its leader: the largest epoch ≤ the requested one that this log knows, and the
end offset of that epoch (the start offset of the next epoch, or the log end offset for the current
epoch) — what a follower (KIP-101/KIP-279) or a consumer (KIP-320, v3+ with replica_id -1) needs to
find where its log diverged. `current_leader_epoch` (v2+) is checked: FENCED_LEADER_EPOCH /
UNKNOWN_LEADER_EPOCH. Unknown epochs answer epoch -1 / offset -1 (UNDEFINED), as Kafka.
Followers (replica_id >= 0) may ask any replica that has the log; consumers only the leader.
"""

from __future__ import annotations

from typing import Any

from broker.apis.base import RequestContext, response_for, response_type
from broker.errors import KafkaApiError
from storage import TopicPartition

API_KEY = 23
MIN_VERSION = 0
MAX_VERSION = 4


def handle(ctx: RequestContext, request: Any) -> Any:
    v = request.API_VERSION
    rm = ctx.server.replica_manager
    Resp = response_type(request)
    TopicResult = Resp.OffsetForLeaderTopicResult
    PartResult = TopicResult.EpochEndOffset
    topics = []
    for topic in request.topics:
        parts = []
        for p in topic.partitions:
            tp = TopicPartition(topic.topic, p.partition)
            try:
                partition = rm.leader_partition_or_error(tp)
                partition.check_leader_epoch(p.current_leader_epoch if v >= 2 else -1)
                assert partition.log is not None
                epoch, end = partition.log.leader_epoch_cache.end_offset_for(p.leader_epoch,
                                                                             partition.log.log_end_offset)
                parts.append(PartResult(error_code=0, partition=tp.partition, leader_epoch=epoch, end_offset=end))
            except KafkaApiError as e:
                parts.append(PartResult(error_code=e.code, partition=tp.partition, leader_epoch=-1, end_offset=-1))
        topics.append(TopicResult(topic=topic.topic, partitions=parts))
    return response_for(request, throttle_time_ms=0, topics=topics)

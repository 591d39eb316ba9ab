"""DeleteRecords (key 21), versions 0–2.

Moves each partition's log start offset up to the given offset (-1: the high watermark) on its leader
(`Partition.delete_records_on_leader`), deleting whole segments below it; answers the new low watermark.
An offset above the high watermark is OFFSET_OUT_OF_RANGE; a partition not led here NOT_LEADER_OR_FOLLOWER
(UNKNOWN_TOPIC_OR_PARTITION when no broker has it).
Gaps: the answer does not wait for followers to apply the new log start offset (Kafka's
DelayedDeleteRecords); followers learn it from the leader's fetch responses.
"""

from __future__ import annotations

from typing import Any

from broker.apis.base import RequestContext, response_for, response_type
from broker.errors import KafkaApiError
from storage import TopicPartition

API_KEY = 21
MIN_VERSION = 0
MAX_VERSION = 2


def handle(ctx: RequestContext, request: Any) -> Any:
    rm = ctx.server.replica_manager
    Resp = response_type(request)
    TopicResult = Resp.DeleteRecordsTopicResult
    PartResult = TopicResult.DeleteRecordsPartitionResult
    topics = []
    for topic in request.topics:
        parts = []
        for p in topic.partitions:
            tp = TopicPartition(topic.name, p.partition_index)
            try:
                low_watermark = rm.get_partition_or_error(tp).delete_records_on_leader(p.offset)
                parts.append(PartResult(partition_index=tp.partition, low_watermark=low_watermark, error_code=0))
            except KafkaApiError as e:
                parts.append(PartResult(partition_index=tp.partition, low_watermark=-1, error_code=e.code))
        topics.append(TopicResult(name=topic.name, partitions=parts))
    return response_for(request, throttle_time_ms=0, topics=topics)

"""DeleteRecords (key 21), versions 0–2.

Moves each partition's log start offset up to the given offset (-1: the high watermark) on its leader,
deleting whole segments below it; answers the new low watermark. An offset above the high watermark
is OFFSET_OUT_OF_RANGE; a partition not led here NOT_LEADER_OR_FOLLOWER.
Gaps: the answer does not wait for followers to apply the new log start offset (Kafka's
DelayedDeleteRecords); followers learn it from the leader's fetch responses.
"""

from __future__ import annotations

from typing import Any

from broker.apis.base import RequestContext, response_for, response_type
from broker.errors import KafkaApiError
from protocol.errors import ErrorCode
from storage import OffsetOutOfRangeError, TopicPartition

API_KEY = 21
MIN_VERSION = 0
MAX_VERSION = 2

HIGH_WATERMARK = -1


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
                partition = rm.leader_partition_or_error(tp)
                assert partition.log is not None
                offset = partition.high_watermark if p.offset == HIGH_WATERMARK else p.offset
                if offset < 0 or offset > partition.high_watermark:
                    raise KafkaApiError(ErrorCode.OFFSET_OUT_OF_RANGE,
                                        f"{tp}: offset {offset} is above the high watermark")
                try:
                    partition.log.maybe_increment_log_start_offset(offset)
                except OffsetOutOfRangeError as e:
                    raise KafkaApiError(ErrorCode.OFFSET_OUT_OF_RANGE, str(e)) from None
                parts.append(PartResult(partition_index=tp.partition, low_watermark=partition.log.log_start_offset,
                                        error_code=0))
            except KafkaApiError as e:
                parts.append(PartResult(partition_index=tp.partition, low_watermark=-1, error_code=e.code))
        topics.append(TopicResult(name=topic.name, partitions=parts))
    return response_for(request, throttle_time_ms=0, topics=topics)

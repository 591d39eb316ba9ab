"""ListOffsets (key 2), versions 0–9.

Per partition, on its leader: EARLIEST (-2) the log start offset; LATEST (-1) the high watermark for
read_uncommitted consumers, the last stable offset for read_committed, the log end offset for replicas;
MAX_TIMESTAMP (-3, v7+) the offset and timestamp of the record with the largest timestamp; EARLIEST_LOCAL
(-4, v8+) the log start offset (no tiered storage); a timestamp: the first offset whose batch max
timestamp is at or after it (time index), or -1 when none below the high watermark. Each answer carries
the leader epoch of that offset (v4+). v0 answers with the old list-of-offsets layout.
Errors per partition: UNKNOWN_TOPIC_OR_PARTITION, NOT_LEADER_OR_FOLLOWER, FENCED/UNKNOWN_LEADER_EPOCH.
"""

from __future__ import annotations

from typing import Any

from broker.apis.base import RequestContext, response_for, response_type
from broker.errors import KafkaApiError
from protocol.errors import ErrorCode
from storage import TopicPartition

API_KEY = 2
MIN_VERSION = 0
MAX_VERSION = 9

LATEST = -1
EARLIEST = -2
MAX_TIMESTAMP = -3
EARLIEST_LOCAL = -4
LATEST_TIERED = -5


def handle(ctx: RequestContext, request: Any) -> Any:
    v = request.API_VERSION
    rm = ctx.server.replica_manager
    Resp = response_type(request)
    TopicResp = Resp.ListOffsetsTopicResponse
    PartResp = TopicResp.ListOffsetsPartitionResponse
    replica_id = request.replica_id
    read_committed = v >= 2 and request.isolation_level == 1
    topics = []
    for topic in request.topics:
        parts = []
        for p in topic.partitions:
            tp = TopicPartition(topic.name, p.partition_index)
            try:
                partition = rm.leader_partition_or_error(tp)
                partition.check_leader_epoch(p.current_leader_epoch if v >= 4 else -1)
                offset, timestamp = _lookup(partition, p.timestamp, replica_id, read_committed)
                epoch = -1
                if offset >= 0 and partition.log is not None:
                    found = partition.log.leader_epoch_cache.epoch_for_offset(offset)
                    epoch = found if found is not None else -1
                if v == 0:
                    parts.append(PartResp(partition_index=tp.partition, error_code=0,
                                          old_style_offsets=[offset] if offset >= 0 else []))
                else:
                    parts.append(PartResp(partition_index=tp.partition, error_code=0, timestamp=timestamp,
                                          offset=offset, leader_epoch=epoch))
            except KafkaApiError as e:
                parts.append(PartResp(partition_index=tp.partition, error_code=e.code, timestamp=-1,
                                      offset=-1, leader_epoch=-1, old_style_offsets=[]))
        topics.append(TopicResp(name=topic.name, partitions=parts))
    return response_for(request, throttle_time_ms=0, topics=topics)


def _lookup(partition: Any, ts: int, replica_id: int, read_committed: bool) -> tuple[int, int]:
    log = partition.log
    if replica_id >= 0:
        last_fetchable = log.log_end_offset
    else:
        last_fetchable = partition.high_watermark
    if ts in (EARLIEST, EARLIEST_LOCAL):
        return log.log_start_offset, -1
    if ts in (LATEST, LATEST_TIERED):
        # No tiered storage: nothing is in remote storage (LATEST_TIERED answers -1, as Kafka does then).
        return (last_fetchable, -1) if ts == LATEST else (-1, -1)
    if ts == MAX_TIMESTAMP:
        max_ts, offset = log.max_timestamp_and_offset()
        if offset < 0 or offset >= last_fetchable:
            return -1, -1
        return offset, max_ts
    if ts < 0:
        raise KafkaApiError(ErrorCode.INVALID_REQUEST, f"unknown special timestamp {ts}")
    found = log.offset_for_timestamp(ts)
    if found is None or found[0] >= last_fetchable:
        return -1, -1
    offset, timestamp, _ = found
    return max(offset, log.log_start_offset), timestamp

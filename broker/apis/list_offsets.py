"""ListOffsets (key 2), versions 0–11.

Per partition, on its leader: EARLIEST (-2) the log start offset; LATEST (-1) the high watermark for
read_uncommitted consumers, the last stable offset for read_committed (isolation_level 1, v2+), the log end
offset for replicas; MAX_TIMESTAMP (-3, v7+) the offset and timestamp of the record with the largest
timestamp; EARLIEST_LOCAL (-4, v8+) the log start offset (no tiered storage); LATEST_TIERED (-5, v9+) and
EARLIEST_PENDING_UPLOAD (-6, v11+) no offset (-1), as Kafka answers them without remote storage; v10's timeout
(KIP-1075, remote lookups) is not needed, every answer being local; a timestamp: the first offset
whose batch max timestamp is at or after it (time index). MAX_TIMESTAMP and timestamp lookups answer -1 when
what they find is not below the same bound as LATEST (Kafka's lastFetchableOffset). Each answer carries
the leader epoch of that offset (v4+). v0 answers with the old list-of-offsets layout.
The lookup is the partition's (`Partition.fetch_offset_for_timestamp`).
Errors per partition: UNKNOWN_TOPIC_OR_PARTITION, NOT_LEADER_OR_FOLLOWER, FENCED/UNKNOWN_LEADER_EPOCH,
INVALID_REQUEST for a negative timestamp that names no special lookup; TOPIC_AUTHORIZATION_FAILED (with an
authorizer) for topics the principal may not DESCRIBE, as Kafka. Gaps: Kafka's OFFSET_NOT_AVAILABLE
(a new leader whose epoch starts above its high watermark) and INVALID_REQUEST for a partition named twice
are not answered.
"""

from __future__ import annotations

from typing import Any

from broker.apis.base import RequestContext, response_for, response_type
from broker.common.errors import KafkaApiError
from broker.security.acl import AclOperation, ResourceType
from protocol.errors import ErrorCode
from storage import TopicPartition

API_KEY = 2
MIN_VERSION = 0
MAX_VERSION = 11
ERRORS: tuple[ErrorCode, ...] = (
    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.FENCED_LEADER_EPOCH,
    ErrorCode.UNKNOWN_LEADER_EPOCH, ErrorCode.INVALID_REQUEST, ErrorCode.TOPIC_AUTHORIZATION_FAILED,
)


def handle(ctx: RequestContext, request: Any) -> Any:
    v = request.API_VERSION
    rm = ctx.server.replica_manager
    Resp = response_type(request)
    TopicResp = Resp.ListOffsetsTopicResponse
    PartResp = TopicResp.ListOffsetsPartitionResponse
    replica_id = request.replica_id
    read_committed = v >= 2 and request.isolation_level == 1
    topics = []
    denied: set[str] = set()
    if ctx.server.authorizer is not None:
        names = [topic.name for topic in request.topics]
        denied = set(names) - ctx.filter_authorized(AclOperation.DESCRIBE, ResourceType.TOPIC, names)
    for topic in request.topics:
        parts = []
        for p in topic.partitions:
            tp = TopicPartition(topic.name, p.partition_index)
            try:
                if denied and topic.name in denied:
                    raise KafkaApiError(ErrorCode.TOPIC_AUTHORIZATION_FAILED)
                offset, timestamp, epoch = rm.get_partition_or_error(tp).fetch_offset_for_timestamp(
                    p.timestamp, p.current_leader_epoch if v >= 4 else -1, from_replica=replica_id >= 0,
                    read_committed=read_committed)
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


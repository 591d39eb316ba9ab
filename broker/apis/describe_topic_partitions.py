"""DescribeTopicPartitions (key 75), version 0 (KIP-966): what Kafka 3.8+'s AdminClient `describeTopics` and
`kafka-topics.sh --describe` ask instead of Metadata.

Contract (Kafka's DescribeTopicPartitionsRequestHandler and KRaftMetadataCache):
- The named topics (every topic when none is named), in name order, each with its partitions: leader (-1 when
  the leader is not a live broker), leader epoch, replicas, ISR, the eligible leader replicas and the last known
  ELR (KIP-966, from the KRaft metadata log; empty in ZooKeeper mode and on a single node), and the offline
  replicas (those of a broker that is not live).
- Paging: at most min(`response_partition_limit`, `max.request.partition.size.limit`) partitions (at least 1)
  are answered; when more remain, `next_cursor` names the topic and partition to ask from next. A request's
  cursor starts there: topics sorting before the cursor's topic are skipped, and its partitions from the
  cursor's index. A cursor whose topic is not among the named topics, or whose partition index is negative,
  answers INVALID_REQUEST for every named topic.
- A named topic that does not exist answers UNKNOWN_TOPIC_OR_PARTITION, a name that is not a valid topic name
  INVALID_TOPIC_EXCEPTION; with every topic asked for, nothing is answered for such topics.
- With an authorizer: a topic the principal may not DESCRIBE is left out of an all-topics answer and answered
  TOPIC_AUTHORIZATION_FAILED (zero topic id, no partitions) when named, without saying whether it exists;
  `topic_authorized_operations` carries the operations the principal may do on each answered topic.
Differences from Kafka: Kafka serves this API on KRaft brokers only; ours serves it in every mode, so Kafka 4.x's
tools describe a ZooKeeper-mode or single-node broker of ours the same way (with empty ELRs).
"""

from __future__ import annotations

import logging
import uuid
from typing import Any

from broker.apis.base import RequestContext, response_for, response_type
from broker.config.topics import valid_topic_name
from broker.metadata.metadata_cache import INTERNAL_TOPICS, MetadataCache, TopicMetadata
from broker.security.acl import AclOperation, ResourceType
from protocol.errors import ErrorCode

API_KEY = 75
MIN_VERSION = 0
MAX_VERSION = 0
ERRORS: tuple[ErrorCode, ...] = (
    ErrorCode.INVALID_REQUEST, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode.INVALID_TOPIC_EXCEPTION,
    ErrorCode.TOPIC_AUTHORIZATION_FAILED,
)
ZERO_UUID = uuid.UUID(int=0)
log = logging.getLogger("broker.apis")


def handle(ctx: RequestContext, request: Any) -> Any:
    Resp = response_type(request)
    cache = ctx.server.metadata_cache
    all_topics = not request.topics
    cursor = request.cursor
    cursor_topic = cursor.topic_name if cursor is not None else ""
    if all_topics:
        names = {name for name in cache.topics if name >= cursor_topic}
    else:
        names = {t.name for t in request.topics if t.name >= cursor_topic}
        if cursor is not None and cursor.topic_name not in names:
            return _refused(ctx, request, f"DescribeTopicPartitionsRequest topic list should contain the cursor topic: "
                                     f"{cursor.topic_name}")
    if cursor is not None and cursor.partition_index < 0:
        return _refused(ctx, request, f"DescribeTopicPartitionsRequest cursor partition must be valid: "
                                 f"{cursor.topic_name}-{cursor.partition_index}")
    ordered = sorted(names)
    described = ctx.filter_authorized(AclOperation.DESCRIBE, ResourceType.TOPIC, ordered)
    denied = [] if all_topics else [name for name in ordered if name not in described]
    limit = max(min(ctx.server.config["max.request.partition.size.limit"], request.response_partition_limit), 1)
    remaining = limit
    topics_out: list[Any] = []
    next_cursor = None
    for name in (n for n in ordered if n in described):
        if remaining == 0:
            # Every partition of the topics before was answered: the next request starts at this topic.
            next_cursor = Resp.Cursor(topic_name=name, partition_index=0)
            break
        topic = cache.topics.get(name)
        if topic is None:
            if not all_topics:
                error = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION if valid_topic_name(name) \
                    else ErrorCode.INVALID_TOPIC_EXCEPTION
                topics_out.append(_topic(Resp, name, ZERO_UUID, error, []))
            continue
        start = cursor.partition_index if cursor is not None and name == cursor_topic else 0
        upper = min(len(topic.partitions), start + remaining)
        partitions = _partitions(Resp, cache, topic, start, upper)
        topics_out.append(_topic(Resp, name, topic.topic_id, ErrorCode.NONE, partitions,
                                 operations=ctx.authorized_operations(ResourceType.TOPIC, name)))
        if upper < len(topic.partitions):
            next_cursor = Resp.Cursor(topic_name=name, partition_index=upper)
            break
        remaining -= len(partitions)
    topics_out.extend(_topic(Resp, name, ZERO_UUID, ErrorCode.TOPIC_AUTHORIZATION_FAILED, []) for name in denied)
    return response_for(request, throttle_time_ms=0, topics=topics_out, next_cursor=next_cursor)


def _partitions(Resp: Any, cache: MetadataCache, topic: TopicMetadata, start: int, upper: int) -> list[Any]:
    live = cache.listed_brokers()
    out = []
    for index in range(start, upper):
        p = topic.partitions.get(index)
        if p is None:
            continue  # a partition the metadata does not hold (Kafka logs and skips it)
        out.append(Resp.DescribeTopicPartitionsResponseTopic.DescribeTopicPartitionsResponsePartition(
            error_code=ErrorCode.NONE, partition_index=index, leader_id=cache.live_leader(p),
            leader_epoch=p.leader_epoch, replica_nodes=list(p.replicas), isr_nodes=list(p.isr),
            eligible_leader_replicas=list(p.eligible_leader_replicas), last_known_elr=list(p.last_known_elr),
            offline_replicas=[r for r in p.replicas if r not in live]))
    return out


def _topic(Resp: Any, name: str, topic_id: uuid.UUID, error: ErrorCode, partitions: list[Any],
           operations: Any = None) -> Any:
    fields: dict[str, Any] = {}
    if operations is not None:
        # an int32 bit field here (kafka-python decodes it as an int, not as the set Metadata's is)
        fields["topic_authorized_operations"] = sum(1 << op for op in operations)
    return Resp.DescribeTopicPartitionsResponseTopic(
        error_code=error, name=name, topic_id=topic_id, is_internal=name in INTERNAL_TOPICS, partitions=partitions,
        **fields)


def _refused(ctx: RequestContext, request: Any, message: str) -> Any:
    """Kafka's getErrorResponse: every named topic answered with the error, no partitions, no cursor."""
    log.info("DescribeTopicPartitions from %s refused: %s", ctx.client_host, message)
    Resp = response_type(request)
    return response_for(request, throttle_time_ms=0, next_cursor=None, topics=[
        _topic(Resp, t.name, ZERO_UUID, ErrorCode.INVALID_REQUEST, []) for t in request.topics or ()])

"""AlterReplicaLogDirs (key 34), versions 0–2.

Asks this broker to keep each named replica in the given log dir (an absolute path of one of `log.dirs`), as
Kafka's ReplicaManager.alterReplicaLogDirs:
- a path that is not a configured log dir: LOG_DIR_NOT_FOUND;
- a topic name too long for the future log's directory name (over 255 characters): INVALID_TOPIC_EXCEPTION;
- a replica this broker does not host (yet): the dir is remembered, its log is created there when the
  replica arrives (LeaderAndIsr), and the answer is REPLICA_NOT_AVAILABLE when the cluster knows the
  partition, UNKNOWN_TOPIC_OR_PARTITION when it does not (Kafka's getPartitionOrException);
- a hosted replica in another dir: NONE, and the replica moves there in the background
  (`broker.server.log_dir_mover`: a future log, listed by DescribeLogDirs with `is_future_key`, copied until it has
  caught up, then swapped in); asking again for another dir replaces the move, for the replica's current dir
  cancels it; a replica already in that dir: NONE.
With one log dir (the usual set-up) every case but a move can arise.
Gaps: a move cut short by a broker stop is not resumed (Kafka resumes it from the future log).
With an authorizer (Kafka): ALTER on the cluster, else every partition CLUSTER_AUTHORIZATION_FAILED.
"""

from __future__ import annotations

from typing import Any

from broker.apis.base import RequestContext, response_for, response_type
from broker.common.errors import KafkaApiError
from broker.security.acl import AclOperation
from protocol.errors import ErrorCode
from storage import TopicPartition

API_KEY = 34
MIN_VERSION = 0
MAX_VERSION = 2
ERRORS: tuple[ErrorCode, ...] = (
    ErrorCode.INVALID_TOPIC_EXCEPTION, ErrorCode.LOG_DIR_NOT_FOUND,
    ErrorCode.REPLICA_NOT_AVAILABLE, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
    ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
)

MAX_DIR_NAME_LENGTH = 255
FUTURE_DIR_SUFFIX_LENGTH = len(".") + 32 + len("-future")  # <topic>-<partition>.<uuid hex>-future


def alter_dir(ctx: RequestContext, tp: TopicPartition, path: str) -> ErrorCode:
    rm = ctx.server.replica_manager
    lm = rm.log_manager
    if len(str(tp)) + FUTURE_DIR_SUFFIX_LENGTH > MAX_DIR_NAME_LENGTH:
        return ErrorCode.INVALID_TOPIC_EXCEPTION
    destination = lm.log_dir_named(path)
    if destination is None:
        return ErrorCode.LOG_DIR_NOT_FOUND
    try:
        rm.get_partition_or_error(tp)
    except KafkaApiError as e:
        lm.set_preferred_dir(tp, destination)
        # Kafka keeps REPLICA_NOT_AVAILABLE here for a partition hosted elsewhere, for compatibility.
        return ErrorCode.REPLICA_NOT_AVAILABLE if e.code == ErrorCode.NOT_LEADER_OR_FOLLOWER else e.code
    ctx.server.log_dir_mover.move(tp, destination)
    return ErrorCode.NONE


def handle(ctx: RequestContext, request: Any) -> Any:
    TopicResult = response_type(request).AlterReplicaLogDirTopicResult
    by_topic: dict[str, list[Any]] = {}
    allowed = ctx.authorize_cluster(AclOperation.ALTER)
    for d in request.dirs:
        for t in d.topics:
            for p in t.partitions:
                error = alter_dir(ctx, TopicPartition(t.name, p), d.path) if allowed \
                    else ErrorCode.CLUSTER_AUTHORIZATION_FAILED
                by_topic.setdefault(t.name, []).append(
                    TopicResult.AlterReplicaLogDirPartitionResult(partition_index=p, error_code=error))
    return response_for(request, throttle_time_ms=0,
                        results=[TopicResult(topic_name=name, partitions=parts) for name, parts in by_topic.items()])

"""DescribeLogDirs (key 35), versions 0–4.

One result per configured log dir (`log.dirs`), named by its absolute path, as Kafka's
ReplicaManager.describeLogDirs: the logs it holds of the partitions asked (`topics` null: every log on this
broker), each with its size in bytes (all segments), its offset lag (max(HW − LEO, 0) for a current log) and
`is_future_key`: a replica moving to this dir (AlterReplicaLogDirs, `broker.server.log_dir_mover`) is listed there
as a future log whose lag is the current log's end offset minus its own; topics without a matching
partition left out; v4 adds the file system's total and usable bytes. A dir that cannot be read answers
KAFKA_STORAGE_ERROR for that dir. The top-level error (v3+) is NONE.
With an authorizer (Kafka): DESCRIBE on the cluster, else no log dirs and (v3+) CLUSTER_AUTHORIZATION_FAILED.
"""

from __future__ import annotations

import logging
import os
from typing import Any

from broker.apis.base import RequestContext, response_for, response_type
from broker.security.acl import AclOperation
from protocol.errors import ErrorCode
from storage import TopicPartition

API_KEY = 35
MIN_VERSION = 0
MAX_VERSION = 4
ERRORS: tuple[ErrorCode, ...] = (
    ErrorCode.KAFKA_STORAGE_ERROR,
    ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
)

log = logging.getLogger(__name__)


def handle(ctx: RequestContext, request: Any) -> Any:
    if not ctx.authorize_cluster(AclOperation.DESCRIBE):
        return response_for(request, throttle_time_ms=0, error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
                            results=[])
    rm = ctx.server.replica_manager
    lm = rm.log_manager
    mover = ctx.server.log_dir_mover
    Result = response_type(request).DescribeLogDirsResult
    TopicOut = Result.DescribeLogDirsTopic
    wanted = None if request.topics is None else {
        TopicPartition(t.topic, p) for t in request.topics for p in t.partitions}
    results = []
    for log_dir in lm.log_dirs:
        path = str(log_dir.absolute())
        try:
            stats = os.statvfs(log_dir)
        except OSError as e:
            log.warning("cannot describe log dir %s: %s", path, e)
            results.append(Result(error_code=ErrorCode.KAFKA_STORAGE_ERROR, log_dir=path, topics=[],
                                  total_bytes=-1, usable_bytes=-1))
            continue
        by_topic: dict[str, list[Any]] = {}
        for lg in lm.all_logs():
            tp = lg.topic_partition
            if lm.dir_of(tp) != log_dir or (wanted is not None and tp not in wanted):
                continue
            partition = rm.get_partition(tp)
            lag = max(partition.high_watermark - lg.log_end_offset, 0) if partition is not None else -1
            by_topic.setdefault(tp.topic, []).append(TopicOut.DescribeLogDirsPartition(
                partition_index=tp.partition, partition_size=lg.size_in_bytes(), offset_lag=lag,
                is_future_key=False))
        for tp, future in mover.futures.items():
            current = lm.get_log(tp)
            if future.destination != log_dir or current is None or (wanted is not None and tp not in wanted):
                continue
            by_topic.setdefault(tp.topic, []).append(TopicOut.DescribeLogDirsPartition(
                partition_index=tp.partition, partition_size=future.log.size_in_bytes(),
                offset_lag=current.log_end_offset - future.log.log_end_offset, is_future_key=True))
        results.append(Result(
            error_code=ErrorCode.NONE, log_dir=path,
            topics=[TopicOut(name=name, partitions=parts) for name, parts in sorted(by_topic.items())],
            total_bytes=stats.f_blocks * stats.f_frsize, usable_bytes=stats.f_bavail * stats.f_frsize))
    return response_for(request, throttle_time_ms=0, error_code=ErrorCode.NONE, results=results)

"""WriteTxnMarkers (key 27), versions 0–1: the transaction coordinator asks this broker, as partition leader,
to end a producer's transaction on some partitions.

For each marker and each of its partitions a control batch (COMMIT or ABORT with the coordinator epoch) is
appended as leader with origin COORDINATOR and acks=-1, internal topics allowed (Kafka's
handleWriteTxnMarkersRequest); each partition answers its append error (NOT_LEADER_OR_FOLLOWER,
INVALID_PRODUCER_EPOCH, TRANSACTION_COORDINATOR_FENCED, NOT_ENOUGH_REPLICAS...) or UNKNOWN_TOPIC_OR_PARTITION
when this broker has no log for it. Errors are grouped by producer id, as Kafka's response. Once markers are
written to `__consumer_offsets` partitions, the group coordinator completes that producer's pending
transactional offsets (`handle_txn_completion`); if that fails, those partitions answer
UNKNOWN_SERVER_ERROR. Not in `ERRORS`, as no test can provoke them: REQUEST_TIMED_OUT (the ISR not caught up
within request.timeout.ms, 30 s, while the ISR shrinks after replica.lag.time.max.ms) and KAFKA_STORAGE_ERROR
(a disk failing under a live log); Kafka's UNSUPPORTED_FOR_MESSAGE_FORMAT (a log before magic 2) cannot
happen, every log here being magic 2.
With an authorizer: CLUSTER_ACTION on the cluster (brokers and the controller only), else
CLUSTER_AUTHORIZATION_FAILED, as Kafka.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

from broker.apis.base import RequestContext, response_for, response_type
from broker.coordinator.group.service import GROUP_METADATA_TOPIC
from broker.security.acl import AclOperation
from protocol.errors import ErrorCode
from protocol.records import ControlRecordType, build_control_batch
from storage import AppendOrigin, TopicPartition

log = logging.getLogger("broker.apis.write_txn_markers")

API_KEY = 27
MIN_VERSION = 0
MAX_VERSION = 1
ERRORS: tuple[ErrorCode, ...] = (
    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.INVALID_PRODUCER_EPOCH,
    ErrorCode.TRANSACTION_COORDINATOR_FENCED, ErrorCode.NOT_ENOUGH_REPLICAS,
    ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
)


def handle(ctx: RequestContext, request: Any) -> Any:
    if not ctx.authorize_cluster(AclOperation.CLUSTER_ACTION):
        Result = response_type(request).WritableTxnMarkerResult
        TopicResult = Result.WritableTxnMarkerTopicResult
        return response_for(request, markers=[Result(producer_id=m.producer_id, topics=[TopicResult(
            name=t.name, partitions=[TopicResult.WritableTxnMarkerPartitionResult(
                partition_index=p, error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED) for p in t.partition_indexes])
            for t in m.topics]) for m in request.markers])
    return _handle(ctx, request)


async def _handle(ctx: RequestContext, request: Any) -> Any:
    results = await asyncio.gather(*(_write_marker(ctx, m) for m in request.markers))
    errors: dict[int, dict[TopicPartition, ErrorCode]] = {}
    for marker, result in zip(request.markers, results, strict=True):
        errors.setdefault(marker.producer_id, {}).update(result)
    Result = response_type(request).WritableTxnMarkerResult
    TopicResult = Result.WritableTxnMarkerTopicResult
    out = []
    for producer_id, per_partition in errors.items():
        by_topic: dict[str, list[Any]] = {}
        for tp, error in per_partition.items():
            by_topic.setdefault(tp.topic, []).append(TopicResult.WritableTxnMarkerPartitionResult(
                partition_index=tp.partition, error_code=error))
        out.append(Result(producer_id=producer_id,
                          topics=[TopicResult(name=t, partitions=ps) for t, ps in by_topic.items()]))
    return response_for(request, markers=out)


async def _write_marker(ctx: RequestContext, marker: Any) -> dict[TopicPartition, ErrorCode]:
    server = ctx.server
    commit = bool(marker.transaction_result)
    errors: dict[TopicPartition, ErrorCode] = {}
    entries: dict[TopicPartition, memoryview] = {}
    now = int(time.time() * 1000)
    for topic in marker.topics:
        for p in topic.partition_indexes:
            tp = TopicPartition(topic.name, p)
            partition = server.replica_manager.get_partition(tp)
            if partition is None or partition.log is None:
                errors[tp] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                continue
            entries[tp] = memoryview(bytearray(build_control_batch(
                ControlRecordType.COMMIT if commit else ControlRecordType.ABORT, producer_id=marker.producer_id,
                producer_epoch=marker.producer_epoch, coordinator_epoch=marker.coordinator_epoch, timestamp=now)))
    if not entries:
        return errors
    result: Any = server.replica_manager.append_records(server.config["request.timeout.ms"], -1, entries,
                                                        internal_topics_allowed=True, origin=AppendOrigin.COORDINATOR)
    if isinstance(result, asyncio.Future):
        result = await result
    for tp, r in result.items():
        errors[tp] = r.error
    offsets_partitions = [tp.partition for tp, e in errors.items()
                          if tp.topic == GROUP_METADATA_TOPIC and e == ErrorCode.NONE]
    if offsets_partitions:
        try:
            server.group_coordinator.handle_txn_completion(marker.producer_id, offsets_partitions, commit)
        except Exception:
            log.exception("completing the transactional offsets of producer %d failed", marker.producer_id)
            for p in offsets_partitions:
                errors[TopicPartition(GROUP_METADATA_TOPIC, p)] = ErrorCode.UNKNOWN_SERVER_ERROR
    return errors

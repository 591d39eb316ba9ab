"""WriteTxnMarkers (key 27), versions 0–2: the transaction coordinator asks this broker, as partition leader,
to end a producer's transaction on some partitions.

v2 (KIP-1228) carries each marker's TransactionVersion. It is accepted and not used: a marker's producer epoch is
checked as Kafka 4.0/4.1 check every marker (an epoch below the producer's is INVALID_PRODUCER_EPOCH; a
transaction.version 2 marker carries the epoch EndTxn v5 bumped, which passes). Kafka 4.2's stricter check of
TV2 markers (an epoch not above the producer's is refused unless it repeats a completed one) is not done.

For each marker and each of its partitions a control batch (COMMIT or ABORT with the coordinator epoch) is
appended as leader with origin COORDINATOR and acks=-1, internal topics allowed (Kafka's
handleWriteTxnMarkersRequest); each partition answers its append error (NOT_LEADER_OR_FOLLOWER,
INVALID_PRODUCER_EPOCH, TRANSACTION_COORDINATOR_FENCED, NOT_ENOUGH_REPLICAS...) or UNKNOWN_TOPIC_OR_PARTITION
when this broker has no log for it. Errors are grouped by producer id, as Kafka's response. Once markers are
written to `__consumer_offsets` partitions, the group coordinator completes that producer's pending
transactional offsets (`handle_txn_completion`); if that fails, those partitions answer
UNKNOWN_SERVER_ERROR. KAFKA_STORAGE_ERROR: the marker's write failed (a full disk) and was rolled back. Not in
`ERRORS`, as no test can provoke it: REQUEST_TIMED_OUT (the ISR not caught up within request.timeout.ms, 30 s,
while the ISR shrinks after replica.lag.time.max.ms); Kafka's UNSUPPORTED_FOR_MESSAGE_FORMAT (a log before
magic 2) cannot happen, every log here being magic 2.
With an authorizer: CLUSTER_ACTION on the cluster (brokers and the controller only), else
CLUSTER_AUTHORIZATION_FAILED, as Kafka.

`write_marker` is that work for one marker, shared with this broker's own transaction coordinator, which
writes the markers of partitions this broker leads in-process (the server hands it over) and sends only those of
other leaders as WriteTxnMarkers. It answers at once when no append waits for followers.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable
from typing import TYPE_CHECKING, Any

from broker.apis.base import RequestContext, response_for, response_type
from broker.coordinator.group.service import GROUP_METADATA_TOPIC
from broker.security.acl import AclOperation
from protocol.errors import ErrorCode
from protocol.records import ControlRecordType, build_control_batch
from storage import AppendOrigin, TopicPartition

if TYPE_CHECKING:
    from broker.apis.base import HandlerServer

log = logging.getLogger("broker.apis.write_txn_markers")

MarkerErrors = dict[TopicPartition, ErrorCode]

API_KEY = 27
MIN_VERSION = 0
MAX_VERSION = 2
ERRORS: tuple[ErrorCode, ...] = (
    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.INVALID_PRODUCER_EPOCH,
    ErrorCode.TRANSACTION_COORDINATOR_FENCED, ErrorCode.NOT_ENOUGH_REPLICAS,
    ErrorCode.CLUSTER_AUTHORIZATION_FAILED, ErrorCode.KAFKA_STORAGE_ERROR,
)


def handle(ctx: RequestContext, request: Any) -> Any:
    if not ctx.authorize_cluster(AclOperation.CLUSTER_ACTION):
        Result = response_type(request).WritableTxnMarkerResult
        TopicResult = Result.WritableTxnMarkerTopicResult
        return response_for(request, markers=[Result(producer_id=m.producer_id, topics=[TopicResult(
            name=t.name, partitions=[TopicResult.WritableTxnMarkerPartitionResult(
                partition_index=p, error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED) for p in t.partition_indexes])
            for t in m.topics]) for m in request.markers])
    # Every marker is appended here, before anything waits; the answer is built at once when no append has to
    # wait for followers (a single-replica partition), else once the last one is acknowledged.
    written = [write_marker(ctx.server, m.producer_id, m.producer_epoch, bool(m.transaction_result),
                            m.coordinator_epoch, [TopicPartition(t.name, p) for t in m.topics
                                                  for p in t.partition_indexes])
               for m in request.markers]
    if all(isinstance(w, dict) for w in written):
        return _response(request, written)  # type: ignore[arg-type]
    return _respond_later(request, written)


async def _respond_later(request: Any, written: list[MarkerErrors | Awaitable[MarkerErrors]]) -> Any:
    return _response(request, [w if isinstance(w, dict) else await w for w in written])


def _response(request: Any, results: list[MarkerErrors]) -> Any:
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


def write_marker(server: HandlerServer, producer_id: int, producer_epoch: int, commit: bool, coordinator_epoch: int,
                 partitions: list[TopicPartition]) -> MarkerErrors | Awaitable[MarkerErrors]:
    """Append one marker to the partitions this broker leads, each partition's error as the handler answers
    it: the errors at once when every append is acknowledged at once (acks=-1 on a partition whose ISR is
    the leader alone), else an awaitable of them. The handler runs it for each marker of a request, and the
    transaction coordinator of this broker for the partitions it leads itself, without a request."""
    errors: MarkerErrors = {}
    entries: dict[TopicPartition, memoryview] = {}
    now = int(time.time() * 1000)
    for tp in partitions:
        partition = server.replica_manager.get_partition(tp)
        if partition is None or partition.log is None:
            errors[tp] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            continue
        entries[tp] = memoryview(bytearray(build_control_batch(
            ControlRecordType.COMMIT if commit else ControlRecordType.ABORT, producer_id=producer_id,
            producer_epoch=producer_epoch, coordinator_epoch=coordinator_epoch, timestamp=now)))
    if not entries:
        return errors
    result: Any = server.replica_manager.append_records(server.config["request.timeout.ms"], -1, entries,
                                                        internal_topics_allowed=True, origin=AppendOrigin.COORDINATOR)
    if isinstance(result, asyncio.Future):
        return asyncio.ensure_future(_appended_later(server, producer_id, commit, errors, result))
    return _appended(server, producer_id, commit, errors, result)


async def _appended_later(server: HandlerServer, producer_id: int, commit: bool, errors: MarkerErrors,
                          result: asyncio.Future) -> MarkerErrors:
    return _appended(server, producer_id, commit, errors, await result)


def _appended(server: HandlerServer, producer_id: int, commit: bool, errors: MarkerErrors,
              result: dict[TopicPartition, Any]) -> MarkerErrors:
    for tp, r in result.items():
        errors[tp] = r.error
    offsets_partitions = [tp.partition for tp, e in errors.items()
                          if tp.topic == GROUP_METADATA_TOPIC and e == ErrorCode.NONE]
    if offsets_partitions:
        try:
            server.group_coordinator.handle_txn_completion(producer_id, offsets_partitions, commit)
        except Exception:
            log.exception("completing the transactional offsets of producer %d failed", producer_id)
            for p in offsets_partitions:
                errors[TopicPartition(GROUP_METADATA_TOPIC, p)] = ErrorCode.UNKNOWN_SERVER_ERROR
    return errors

"""Produce (key 0), versions 0–12.

This handler does what belongs to the request: acks must be 0, 1 or -1 (else every partition answers
INVALID_REQUIRED_ACKS and nothing is appended), and v0–v2 magic 0/1 message sets are up-converted to v2
batches. Everything else is checked once, where it is owned: the ReplicaManager finds the partition
(UNKNOWN_TOPIC_OR_PARTITION / NOT_LEADER_OR_FOLLOWER) and refuses internal topics; the partition checks
min.insync.replicas (NOT_ENOUGH_REPLICAS before the append) and appends to its log, where storage validates
the batches (Kafka's LogValidator: magic 2, CRC32C, sizes, `max.message.bytes`, no empty record set) without
decoding records and writes offsets and the leader epoch into the batch in place.
acks=0: no response at all, but a partition that failed closes the connection (Kafka's answer: the client cannot
hear an error, so it reconnects and refreshes its metadata); acks=1: answer once the local append is written
(appends are written by the log directory's writer threads, broker.server.log_writes); acks=-1:
answer when the high watermark passes the batch (DelayedProduce) or REQUEST_TIMED_OUT at `timeout_ms`,
NOT_ENOUGH_REPLICAS_AFTER_APPEND if the ISR shrank below min.insync.replicas meanwhile. Unlike Kafka, a
non-transactional produce that only waits for its writes or its followers lets the connection take the
producer's next request meanwhile (broker.network.socket_server.Deferred; answers stay in request order).
Idempotent producers: duplicates get the original offsets, sequence gaps OUT_OF_ORDER_SEQUENCE_NUMBER, stale epochs
INVALID_PRODUCER_EPOCH. A batch rejected record by record (Kafka's RecordValidationException: a keyless record
to a compacted topic) answers INVALID_RECORD with the validator's message, the log start offset and KIP-467's
`record_errors` (v8+).
Transactional produce: a request whose first batch of any partition is transactional needs a
`transactional_id` (else every partition answers TRANSACTIONAL_ID_AUTHORIZATION_FAILED, Kafka's answer);
the ReplicaManager verifies with the transaction coordinator (KIP-890, AddPartitionsToTxn v4 verify_only)
before the first transactional append of a producer to a partition: not in the transaction,
INVALID_TXN_STATE (v11+, KIP-890's abortable error: TRANSACTION_ABORTABLE); the coordinator unreachable or
busy, NOT_ENOUGH_REPLICAS (retriable).
v12 (KIP-890 part 2, a transaction.version 2 producer sends no AddPartitionsToTxn): the leader has the
coordinator add the partition instead (AddPartitionsToTxn v4 without verify_only), even with
transaction.partition.verification.enable off, then appends; the coordinator's refusals answer as for
verification (another epoch INVALID_PRODUCER_EPOCH, an unknown id or another producer id
INVALID_PRODUCER_ID_MAPPING); CONCURRENT_TRANSACTIONS (the previous transaction still completing) is asked
again for up to 100 ms, then answered as is, not as NOT_ENOUGH_REPLICAS (Kafka 4.x).
Authorization (with an authorizer), as Kafka: transactional records need WRITE on the transactional id (else
every partition TRANSACTIONAL_ID_AUTHORIZATION_FAILED); each topic needs WRITE (else its partitions
TOPIC_AUTHORIZATION_FAILED, the others are appended).
From v10 (KIP-951) a NOT_LEADER_OR_FOLLOWER partition carries the current leader's id and epoch (this broker's
partition state, else the metadata cache's) and the response lists that leader's endpoint when it is alive.
NOT_ENOUGH_REPLICAS_AFTER_APPEND stays in the acks=-1 check, as in Kafka, but cannot be reached since the high
watermark does not move while the ISR is below min.insync.replicas (KAFKA-15583), so it is not in `ERRORS`.
KAFKA_STORAGE_ERROR: the write failed (a full disk, an I/O error) and was rolled back; the broker goes on
serving that log's reads and answers each later write the same way until one succeeds (Kafka takes the whole
log directory offline instead).
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from broker.apis.base import RequestContext, current_leader, response_for, response_type
from broker.security.acl import AclOperation, ResourceType
from broker.security.quotas import PRODUCER_BYTE_RATE
from broker.server.delayed_produce import ProducePartitionResult
from broker.server.txn_verification import TransactionSupportedOperation
from protocol.errors import ErrorCode
from protocol.legacy import up_convert
from protocol.records import CorruptRecordError, InvalidRecordError, read_magic
from storage import TopicPartition

log = logging.getLogger("broker.apis.produce")

API_KEY = 0
MIN_VERSION = 0
MAX_VERSION = 12
ERRORS: tuple[ErrorCode, ...] = (
    ErrorCode.INVALID_REQUIRED_ACKS, ErrorCode.CORRUPT_MESSAGE, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
    ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.INVALID_TOPIC_EXCEPTION, ErrorCode.NOT_ENOUGH_REPLICAS,
    ErrorCode.REQUEST_TIMED_OUT, ErrorCode.INVALID_RECORD,
    ErrorCode.MESSAGE_TOO_LARGE, ErrorCode.RECORD_LIST_TOO_LARGE, ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER,
    ErrorCode.INVALID_PRODUCER_EPOCH, ErrorCode.INVALID_TXN_STATE, ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
    ErrorCode.TOPIC_AUTHORIZATION_FAILED, ErrorCode.INVALID_PRODUCER_ID_MAPPING, ErrorCode.CONCURRENT_TRANSACTIONS,
    ErrorCode.TRANSACTION_ABORTABLE, ErrorCode.KAFKA_STORAGE_ERROR,
)


def handle(ctx: RequestContext, request: Any) -> Any:
    acks = request.acks
    if acks not in (0, 1, -1):
        return _response(ctx, request, {TopicPartition(topic.name, pd.index): ProducePartitionResult(
            ErrorCode.INVALID_REQUIRED_ACKS) for topic in request.topic_data for pd in topic.partition_data})
    if request.transactional_id is None and _has_transactional_records(request):
        log.warning("client %s sent transactional records without a transactional id", ctx.client_id)
        return _answer(ctx, request, {TopicPartition(topic.name, pd.index): ProducePartitionResult(
            ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
            for topic in request.topic_data for pd in topic.partition_data})
    entries: dict[TopicPartition, memoryview] = {}
    early: dict[TopicPartition, ProducePartitionResult] = {}
    denied: set[str] = set()
    if ctx.server.authorizer is not None:
        if _has_transactional_records(request) and not ctx.authorize(
                AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID, request.transactional_id):
            return _answer(ctx, request, {TopicPartition(topic.name, pd.index): ProducePartitionResult(
                ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
                for topic in request.topic_data for pd in topic.partition_data})
        names = [topic.name for topic in request.topic_data]
        denied = set(names) - ctx.filter_authorized(AclOperation.WRITE, ResourceType.TOPIC, names)
    for topic in request.topic_data:
        for pd in topic.partition_data:
            tp = TopicPartition(topic.name, pd.index)
            if denied and topic.name in denied:
                early[tp] = ProducePartitionResult(ErrorCode.TOPIC_AUTHORIZATION_FAILED)
                continue
            records = pd.records
            buf = records if isinstance(records, memoryview) and not records.readonly else \
                memoryview(bytearray(records or b""))
            try:
                if len(buf) and read_magic(buf) < 2:
                    buf = memoryview(bytearray(up_convert(buf, base_offset=0, log_append_time=None)))
            except (CorruptRecordError, InvalidRecordError) as e:
                early[tp] = ProducePartitionResult(ErrorCode.CORRUPT_MESSAGE, error_message=str(e))
                continue
            entries[tp] = buf
    result = ctx.server.replica_manager.append_records(
        request.timeout_ms, acks, entries, internal_topics_allowed=ctx.client_id == "__broker_internal",
        transactional_id=request.transactional_id,
        transaction_operation=TransactionSupportedOperation.for_produce(request.API_VERSION))
    if isinstance(result, asyncio.Future):
        async def wait() -> Any:
            results = await result
            return _answer(ctx, request, {**early, **results})
        # Without a transactional id every append is done (a transactional one may still await the
        # coordinator's verification): the answer only waits for the writes and the followers, and the
        # connection may take the producer's next request meanwhile (broker.network.socket_server.Deferred).
        ctx.deferred = request.transactional_id is None
        return wait()
    return _answer(ctx, request, {**early, **result})


def _answer(ctx: RequestContext, request: Any, results: dict[TopicPartition, ProducePartitionResult]) -> Any:
    """The response, or for acks=0 none: then a failed partition closes the connection, as Kafka does, since
    closing is the only way to tell a client that hears no answers that it must refresh its metadata."""
    # Kafka records a produce request's bytes against the client's quota once it is appended, acks=0 too.
    throttle_ms = ctx.record_quota(PRODUCER_BYTE_RATE, sum(
        len(pd.records) for topic in request.topic_data for pd in topic.partition_data if pd.records is not None))
    if request.acks != 0:
        return _response(ctx, request, results, throttle_ms)
    failed = {tp: r.error for tp, r in results.items() if r.error != ErrorCode.NONE}
    if failed and ctx.connection is not None:
        ctx.connection.close(
            f"acks=0 produce (correlation id {ctx.correlation_id}, client {ctx.client_id}) failed: "
            + ", ".join(f"{tp} {code.name}" for tp, code in failed.items()))
    return None


def _has_transactional_records(request: Any) -> bool:
    """Kafka's RequestUtils.hasTransactionalRecords: the first batch of some partition is transactional."""
    for topic in request.topic_data:
        for pd in topic.partition_data:
            records = pd.records
            # v2 batch: magic at byte 16, attributes int16 at 21-22 (transactional: bit 4)
            if records is not None and len(records) > _ATTRIBUTES_LOW and records[16] == 2 \
                    and records[_ATTRIBUTES_LOW] & _TRANSACTIONAL_BIT:
                return True
    return False


_ATTRIBUTES_LOW = 22
_TRANSACTIONAL_BIT = 0x10


def _response(ctx: RequestContext, request: Any, results: dict[TopicPartition, ProducePartitionResult],
              throttle_ms: int = 0) -> Any:
    Resp = response_type(request)
    TopicResp = Resp.TopicProduceResponse
    PartResp = TopicResp.PartitionProduceResponse
    hints = request.API_VERSION >= 10
    node_endpoints: dict[int, Any] = {}
    by_topic: dict[str, list] = {}
    for tp, r in results.items():
        fields: dict[str, Any] = {}
        if hints and r.error == ErrorCode.NOT_LEADER_OR_FOLLOWER:
            leader_id, leader_epoch, endpoint = current_leader(ctx, tp)
            fields["current_leader"] = PartResp.LeaderIdAndEpoch(leader_id=leader_id, leader_epoch=leader_epoch)
            if endpoint is not None:
                node_endpoints[leader_id] = Resp.NodeEndpoint(node_id=leader_id, host=endpoint.host,
                                                              port=endpoint.port, rack=endpoint.rack)
        by_topic.setdefault(tp.topic, []).append(PartResp(
            index=tp.partition, error_code=r.error, base_offset=r.base_offset,
            log_append_time_ms=r.log_append_time, log_start_offset=r.log_start_offset,
            error_message=r.error_message if r.error != ErrorCode.NONE else None,
            record_errors=[PartResp.BatchIndexAndErrorMessage(batch_index=i, batch_index_error_message=m)
                           for i, m in r.record_errors], **fields))
    extra = {"node_endpoints": [node_endpoints[n] for n in sorted(node_endpoints)]} if hints else {}
    return response_for(request, responses=[TopicResp(name=t, partition_responses=ps)
                                            for t, ps in by_topic.items()], throttle_time_ms=throttle_ms, **extra)

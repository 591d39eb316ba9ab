"""AddPartitionsToTxn (key 24), versions 0–5.

v0–3 come from a transactional producer: one transaction, its partitions added to it (written to
`__transaction_state` before the answer). v4–5 come from partition leaders (KIP-890): a batch of transactions,
each either added or, with `verify_only`, checked (NONE for a partition in the transaction,
TRANSACTION_ABORTABLE for one not in it, whatever the version: Kafka's answer since 3.8, which the leader turns
into INVALID_TXN_STATE for a client that does not know it). An add at v4+ is a transaction.version 2 client's
implicit add (Produce v12 / TxnOffsetCommit v5 on the leader): the coordinator records client transaction
version 2 (Kafka's transactionVersionForAddPartitionsToTxn), so the transaction's markers carry the epoch its
EndTxn v5 bumps. v5 is the same as v4. As Kafka's KafkaApis: a partition of a topic this broker does not know
fails the whole transaction (UNKNOWN_TOPIC_OR_PARTITION there, OPERATION_NOT_ATTEMPTED for the others); a
coordinator error is answered for every partition of the transaction; before v2 PRODUCER_FENCED is
INVALID_PRODUCER_EPOCH.
The coordinator's errors: INVALID_REQUEST (empty transactional id), INVALID_PRODUCER_ID_MAPPING (unknown id or
another producer id), PRODUCER_FENCED (another epoch), CONCURRENT_TRANSACTIONS (a transition or the markers
pending), NOT_COORDINATOR / COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE (the state write failed).
With an authorizer (Kafka): v4+ (brokers) needs CLUSTER_ACTION (CLUSTER_AUTHORIZATION_FAILED); v0-v3
WRITE on the transactional id (TRANSACTIONAL_ID_AUTHORIZATION_FAILED) and on each topic
(TOPIC_AUTHORIZATION_FAILED, the other partitions OPERATION_NOT_ATTEMPTED).
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from broker.apis.base import RequestContext, response_for, response_type
from broker.security.acl import AclOperation, ResourceType
from protocol.errors import ErrorCode
from storage import TopicPartition

if TYPE_CHECKING:
    from broker.apis.base import HandlerServer

API_KEY = 24
MIN_VERSION = 0
MAX_VERSION = 5
ERRORS: tuple[ErrorCode, ...] = (
    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode.OPERATION_NOT_ATTEMPTED, ErrorCode.INVALID_REQUEST,
    ErrorCode.INVALID_PRODUCER_ID_MAPPING, ErrorCode.PRODUCER_FENCED, ErrorCode.INVALID_PRODUCER_EPOCH,
    ErrorCode.CONCURRENT_TRANSACTIONS, ErrorCode.NOT_COORDINATOR, ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
    ErrorCode.COORDINATOR_NOT_AVAILABLE, ErrorCode.TRANSACTION_ABORTABLE,
    ErrorCode.CLUSTER_AUTHORIZATION_FAILED, ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
    ErrorCode.TOPIC_AUTHORIZATION_FAILED,
)


def handle(ctx: RequestContext, request: Any) -> Any:
    return _handle(ctx, request)


async def _handle(ctx: RequestContext, request: Any) -> Any:
    v = request.API_VERSION
    if v >= 4 and not ctx.authorize_cluster(AclOperation.CLUSTER_ACTION):  # v4+ comes from brokers only
        return response_for(request, throttle_time_ms=0, error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
                            results_by_transaction=[])
    if v < 4:
        txns = [(request.v3_and_below_transactional_id, request.v3_and_below_producer_id,
                 request.v3_and_below_producer_epoch, False, request.v3_and_below_topics)]
    else:
        txns = [(t.transactional_id, t.producer_id, t.producer_epoch, t.verify_only, t.topics)
                for t in request.transactions]
    results = await asyncio.gather(*(_one(ctx, v, *t) for t in txns))
    Resp = response_type(request)
    if v < 4:
        return response_for(request, throttle_time_ms=0, results_by_topic_v3_and_below=_topic_results(Resp,
                                                                                                     results[0]))
    return response_for(request, throttle_time_ms=0, error_code=0, results_by_transaction=[
        Resp.AddPartitionsToTxnResult(transactional_id=t[0], topic_results=_topic_results(Resp, r))
        for t, r in zip(txns, results, strict=True)])


def _topic_results(Resp: Any, errors: dict[TopicPartition, ErrorCode]) -> list[Any]:
    TopicResult = Resp.AddPartitionsToTxnTopicResult
    by_topic: dict[str, list[Any]] = {}
    for tp, error in errors.items():
        by_topic.setdefault(tp.topic, []).append(TopicResult.AddPartitionsToTxnPartitionResult(
            partition_index=tp.partition, partition_error_code=error))
    return [TopicResult(name=t, results_by_partition=ps) for t, ps in by_topic.items()]


async def _one(ctx: RequestContext, version: int, transactional_id: str, producer_id: int, producer_epoch: int,
               verify_only: bool, topics: list[Any]) -> dict[TopicPartition, ErrorCode]:
    partitions = {TopicPartition(t.name, p) for t in topics for p in t.partitions}
    if verify_only:  # v4, from a partition leader (CLUSTER_ACTION checked above)
        return verify_partitions(ctx.server, transactional_id, producer_id, producer_epoch, partitions)
    failed = _unknown(ctx.server, partitions)
    if version < 4 and ctx.server.authorizer is not None:
        # Clients need WRITE on the transactional id, then on each topic (internal topics never pass: Kafka).
        if not ctx.authorize(AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID, transactional_id):
            return dict.fromkeys(partitions, ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
        writable = ctx.filter_authorized(AclOperation.WRITE, ResourceType.TOPIC,
                                         (tp.topic for tp in partitions if not tp.topic.startswith("__")))
        failed.update((tp, ErrorCode.TOPIC_AUTHORIZATION_FAILED) for tp in partitions if tp.topic not in writable)
    if failed:
        return {tp: failed.get(tp, ErrorCode.OPERATION_NOT_ATTEMPTED) for tp in partitions}
    error = await ctx.server.transaction_coordinator.coordinator.handle_add_partitions(
        transactional_id, producer_id, producer_epoch, partitions, client_transaction_version=2 if version >= 4 else 0)
    if version < 2 and error == ErrorCode.PRODUCER_FENCED:
        error = ErrorCode.INVALID_PRODUCER_EPOCH
    return dict.fromkeys(partitions, error)


def verify_partitions(server: HandlerServer, transactional_id: str, producer_id: int, producer_epoch: int,
                      partitions: set[TopicPartition]) -> dict[TopicPartition, ErrorCode]:
    """What a verify_only transaction (v4, KIP-890) answers per partition. A partition leader whose
    transaction coordinator is this broker asks it here, in-process, instead of sending the request."""
    failed = _unknown(server, partitions)
    if failed:
        return {tp: failed.get(tp, ErrorCode.OPERATION_NOT_ATTEMPTED) for tp in partitions}
    return server.transaction_coordinator.coordinator.handle_verify_partitions(
        transactional_id, producer_id, producer_epoch, partitions)


async def add_partitions(server: HandlerServer, transactional_id: str, producer_id: int, producer_epoch: int,
                         partitions: set[TopicPartition]) -> dict[TopicPartition, ErrorCode]:
    """What an add (v4+, not verify_only: a TV2 client's implicit add) answers per partition; a partition leader
    whose transaction coordinator is this broker asks it here, in-process, instead of sending the request."""
    failed = _unknown(server, partitions)
    if failed:
        return {tp: failed.get(tp, ErrorCode.OPERATION_NOT_ATTEMPTED) for tp in partitions}
    error = await server.transaction_coordinator.coordinator.handle_add_partitions(
        transactional_id, producer_id, producer_epoch, partitions, client_transaction_version=2)
    return dict.fromkeys(partitions, error)


def _unknown(server: HandlerServer, partitions: set[TopicPartition]) -> dict[TopicPartition, ErrorCode]:
    """UNKNOWN_TOPIC_OR_PARTITION for each partition this broker's metadata does not know."""
    cache = server.metadata_cache
    return {tp: ErrorCode.UNKNOWN_TOPIC_OR_PARTITION for tp in partitions
            if cache.partition(tp.topic, tp.partition) is None}

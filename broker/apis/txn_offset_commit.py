"""TxnOffsetCommit (key 28), versions 0–5.

A transactional producer's consumed offsets for a group (`send_offsets_to_transaction`), committed in its
transaction (Kafka's handleTxnOffsetCommitRequest and GroupCoordinator.handleTxnCommitOffsets):
- topics the metadata does not know, and partitions they do not have, answer UNKNOWN_TOPIC_OR_PARTITION;
  the rest go to the group coordinator (empty group id INVALID_GROUP_ID; NOT_COORDINATOR /
  COORDINATOR_LOAD_IN_PROGRESS / COORDINATOR_NOT_AVAILABLE as for OffsetCommit);
- KIP-890: the group's `__consumer_offsets` partition is verified with the transaction coordinator (it is in
  the transaction once AddOffsetsToTxn added it): not in it, INVALID_TXN_STATE (v4+, which know KIP-890's
  abortable error: TRANSACTION_ABORTABLE); another epoch,
  INVALID_PRODUCER_EPOCH; an unknown transactional id or another producer id, INVALID_PRODUCER_ID_MAPPING;
  the coordinator busy or unreachable, COORDINATOR_NOT_AVAILABLE / COORDINATOR_LOAD_IN_PROGRESS (Kafka's
  maybeConvertOffsetCommitError);
- KIP-890 part 2 (v5, a transaction.version 2 producer sends no AddOffsetsToTxn): the partition is added to
  the transaction by the coordinator instead of verified (AddPartitionsToTxn v4 without verify_only), even
  with transaction.partition.verification.enable off; its refusals map as above.
- KIP-447 (v3+): a member id, generation or group instance id is checked as OffsetCommit checks them
  (UNKNOWN_MEMBER_ID, ILLEGAL_GENERATION, FENCED_INSTANCE_ID); v0–v2 carry none and are accepted whatever
  the group's state;
- the offsets are appended as one transactional batch of the producer (id, epoch) to `__consumer_offsets`
  and answered once committed there; they stay pending, invisible to OffsetFetch, until the transaction's
  COMMIT marker (an ABORT drops them). Metadata over `offset.metadata.max.bytes`: OFFSET_METADATA_TOO_LARGE;
  a batch `__consumer_offsets` cannot take: INVALID_COMMIT_OFFSET_SIZE.
- v0–v1 hear COORDINATOR_NOT_AVAILABLE instead of COORDINATOR_LOAD_IN_PROGRESS (pre-2.0 clients, KAFKA-7296).
With an authorizer (Kafka): WRITE on the transactional id, READ on the group, READ on each topic; refused
partitions answer TRANSACTIONAL_ID_ / GROUP_ / TOPIC_AUTHORIZATION_FAILED.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from broker.apis.base import RequestContext, response_for, response_type
from broker.coordinator.group import OffsetCommitEntry
from broker.coordinator.group.errors import map_offset_append_error
from broker.coordinator.group.service import GROUP_METADATA_TOPIC
from broker.security.acl import AclOperation, ResourceType
from broker.server.txn_verification import TransactionSupportedOperation, verify_partition
from protocol.errors import ErrorCode
from storage import TopicPartition

API_KEY = 28
MIN_VERSION = 0
MAX_VERSION = 5
ERRORS: tuple[ErrorCode, ...] = (
    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode.INVALID_GROUP_ID, ErrorCode.NOT_COORDINATOR,
    ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, ErrorCode.COORDINATOR_NOT_AVAILABLE, ErrorCode.INVALID_TXN_STATE,
    ErrorCode.INVALID_PRODUCER_EPOCH, ErrorCode.INVALID_PRODUCER_ID_MAPPING, ErrorCode.UNKNOWN_MEMBER_ID,
    ErrorCode.ILLEGAL_GENERATION, ErrorCode.FENCED_INSTANCE_ID, ErrorCode.OFFSET_METADATA_TOO_LARGE,
    ErrorCode.INVALID_COMMIT_OFFSET_SIZE, ErrorCode.TRANSACTION_ABORTABLE,
    ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, ErrorCode.GROUP_AUTHORIZATION_FAILED,
    ErrorCode.TOPIC_AUTHORIZATION_FAILED,
)


async def handle(ctx: RequestContext, request: Any) -> Any:
    version = request.API_VERSION
    cache = ctx.server.metadata_cache
    results: dict[TopicPartition, int] = {}
    entries: list[OffsetCommitEntry] = []
    refused = _refusal(ctx, request)
    for topic in request.topics or []:
        known = topic.name in cache.topics
        refusal = refused(topic.name)
        for p in topic.partitions or []:
            tp = TopicPartition(topic.name, p.partition_index)
            if refusal:
                results[tp] = refusal
            elif not known or cache.partition(topic.name, p.partition_index) is None:
                results[tp] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            else:
                entries.append(OffsetCommitEntry(tp.topic, tp.partition, p.committed_offset,
                                                 p.committed_leader_epoch if version >= 2 else -1,
                                                 p.committed_metadata))
    if entries:
        async def verify(partition: int) -> tuple[int, object]:
            error, guard = await verify_partition(
                ctx.server.replica_manager, TopicPartition(GROUP_METADATA_TOPIC, partition),
                request.transactional_id, request.producer_id, request.producer_epoch,
                operation=TransactionSupportedOperation.for_txn_offset_commit(version))
            return _convert_verification_error(error), guard

        coordinator = ctx.server.group_coordinator.coordinator
        results.update(await coordinator.commit_txn_offsets(
            request.group_id, request.producer_id, request.producer_epoch,
            request.member_id if version >= 3 else "", request.group_instance_id if version >= 3 else None,
            request.generation_id if version >= 3 else -1, entries, verify))
    if version < 2:
        results = {tp: ErrorCode.COORDINATOR_NOT_AVAILABLE if e == ErrorCode.COORDINATOR_LOAD_IN_PROGRESS else e
                   for tp, e in results.items()}
    return _response(request, results)


def _refusal(ctx: RequestContext, request: Any) -> Callable[[str], int]:
    """Per topic, the error its partitions answer instead of being committed (Kafka's order: WRITE on the
    transactional id, READ on the group, READ on the topic)."""
    if ctx.server.authorizer is None:
        return lambda topic: ErrorCode.NONE
    for allowed, error in ((lambda: ctx.authorize(AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID,
                                                   request.transactional_id),
                            ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED),
                           (lambda: ctx.authorize(AclOperation.READ, ResourceType.GROUP, request.group_id),
                            ErrorCode.GROUP_AUTHORIZATION_FAILED)):
        if not allowed():
            return lambda topic, error=error: error
    readable = ctx.filter_authorized(AclOperation.READ, ResourceType.TOPIC, (t.name for t in request.topics or []))
    return lambda topic: ErrorCode.NONE if topic in readable else ErrorCode.TOPIC_AUTHORIZATION_FAILED


def _convert_verification_error(error: int) -> int:
    """Kafka's maybeConvertOffsetCommitError for a failed verification: a network failure is retried as
    loading; append-style errors as for any offset commit; INVALID_TXN_STATE and the like unchanged."""
    if error == ErrorCode.NETWORK_EXCEPTION:
        return ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
    return map_offset_append_error(error)


def _response(request: Any, results: dict[TopicPartition, int]) -> Any:
    TopicResp = response_type(request).TxnOffsetCommitResponseTopic
    PartResp = TopicResp.TxnOffsetCommitResponsePartition
    by_topic: dict[str, list[Any]] = {}
    for topic in request.topics or []:
        for p in topic.partitions or []:
            error = results[TopicPartition(topic.name, p.partition_index)]
            by_topic.setdefault(topic.name, []).append(PartResp(partition_index=p.partition_index,
                                                               error_code=error))
    return response_for(request, throttle_time_ms=0,
                        topics=[TopicResp(name=t, partitions=ps) for t, ps in by_topic.items()])

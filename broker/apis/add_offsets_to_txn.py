"""AddOffsetsToTxn (key 25), versions 0–4.

Adds the group's `__consumer_offsets` partition (abs(hashCode(group_id)) % offsets.topic.num.partitions) to the
producer's transaction, as AddPartitionsToTxn would (Kafka's handleAddOffsetsToTxnRequest); the offsets
themselves come with TxnOffsetCommit to the group coordinator. Errors are the coordinator's, as for
AddPartitionsToTxn (`add_partitions_to_txn`); before v2 PRODUCER_FENCED is INVALID_PRODUCER_EPOCH. v4 (KIP-890)
only lets Kafka answer TRANSACTION_ABORTABLE, which an add never is. The transaction stays at client
transaction version 0 whatever the version (Kafka: a TV2 producer sends no AddOffsetsToTxn, TxnOffsetCommit v5
adds the partition).
With an authorizer (Kafka): WRITE on the transactional id (TRANSACTIONAL_ID_AUTHORIZATION_FAILED), then
READ on the group (GROUP_AUTHORIZATION_FAILED).
"""

from __future__ import annotations

from typing import Any

from broker.apis.base import RequestContext, response_for
from broker.coordinator.group.service import GROUP_METADATA_TOPIC
from broker.security.acl import AclOperation, ResourceType
from protocol.errors import ErrorCode
from storage import TopicPartition

API_KEY = 25
MIN_VERSION = 0
MAX_VERSION = 4
ERRORS: tuple[ErrorCode, ...] = (
    ErrorCode.INVALID_REQUEST, ErrorCode.INVALID_PRODUCER_ID_MAPPING, ErrorCode.PRODUCER_FENCED,
    ErrorCode.INVALID_PRODUCER_EPOCH, ErrorCode.CONCURRENT_TRANSACTIONS, ErrorCode.NOT_COORDINATOR,
    ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, ErrorCode.GROUP_AUTHORIZATION_FAILED,
)


def handle(ctx: RequestContext, request: Any) -> Any:
    return _handle(ctx, request)


async def _handle(ctx: RequestContext, request: Any) -> Any:
    if not ctx.authorize(AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID, request.transactional_id):
        return response_for(request, throttle_time_ms=0, error_code=ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
    if not ctx.authorize(AclOperation.READ, ResourceType.GROUP, request.group_id):
        return response_for(request, throttle_time_ms=0, error_code=ErrorCode.GROUP_AUTHORIZATION_FAILED)
    tp = TopicPartition(GROUP_METADATA_TOPIC, ctx.server.group_coordinator.partition_for(request.group_id))
    error = await ctx.server.transaction_coordinator.coordinator.handle_add_partitions(
        request.transactional_id, request.producer_id, request.producer_epoch, {tp})
    if request.API_VERSION < 2 and error == ErrorCode.PRODUCER_FENCED:
        error = ErrorCode.INVALID_PRODUCER_EPOCH
    return response_for(request, throttle_time_ms=0, error_code=error)

"""EndTxn (key 26), versions 0–5.

Commits or aborts the producer's transaction: the coordinator writes PrepareCommit/PrepareAbort, answers, then
sends the markers and writes the Complete* state in the background (Kafka's handleEndTxnRequest). A retry of
an EndTxn that already completed the same way answers NONE; while the markers of the previous one are still
being written, CONCURRENT_TRANSACTIONS; an end the state does not allow (nothing to end, a commit of an
aborted one) INVALID_TXN_STATE; the other errors are the coordinator's, as for AddPartitionsToTxn.
Before v2 PRODUCER_FENCED is INVALID_PRODUCER_EPOCH.
v5 (KIP-890 part 2, transaction.version 2; the client's version alone decides, as Kafka's
transactionVersionForEndTxn): every commit or abort bumps the producer epoch, the markers carry the bumped
epoch, and the response carries the producer id and epoch the producer continues with (a new producer id at
epoch 0 once the epoch is exhausted); a retry (the epoch before the bump) answers the same again; an abort with
nothing in the transaction is accepted (Empty, CompleteCommit, CompleteAbort), a commit there is INVALID_TXN_STATE;
an older epoch PRODUCER_FENCED. Any error answers producer id/epoch -1.
With an authorizer (Kafka): WRITE on the transactional id, else TRANSACTIONAL_ID_AUTHORIZATION_FAILED.
"""

from __future__ import annotations

from typing import Any

from broker.apis.base import RequestContext, response_for
from broker.security.acl import AclOperation, ResourceType
from protocol.errors import ErrorCode

API_KEY = 26
MIN_VERSION = 0
MAX_VERSION = 5
ERRORS: tuple[ErrorCode, ...] = (
    ErrorCode.INVALID_REQUEST, ErrorCode.INVALID_PRODUCER_ID_MAPPING, ErrorCode.PRODUCER_FENCED,
    ErrorCode.INVALID_PRODUCER_EPOCH, ErrorCode.CONCURRENT_TRANSACTIONS, ErrorCode.INVALID_TXN_STATE,
    ErrorCode.NOT_COORDINATOR, ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
)


def handle(ctx: RequestContext, request: Any) -> Any:
    return _handle(ctx, request)


async def _handle(ctx: RequestContext, request: Any) -> Any:
    if not ctx.authorize(AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID, request.transactional_id):
        return response_for(request, throttle_time_ms=0, error_code=ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
    error, producer_id, producer_epoch = await ctx.server.transaction_coordinator.coordinator.handle_end_transaction(
        request.transactional_id, request.producer_id, request.producer_epoch, bool(request.committed),
        client_transaction_version=2 if request.API_VERSION >= 5 else 0)
    if request.API_VERSION < 2 and error == ErrorCode.PRODUCER_FENCED:
        error = ErrorCode.INVALID_PRODUCER_EPOCH
    fields = {"producer_id": producer_id, "producer_epoch": producer_epoch} if request.API_VERSION >= 5 else {}
    return response_for(request, throttle_time_ms=0, error_code=error, **fields)

"""EndTxn (key 26), versions 0–4.

Commits or aborts the producer's transaction: the coordinator writes PrepareCommit/PrepareAbort, answers, then
sends the markers and writes the Complete* state in the background (Kafka's handleEndTxnRequest). A retry of
an EndTxn that already completed the same way answers NONE; while the markers of the previous one are still
being written, CONCURRENT_TRANSACTIONS; an end the state does not allow (nothing to end, a commit of an
aborted one) INVALID_TXN_STATE; the other errors are the coordinator's, as for AddPartitionsToTxn.
Before v2 PRODUCER_FENCED is INVALID_PRODUCER_EPOCH.
With an authorizer (Kafka): WRITE on the transactional id, else TRANSACTIONAL_ID_AUTHORIZATION_FAILED.
"""

from __future__ import annotations

from typing import Any

from broker.apis.base import RequestContext, response_for
from broker.security.acl import AclOperation, ResourceType
from protocol.errors import ErrorCode

API_KEY = 26
MIN_VERSION = 0
MAX_VERSION = 4
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
    error = await ctx.server.transaction_coordinator.coordinator.handle_end_transaction(
        request.transactional_id, request.producer_id, request.producer_epoch, bool(request.committed))
    if request.API_VERSION < 2 and error == ErrorCode.PRODUCER_FENCED:
        error = ErrorCode.INVALID_PRODUCER_EPOCH
    return response_for(request, throttle_time_ms=0, error_code=error)

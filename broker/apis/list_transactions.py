"""ListTransactions (key 66), versions 0–1.

The transactional ids this broker coordinates (Kafka's handleListTransactions): filtered by state names (unknown
names are echoed in `unknown_state_filters`), producer ids and (v1, KIP-994) transactions running longer than
`duration_filter` ms; Dead ids are never listed. COORDINATOR_LOAD_IN_PROGRESS while any partition loads;
COORDINATOR_NOT_AVAILABLE while the coordinator is not started or shut down.
With an authorizer (Kafka): only the transactional ids the principal may DESCRIBE are listed.
"""

from __future__ import annotations

from typing import Any

from broker.apis.base import RequestContext, response_for, response_type
from broker.security.acl import AclOperation, ResourceType
from protocol.errors import ErrorCode

API_KEY = 66
MIN_VERSION = 0
MAX_VERSION = 1
ERRORS: tuple[ErrorCode, ...] = (ErrorCode.COORDINATOR_NOT_AVAILABLE, ErrorCode.COORDINATOR_LOAD_IN_PROGRESS)


def handle(ctx: RequestContext, request: Any) -> Any:
    duration = request.duration_filter if request.API_VERSION >= 1 else -1
    error, unknown, txns = ctx.server.transaction_coordinator.coordinator.list_transactions(
        set(request.producer_id_filters), set(request.state_filters), duration)
    State = response_type(request).TransactionState
    return response_for(request, throttle_time_ms=0, error_code=error, unknown_state_filters=unknown,
                        transaction_states=[State(transactional_id=md.transactional_id, producer_id=md.producer_id,
                                                  transaction_state=md.state.state_name) for md in txns
                                            if ctx.authorize(AclOperation.DESCRIBE, ResourceType.TRANSACTIONAL_ID,
                                                             md.transactional_id)])

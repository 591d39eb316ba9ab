"""DescribeTransactions (key 65), version 0.

Each transactional id's state on this coordinator (Kafka's handleDescribeTransactions): state name, timeout,
start time, producer id/epoch and the partitions still in the transaction (while preparing, those without
their marker yet). Errors per id: NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE
(the coordinator not started or shut down), TRANSACTIONAL_ID_NOT_FOUND (unknown or Dead), INVALID_REQUEST for
an empty id.
With an authorizer (Kafka): DESCRIBE on each transactional id (else
TRANSACTIONAL_ID_AUTHORIZATION_FAILED); only partitions of topics the principal may DESCRIBE are listed.
"""

from __future__ import annotations

from typing import Any

from broker.apis.base import RequestContext, response_for, response_type
from broker.security.acl import AclOperation, ResourceType
from protocol.errors import ErrorCode

API_KEY = 65
MIN_VERSION = 0
MAX_VERSION = 0
ERRORS: tuple[ErrorCode, ...] = (
    ErrorCode.COORDINATOR_NOT_AVAILABLE, ErrorCode.INVALID_REQUEST, ErrorCode.NOT_COORDINATOR,
    ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, ErrorCode.TRANSACTIONAL_ID_NOT_FOUND,
    ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
)


def handle(ctx: RequestContext, request: Any) -> Any:
    State = response_type(request).TransactionState
    coordinator = ctx.server.transaction_coordinator.coordinator
    states = []
    for txn_id in request.transactional_ids:
        if ctx.authorize(AclOperation.DESCRIBE, ResourceType.TRANSACTIONAL_ID, txn_id):
            error, md = coordinator.describe(txn_id)
        else:
            error, md = ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, None
        if md is None or error != ErrorCode.NONE:
            states.append(State(error_code=error, transactional_id=txn_id, transaction_state="",
                                transaction_timeout_ms=0, transaction_start_time_ms=0, producer_id=0,
                                producer_epoch=0, topics=[]))
            continue
        by_topic: dict[str, list[int]] = {}
        for tp in md.topic_partitions:
            if not ctx.authorize(AclOperation.DESCRIBE, ResourceType.TOPIC, tp.topic):
                continue  # Kafka lists only the partitions of topics the principal may describe
            by_topic.setdefault(tp.topic, []).append(tp.partition)
        states.append(State(error_code=ErrorCode.NONE, transactional_id=txn_id,
                            transaction_state=md.state.state_name, transaction_timeout_ms=md.txn_timeout_ms,
                            transaction_start_time_ms=md.txn_start_timestamp, producer_id=md.producer_id,
                            producer_epoch=md.producer_epoch,
                            topics=[State.TopicData(topic=t, partitions=sorted(ps)) for t, ps in by_topic.items()]))
    return response_for(request, throttle_time_ms=0, transaction_states=states)

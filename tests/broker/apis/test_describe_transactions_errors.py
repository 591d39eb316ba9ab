"""DescribeTransactions: every code of `broker.apis.describe_transactions.ERRORS`, over a real socket with our
codec, against the real transaction coordinator (tests/broker/apis/txn_support.py)."""

from __future__ import annotations

from typing import Any

from broker.apis import describe_transactions
from protocol import ApiKey, request_class
from protocol.errors import ErrorCode

from .acl_support import denied
from .support import Brokers, Producer, error_path_test
from .txn_support import Txn, loading, not_coordinator, shut_down

Req = request_class(ApiKey.DESCRIBE_TRANSACTIONS)


def send(b: Brokers, txn_id: str, port: int | None = None) -> Any:
    return b.call(Req[0](transactional_ids=[txn_id]), port)


def unknown_id(b: Brokers) -> Any:
    Txn.init(b, "describe-ready")  # __transaction_state exists and is loaded
    return send(b, "describe-never-initialized")


PRODUCERS: dict[ErrorCode, Producer] = {
    ErrorCode.COORDINATOR_NOT_AVAILABLE: lambda b: send(b, "describe-any", shut_down(b)),
    ErrorCode.INVALID_REQUEST: lambda b: send(b, ""),
    ErrorCode.NOT_COORDINATOR: lambda b: send(b, "describe-any", not_coordinator(b)),
    ErrorCode.COORDINATOR_LOAD_IN_PROGRESS: lambda b: send(b, "describe-loading", loading(b, "describe-loading")),
    ErrorCode.TRANSACTIONAL_ID_NOT_FOUND: unknown_id,
}

PRODUCERS.update({
    ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED: lambda b: send(b, "acl-txn", denied(b)),
})

test_errors = error_path_test(describe_transactions, PRODUCERS)

"""ListTransactions: every code of `broker.apis.list_transactions.ERRORS`, over a real socket with our codec,
against the real transaction coordinator (tests/broker/apis/txn_support.py)."""

from __future__ import annotations

from typing import Any

from broker.apis import list_transactions
from protocol import ApiKey, request_class
from protocol.errors import ErrorCode

from .support import Brokers, Producer, error_path_test
from .txn_support import loading, shut_down

Req = request_class(ApiKey.LIST_TRANSACTIONS)


def send(b: Brokers, port: int) -> Any:
    return b.call(Req[0](state_filters=[], producer_id_filters=[]), port)


PRODUCERS: dict[ErrorCode, Producer] = {
    ErrorCode.COORDINATOR_NOT_AVAILABLE: lambda b: send(b, shut_down(b)),
    ErrorCode.COORDINATOR_LOAD_IN_PROGRESS: lambda b: send(b, loading(b, "list-loading")),
}

test_errors = error_path_test(list_transactions, PRODUCERS)

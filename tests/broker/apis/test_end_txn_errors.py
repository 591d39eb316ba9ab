"""EndTxn: every code of `broker.apis.end_txn.ERRORS`, over a real socket with our codec, against the real
transaction coordinator (tests/broker/apis/txn_support.py)."""

from __future__ import annotations

from typing import Any

from broker.apis import end_txn
from protocol.errors import ErrorCode

from .acl_support import denied
from .support import Brokers, Producer, error_path_test
from .txn_support import END, Txn, loading, not_coordinator, stuck_in_prepare_commit, unwritable


def send(b: Brokers, txn: Txn, *, commit: bool = True, txn_id: str | None = None, producer_id: int | None = None,
         producer_epoch: int | None = None, version: int = 3) -> Any:
    return b.call(END[version](transactional_id=txn.txn_id if txn_id is None else txn_id,
                               producer_id=txn.producer_id if producer_id is None else producer_id,
                               producer_epoch=txn.producer_epoch if producer_epoch is None else producer_epoch,
                               committed=commit), txn.port)


PRODUCERS: dict[ErrorCode, Producer] = {
    ErrorCode.INVALID_REQUEST: lambda b: send(b, Txn.init(b, "end-empty-id"), txn_id=""),
    ErrorCode.INVALID_PRODUCER_ID_MAPPING: lambda b: send(b, Txn.init(b, "end-unknown-id"),
                                                          txn_id="end-never-initialized"),
    ErrorCode.PRODUCER_FENCED: lambda b: send(b, Txn.init(b, "end-fenced"), producer_epoch=7),
    ErrorCode.INVALID_PRODUCER_EPOCH: lambda b: send(b, Txn.init(b, "end-fenced-v1"), producer_epoch=7, version=1),
    # a commit retried while its markers are still being written
    ErrorCode.CONCURRENT_TRANSACTIONS: lambda b: send(b, stuck_in_prepare_commit(b)),
    # nothing to end: the transaction is Empty
    ErrorCode.INVALID_TXN_STATE: lambda b: send(b, Txn.init(b, "end-empty")),
    ErrorCode.NOT_COORDINATOR: lambda b: send(b, Txn("end-anywhere", 1, 0, not_coordinator(b))),
    ErrorCode.COORDINATOR_LOAD_IN_PROGRESS: lambda b: send(b, Txn("end-loading", 1, 0, loading(b, "end-loading"))),
    ErrorCode.COORDINATOR_NOT_AVAILABLE: lambda b: send(b, unwritable(b)),
}

PRODUCERS.update({
    ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED: lambda b: b.call(
        END[3](transactional_id="acl-txn", producer_id=1, producer_epoch=0, committed=True), denied(b)),
})

test_errors = error_path_test(end_txn, PRODUCERS)


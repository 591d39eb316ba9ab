"""AddOffsetsToTxn: every code of `broker.apis.add_offsets_to_txn.ERRORS`, over a real socket with our codec,
against the real transaction coordinator (tests/broker/apis/txn_support.py)."""

from __future__ import annotations

from typing import Any

from broker.apis import add_offsets_to_txn
from protocol import ApiKey, request_class
from protocol.errors import ErrorCode

from .acl_support import DENIED_GROUP, denied, partial
from .support import Brokers, Producer, error_path_test
from .txn_support import Txn, loading, not_coordinator, stuck_in_prepare_commit, unwritable

Req = request_class(ApiKey.ADD_OFFSETS_TO_TXN)


def send(b: Brokers, txn: Txn, *, txn_id: str | None = None, producer_id: int | None = None,
         producer_epoch: int | None = None, version: int = 3) -> Any:
    return b.call(Req[version](transactional_id=txn.txn_id if txn_id is None else txn_id,
                               producer_id=txn.producer_id if producer_id is None else producer_id,
                               producer_epoch=txn.producer_epoch if producer_epoch is None else producer_epoch,
                               group_id="offsets-group"), txn.port)


PRODUCERS: dict[ErrorCode, Producer] = {
    ErrorCode.INVALID_REQUEST: lambda b: send(b, Txn.init(b, "offsets-empty-id"), txn_id=""),
    ErrorCode.INVALID_PRODUCER_ID_MAPPING: lambda b: send(b, Txn.init(b, "offsets-unknown-id"),
                                                          txn_id="offsets-never-initialized"),
    ErrorCode.PRODUCER_FENCED: lambda b: send(b, Txn.init(b, "offsets-fenced"), producer_epoch=7),
    ErrorCode.INVALID_PRODUCER_EPOCH: lambda b: send(b, Txn.init(b, "offsets-fenced-v1"), producer_epoch=7,
                                                     version=1),
    ErrorCode.CONCURRENT_TRANSACTIONS: lambda b: send(b, stuck_in_prepare_commit(b)),
    ErrorCode.NOT_COORDINATOR: lambda b: send(b, Txn("offsets-anywhere", 1, 0, not_coordinator(b))),
    ErrorCode.COORDINATOR_LOAD_IN_PROGRESS: lambda b: send(b, Txn("offsets-loading", 1, 0,
                                                                  loading(b, "offsets-loading"))),
    ErrorCode.COORDINATOR_NOT_AVAILABLE: lambda b: send(b, unwritable(b)),
}

def add_offsets_raw(b: Brokers, port: int, group: str) -> Any:
    return b.call(Req[3](transactional_id="acl-txn", producer_id=1, producer_epoch=0, group_id=group), port)

PRODUCERS.update({
    ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED: lambda b: add_offsets_raw(b, denied(b), "any-group"),
    ErrorCode.GROUP_AUTHORIZATION_FAILED: lambda b: add_offsets_raw(b, partial(b), DENIED_GROUP),
})

test_errors = error_path_test(add_offsets_to_txn, PRODUCERS)

"""InitProducerId: every code of `broker.apis.init_producer_id.ERRORS`, over a real socket with our codec,
against the real transaction coordinator (tests/broker/apis/txn_support.py)."""

from __future__ import annotations

from typing import Any

from broker.apis import init_producer_id
from protocol.errors import ErrorCode

from .acl_support import denied
from .support import Brokers, Producer, error_path_test
from .txn_support import Txn, begin, coordinated_by_0, init_request, loading, not_coordinator, unwritable


def fenced(b: Brokers, txn_id: str, version: int) -> Any:
    # KIP-360: the caller names a producer id that is neither the current nor the previous one
    txn = Txn.init(b, txn_id)
    return b.call(init_request(txn_id, txn.producer_id + 1000, 0, version=version))


def fence_ongoing(b: Brokers) -> Any:
    # a second producer with the id of an Ongoing transaction: the coordinator aborts it first, the caller retries
    txn = begin(b, "init-ongoing", b.topic("init-plain"))
    return b.call(init_request(txn.txn_id))


def cannot_write(b: Brokers) -> Any:
    unwritable(b)
    return b.call(init_request(coordinated_by_0(b, "init-unwritable")), b.cluster.ports[0])


PRODUCERS: dict[ErrorCode, Producer] = {
    ErrorCode.INVALID_REQUEST: lambda b: b.call(init_request("init-half", producer_id=5, producer_epoch=-1)),
    ErrorCode.INVALID_TRANSACTION_TIMEOUT: lambda b: b.call(init_request("init-timeout", timeout_ms=0)),
    ErrorCode.PRODUCER_FENCED: lambda b: fenced(b, "init-fenced", 4),
    ErrorCode.INVALID_PRODUCER_EPOCH: lambda b: fenced(b, "init-fenced-v3", 3),
    ErrorCode.CONCURRENT_TRANSACTIONS: fence_ongoing,
    ErrorCode.NOT_COORDINATOR: lambda b: b.call(init_request("init-anywhere"), not_coordinator(b, "init-plain")),
    ErrorCode.COORDINATOR_LOAD_IN_PROGRESS: lambda b: b.call(init_request("init-loading"),
                                                             loading(b, "init-loading")),
    ErrorCode.COORDINATOR_NOT_AVAILABLE: cannot_write,
}

PRODUCERS.update({
    ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED: lambda b: b.call(init_request("acl-txn"), denied(b)),
    # an idempotent producer: neither IDEMPOTENT_WRITE on the cluster nor WRITE on any topic
    ErrorCode.CLUSTER_AUTHORIZATION_FAILED: lambda b: b.call(init_request(None), denied(b)),
})

test_errors = error_path_test(init_producer_id, PRODUCERS)


def test_an_empty_transactional_id_is_invalid(brokers: Brokers) -> None:
    assert brokers.call(init_request("")).error_code == ErrorCode.INVALID_REQUEST

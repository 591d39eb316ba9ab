"""AddPartitionsToTxn: every code of `broker.apis.add_partitions_to_txn.ERRORS`, over a real socket with our
codec, against the real transaction coordinator (tests/broker/apis/txn_support.py)."""

from __future__ import annotations

from typing import Any

from broker.apis import add_partitions_to_txn
from protocol.errors import ErrorCode

from .acl_support import DENIED_TOPIC, denied, partial
from .support import Brokers, Producer, error_path_test
from .txn_support import ADD, ON_2, Txn, begin, loading, not_coordinator, stuck_in_prepare_commit, unwritable

TOPIC = "add-partitions-plain"


def fresh(b: Brokers, txn_id: str) -> Txn:
    b.topic(TOPIC, partitions=2)
    return Txn.init(b, txn_id)


def unknown_and_known(b: Brokers) -> Any:
    # one unknown partition fails the whole transaction: the known one is not attempted
    txn = fresh(b, "add-unknown")
    return b.call(ADD[3](v3_and_below_transactional_id=txn.txn_id, v3_and_below_producer_id=txn.producer_id,
                         v3_and_below_producer_epoch=txn.producer_epoch, v3_and_below_topics=[
                             ADD.AddPartitionsToTxnTopic(name=TOPIC, partitions=[0]),
                             ADD.AddPartitionsToTxnTopic(name="add-partitions-missing", partitions=[0])]))


def verify_only(b: Brokers) -> Any:
    # KIP-890, as a partition leader asks (v4): partition 1 was never added to the Ongoing transaction
    txn = begin(b, "add-verify", b.topic(TOPIC, partitions=2))
    T = ADD.AddPartitionsToTxnTransaction
    return b.call(ADD[4](transactions=[T(transactional_id=txn.txn_id, producer_id=txn.producer_id,
                                         producer_epoch=txn.producer_epoch, verify_only=True,
                                         topics=[ADD.AddPartitionsToTxnTopic(name=TOPIC, partitions=[1])])]))


def on_port(b: Brokers, port: int, txn_id: str) -> Any:
    b.topic(TOPIC, port=port)
    return Txn(txn_id, 1, 0, port).add(b, TOPIC)


PRODUCERS: dict[ErrorCode, Producer] = {
    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION: unknown_and_known,
    ErrorCode.OPERATION_NOT_ATTEMPTED: unknown_and_known,
    ErrorCode.INVALID_REQUEST: lambda b: fresh(b, "add-empty-id").add(b, TOPIC, txn_id=""),
    ErrorCode.INVALID_PRODUCER_ID_MAPPING: lambda b: fresh(b, "add-other-pid").add(
        b, TOPIC, producer_id=fresh(b, "add-other-pid").producer_id + 1000),
    ErrorCode.PRODUCER_FENCED: lambda b: fresh(b, "add-fenced").add(b, TOPIC, producer_epoch=7),
    ErrorCode.INVALID_PRODUCER_EPOCH: lambda b: fresh(b, "add-fenced-v1").add(b, TOPIC, producer_epoch=7,
                                                                              version=1),
    ErrorCode.CONCURRENT_TRANSACTIONS: lambda b: stuck_in_prepare_commit(b).add(b, ON_2),
    ErrorCode.NOT_COORDINATOR: lambda b: on_port(b, not_coordinator(b, TOPIC), "add-anywhere"),
    ErrorCode.COORDINATOR_LOAD_IN_PROGRESS: lambda b: on_port(b, loading(b, "add-loading"), "add-loading"),
    ErrorCode.COORDINATOR_NOT_AVAILABLE: lambda b: unwritable(b).add(b, "txn-unwritable", (1,)),
    ErrorCode.TRANSACTION_ABORTABLE: verify_only,
}

def add_raw(b: Brokers, port: int, topic: str, version: int = 3) -> Any:
    T4 = ADD.AddPartitionsToTxnTransaction
    topics = [ADD.AddPartitionsToTxnTopic(name=topic, partitions=[0])]
    if version >= 4:
        return b.call(ADD[4](transactions=[T4(transactional_id="acl-txn", producer_id=1, producer_epoch=0,
                                             verify_only=True, topics=topics)]), port)
    return b.call(ADD[3](v3_and_below_transactional_id="acl-txn", v3_and_below_producer_id=1,
                         v3_and_below_producer_epoch=0, v3_and_below_topics=topics), port)

PRODUCERS.update({
    ErrorCode.CLUSTER_AUTHORIZATION_FAILED: lambda b: add_raw(b, denied(b), "any-topic", version=4),
    ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED: lambda b: add_raw(b, denied(b), "any-topic"),
    ErrorCode.TOPIC_AUTHORIZATION_FAILED: lambda b: add_raw(b, partial(b), DENIED_TOPIC),
})

test_errors = error_path_test(add_partitions_to_txn, PRODUCERS)

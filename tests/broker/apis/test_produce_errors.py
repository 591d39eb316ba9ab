"""Produce: every code of `broker.apis.produce.ERRORS`, over a real socket with our codec."""

from __future__ import annotations

import socket
import tempfile
import time
from pathlib import Path
from typing import Any

from broker.apis import produce
from broker.testing import BrokerProcess
from protocol import ApiKey, request_class
from protocol.errors import ErrorCode
from protocol.records import build_batch
from tests.broker.wire import send as wire_send
from tests.e2e.support import wait_until

from .acl_support import denied
from .support import Brokers, Producer, error_path_test
from .txn_support import Txn, stuck_in_prepare_commit  # registers the stuck transaction's set-up before broker 2 dies

Req = request_class(ApiKey.PRODUCE)
Topic = Req.TopicProduceData


def batch(n: int = 1, *, key: bytes | None = b"k", value: bytes = b"v", **kw: Any) -> bytes:
    now = int(time.time() * 1000)
    return build_batch([(key, value, [], now) for _ in range(n)], **kw)


def send(b: Brokers, topic: str, records: bytes, *, acks: int = 1, timeout_ms: int = 10000, partition: int = 0,
         port: int | None = None, version: int = 9, transactional_id: str | None = None) -> Any:
    return b.call(Req[version](transactional_id=transactional_id, acks=acks, timeout_ms=timeout_ms, topic_data=[
        Topic(name=topic, partition_data=[Topic.PartitionProduceData(index=partition, records=records)])]), port)


def corrupt(b: Brokers) -> Any:
    records = bytearray(batch())
    records[-1] ^= 0xFF  # the last value byte: the batch CRC no longer matches
    return send(b, b.topic("produce-plain"), bytes(records))


def idempotent(b: Brokers, topic: str, *batches: bytes) -> Any:
    b.topic(topic)
    response = None
    for records in batches:
        response = send(b, topic, records)
    return response


def not_enough_replicas(b: Brokers) -> Any:
    return send(b, b.under_min_isr(), batch(), acks=-1, port=b.cluster.ports[0])


def not_in_the_transaction(b: Brokers, version: int = 9) -> Any:
    """KIP-890: a transactional producer writes to a partition it never added to its transaction; the leader
    asks the transaction coordinator (AddPartitionsToTxn v4 verify_only) and refuses the batch."""
    topic = b.topic("produce-txn-state")
    init = request_class(ApiKey.INIT_PRODUCER_ID)
    find = request_class(ApiKey.FIND_COORDINATOR)
    answers: list[Any] = []

    def initialized() -> bool:  # as a client: FindCoordinator creates __transaction_state, which then loads
        b.call(find[3](key="errors-txn", key_type=1))
        answers.append(b.call(init[3](transactional_id="errors-txn", transaction_timeout_ms=60000,
                                      producer_id=-1, producer_epoch=-1)))
        return answers[-1].error_code == ErrorCode.NONE

    wait_until(initialized, 30, "the transaction coordinator to answer InitProducerId")
    pid, epoch = answers[-1].producer_id, answers[-1].producer_epoch
    return send(b, topic, batch(producer_id=pid, producer_epoch=epoch, base_sequence=0, is_transactional=True),
                transactional_id="errors-txn", version=version)


def another_producer_id(b: Brokers) -> Any:
    """KIP-890 part 2: a Produce v12 (transaction.version 2, no AddPartitionsToTxn) whose producer id is not the
    one the transactional id holds: the leader's implicit add is refused by the coordinator."""
    txn = Txn.init(b, "errors-tv2-mapping")
    return send(b, b.topic("produce-tv2-mapping"), batch(producer_id=txn.producer_id + 1000, producer_epoch=0,
                                                         base_sequence=0, is_transactional=True),
                version=12, transactional_id=txn.txn_id)


def previous_transaction_completing(b: Brokers) -> Any:
    """KIP-890 part 2: a Produce v12 of a producer whose transaction is still PrepareCommit (its markers wait for
    a dead broker): the coordinator answers the leader's implicit add CONCURRENT_TRANSACTIONS, which the leader
    retries for 100 ms and then answers as is."""
    txn = stuck_in_prepare_commit(b)
    port = b.cluster.ports[0]
    topic = b.topic("produce-tv2-busy", port=port, replicas=[0])
    return send(b, topic, batch(producer_id=txn.producer_id, producer_epoch=txn.producer_epoch, base_sequence=0,
                                is_transactional=True), version=12, transactional_id=txn.txn_id, port=port)


PRODUCERS: dict[ErrorCode, Producer] = {
    ErrorCode.INVALID_REQUIRED_ACKS: lambda b: send(b, b.topic("produce-plain"), batch(), acks=2),
    ErrorCode.CORRUPT_MESSAGE: corrupt,
    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION: lambda b: send(b, "produce-missing", batch()),
    ErrorCode.INVALID_TOPIC_EXCEPTION: lambda b: send(b, "__consumer_offsets", batch()),
    ErrorCode.NOT_ENOUGH_REPLICAS: not_enough_replicas,
    ErrorCode.REQUEST_TIMED_OUT: lambda b: b.broker_2_killed(),
    ErrorCode.INVALID_RECORD: lambda b: send(
        b, b.topic("produce-compacted", configs={"cleanup.policy": "compact"}), batch(key=None)),
    ErrorCode.MESSAGE_TOO_LARGE: lambda b: send(
        b, b.topic("produce-small", configs={"max.message.bytes": "100"}), batch(value=b"x" * 200)),
    ErrorCode.RECORD_LIST_TOO_LARGE: lambda b: send(
        b, b.topic("produce-tiny-segment", configs={"segment.bytes": "14"}), batch()),
    ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER: lambda b: idempotent(
        b, "produce-sequence", batch(producer_id=7001, producer_epoch=0, base_sequence=0),
        batch(producer_id=7001, producer_epoch=0, base_sequence=5)),
    ErrorCode.INVALID_PRODUCER_EPOCH: lambda b: idempotent(
        b, "produce-epoch", batch(producer_id=7002, producer_epoch=3, base_sequence=0),
        batch(producer_id=7002, producer_epoch=2, base_sequence=0)),
    ErrorCode.INVALID_TXN_STATE: not_in_the_transaction,
    ErrorCode.TRANSACTION_ABORTABLE: lambda b: not_in_the_transaction(b, version=11),  # a client that knows it
    ErrorCode.INVALID_PRODUCER_ID_MAPPING: another_producer_id,
    ErrorCode.CONCURRENT_TRANSACTIONS: previous_transaction_completing,
    ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED: lambda b: send(  # transactional records, no transactional id
        b, b.topic("produce-txn-no-id"), batch(producer_id=7003, producer_epoch=0, base_sequence=0,
                                               is_transactional=True)),
    ErrorCode.NOT_LEADER_OR_FOLLOWER: lambda b: send(b, b.led_by_other("produce-on-1"), batch(),
                                                     port=b.cluster.ports[0]),
}

def disk_full(b: Brokers) -> Any:
    """A broker of its own whose files may not pass 64 KiB (RLIMIT_FSIZE): a 100 KB batch cannot be written, as
    on a full disk."""
    with tempfile.TemporaryDirectory() as d:
        full = BrokerProcess({"log.index.size.max.bytes": "8192"}, data_dir=Path(d), file_size_limit=64 * 1024)
        full.start()
        try:
            topic = b.topic("produce-disk-full", port=full.port)
            return send(b, topic, batch(100, value=b"v" * 1000), port=full.port)
        finally:
            full.stop()


PRODUCERS.update({
    ErrorCode.TOPIC_AUTHORIZATION_FAILED: lambda b: send(b, "produce-denied", batch(), port=denied(b)),
    ErrorCode.KAFKA_STORAGE_ERROR: disk_full,
})

test_errors = error_path_test(produce, PRODUCERS)


def test_not_leader_carries_the_current_leader_from_v10(brokers: Brokers) -> None:
    """KIP-951: from v10 a NOT_LEADER_OR_FOLLOWER partition names the leader and its epoch, and the response
    lists that leader's endpoint, so the producer re-routes without waiting for a metadata refresh."""
    topic = brokers.led_by_other("produce-hint")
    port_0, port_1 = brokers.cluster.ports[0], brokers.cluster.ports[1]
    response = send(brokers, topic, batch(), port=port_0, version=10)
    part = response.responses[0].partition_responses[0]
    assert part.error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER
    assert part.current_leader.leader_id == 1
    assert part.current_leader.leader_epoch == brokers.partition_on_0(topic).leader_epoch
    assert [(n.node_id, n.port) for n in response.node_endpoints] == [(1, port_1)]
    assert part.error_message is None  # Kafka sends a message only with per-record errors


def test_a_failed_acks_zero_produce_closes_the_connection(brokers: Brokers) -> None:
    """The client hears no answer to acks=0, so Kafka closes the connection on a failed partition: the client
    reconnects and refreshes its metadata instead of writing into the void."""
    with socket.create_connection(("127.0.0.1", brokers.single.port), timeout=30) as s:
        wire_send(s, Req[9](transactional_id=None, acks=0, timeout_ms=1000, topic_data=[
            Topic(name="produce-acks0-missing", partition_data=[
                Topic.PartitionProduceData(index=0, records=batch())])]), 1)
        assert s.recv(1) == b""

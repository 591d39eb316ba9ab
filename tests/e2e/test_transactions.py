"""Transactions through the transaction coordinator, with stock clients over real sockets.

- confluent-kafka's transactional producer: init, commit and abort across partitions; a read_committed consumer
  sees every committed record and never an aborted one, a read_uncommitted one sees both.
- A second producer with the same transactional.id fences the first, whose next operation fails fatally
  (librdkafka's _FENCED); an ongoing transaction of the fenced producer is aborted by the new init.
- kafka-python's and aiokafka's transactional producers commit and abort the same way.
- A transaction left open past its transaction.timeout.ms is aborted by the coordinator (epoch bump).
- InitProducerId with a timeout above transaction.max.timeout.ms: INVALID_TRANSACTION_TIMEOUT; DescribeTransactions
  and ListTransactions report Kafka's states; FindCoordinator key type 1 finds the coordinator.
- AddPartitionsToTxn (v3 and v4 verify_only), AddOffsetsToTxn, EndTxn and InitProducerId errors over a raw
  socket; kafka-python's admin lists, describes and (KIP-664) aborts a hanging transaction; idle ids expire;
  several producers commit and abort concurrently.
"""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

import pytest
from aiokafka import AIOKafkaProducer
from confluent_kafka import Consumer, KafkaException, Producer
from confluent_kafka.admin import AdminClient, NewTopic
from kafka import KafkaAdminClient, KafkaProducer
from kafka import TopicPartition as KPTopicPartition
from kafka.admin import AbortTransactionSpec

from protocol import request_class
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode
from storage import TopicPartition
from tests.cluster.support import raw_request
from tests.e2e.support import wait_until

FAST = {"transaction.state.log.num.partitions": "3"}


def create_topic(bootstrap: str, name: str, partitions: int = 2) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for f in admin.create_topics([NewTopic(name, partitions, 1)]).values():
        f.result(30)


def read_all(bootstrap: str, topic: str, expected: int, isolation: str = "read_committed",
             settle: float = 1.0) -> list[bytes]:
    """Every value of `topic` a fresh consumer gets: up to `expected`, then `settle` seconds more."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"reader-{time.monotonic_ns()}",
                         "isolation.level": isolation, "auto.offset.reset": "earliest",
                         "enable.auto.commit": False})
    got: list[bytes] = []
    try:
        consumer.subscribe([topic])
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and len(got) < expected:
            msg = consumer.poll(0.5)
            if msg is not None and msg.error() is None:
                got.append(msg.value())
        end = time.monotonic() + settle
        while time.monotonic() < end:
            msg = consumer.poll(0.2)
            if msg is not None and msg.error() is None:
                got.append(msg.value())
    finally:
        consumer.close()
    return got


def txn_producer(bootstrap: str, txn_id: str, **extra: Any) -> Producer:
    return Producer({"bootstrap.servers": bootstrap, "transactional.id": txn_id, **extra})


def describe(port: int, txn_id: str) -> Any:
    req = request_class(ApiKey.DESCRIBE_TRANSACTIONS)[0](transactional_ids=[txn_id])
    return raw_request(port, req).transaction_states[0]


def open_transaction(broker: Any, topic: str, txn_id: str, records: list[tuple[int, bytes]],
                     **extra: Any) -> tuple[Producer, Any]:
    """A producer of `txn_id` whose open transaction holds `records` ((partition, value), flushed), and that
    transaction as DescribeTransactions reports it."""
    p = txn_producer(broker.bootstrap, txn_id, **extra)
    p.init_transactions(30)
    p.begin_transaction()
    for partition, value in records:
        p.produce(topic, value, partition=partition)
    assert p.flush(30) == 0
    state = describe(broker.port, txn_id)
    assert state.transaction_state == "Ongoing"
    return p, state


def test_confluent_commit_abort_and_read_committed(broker_factory: Any) -> None:
    broker = broker_factory()  # the default 50 __transaction_state partitions
    create_topic(broker.bootstrap, "tx-out")
    p = txn_producer(broker.bootstrap, "confluent-tx")
    p.init_transactions(30)
    p.begin_transaction()
    for i in range(4):
        p.produce("tx-out", f"c1-{i}".encode(), partition=i % 2)
    p.commit_transaction(30)
    p.begin_transaction()
    for i in range(3):
        p.produce("tx-out", f"a-{i}".encode(), partition=i % 2)
    p.flush(30)
    p.abort_transaction(30)
    p.begin_transaction()
    p.produce("tx-out", b"c2-0", partition=0)
    p.commit_transaction(30)

    committed = read_all(broker.bootstrap, "tx-out", 5)
    assert sorted(committed) == [b"c1-0", b"c1-1", b"c1-2", b"c1-3", b"c2-0"]
    everything = read_all(broker.bootstrap, "tx-out", 8, isolation="read_uncommitted")
    assert sorted(everything) == sorted(committed + [b"a-0", b"a-1", b"a-2"])

    state = describe(broker.port, "confluent-tx")
    assert (state.error_code, state.transaction_state, state.topics) == (0, "CompleteCommit", [])
    listed = raw_request(broker.port, request_class(ApiKey.LIST_TRANSACTIONS)[1](
        state_filters=["CompleteCommit", "Bogus"], producer_id_filters=[], duration_filter=-1))
    assert listed.error_code == 0 and list(listed.unknown_state_filters) == ["Bogus"]
    assert [(s.transactional_id, s.producer_id, s.transaction_state) for s in listed.transaction_states] == [
        ("confluent-tx", state.producer_id, "CompleteCommit")]
    p.flush(5)


def test_second_producer_fences_the_first(broker_factory: Any) -> None:
    broker = broker_factory(FAST)
    create_topic(broker.bootstrap, "fence-out")
    first, before = open_transaction(broker, "fence-out", "zombie", [(0, b"from-the-zombie")])

    second = txn_producer(broker.bootstrap, "zombie")
    second.init_transactions(30)  # fences the first and aborts its open transaction
    after = describe(broker.port, "zombie")
    assert after.producer_id == before.producer_id and after.producer_epoch == before.producer_epoch + 2
    # the fence bumped the epoch and aborted (CONCURRENT_TRANSACTIONS to the new instance), whose retry bumped again
    assert after.transaction_state == "Empty"
    with pytest.raises(KafkaException) as caught:
        first.produce("fence-out", b"late", partition=0)
        first.commit_transaction(10)
    assert caught.value.args[0].fatal()

    second.begin_transaction()
    second.produce("fence-out", b"from-the-new-instance", partition=0)
    second.commit_transaction(30)
    assert read_all(broker.bootstrap, "fence-out", 1) == [b"from-the-new-instance"]


def test_kafka_python_transactions(broker_factory: Any) -> None:
    broker = broker_factory(FAST)
    create_topic(broker.bootstrap, "kp-out")
    p = KafkaProducer(bootstrap_servers=broker.bootstrap, transactional_id="kafka-python-tx")
    try:
        p.init_transactions()
        p.begin_transaction()
        p.send("kp-out", b"kp-committed", partition=0)
        p.commit_transaction()
        p.begin_transaction()
        p.send("kp-out", b"kp-aborted", partition=1)
        p.flush()
        p.abort_transaction()
    finally:
        p.close()
    assert read_all(broker.bootstrap, "kp-out", 1) == [b"kp-committed"]


def test_aiokafka_transactions(broker_factory: Any) -> None:
    broker = broker_factory(FAST)
    create_topic(broker.bootstrap, "aio-out")

    async def run() -> None:
        p = AIOKafkaProducer(bootstrap_servers=broker.bootstrap, transactional_id="aiokafka-tx")
        await p.start()
        try:
            async with p.transaction():
                await p.send_and_wait("aio-out", b"aio-committed", partition=0)
            await p.begin_transaction()
            await p.send_and_wait("aio-out", b"aio-aborted", partition=1)
            await p.abort_transaction()
        finally:
            await p.stop()

    asyncio.run(run())
    assert read_all(broker.bootstrap, "aio-out", 1) == [b"aio-committed"]


def test_timed_out_transaction_is_aborted(broker_factory: Any) -> None:
    broker = broker_factory({**FAST, "transaction.abort.timed.out.transaction.cleanup.interval.ms": "100"})
    create_topic(broker.bootstrap, "timeout-out")
    p = txn_producer(broker.bootstrap, "slowpoke", **{"transaction.timeout.ms": 1000})
    p.init_transactions(30)
    epoch = describe(broker.port, "slowpoke").producer_epoch
    p.begin_transaction()
    p.produce("timeout-out", b"never-committed", partition=0)
    p.flush(30)
    wait_until(lambda: describe(broker.port, "slowpoke").transaction_state == "CompleteAbort", 30,
               "the coordinator aborting the timed-out transaction")
    assert describe(broker.port, "slowpoke").producer_epoch == epoch + 1  # fenced by the abort's bump
    with pytest.raises(KafkaException):
        p.commit_transaction(10)
    assert read_all(broker.bootstrap, "timeout-out", 0) == []


def test_request_level_errors(broker_factory: Any) -> None:
    broker = broker_factory({**FAST, "transaction.max.timeout.ms": "60000"})
    Init = request_class(ApiKey.INIT_PRODUCER_ID)
    Find = request_class(ApiKey.FIND_COORDINATOR)
    find = Find[3](key="some-txn", key_type=1)
    wait_until(lambda: raw_request(broker.port, find).error_code == 0, 30, "the transaction coordinator")
    for txn_id in ("some-txn", "nobody"):  # their partitions loaded
        wait_until(lambda txn_id=txn_id: describe(broker.port, txn_id).error_code not in (
            ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, ErrorCode.NOT_COORDINATOR), 30, f"{txn_id}'s partition loaded")
    assert raw_request(broker.port, find).port == broker.port
    too_long = raw_request(broker.port, Init[4](transactional_id="some-txn", transaction_timeout_ms=60001,
                                                producer_id=-1, producer_epoch=-1))
    assert too_long.error_code == ErrorCode.INVALID_TRANSACTION_TIMEOUT
    half = raw_request(broker.port, Init[4](transactional_id="some-txn", transaction_timeout_ms=1000,
                                            producer_id=5, producer_epoch=-1))
    assert half.error_code == ErrorCode.INVALID_REQUEST
    ok = raw_request(broker.port, Init[4](transactional_id="some-txn", transaction_timeout_ms=1000,
                                          producer_id=-1, producer_epoch=-1))
    assert (ok.error_code, ok.producer_epoch) == (0, 0)
    # KIP-360: the same instance bumps its epoch; an older epoch is fenced (INVALID_PRODUCER_EPOCH before v4)
    bumped = raw_request(broker.port, Init[4](transactional_id="some-txn", transaction_timeout_ms=1000,
                                              producer_id=ok.producer_id, producer_epoch=0))
    assert (bumped.error_code, bumped.producer_id, bumped.producer_epoch) == (0, ok.producer_id, 1)
    again = raw_request(broker.port, Init[4](transactional_id="some-txn", transaction_timeout_ms=1000,
                                             producer_id=ok.producer_id, producer_epoch=1))
    assert again.producer_epoch == 2
    stale = Init[4](transactional_id="some-txn", transaction_timeout_ms=1000, producer_id=ok.producer_id + 1,
                    producer_epoch=0)
    assert raw_request(broker.port, stale).error_code == ErrorCode.PRODUCER_FENCED
    stale_v3 = Init[3](transactional_id="some-txn", transaction_timeout_ms=1000, producer_id=ok.producer_id + 1,
                       producer_epoch=0)
    assert raw_request(broker.port, stale_v3).error_code == ErrorCode.INVALID_PRODUCER_EPOCH

    End = request_class(ApiKey.END_TXN)
    empty = raw_request(broker.port, End[3](transactional_id="some-txn", producer_id=ok.producer_id,
                                            producer_epoch=2, committed=True))
    assert empty.error_code == ErrorCode.INVALID_TXN_STATE
    unknown = raw_request(broker.port, End[3](transactional_id="nobody", producer_id=1, producer_epoch=0,
                                              committed=True))
    assert unknown.error_code == ErrorCode.INVALID_PRODUCER_ID_MAPPING
    assert describe(broker.port, "nobody").error_code == ErrorCode.TRANSACTIONAL_ID_NOT_FOUND


def test_add_partitions_offsets_verify_and_end_over_the_wire(broker_factory: Any) -> None:
    broker = broker_factory(FAST)
    create_topic(broker.bootstrap, "raw-out")
    find = request_class(ApiKey.FIND_COORDINATOR)[3](key="raw-txn", key_type=1)
    wait_until(lambda: raw_request(broker.port, find).error_code == 0, 30, "the transaction coordinator")
    Init = request_class(ApiKey.INIT_PRODUCER_ID)
    init = Init[4](transactional_id="raw-txn", transaction_timeout_ms=60000, producer_id=-1, producer_epoch=-1)
    answers: list[Any] = []
    wait_until(lambda: answers.append(raw_request(broker.port, init)) or answers[-1].error_code == 0, 30,
               "InitProducerId once the partition is loaded")
    pid, epoch = answers[-1].producer_id, answers[-1].producer_epoch

    Add = request_class(ApiKey.ADD_PARTITIONS_TO_TXN)
    Topic = Add.AddPartitionsToTxnTopic

    def add_v3(topics: dict[str, list[int]], producer_epoch: int = epoch) -> dict[tuple[str, int], int]:
        response = raw_request(broker.port, Add[3](
            v3_and_below_transactional_id="raw-txn", v3_and_below_producer_id=pid,
            v3_and_below_producer_epoch=producer_epoch,
            v3_and_below_topics=[Topic(name=t, partitions=ps) for t, ps in topics.items()]))
        return {(t.name, p.partition_index): p.partition_error_code for t in response.results_by_topic_v3_and_below
                for p in t.results_by_partition}

    assert add_v3({"raw-out": [0], "missing": [0]}) == {("raw-out", 0): ErrorCode.OPERATION_NOT_ATTEMPTED,
                                                         ("missing", 0): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}
    assert add_v3({"raw-out": [0]}) == {("raw-out", 0): 0}
    assert add_v3({"raw-out": [1]}, producer_epoch=epoch - 1 if epoch else 7) == {
        ("raw-out", 1): ErrorCode.PRODUCER_FENCED}

    def verify(producer_epoch: int) -> dict[tuple[str, int], int]:
        response = raw_request(broker.port, Add[4](transactions=[Add.AddPartitionsToTxnTransaction(
            transactional_id="raw-txn", producer_id=pid, producer_epoch=producer_epoch, verify_only=True,
            topics=[Topic(name="raw-out", partitions=[0, 1])])]))
        (result,) = response.results_by_transaction
        assert result.transactional_id == "raw-txn"
        return {(t.name, p.partition_index): p.partition_error_code for t in result.topic_results
                for p in t.results_by_partition}

    assert verify(epoch) == {("raw-out", 0): 0, ("raw-out", 1): ErrorCode.TRANSACTION_ABORTABLE}
    assert verify(epoch + 1) == {("raw-out", 0): ErrorCode.PRODUCER_FENCED, ("raw-out", 1): ErrorCode.PRODUCER_FENCED}

    add_offsets = raw_request(broker.port, request_class(ApiKey.ADD_OFFSETS_TO_TXN)[3](
        transactional_id="raw-txn", producer_id=pid, producer_epoch=epoch, group_id="some-group"))
    assert add_offsets.error_code == 0
    state = describe(broker.port, "raw-txn")
    topics = {t.topic: list(t.partitions) for t in state.topics}
    assert state.transaction_state == "Ongoing" and topics["raw-out"] == [0] and len(topics["__consumer_offsets"]) == 1

    End = request_class(ApiKey.END_TXN)
    end = End[3](transactional_id="raw-txn", producer_id=pid, producer_epoch=epoch, committed=True)
    assert raw_request(broker.port, end).error_code == 0
    wait_until(lambda: describe(broker.port, "raw-txn").transaction_state == "CompleteCommit", 30, "the commit")
    assert raw_request(broker.port, end).error_code == 0  # a retry of a completed commit
    abort = End[3](transactional_id="raw-txn", producer_id=pid, producer_epoch=epoch, committed=False)
    assert raw_request(broker.port, abort).error_code == ErrorCode.INVALID_TXN_STATE
    fenced_v1 = End[1](transactional_id="raw-txn", producer_id=pid, producer_epoch=epoch + 1, committed=True)
    assert raw_request(broker.port, fenced_v1).error_code == ErrorCode.INVALID_PRODUCER_EPOCH


def test_kafka_python_admin_lists_and_describes(broker_factory: Any) -> None:
    broker = broker_factory(FAST)
    create_topic(broker.bootstrap, "admin-out")
    p, _ = open_transaction(broker, "admin-out", "described", [(1, b"x")])
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    try:
        listed = admin.list_transactions()
        assert [(t.transactional_id, t.state.value) for ts in listed.values() for t in ts] == [("described", "Ongoing")]
        assert all(not ts for ts in admin.list_transactions(state_filters=["CompleteCommit"]).values())
        d = admin.describe_transactions(["described"])["described"]
        assert (d.state.value, d.transaction_timeout_ms, [(tp.topic, tp.partition) for tp in d.topic_partitions]) == (
            "Ongoing", 60000, [("admin-out", 1)])
        # KIP-664: an operator aborts the hanging transaction on its partition (WriteTxnMarkers to the leader)
        admin.abort_transaction(AbortTransactionSpec(KPTopicPartition("admin-out", 1), d.producer_id,
                                                     d.producer_epoch))
    finally:
        admin.close()
    tp = TopicPartition("admin-out", 1)
    partition = broker.server.replica_manager.partitions[tp]
    assert broker.call(lambda: (partition.last_stable_offset, partition.high_watermark)) == (2, 2)
    p.abort_transaction(30)  # the coordinator's own markers still complete it
    wait_until(lambda: describe(broker.port, "described").transaction_state == "CompleteAbort", 30, "the abort")


def test_idle_transactional_ids_expire(broker_factory: Any) -> None:
    broker = broker_factory({**FAST, "transactional.id.expiration.ms": "500",
                             "transaction.remove.expired.transaction.cleanup.interval.ms": "100"})
    create_topic(broker.bootstrap, "expire-out")
    p = txn_producer(broker.bootstrap, "short-lived")
    p.init_transactions(30)
    p.begin_transaction()
    p.produce("expire-out", b"x", partition=0)
    p.commit_transaction(30)
    wait_until(lambda: describe(broker.port, "short-lived").error_code == ErrorCode.TRANSACTIONAL_ID_NOT_FOUND, 30,
               "the idle transactional id's tombstone")
    again = txn_producer(broker.bootstrap, "short-lived")
    again.init_transactions(30)  # a new producer id for the expired id
    assert describe(broker.port, "short-lived").producer_epoch == 0


def test_concurrent_producers_commit_and_abort(broker_factory: Any) -> None:
    """Several transactional producers at once: their markers share the per-broker queue and requests."""
    broker = broker_factory(FAST)
    create_topic(broker.bootstrap, "many-out", partitions=3)
    errors: list[BaseException] = []

    def run(n: int) -> None:
        try:
            p = txn_producer(broker.bootstrap, f"many-{n}", **{"linger.ms": 1})
            p.init_transactions(30)
            for t in range(10):
                p.begin_transaction()
                for i in range(3):
                    p.produce("many-out", f"{n}-{t}-{i}".encode(), partition=(n + i) % 3)
                if t % 3 == 2:
                    p.abort_transaction(30)
                else:
                    p.commit_transaction(30)
        except BaseException as e:  # reported by the main thread
            errors.append(e)

    threads = [threading.Thread(target=run, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not errors, errors
    expected = sorted(f"{n}-{t}-{i}".encode() for n in range(4) for t in range(10) if t % 3 != 2 for i in range(3))
    assert sorted(read_all(broker.bootstrap, "many-out", len(expected))) == expected

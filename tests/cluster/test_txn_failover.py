"""Transactions in a 3-broker cluster: markers go over the wire to partition leaders on other brokers, and the
transaction coordinator fails over with the leader of its `__transaction_state` partition.

A transactional producer commits and aborts across three partitions led by three brokers (a read_committed
consumer sees exactly the committed records); it then leaves a transaction open and the coordinator's broker
is killed -9. A new instance with the same transactional.id, served by the broker that now leads that
`__transaction_state` partition (loaded from its replica), fences the open transaction — whose ABORT markers
reach partition leaders that moved — and commits. Nothing aborted or left open is ever visible.
"""

from __future__ import annotations

from pathlib import Path

from confluent_kafka import Consumer, Producer

from protocol import request_class
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode
from tests.cluster.support import (
    Zk,
    create_topic,
    init_producer_id,
    raw_request,
    start_cluster,
    txn_coordinator,
    wait_isr,
    wait_until,
)

TOPIC = "eos-out"
TXN_ID = "eos-producer"
OVERRIDES = {"zookeeper.session.timeout.ms": "3000", "replica.fetch.wait.max.ms": "100",
             "transaction.state.log.num.partitions": "3"}


def coordinator_of(port: int) -> int:
    return txn_coordinator(port, TXN_ID)


def read_committed(bootstrap: str, expected: int) -> list[bytes]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"check-{expected}",
                         "isolation.level": "read_committed", "auto.offset.reset": "earliest",
                         "enable.auto.commit": False})
    got: list[bytes] = []
    try:
        consumer.subscribe([TOPIC])
        wait_until(lambda: got.extend(m.value() for m in consumer.consume(100, 0.5) if m.error() is None)
                   or len(got) >= expected, 60, f"{expected} committed records")
        got.extend(m.value() for m in consumer.consume(100, 2.0) if m.error() is None)  # and nothing more
    finally:
        consumer.close()
    return sorted(got)


def test_transactions_across_brokers_and_coordinator_failover(tmp_path: Path) -> None:
    cluster = start_cluster(tmp_path, OVERRIDES)
    zk = Zk(cluster)
    try:
        create_topic(cluster.bootstrap, TOPIC, 3, 3, {"min.insync.replicas": "2"})
        wait_isr(zk, TOPIC, 3, {0, 1, 2}, 20)
        first = Producer({"bootstrap.servers": cluster.bootstrap, "transactional.id": TXN_ID})
        first.init_transactions(60)
        # The coordinator's producer id comes from the cluster-wide blocks, as every broker's idempotent ones.
        txn_state = raw_request(cluster.ports[coordinator_of(cluster.ports[0])], request_class(
            ApiKey.DESCRIBE_TRANSACTIONS)[0](transactional_ids=[TXN_ID])).transaction_states[0]
        assert txn_state.error_code == 0
        txn_pid = txn_state.producer_id
        idempotent = [init_producer_id(port) for port in cluster.ports]
        assert len({txn_pid, *idempotent}) == 4, (txn_pid, idempotent)
        first.begin_transaction()
        for p in range(3):
            first.produce(TOPIC, f"committed-{p}".encode(), partition=p)
        first.commit_transaction(60)
        first.begin_transaction()
        for p in range(3):
            first.produce(TOPIC, f"aborted-{p}".encode(), partition=p)
        first.abort_transaction(60)
        committed = [b"committed-0", b"committed-1", b"committed-2"]
        assert read_committed(cluster.bootstrap, 3) == committed

        first.begin_transaction()
        for p in range(3):
            first.produce(TOPIC, f"open-{p}".encode(), partition=p)
        assert first.flush(30) == 0
        wait_isr(zk, "__transaction_state", 3, {0, 1, 2}, 20)
        old = wait_until(lambda: coordinator_of(cluster.ports[0]) + 1, 20, "the transaction coordinator") - 1
        cluster.brokers[old].kill()
        survivors = [b for b in range(3) if b != old]
        bootstrap = ",".join(f"127.0.0.1:{cluster.ports[b]}" for b in survivors)
        wait_until(lambda: coordinator_of(cluster.ports[survivors[0]]) in survivors, 30, "a new coordinator")

        second = Producer({"bootstrap.servers": bootstrap, "transactional.id": TXN_ID})
        second.init_transactions(60)  # fences the open transaction: ABORT markers to the moved leaders
        second.begin_transaction()
        for p in range(3):
            second.produce(TOPIC, f"after-failover-{p}".encode(), partition=p)
        second.commit_transaction(60)
        assert read_committed(bootstrap, 6) == sorted(committed + [b"after-failover-0", b"after-failover-1",
                                                                   b"after-failover-2"])
    finally:
        zk.close()
        cluster.cleanup()


def test_markers_wait_for_an_offline_leader(tmp_path: Path) -> None:
    """EndTxn is answered once PrepareCommit is written; a partition whose only replica is down keeps the
    transaction in PrepareCommit (InitProducerId answers CONCURRENT_TRANSACTIONS) until its broker is back and
    the marker is written; then CompleteCommit, and the records become visible."""
    cluster = start_cluster(tmp_path, {**OVERRIDES, "transaction.state.log.min.isr": "1"}, n=2)
    try:
        coordinator = wait_until(lambda: coordinator_of(cluster.ports[0]) + 1, 30, "the transaction coordinator") - 1
        other = 1 - coordinator
        create_topic(cluster.bootstrap, TOPIC, 2, 1, assignment=[[other], [coordinator]])
        producer = Producer({"bootstrap.servers": cluster.bootstrap, "transactional.id": TXN_ID})
        producer.init_transactions(60)
        producer.begin_transaction()
        producer.produce(TOPIC, b"waits-0", partition=0)
        producer.produce(TOPIC, b"waits-1", partition=1)
        assert producer.flush(30) == 0
        cluster.brokers[other].kill()
        producer.commit_transaction(60)  # PrepareCommit written; partition 0's marker cannot be yet

        port = cluster.ports[coordinator]
        Describe = request_class(ApiKey.DESCRIBE_TRANSACTIONS)[0]
        state = raw_request(port, Describe(transactional_ids=[TXN_ID])).transaction_states[0]
        assert state.transaction_state == "PrepareCommit"
        wait_until(lambda: [(t.topic, list(t.partitions)) for t in raw_request(
            port, Describe(transactional_ids=[TXN_ID])).transaction_states[0].topics] == [(TOPIC, [0])], 30,
            "partition 1's marker written, partition 0's pending")
        init = request_class(ApiKey.INIT_PRODUCER_ID)[4](transactional_id=TXN_ID, transaction_timeout_ms=60000,
                                                         producer_id=-1, producer_epoch=-1)
        assert raw_request(port, init).error_code == ErrorCode.CONCURRENT_TRANSACTIONS

        cluster.restart(other)
        wait_until(lambda: raw_request(port, Describe(transactional_ids=[TXN_ID])).transaction_states[0]
                   .transaction_state == "CompleteCommit", 60, "the marker written once the leader is back")
        assert read_committed(cluster.bootstrap, 2) == [b"waits-0", b"waits-1"]
    finally:
        cluster.cleanup()

"""read_committed consumers over real sockets, with transactions written the way the coordinator will write them.

No transaction coordinator yet: transactional batches are built with the codec and appended through
`ReplicaManager.append_records` as a client would send them, the COMMIT/ABORT markers with
`origin=AppendOrigin.COORDINATOR` (what WriteTxnMarkers will do). Then stock consumers read the partition:
- confluent-kafka and kafka-python with `isolation.level=read_committed`: aborted records never appear,
  committed ones do, in offset order; nothing at or past the last stable offset (an open transaction and
  what follows it) until its marker lands, which also wakes a consumer parked in a long poll; the consumer's
  position ends past the markers; ListOffsets latest answers the LSO.
- read_uncommitted (kafka-python) sees every data record up to the high watermark, aborted and open ones too.
"""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest
from confluent_kafka import Consumer
from confluent_kafka import TopicPartition as CKTopicPartition
from kafka import KafkaAdminClient, KafkaConsumer
from kafka import TopicPartition as KPTopicPartition
from kafka.admin import NewTopic

from storage import AppendOrigin, TopicPartition
from tests.e2e import txn_support
from tests.storage.txn_support import idempotent_batch, marker, txn_batch

TOPIC = "txn-reads"
TP = TopicPartition(TOPIC, 0)


def append(broker: Any, batch: bytearray, *, origin: AppendOrigin = AppendOrigin.CLIENT) -> int:
    return txn_support.append(broker, TP, batch, origin=origin)


def write_history(broker: Any) -> dict[str, list[bytes]]:
    """Interleaved transactions: producer 1 commits twice, producer 2 aborts, producer 4 writes plain
    idempotent records; producer 3's transaction is left open. Returns the values by fate."""
    append(broker, txn_batch(1, 0, 2, tag="c1"))
    append(broker, idempotent_batch(4, 0, tag="plain"))
    append(broker, txn_batch(2, 0, 2, tag="a2"))
    append(broker, txn_batch(1, 2, tag="c1"))
    append(broker, marker(1, commit=True), origin=AppendOrigin.COORDINATOR)
    append(broker, txn_batch(1, 3, 2, tag="c1"))
    append(broker, txn_batch(2, 2, tag="a2"))
    append(broker, marker(2, commit=False), origin=AppendOrigin.COORDINATOR)
    append(broker, idempotent_batch(4, 1, tag="plain"))
    append(broker, marker(1, commit=True), origin=AppendOrigin.COORDINATOR)
    lso = append(broker, txn_batch(3, 0, 2, tag="open"))
    append(broker, idempotent_batch(4, 2, tag="late"))  # after the open transaction: waits with it
    return {
        "committed": [b"c1-1-0", b"c1-1-1", b"plain-4-0", b"c1-1-2", b"c1-1-3", b"c1-1-4", b"plain-4-1"],
        "aborted": [b"a2-2-0", b"a2-2-1", b"a2-2-2"],
        "open": [b"open-3-0", b"open-3-1"],
        "late": [b"late-4-2"],
        "lso": [str(lso).encode()],
    }


@pytest.fixture
def history(broker: Any) -> dict[str, list[bytes]]:
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap, request_timeout_ms=10000)
    try:
        admin.create_topics([NewTopic(TOPIC, 1, 1)])
    finally:
        admin.close()
    return write_history(broker)


def lso_and_hw(broker: Any) -> tuple[int, int]:
    return txn_support.partition_state(broker, TP)


def test_confluent_read_committed(broker: Any, history: dict[str, list[bytes]]) -> None:
    lso, hw = lso_and_hw(broker)
    assert lso == int(history["lso"][0]) and hw > lso
    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "rc-ck", "isolation.level":
                         "read_committed", "enable.auto.commit": False, "fetch.wait.max.ms": 5000})
    try:
        tp = CKTopicPartition(TOPIC, 0, 0)
        consumer.assign([tp])
        assert consumer.get_watermark_offsets(tp, timeout=10, cached=False) == (0, lso)
        got: list[bytes] = []
        deadline = time.monotonic() + 20
        while len(got) < len(history["committed"]) and time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is not None and msg.error() is None:
                got.append(msg.value())
        assert got == history["committed"]
        for _ in range(4):  # nothing from the open transaction or after it
            msg = consumer.poll(0.5)
            assert msg is None or msg.error() is not None, msg.value()
        # The marker lands while the consumer waits in a long poll (a delayed fetch on the LSO).
        threading.Timer(1.0, lambda: append(broker, marker(3, commit=True), origin=AppendOrigin.COORDINATOR)).start()
        deadline = time.monotonic() + 20
        while len(got) < len(history["committed"]) + 3 and time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is not None and msg.error() is None:
                got.append(msg.value())
        assert got == history["committed"] + history["open"] + history["late"]
        end = lso_and_hw(broker)
        assert end[0] == end[1]  # nothing open: LSO = HW
        assert consumer.get_watermark_offsets(tp, timeout=10, cached=False) == (0, end[1])
    finally:
        consumer.close()


def _kafka_python_consumer(broker: Any, isolation: str) -> KafkaConsumer:
    return KafkaConsumer(bootstrap_servers=broker.bootstrap, isolation_level=isolation, enable_auto_commit=False,
                         auto_offset_reset="earliest", fetch_max_wait_ms=500)


def _drain(consumer: KafkaConsumer, want: int, timeout: float = 20) -> list[bytes]:
    got: list[bytes] = []
    deadline = time.monotonic() + timeout
    while len(got) < want and time.monotonic() < deadline:
        for records in consumer.poll(timeout_ms=500).values():
            got.extend(r.value for r in records)
    return got


def test_kafka_python_read_committed_and_uncommitted(broker: Any, history: dict[str, list[bytes]]) -> None:
    lso, hw = lso_and_hw(broker)
    tp = KPTopicPartition(TOPIC, 0)
    committed = _kafka_python_consumer(broker, "read_committed")
    uncommitted = _kafka_python_consumer(broker, "read_uncommitted")
    try:
        committed.assign([tp])
        uncommitted.assign([tp])
        assert committed.end_offsets([tp])[tp] == lso
        assert uncommitted.end_offsets([tp])[tp] == hw
        assert _drain(committed, len(history["committed"])) == history["committed"]
        assert committed.poll(timeout_ms=1500) == {}
        assert committed.position(tp) == lso  # past producer 1's and producer 2's markers
        everything = _drain(uncommitted, 13)
        assert sorted(everything) == sorted(history["committed"] + history["aborted"] + history["open"]
                                            + history["late"])
        assert uncommitted.position(tp) == hw
        append(broker, marker(3, commit=False), origin=AppendOrigin.COORDINATOR)
        assert _drain(committed, 1) == history["late"]  # the open transaction was aborted: only what followed
        _, hw = lso_and_hw(broker)
        deadline = time.monotonic() + 10
        while committed.position(tp) < hw and time.monotonic() < deadline:
            committed.poll(timeout_ms=200)
        assert committed.position(tp) == hw  # past the last marker too
    finally:
        committed.close()
        uncommitted.close()

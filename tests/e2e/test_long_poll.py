"""Long poll: a consumer's fetch with a long max wait parks in the broker (DelayedFetch) and is answered as
soon as a message is produced, not when the wait runs out.

The consumer asks with a 20 s max wait on an empty partition; once the broker holds its fetch in the fetch
purgatory, a producer sends one message, and the consumer, which gives up polling after 12 s in all, must
get it. A broker that only answered at the end of the wait would make the consumer come back empty.
With fetch.min.bytes, a small message leaves the fetch parked until enough bytes have arrived.
"""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest
from confluent_kafka import Consumer
from kafka import KafkaConsumer, KafkaProducer, TopicPartition

from tests.e2e.support import wait_until

FETCH_WAIT_MS = 20000
POLL_BUDGET_S = 12.0


def poll_kafka_python(bootstrap: str, topic: str, out: list[bytes], ready: threading.Event) -> None:
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, fetch_max_wait_ms=FETCH_WAIT_MS, fetch_min_bytes=1,
                             request_timeout_ms=FETCH_WAIT_MS + 10000, auto_offset_reset="latest",
                             enable_auto_commit=False)
    try:
        tp = TopicPartition(topic, 0)
        consumer.assign([tp])
        consumer.position(tp)
        ready.set()
        deadline = time.monotonic() + POLL_BUDGET_S
        while not out and time.monotonic() < deadline:
            for records in consumer.poll(timeout_ms=500).values():
                out.extend(r.value for r in records)
    finally:
        consumer.close()


def poll_confluent(bootstrap: str, topic: str, out: list[bytes], ready: threading.Event) -> None:
    from confluent_kafka import OFFSET_END
    from confluent_kafka import TopicPartition as CTopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "long-poll", "enable.auto.commit": False,
                         "fetch.wait.max.ms": FETCH_WAIT_MS, "fetch.min.bytes": 1,
                         "enable.partition.eof": False})
    try:
        consumer.assign([CTopicPartition(topic, 0, OFFSET_END)])
        ready.set()
        deadline = time.monotonic() + POLL_BUDGET_S
        while not out and time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is not None and msg.error() is None:
                out.append(msg.value())
    finally:
        consumer.close()


@pytest.mark.parametrize("client", ["kafka-python", "confluent-kafka"])
def test_parked_fetch_returns_when_a_message_arrives(broker: Any, client: str) -> None:
    topic = f"long-poll-{client}"
    producer = KafkaProducer(bootstrap_servers=broker.bootstrap, acks="all")
    try:
        producer.send(topic, value=b"before", partition=0).get(timeout=10)  # auto-creates the topic
        purgatory = broker.server.replica_manager.fetch_purgatory
        out: list[bytes] = []
        ready = threading.Event()
        poll = poll_kafka_python if client == "kafka-python" else poll_confluent
        thread = threading.Thread(target=poll, args=(broker.bootstrap, topic, out, ready), daemon=True)
        thread.start()
        assert ready.wait(10)
        wait_until(lambda: broker.call(purgatory.watched) >= 1, 10, "the consumer's fetch to be parked")
        assert out == []
        producer.send(topic, value=b"wake up", partition=0).get(timeout=10)
        thread.join(POLL_BUDGET_S + 10)
        assert not thread.is_alive()
        assert out == [b"wake up"]
    finally:
        producer.close(5)


def test_parked_fetch_waits_for_min_bytes(broker: Any) -> None:
    """fetch.min.bytes=4000: a small message leaves the fetch parked; once enough bytes have arrived the
    fetch completes with everything up to then (at least 4000 bytes of batches)."""
    topic = "long-poll-min-bytes"
    producer = KafkaProducer(bootstrap_servers=broker.bootstrap, acks="all", linger_ms=0)
    try:
        producer.send(topic, value=b"before", partition=0).get(timeout=10)
        purgatory = broker.server.replica_manager.fetch_purgatory
        out: list[bytes] = []
        ready = threading.Event()

        def poll() -> None:
            consumer = KafkaConsumer(bootstrap_servers=broker.bootstrap, fetch_max_wait_ms=FETCH_WAIT_MS,
                                     fetch_min_bytes=4000, request_timeout_ms=FETCH_WAIT_MS + 10000,
                                     auto_offset_reset="latest", enable_auto_commit=False)
            try:
                tp = TopicPartition(topic, 0)
                consumer.assign([tp])
                consumer.position(tp)
                ready.set()
                deadline = time.monotonic() + POLL_BUDGET_S
                while not out and time.monotonic() < deadline:
                    for records in consumer.poll(timeout_ms=500).values():
                        out.extend(r.value for r in records)
            finally:
                consumer.close()

        thread = threading.Thread(target=poll, daemon=True)
        thread.start()
        assert ready.wait(10)
        wait_until(lambda: broker.call(purgatory.watched) >= 1, 10, "the consumer's fetch to be parked")
        producer.send(topic, value=b"small", partition=0).get(timeout=10)
        # Still parked: about 80 bytes is far below fetch.min.bytes.
        time.sleep(0.3)
        assert broker.call(purgatory.watched) >= 1 and out == []
        for i in range(10):
            producer.send(topic, value=b"%d" % i + b"x" * 500, partition=0).get(timeout=10)
        thread.join(POLL_BUDGET_S + 10)
        assert not thread.is_alive()
        sent = [b"small"] + [b"%d" % i + b"x" * 500 for i in range(10)]
        assert out == sent[:len(out)] and len(out) >= 2
        # Each one-record batch is its value plus about 70 bytes of batch and record overhead.
        assert sum(len(v) + 80 for v in out) >= 4000
    finally:
        producer.close(5)

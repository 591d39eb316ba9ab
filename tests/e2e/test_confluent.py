"""confluent-kafka (librdkafka) against the broker: AdminClient creates the topic, an idempotent Producer
sends 2,000 messages per codec (10,000 over the five codecs) with keys, headers and null values, a Consumer
in a group reads them back exactly and in order per partition and commits; the committed offsets are the
log end offsets.
"""

from __future__ import annotations

import time
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from tests.e2e.support import CODECS, Msg, assert_same_per_partition, make_messages, stored_codecs

PARTITIONS = 4
PER_CODEC = 2000


def create_topic(bootstrap: str, topic: str, partitions: int) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_topics([NewTopic(topic, partitions, 1)], operation_timeout=10).values():
        future.result(15)


@pytest.mark.parametrize("codec", CODECS)
def test_idempotent_round_trip_with_group(broker: Any, codec: str) -> None:
    topic = f"ck-{codec}"
    create_topic(broker.bootstrap, topic, PARTITIONS)

    sent = make_messages(PER_CODEC, PARTITIONS, topic)
    producer = Producer({"bootstrap.servers": broker.bootstrap, "enable.idempotence": True,
                         "compression.type": codec, "linger.ms": 5})
    delivered: list[tuple[int, int]] = []
    errors: list[Any] = []

    def on_delivery(err: Any, msg: Any) -> None:
        if err is not None:
            errors.append(err)
        else:
            delivered.append((msg.partition(), msg.offset()))

    for m in sent:
        while True:
            try:
                producer.produce(topic, key=m.key, value=m.value, headers=list(m.headers),
                                 partition=m.partition, on_delivery=on_delivery)
                break
            except BufferError:
                producer.poll(0.1)
    assert producer.flush(30) == 0
    assert errors == []
    # Delivery reports come in send order per partition; offsets must be dense from 0.
    by_partition: dict[int, list[int]] = {}
    for p, off in delivered:
        by_partition.setdefault(p, []).append(off)
    assert by_partition == {p: list(range(PER_CODEC // PARTITIONS)) for p in range(PARTITIONS)}
    # As produced, never recompressed (librdkafka may send a batch uncompressed when that is smaller: "none")
    stored = stored_codecs(broker.data_dir, topic)
    assert codec in stored and stored <= {codec, "none"}, stored

    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": f"g-{topic}",
                         "auto.offset.reset": "earliest", "enable.auto.commit": False,
                         "fetch.wait.max.ms": 100})
    received: list[Msg] = []
    try:
        consumer.subscribe([topic])
        deadline = time.monotonic() + 30
        while len(received) < len(sent) and time.monotonic() < deadline:
            for msg in consumer.consume(num_messages=1000, timeout=0.5):
                if msg.error() is not None:
                    assert msg.error().code() == KafkaError._PARTITION_EOF, msg.error()
                    continue
                received.append(Msg(msg.partition(), msg.key(), msg.value(), tuple(msg.headers() or ())))
        consumer.commit(asynchronous=False)
        assert_same_per_partition(sent, received)
        committed = consumer.committed([TopicPartition(topic, p) for p in range(PARTITIONS)], timeout=10)
        assert {tp.partition: tp.offset for tp in committed} == {p: PER_CODEC // PARTITIONS
                                                                 for p in range(PARTITIONS)}
        for p in range(PARTITIONS):
            low, high = consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10)
            assert (low, high) == (0, PER_CODEC // PARTITIONS)
    finally:
        consumer.close()

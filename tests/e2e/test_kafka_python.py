"""kafka-python against the broker: KafkaAdminClient creates the topic, KafkaProducer sends 2,000 messages per
codec (10,000 over the five codecs) with keys, headers and null values to explicit partitions, a KafkaConsumer
in a group reads them back exactly and in order per partition, and its committed offsets equal the log ends.
"""

from __future__ import annotations

import time
from typing import Any

import pytest
from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import NewTopic

from tests.e2e.support import CODECS, Msg, assert_same_per_partition, make_messages, stored_codecs

PARTITIONS = 4
PER_CODEC = 2000


@pytest.mark.parametrize("codec", CODECS)
def test_round_trip_with_group(broker: Any, codec: str) -> None:
    topic = f"kp-{codec}"
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap, request_timeout_ms=10000)
    try:
        admin.create_topics([NewTopic(topic, PARTITIONS, 1)])
    finally:
        admin.close()

    sent = make_messages(PER_CODEC, PARTITIONS, f"kp-{codec}")
    producer = KafkaProducer(bootstrap_servers=broker.bootstrap, acks="all",
                             compression_type=None if codec == "none" else codec,
                             linger_ms=5, batch_size=32768)
    try:
        futures = [producer.send(topic, key=m.key, value=m.value, headers=list(m.headers),
                                 partition=m.partition) for m in sent]
        producer.flush(30)
        metadata = [f.get(timeout=10) for f in futures]
    finally:
        producer.close(10)
    # Offsets the broker assigned must be dense per partition, in send order.
    next_offset = [0] * PARTITIONS
    for m, md in zip(sent, metadata, strict=True):
        assert (md.partition, md.offset) == (m.partition, next_offset[m.partition])
        next_offset[m.partition] += 1

    assert stored_codecs(broker.data_dir, topic) == {codec}

    consumer = KafkaConsumer(topic, bootstrap_servers=broker.bootstrap, group_id=f"g-{topic}",
                             auto_offset_reset="earliest", enable_auto_commit=False,
                             fetch_max_wait_ms=100)
    received: list[Msg] = []
    try:
        deadline = time.monotonic() + 30
        while len(received) < len(sent) and time.monotonic() < deadline:
            for tp, records in consumer.poll(timeout_ms=500).items():
                for r in records:
                    received.append(Msg(tp.partition, r.key, r.value, tuple(r.headers)))
        consumer.commit()
        assert_same_per_partition(sent, received)
        tps = [TopicPartition(topic, p) for p in range(PARTITIONS)]
        assert consumer.end_offsets(tps) == {tp: next_offset[tp.partition] for tp in tps}
        assert {tp: consumer.committed(tp) for tp in tps} == {tp: next_offset[tp.partition] for tp in tps}
    finally:
        consumer.close()

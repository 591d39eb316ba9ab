"""A disk that fills under a live broker. The broker process runs with a file-size limit (RLIMIT_FSIZE), so the
segment write that crosses it fails with EFBIG, as a write to a full disk fails with ENOSPC (Python ignores
SIGXFSZ, so the process lives on).

- A produce that cannot be written is answered KAFKA_STORAGE_ERROR (kafka-python raises KafkaStorageError), and
  so is every later one; the failed write is rolled back, so nothing acknowledged is lost or corrupted.
- Meanwhile the broker serves fetches of everything acknowledged, and metadata.
- Restarted with space again, it recovers exactly the acknowledged records and appends right after them.
Kafka takes the whole log directory offline on such an error (and halts a broker whose only directory it was);
ours answers the failed writes and carries on, which keeps a single-node broker readable.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import NewTopic
from kafka.errors import KafkaStorageError

TOPIC = "disk-full"
VALUE = b"x" * 1000
# Index files are preallocated to segment.index.bytes: small here, so only the segment reaches the limit.
OVERRIDES = {"num.partitions": "1", "log.index.size.max.bytes": "8192"}
LIMIT = 256 * 1024


def consume_all(bootstrap: str) -> list[tuple[int, bytes]]:
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, auto_offset_reset="earliest", enable_auto_commit=False,
                             fetch_max_wait_ms=100, consumer_timeout_ms=5000)
    tp = TopicPartition(TOPIC, 0)
    consumer.assign([tp])
    end = consumer.end_offsets([tp])[tp]
    got: list[tuple[int, bytes]] = []
    for msg in consumer:
        got.append((msg.offset, msg.value))
        if msg.offset + 1 >= end:
            break
    consumer.close()
    return got


def test_a_full_disk_fails_produces_loses_nothing_and_recovers(broker_factory: Any, tmp_path: Path) -> None:
    from broker.testing import BrokerProcess

    data = tmp_path / "full"
    b = BrokerProcess(OVERRIDES, data_dir=data, file_size_limit=LIMIT).start()
    try:
        admin = KafkaAdminClient(bootstrap_servers=b.bootstrap, request_timeout_ms=10000)
        admin.create_topics([NewTopic(TOPIC, 1, 1)])
        admin.close()
        producer = KafkaProducer(bootstrap_servers=b.bootstrap, acks=1, retries=0, linger_ms=0,
                                 max_in_flight_requests_per_connection=1)
        acknowledged: list[bytes] = []
        refused = 0
        for i in range(400):
            value = b"%06d" % i + VALUE
            try:
                producer.send(TOPIC, value, partition=0).get(timeout=10)
                acknowledged.append(value)
                assert refused == 0, "a produce succeeded after one failed on the full disk"
            except KafkaStorageError:
                refused += 1
        producer.close()
        assert refused > 0 and 150 < len(acknowledged) < 260, (len(acknowledged), refused)
        segment = data / "logs" / f"{TOPIC}-0" / "00000000000000000000.log"
        assert segment.stat().st_size <= LIMIT
        # Full: every acknowledged record is still served, in order, at its offset.
        assert consume_all(b.bootstrap) == list(enumerate(acknowledged))
    finally:
        assert b.stop() == 0
    restarted = broker_factory(OVERRIDES, data_dir=data, process=True, port=b.port)
    assert consume_all(restarted.bootstrap) == list(enumerate(acknowledged))
    producer = KafkaProducer(bootstrap_servers=restarted.bootstrap, acks=1)
    assert producer.send(TOPIC, b"after", partition=0).get(timeout=10).offset == len(acknowledged)
    producer.close()

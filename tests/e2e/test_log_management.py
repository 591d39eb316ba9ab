"""The broker's own housekeeping as consumers see it: time retention and log compaction.

- Retention: a topic with small segments and `retention.ms` of an hour holds records stamped two hours
  ago; the periodic retention check deletes those segments, the log start offset moves, and a consumer
  from earliest starts at the first retained record.
- Compaction: a `cleanup.policy=compact` topic with small segments gets many updates per key and some
  tombstones; the cleaner runs, and a consumer from the beginning reads fewer records than were written,
  in offset order, with the latest value of every key (tombstones included, as delete.retention.ms has
  not passed) and every key's latest offset intact.
"""

from __future__ import annotations

import time
from typing import Any

from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import NewTopic

from tests.e2e.support import wait_until

HOUSEKEEPING = {"log.cleaner.backoff.ms": "100", "log.retention.check.interval.ms": "200",
                "log.segment.delete.delay.ms": "0"}


def create_topic(bootstrap: str, topic: str, configs: dict[str, str]) -> None:
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        admin.create_topics([NewTopic(topic, 1, 1, topic_configs=configs)])
    finally:
        admin.close()


def read_all(bootstrap: str, topic: str, timeout: float = 20) -> list[Any]:
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, auto_offset_reset="earliest", enable_auto_commit=False,
                             fetch_max_wait_ms=100)
    tp = TopicPartition(topic, 0)
    out: list[Any] = []
    try:
        consumer.assign([tp])
        end = consumer.end_offsets([tp])[tp]
        deadline = time.monotonic() + timeout
        while consumer.position(tp) < end and time.monotonic() < deadline:
            for records in consumer.poll(timeout_ms=500).values():
                out.extend(records)
    finally:
        consumer.close()
    return out


def beginning_offset(bootstrap: str, topic: str) -> int:
    consumer = KafkaConsumer(bootstrap_servers=bootstrap)
    try:
        tp = TopicPartition(topic, 0)
        return consumer.beginning_offsets([tp])[tp]
    finally:
        consumer.close()


def test_time_retention_deletes_old_segments(broker_factory: Any) -> None:
    broker = broker_factory(HOUSEKEEPING)
    create_topic(broker.bootstrap, "retained", {"retention.ms": "3600000", "segment.bytes": "4096"})
    old = int(time.time() * 1000) - 2 * 3600_000
    producer = KafkaProducer(bootstrap_servers=broker.bootstrap, acks="all", linger_ms=0)
    try:
        for i in range(200):  # ~100 bytes each: many 4 KiB segments of old records
            producer.send("retained", value=b"old-%03d" % i + b"." * 80, partition=0, timestamp_ms=old + i).get(10)
        for i in range(5):
            producer.send("retained", value=b"new-%d" % i, partition=0).get(10)
    finally:
        producer.close(5)

    wait_until(lambda: beginning_offset(broker.bootstrap, "retained") > 0, 15, "old segments to be deleted")
    start = beginning_offset(broker.bootstrap, "retained")
    # Only whole segments go, and never the active one: the new records are all still there.
    assert 0 < start <= 200
    records = read_all(broker.bootstrap, "retained")
    assert [r.offset for r in records] == list(range(start, 205))
    assert [r.value for r in records[-5:]] == [b"new-%d" % i for i in range(5)]


def test_compaction_keeps_the_latest_value_per_key(broker_factory: Any) -> None:
    broker = broker_factory(HOUSEKEEPING)
    create_topic(broker.bootstrap, "compacted", {"cleanup.policy": "compact", "segment.bytes": "4096",
                                                 "min.cleanable.dirty.ratio": "0.01"})
    latest: dict[bytes, bytes | None] = {}
    latest_offset: dict[bytes, int] = {}
    producer = KafkaProducer(bootstrap_servers=broker.bootstrap, acks="all", linger_ms=0,
                             compression_type="zstd")
    written = 0
    try:
        for round_ in range(20):
            futures = []
            for k in range(30):
                key = b"key-%02d" % k
                value: bytes | None = b"%s-v%02d" % (key, round_) + b"." * 40
                if round_ == 19 and k % 10 == 0:
                    value = None  # tombstone
                futures.append((key, value, producer.send("compacted", key=key, value=value, partition=0)))
            for key, value, f in futures:
                md = f.get(10)
                latest[key] = value
                latest_offset[key] = md.offset
                written += 1
        # A few more so the last round is not in the active segment the cleaner must skip.
        for i in range(60):
            producer.send("compacted", key=b"filler-%02d" % (i % 3), value=b"f" * 60, partition=0).get(10)
            written += 1
    finally:
        producer.close(5)
    for i in range(57, 60):
        latest[b"filler-%02d" % (i % 3)] = b"f" * 60

    def compacted() -> bool:
        return len(read_all(broker.bootstrap, "compacted")) < written // 2

    wait_until(compacted, 20, "the cleaner to compact the log", interval=0.5)
    records = read_all(broker.bootstrap, "compacted")
    offsets = [r.offset for r in records]
    assert offsets == sorted(offsets) and len(set(offsets)) == len(offsets)
    seen: dict[bytes, bytes | None] = {}
    for r in records:
        seen[r.key] = r.value
    assert seen == latest
    by_offset = {r.offset: r for r in records}
    for key, off in latest_offset.items():
        assert off in by_offset and by_offset[off].key == key, f"latest record of {key!r} at {off} was removed"

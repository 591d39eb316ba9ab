"""Compaction racing producers: the cleaner runs every 10 ms on a compacted topic with tiny segments while
producers append; every key's latest acknowledged value must survive (the cleaner never drops a segment
rolled while it was cleaning, nor the latest record of a key).
"""

from __future__ import annotations

import time
from typing import Any

from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import NewTopic

PARTITIONS = 4


def test_cleaner_racing_appends_keeps_every_latest_value(broker_factory: Any) -> None:
    broker = broker_factory({"log.cleaner.backoff.ms": "10", "log.segment.delete.delay.ms": "0"})
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    try:
        admin.create_topics([NewTopic("churn", PARTITIONS, 1, topic_configs={
            "cleanup.policy": "compact", "segment.bytes": "1024", "min.cleanable.dirty.ratio": "0.01"})])
    finally:
        admin.close()
    latest: dict[tuple[int, bytes], bytes] = {}
    producer = KafkaProducer(bootstrap_servers=broker.bootstrap, acks="all", linger_ms=1)
    try:
        for round_ in range(15):
            futures = []
            for k in range(60):
                key = b"key-%02d" % k
                value = b"%s-round-%02d" % (key, round_) + b"." * 30
                futures.append((key, value, producer.send("churn", key=key, value=value,
                                                          partition=k % PARTITIONS)))
            for key, value, f in futures:
                md = f.get(10)
                latest[(md.partition, key)] = value
    finally:
        producer.close(5)
    time.sleep(0.5)  # more cleaner passes

    consumer = KafkaConsumer(bootstrap_servers=broker.bootstrap, auto_offset_reset="earliest",
                             enable_auto_commit=False, fetch_max_wait_ms=100)
    seen: dict[tuple[int, bytes], bytes] = {}
    read = 0
    try:
        tps = [TopicPartition("churn", p) for p in range(PARTITIONS)]
        consumer.assign(tps)
        ends = consumer.end_offsets(tps)
        deadline = time.monotonic() + 20
        while any(consumer.position(tp) < ends[tp] for tp in tps) and time.monotonic() < deadline:
            for tp, records in consumer.poll(timeout_ms=500).items():
                read += len(records)
                for r in records:
                    seen[(tp.partition, r.key)] = r.value
    finally:
        consumer.close()
    wrong = sorted(k for k in latest if seen.get(k) != latest[k])
    assert not wrong, f"{len(wrong)} keys lost their latest value, e.g. {wrong[:3]}"
    assert read < 15 * 60 // 2, f"the cleaner should have compacted: read {read} of {15 * 60} records"

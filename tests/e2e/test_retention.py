"""Time retention as consumers see it, alone and racing producers.

- A topic with small segments and `retention.ms` of an hour holds records stamped two hours ago; the
  periodic retention check deletes those segments, the log start offset moves and settles, and a consumer
  from earliest reads exactly from the log start to the end, the current records included.
- On many partitions, old records then at once current ones while retention checks run every 5 ms: no
  acknowledged current record is ever deleted.
"""

from __future__ import annotations

import time
from typing import Any

from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import NewTopic

from tests.e2e.log_support import HOUSEKEEPING, beginning_offset, create_topic, read_all
from tests.e2e.support import wait_until


def test_time_retention_deletes_old_segments(broker_factory: Any) -> None:
    broker = broker_factory(HOUSEKEEPING)
    create_topic(broker.bootstrap, "retained", {"retention.ms": "3600000", "segment.bytes": "4096"})
    old = int(time.time() * 1000) - 2 * 3600_000
    producer = KafkaProducer(bootstrap_servers=broker.bootstrap, acks="all", linger_ms=0)
    try:
        for i in range(200):  # ~100 bytes each: many 4 KiB segments of old records
            producer.send("retained", value=b"old-%03d" % i + b"." * 80, partition=0,
                          timestamp_ms=old + i).get(10)
        for i in range(5):
            producer.send("retained", value=b"new-%d" % i, partition=0).get(10)
    finally:
        producer.close(5)

    # Retention deletes a prefix of segments over a few checks; wait until the log start settles.
    seen = [0]

    def settled() -> bool:
        now = beginning_offset(broker.bootstrap, "retained")
        done = now > 0 and now == seen[0]
        seen[0] = now
        return done

    wait_until(settled, 20, "old segments to be deleted", interval=1.0)
    start = seen[0]
    # Only whole segments go, and never the active one: the new records are all still there.
    assert 0 < start <= 200
    records = read_all(broker.bootstrap, "retained")
    assert [r.offset for r in records] == list(range(start, 205))
    assert [r.value for r in records[-5:]] == [b"new-%d" % i for i in range(5)]
    assert beginning_offset(broker.bootstrap, "retained") == start


def test_retention_racing_appends_never_deletes_new_records(broker_factory: Any) -> None:
    """On each of 24 partitions: old records over several small segments, then at once current ones, while
    retention checks run every 5 ms. A check often finds the active segment all old just before the
    current records arrive; those acknowledged records must survive (Kafka decides, rolls and deletes
    under the log lock, so an append lands in the new segment)."""
    broker = broker_factory({**HOUSEKEEPING, "log.retention.check.interval.ms": "5",
                             "log.segment.delete.delay.ms": "60000"})
    partitions = 24
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    try:
        admin.create_topics([NewTopic("raced", partitions, 1, topic_configs={
            "retention.ms": "3600000", "segment.bytes": "1024"})])
    finally:
        admin.close()
    old = int(time.time() * 1000) - 2 * 3600_000
    producer = KafkaProducer(bootstrap_servers=broker.bootstrap, acks="all", linger_ms=0)
    current: dict[tuple[int, int], bytes] = {}
    try:
        for p in range(partitions):
            for i in range(30):
                producer.send("raced", value=b"old-%03d" % i + b"." * 60, partition=p,
                              timestamp_ms=old + i).get(10)
            for i in range(3):
                value = b"current-%d-%d" % (p, i)
                current[(p, producer.send("raced", value=value, partition=p).get(10).offset)] = value
    finally:
        producer.close(5)
    time.sleep(0.5)  # a few more retention checks
    consumer = KafkaConsumer(bootstrap_servers=broker.bootstrap, auto_offset_reset="earliest",
                             enable_auto_commit=False, fetch_max_wait_ms=100)
    got: dict[tuple[int, int], bytes] = {}
    try:
        tps = [TopicPartition("raced", p) for p in range(partitions)]
        consumer.assign(tps)
        deadline = time.monotonic() + 20
        # Until every current record is read: `got` holds the surviving old records too, so its size says
        # nothing about the current ones.
        while not current.keys() <= got.keys() and time.monotonic() < deadline:
            for tp, records in consumer.poll(timeout_ms=500).items():
                got.update(((tp.partition, r.offset), r.value) for r in records)
    finally:
        consumer.close()
    lost = sorted(k for k in current if got.get(k) != current[k])
    assert not lost, f"{len(lost)} acknowledged current records deleted by retention: {lost[:10]}"

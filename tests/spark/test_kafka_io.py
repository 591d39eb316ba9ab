"""The pipeline's Kafka helpers (no Spark): events land with key, JSON value and event-time
timestamps; aggregates written to a topic read back exactly."""

from __future__ import annotations

from typing import Any

from spark_pipeline.events import Aggregate, Event, generate_events
from spark_pipeline.kafka_io import create_topic, produce_events, read_aggregates


def test_produce_events_sets_key_value_and_timestamp(broker: Any) -> None:
    from kafka import KafkaConsumer, TopicPartition
    create_topic(broker.bootstrap, "events", 2)
    events = generate_events(30, start_ms=1_700_000_000_137)
    placed = produce_events(broker.bootstrap, "events", events, partitions=2)
    assert {p for p, _ in placed} <= {0, 1}
    consumer = KafkaConsumer(bootstrap_servers=broker.bootstrap, auto_offset_reset="earliest")
    try:
        consumer.assign([TopicPartition("events", 0), TopicPartition("events", 1)])
        got = []
        for _ in range(20):
            for records in consumer.poll(timeout_ms=500).values():
                got.extend(records)
            if len(got) >= len(events):
                break
    finally:
        consumer.close()
    assert len(got) == len(events)
    by_value = {r.value: r for r in got}
    for e in events:
        r = by_value[e.to_json()]
        assert r.key == e.key.encode() and r.timestamp == e.event_time
        assert Event.from_json(r.value) == e


def test_read_aggregates_reads_every_partition(broker: Any) -> None:
    from kafka import KafkaProducer
    create_topic(broker.bootstrap, "aggregates", 2)
    rows = [Aggregate(k, 0, 10_000, n, n * 3) for n, k in enumerate("abcdef", 1)]
    producer = KafkaProducer(bootstrap_servers=broker.bootstrap)
    for i, a in enumerate(rows):
        producer.send("aggregates", value=a.to_json(), key=a.key.encode(), partition=i % 2)
    producer.flush(10)
    producer.close()
    assert sorted(read_aggregates(broker.bootstrap, "aggregates", idle_s=0.5), key=lambda a: a.key) == rows

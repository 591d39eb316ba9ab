"""Feeding and checking the pipeline with a plain Kafka client (kafka-python), no Spark involved.

Events are produced with the record timestamp set to the event time, so the batch job's
timestamp ranges select exactly the events in that event-time range.
"""

from __future__ import annotations

from collections.abc import Sequence

from spark_pipeline.events import Aggregate, Event


def produce_events(bootstrap: str, topic: str, events: Sequence[Event], *, partitions: int = 1,
                   timeout_s: float = 30.0, transactional_id: str | None = None,
                   commit: bool = True) -> list[tuple[int, int]]:
    """Produce events (key-hashed over ``partitions`` by crc, deterministic); returns (partition, offset).

    With ``transactional_id`` the events are one transaction, committed or (``commit=False``) aborted."""
    import zlib

    from kafka import KafkaProducer
    options: dict[str, object] = {"transactional_id": transactional_id} if transactional_id else {}
    producer = KafkaProducer(bootstrap_servers=bootstrap.split(","), acks="all", linger_ms=5, **options)
    try:
        if transactional_id:
            producer.init_transactions()
            producer.begin_transaction()
        futures = [producer.send(topic, key=e.key.encode(), value=e.to_json(), timestamp_ms=e.event_time,
                                 partition=zlib.crc32(e.key.encode()) % partitions) for e in events]
        producer.flush(timeout_s)
        placed = [(md.partition, md.offset) for md in (f.get(timeout_s) for f in futures)]
        if transactional_id:
            (producer.commit_transaction if commit else producer.abort_transaction)()
        return placed
    finally:
        producer.close(5)


def create_topic(bootstrap: str, topic: str, partitions: int = 1) -> None:
    from kafka import KafkaAdminClient
    from kafka.admin import NewTopic
    admin = KafkaAdminClient(bootstrap_servers=bootstrap.split(","))
    try:
        admin.create_topics([NewTopic(topic, partitions, 1)])
    finally:
        admin.close()


def read_aggregates(bootstrap: str, topic: str, *, idle_s: float = 3.0, timeout_s: float = 30.0) -> list[Aggregate]:
    """Every record of ``topic`` (all partitions, from the start) decoded as an Aggregate."""
    import time

    from kafka import KafkaConsumer, TopicPartition
    consumer = KafkaConsumer(bootstrap_servers=bootstrap.split(","), auto_offset_reset="earliest",
                             enable_auto_commit=False)
    try:
        parts = consumer.partitions_for_topic(topic) or set()
        tps = [TopicPartition(topic, p) for p in sorted(parts)]
        consumer.assign(tps)
        ends = consumer.end_offsets(tps)
        out: list[Aggregate] = []
        deadline = time.monotonic() + timeout_s
        while any(consumer.position(tp) < ends[tp] for tp in tps) and time.monotonic() < deadline:
            for records in consumer.poll(timeout_ms=int(idle_s * 1000)).values():
                out.extend(Aggregate.from_json(r.value) for r in records)
        return out
    finally:
        consumer.close()

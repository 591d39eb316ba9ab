"""A `python -m broker` process restarted on its own data directory keeps every acknowledged message.

- SIGTERM: exit code 0, the log says the broker shut down cleanly, and after a restart (same data dir, same
  port) a consumer reads everything that was produced, byte for byte and in order per partition.
- kill -9 with acks=1 and `log.flush.interval.messages=1`: after a restart every acknowledged message is
  there, at the offset it was acknowledged with, and the broker keeps accepting writes after the recovered
  log end.
- Clients riding through a restart (SIGTERM, and kill -9): an idempotent producer and a group consumer
  keep going; no duplicate or gap in the log, every delivered message consumed.
- kill -9 over many small segments: seek and offsets-for-times still find the right records.
"""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest
from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import NewTopic
from kafka.errors import KafkaTimeoutError

from tests.e2e.support import Msg, assert_same_per_partition, make_messages, wait_until

PARTITIONS = 3


def create_topic(bootstrap: str, topic: str) -> None:
    admin = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=10000)
    try:
        admin.create_topics([NewTopic(topic, PARTITIONS, 1)])
    finally:
        admin.close()


def consume_all(bootstrap: str, topic: str, timeout: float = 30) -> list[tuple[int, int, Msg]]:
    """(partition, offset, message) for everything in `topic` up to its end offsets, read without a group."""
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, auto_offset_reset="earliest",
                             enable_auto_commit=False, fetch_max_wait_ms=100)
    out: list[tuple[int, int, Msg]] = []
    try:
        tps = [TopicPartition(topic, p) for p in range(PARTITIONS)]
        consumer.assign(tps)
        ends = consumer.end_offsets(tps)
        deadline = time.monotonic() + timeout
        while any(consumer.position(tp) < ends[tp] for tp in tps) and time.monotonic() < deadline:
            for tp, records in consumer.poll(timeout_ms=500).items():
                out.extend((tp.partition, r.offset, Msg(tp.partition, r.key, r.value, tuple(r.headers)))
                           for r in records)
    finally:
        consumer.close()
    return out


def test_sigterm_then_restart_keeps_everything(broker_factory: Any) -> None:
    first = broker_factory(process=True)
    create_topic(first.bootstrap, "durable")
    sent = make_messages(3000, PARTITIONS, "durable")
    producer = KafkaProducer(bootstrap_servers=first.bootstrap, acks="all", linger_ms=5,
                             compression_type="lz4")
    try:
        futures = [producer.send("durable", key=m.key, value=m.value, headers=list(m.headers),
                                 partition=m.partition) for m in sent]
        producer.flush(30)
        for f in futures:
            f.get(timeout=10)
    finally:
        producer.close(10)

    assert first.stop() == 0, first.log_tail()
    assert "shut down cleanly" in first.log_path.read_text(errors="replace"), first.log_tail()

    second = broker_factory(data_dir=first.data_dir, process=True, port=first.port)
    received = consume_all(second.bootstrap, "durable")
    assert_same_per_partition(sent, [m for _, _, m in received])
    assert second.stop() == 0, second.log_tail()


def test_kill_9_keeps_every_acknowledged_message(broker_factory: Any) -> None:
    overrides = {"log.flush.interval.messages": "1"}
    first = broker_factory(overrides, process=True)
    create_topic(first.bootstrap, "flushed")

    acked: dict[tuple[int, int], bytes] = {}
    stop = threading.Event()
    errors: list[BaseException] = []

    def produce() -> None:
        # acks=1 and no retries: an ack means the leader appended (and, with flush every message, fsynced).
        producer = KafkaProducer(bootstrap_servers=first.bootstrap, acks=1, retries=0, linger_ms=1,
                                 max_block_ms=2000, request_timeout_ms=2000, delivery_timeout_ms=3000)
        i = 0
        try:
            while not stop.is_set() and i < 20000:
                futures = []
                for _ in range(20):
                    value = f"flushed-{i}".encode()
                    futures.append((value, producer.send("flushed", key=str(i).encode(), value=value,
                                                         partition=i % PARTITIONS)))
                    i += 1
                for value, f in futures:
                    try:
                        md = f.get(timeout=4)
                    except Exception:  # noqa: BLE001 - the broker was killed: unacknowledged, not lost
                        return
                    acked[(md.partition, md.offset)] = value
        except BaseException as e:  # noqa: BLE001
            errors.append(e)
        finally:
            try:
                producer.close(0)
            except KafkaTimeoutError:
                pass  # records still in flight to the killed broker: abandoned on purpose, never acknowledged

    thread = threading.Thread(target=produce, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while len(acked) < 500 and thread.is_alive() and time.monotonic() < deadline:
        time.sleep(0.02)
    assert len(acked) >= 500, f"only {len(acked)} acknowledged before kill: {errors}"
    first.kill()
    stop.set()
    thread.join(30)
    assert not thread.is_alive()
    snapshot = dict(acked)

    second = broker_factory(overrides, data_dir=first.data_dir, process=True, port=first.port)
    received = consume_all(second.bootstrap, "flushed")
    got = {(p, off): m.value for p, off, m in received}
    missing = [k for k in snapshot if got.get(k) != snapshot[k]]
    assert not missing, f"{len(missing)} acknowledged messages lost or changed, e.g. {missing[:5]}"
    # Offsets stay dense: whatever survived beyond the acks is a prefix-closed log per partition.
    for p in range(PARTITIONS):
        offsets = sorted(off for (part, off) in got if part == p)
        assert offsets == list(range(len(offsets)))

    # The recovered log accepts new writes right after its end.
    producer = KafkaProducer(bootstrap_servers=second.bootstrap, acks="all")
    try:
        md = producer.send("flushed", value=b"after-restart", partition=0).get(timeout=10)
    finally:
        producer.close(5)
    assert md.offset == len([1 for (part, _) in got if part == 0])
    assert second.stop() == 0, second.log_tail()


@pytest.mark.parametrize("how", ["sigterm", "kill-9"])
def test_clients_ride_through_a_restart(broker_factory: Any, how: str) -> None:
    """An idempotent confluent-kafka producer and a group consumer keep running while the broker process is
    stopped (SIGTERM, or kill -9 with requests in flight) and started again on the same port: no delivery
    fails, every partition's offsets stay dense (no duplicates from retries: the producer state survived
    the restart) and in send order, and the consumer gets every delivered message."""
    from confluent_kafka import Consumer, Producer

    first = broker_factory(process=True)
    create_topic(first.bootstrap, "ride")
    delivered: dict[tuple[int, int], bytes] = {}
    failures: list[Any] = []
    undelivered: list[int] = []
    consumed: dict[tuple[int, int], bytes] = {}
    stop_producing = threading.Event()
    stop_consuming = threading.Event()

    def on_delivery(err: Any, msg: Any) -> None:
        if err is not None:
            failures.append(err)
        else:
            delivered[(msg.partition(), msg.offset())] = msg.value()

    def produce() -> None:
        producer = Producer({"bootstrap.servers": first.bootstrap, "enable.idempotence": True,
                             "linger.ms": 5, "reconnect.backoff.max.ms": 200})
        i = 0
        while not stop_producing.is_set() and i < 30000:
            for _ in range(20):
                producer.produce("ride", key=b"%d" % i, value=b"ride-%06d" % i, partition=i % PARTITIONS,
                                 on_delivery=on_delivery)
                i += 1
            producer.poll(0.01)
        undelivered.append(producer.flush(60))

    def consume() -> None:
        consumer = Consumer({"bootstrap.servers": first.bootstrap, "group.id": "ride",
                             "auto.offset.reset": "earliest", "reconnect.backoff.max.ms": 200,
                             "fetch.wait.max.ms": 100})
        consumer.subscribe(["ride"])
        try:
            while not stop_consuming.is_set():
                for msg in consumer.consume(500, 0.2):
                    if msg.error() is None:
                        consumed[(msg.partition(), msg.offset())] = msg.value()
        finally:
            consumer.close()

    producer_thread = threading.Thread(target=produce, daemon=True)
    consumer_thread = threading.Thread(target=consume, daemon=True)
    producer_thread.start()
    consumer_thread.start()
    try:
        wait_until(lambda: len(delivered) >= 1000 and len(consumed) >= 500, 30, "traffic before the restart")
        if how == "sigterm":
            assert first.stop() == 0, first.log_tail()
        else:
            first.kill()
        time.sleep(0.5)
        second = broker_factory(data_dir=first.data_dir, process=True, port=first.port)
        mark = len(delivered)
        wait_until(lambda: len(delivered) >= mark + 1000, 60, "deliveries after the restart")
        stop_producing.set()
        producer_thread.join(90)
        assert not producer_thread.is_alive()
        wait_until(lambda: set(consumed) >= set(delivered), 30, "the consumer to catch up")
    finally:
        stop_producing.set()
        stop_consuming.set()
        producer_thread.join(90)
        consumer_thread.join(30)
    assert failures == []
    assert undelivered == [0]
    for p in range(PARTITIONS):
        offsets = sorted(off for (part, off) in delivered if part == p)
        assert offsets == list(range(len(offsets))), f"partition {p}: gaps or duplicates in the log"
        values = [delivered[(p, off)] for off in offsets]
        assert values == sorted(values), f"partition {p} is out of send order"
    assert {k: consumed[k] for k in delivered} == delivered
    assert second.stop() == 0, second.log_tail()


def test_kill_9_then_seek_and_time_lookup_work_across_many_segments(broker_factory: Any) -> None:
    """Many small segments, kill -9 (indexes never flushed), restart: seeking to any offset and looking up
    offsets by time give the right records (the offset and time indexes were recovered or rebuilt)."""
    overrides = {"log.segment.bytes": "16384", "log.index.interval.bytes": "256"}
    first = broker_factory(overrides, process=True)
    create_topic(first.bootstrap, "indexed")
    base = int(time.time() * 1000) - 600_000
    producer = KafkaProducer(bootstrap_servers=first.bootstrap, acks="all", linger_ms=2)
    try:
        futures = [producer.send("indexed", value=b"idx-%05d" % i + b"." * 50, partition=0,
                                 timestamp_ms=base + i * 10) for i in range(3000)]
        producer.flush(30)
        assert [f.get(10).offset for f in futures] == list(range(3000))
    finally:
        producer.close(5)
    assert len(list((first.data_dir / "logs" / "indexed-0").glob("*.log"))) > 5
    first.kill()

    second = broker_factory(overrides, data_dir=first.data_dir, process=True, port=first.port)
    consumer = KafkaConsumer(bootstrap_servers=second.bootstrap, enable_auto_commit=False,
                             fetch_max_wait_ms=100)
    tp = TopicPartition("indexed", 0)
    try:
        consumer.assign([tp])
        assert consumer.end_offsets([tp]) == {tp: 3000}
        for target in (0, 1, 777, 1234, 2048, 2999):
            consumer.seek(tp, target)
            first_record = None
            deadline = time.monotonic() + 10
            while first_record is None and time.monotonic() < deadline:
                records = consumer.poll(timeout_ms=500, max_records=1).get(tp, [])
                if records:
                    first_record = records[0]
            assert first_record is not None, f"nothing fetched at offset {target}"
            assert (first_record.offset, first_record.value[:9]) == (target, b"idx-%05d" % target)
        for i in (0, 15, 1500, 2999):
            found = consumer.offsets_for_times({tp: base + i * 10 - 5})[tp]
            assert (found.offset, found.timestamp) == (i, base + i * 10)
    finally:
        consumer.close()
    assert second.stop() == 0, second.log_tail()


def test_kill_9_right_after_create_topics_recovers_every_partition_with_its_topic_id(broker_factory: Any) -> None:
    """A new partition's partition.metadata is written off the request path (Kafka's flush-metadata-file task):
    a kill -9 right after CreateTopics answered may leave logs without it. After a restart every partition
    directory holds the topic id the metadata gives (Kafka's initializeTopicId writes a missing file again), and
    every partition takes writes and serves them."""
    from confluent_kafka import Consumer, Producer
    from confluent_kafka import TopicPartition as CTopicPartition
    from confluent_kafka.admin import AdminClient
    from confluent_kafka.admin import NewTopic as CNewTopic

    from storage.checkpoints import uuid_from_kafka_str

    partitions = 200
    first = broker_factory(process=True)
    admin = AdminClient({"bootstrap.servers": first.bootstrap})
    admin.create_topics([CNewTopic("fresh", partitions, 1)], operation_timeout=60)["fresh"].result(90)
    first.kill()
    log_dir = first.data_dir / "logs"
    dirs = [log_dir / f"fresh-{p}" for p in range(partitions)]
    assert all(d.is_dir() for d in dirs)  # the logs exist once CreateTopics has answered

    second = broker_factory(data_dir=first.data_dir, process=True, port=first.port)
    admin = AdminClient({"bootstrap.servers": second.bootstrap})
    [described] = admin.describe_topics(_topic_collection(["fresh"])).values()
    topic_id = uuid_from_kafka_str(str(described.result(30).topic_id))

    def written(d: Any) -> bool:
        meta = d / "partition.metadata"
        return meta.exists() and meta.read_text().startswith("version: 0\ntopic_id: ")

    wait_until(lambda: all(written(d) for d in dirs), 30, "partition.metadata in every partition")
    for d in dirs:
        stored = (d / "partition.metadata").read_text().split("topic_id: ")[1].strip()
        assert uuid_from_kafka_str(stored) == topic_id, d
    producer = Producer({"bootstrap.servers": second.bootstrap, "acks": "all"})
    for p in range(partitions):
        producer.produce("fresh", value=b"v%d" % p, partition=p)
    assert producer.flush(60) == 0
    consumer = Consumer({"bootstrap.servers": second.bootstrap, "group.id": "fresh-check",
                         "enable.auto.commit": False})
    try:
        for p in (0, partitions // 2, partitions - 1):
            low, high = consumer.get_watermark_offsets(CTopicPartition("fresh", p), timeout=10)
            assert (low, high) == (0, 1)
    finally:
        consumer.close()
    assert second.stop() == 0, second.log_tail()


def _topic_collection(names: list[str]) -> Any:
    from confluent_kafka import TopicCollection

    return TopicCollection(names)

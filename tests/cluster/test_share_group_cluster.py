"""A share group over three brokers: the group coordinator on one broker, the share partitions led by all
three; three confluent-kafka ShareConsumers get every record exactly once. Share groups start at the latest
offset (Kafka's default `share.auto.offset.reset`), so markers are produced until one from each partition has
arrived before the records that count."""

from __future__ import annotations

import threading
import time
from collections import Counter
from pathlib import Path

from confluent_kafka import Producer, ShareConsumer

from tests.cluster.support import create_topic, metadata, start_cluster, wait_until

TOPIC, GROUP, PARTITIONS = "share-cluster", "share-cluster-group", 3


def test_three_members_share_partitions_led_by_three_brokers(tmp_path: Path) -> None:
    cluster = start_cluster(tmp_path, {"group.share.heartbeat.interval.ms": "500",
                                       "group.share.min.heartbeat.interval.ms": "500"})
    try:
        create_topic(cluster.bootstrap, TOPIC, PARTITIONS, 1)
        leaders = {p.leader for p in metadata(cluster.bootstrap, TOPIC).values()}
        assert len(leaders) == 3, leaders
        producer = Producer({"bootstrap.servers": cluster.bootstrap})
        seen: Counter[bytes] = Counter()
        lock = threading.Lock()
        stop = threading.Event()

        def member() -> None:
            consumer = ShareConsumer({"bootstrap.servers": cluster.bootstrap, "group.id": GROUP})
            consumer.subscribe([TOPIC])
            try:
                while not stop.is_set():
                    for m in consumer.poll(0.2):
                        if m.error() is None:
                            with lock:
                                seen[m.value()] += 1
            finally:
                consumer.close()

        threads = [threading.Thread(target=member) for _ in range(3)]
        for t in threads:
            t.start()
        try:
            def markers() -> bool:
                for p in range(PARTITIONS):
                    producer.produce(TOPIC, f"marker-{p}".encode(), partition=p)
                producer.flush(10)
                time.sleep(0.3)
                with lock:
                    return all(seen[f"marker-{p}".encode()] for p in range(PARTITIONS))
            wait_until(markers, 60, "a marker from every partition")
            values = [f"v{i}".encode() for i in range(300)]
            for i, v in enumerate(values):
                producer.produce(TOPIC, v, partition=i % PARTITIONS)
            assert producer.flush(15) == 0
            wait_until(lambda: all(seen[v] for v in values), 60, "every record")
            time.sleep(1.0)
        finally:
            stop.set()
            for t in threads:
                t.join(30)
        assert {seen[v] for v in values} == {1}
    finally:
        cluster.stop()

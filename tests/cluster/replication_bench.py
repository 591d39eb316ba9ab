"""Replication cost, measured: acks=all to RF=3 (min.insync.replicas=2) next to acks=1 to RF=1, in the same
run on the same 3-broker `LocalCluster` (real ZooKeeper, broker processes), with confluent-kafka.

    .venv/bin/python -m tests.cluster.replication_bench [--messages 100000] [--rate 5000] [--seconds 5]

For each case: throughput (a producer sending `--messages` 100-byte messages as fast as it can, linger.ms=5,
until every one is acknowledged) and latency (send → delivery report, p50/p99, at a paced `--rate` for
`--seconds`, after a warm-up). Both topics have one partition, led by the same broker. FETCH_WAIT_MS in the
environment sets replica.fetch.wait.max.ms (default 500).
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

from confluent_kafka import Producer

from broker.local_cluster import LocalCluster
from tests.cluster.support import Zk, create_topic, wait_until

VALUE = b"x" * 100


def throughput(bootstrap: str, topic: str, acks: str, n: int) -> float:
    done = [0]
    producer = Producer({"bootstrap.servers": bootstrap, "acks": acks, "linger.ms": 5,
                         "enable.idempotence": acks == "all", "queue.buffering.max.messages": 200000})
    t0 = time.perf_counter()
    for _ in range(n):
        while True:
            try:
                producer.produce(topic, VALUE, partition=0, on_delivery=lambda err, m: done.__setitem__(0, done[0] + 1))
                break
            except BufferError:
                producer.poll(0.01)
    producer.flush(120)
    elapsed = time.perf_counter() - t0
    assert done[0] == n
    return n / elapsed


def latencies(bootstrap: str, topic: str, acks: str, rate: int, seconds: float) -> list[float]:
    out: list[float] = []
    producer = Producer({"bootstrap.servers": bootstrap, "acks": acks, "linger.ms": 0,
                         "enable.idempotence": acks == "all"})
    # Connections, metadata and (idempotent) the producer id first: not part of a send's latency.
    for _ in range(100):
        producer.produce(topic, VALUE, partition=0)
    producer.flush(30)
    start = time.perf_counter()
    i = 0
    while time.perf_counter() - start < seconds:
        due = start + i / rate
        now = time.perf_counter()
        if due > now:
            time.sleep(due - now)
        sent = time.perf_counter()
        producer.produce(topic, VALUE, partition=0,
                         on_delivery=lambda err, m, sent=sent: out.append(time.perf_counter() - sent))
        producer.poll(0)
        i += 1
    producer.flush(60)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.cluster.replication_bench", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--messages", type=int, default=100_000)
    parser.add_argument("--rate", type=int, default=5000)
    parser.add_argument("--seconds", type=float, default=5.0)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="replication-bench-") as tmp:
        overrides = {"replica.fetch.wait.max.ms": os.environ.get("FETCH_WAIT_MS", "500")}
        cluster = LocalCluster(3, overrides, data_dir=Path(tmp))
        cluster.start()
        zk = Zk(cluster)
        try:
            create_topic(cluster.bootstrap, "rf3", 1, 3, {"min.insync.replicas": "2"}, assignment=[[0, 1, 2]])
            create_topic(cluster.bootstrap, "rf1", 1, 1, assignment=[[0]])
            wait_until(lambda: sorted(zk.partition_state("rf3", 0)["isr"]) == [0, 1, 2], 20, "rf3 ISR")
            rows = []
            for label, topic, acks in (("acks=1   RF=1", "rf1", "1"), ("acks=all RF=3", "rf3", "all")):
                throughput(cluster.bootstrap, topic, acks, 2000)  # warm up connections and metadata
                rate = throughput(cluster.bootstrap, topic, acks, args.messages)
                lat = sorted(latencies(cluster.bootstrap, topic, acks, args.rate, args.seconds))
                p50 = statistics.median(lat) * 1000
                p99 = lat[min(len(lat) - 1, int(len(lat) * 0.99))] * 1000
                rows.append((label, rate, p50, p99, len(lat)))
            print(f"{'case':<15} {'msgs/s':>10} {'MB/s':>7} {'p50 ms':>8} {'p99 ms':>8}  (latency at {args.rate}/s)")
            for label, rate, p50, p99, _ in rows:
                print(f"{label:<15} {rate:>10,.0f} {rate * len(VALUE) / 1e6:>7.2f} {p50:>8.2f} {p99:>8.2f}")
        finally:
            zk.close()
            cluster.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

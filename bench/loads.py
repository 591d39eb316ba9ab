"""Client loads, each run in its own process: `python -m bench.loads '<json spec>'`.

Contract: the spec is a JSON object with "kind" (produce, consume, latency_consumer,
latency_producer, ack_latency, fanout, metadata, rebalance (bench/rebalance.py), share (bench/share_groups.py)) and that
kind's parameters (see each function). The
process prints optional control lines ("READY") and finally exactly one line
`RESULT <json>`; the JSON has "ok" and either the measurements or "error". Loads that need a
start signal ("fanout") wait for a line "GO" on stdin after printing READY. Every loop is
bounded by a message count and by "timeout_s". All clients are confluent-kafka (librdkafka),
the same client for every target, so only the broker differs between rows of the table.

Running loads in separate processes keeps the client's GIL and CPU apart from the broker's;
on a 2-core machine they still share cores, which the report states.
"""

from __future__ import annotations

import json
import os
import random
import struct
import sys
import time
import uuid
from collections.abc import Callable
from typing import Any

# A small vocabulary makes values that compress like text (~2x with lz4), not like zeros or noise.
_WORDS = [
    "kafka",
    "broker",
    "offset",
    "leader",
    "epoch",
    "replica",
    "segment",
    "index",
    "record",
    "batch",
    "topic",
    "partition",
    "consumer",
    "producer",
    "fetch",
    "commit",
    "group",
    "isr",
    "watermark",
    "log",
]


def _cpu_seconds() -> float:
    """User + system CPU of this process, all threads (librdkafka's included)."""
    times = os.times()
    return times.user + times.system


def value_pool(size: int, count: int = 256, seed: int = 7) -> list[bytes]:
    rng = random.Random(seed)
    pool = []
    for _ in range(count):
        text = bytearray()
        while len(text) < size:
            text += f"{rng.choice(_WORDS)}-{rng.randrange(1 << 20):05x} ".encode()
        pool.append(bytes(text[:size]))
    return pool


def _producer(bootstrap: str, **extra: Any) -> tuple[Any, list[str]]:
    """A producer that reports only failed deliveries (no per-message callback on the hot loop)."""
    from confluent_kafka import Producer

    errors: list[str] = []

    def on_delivery(err: Any, _msg: Any) -> None:
        if err is not None:
            errors.append(str(err))

    conf = {
        "bootstrap.servers": bootstrap,
        "delivery.report.only.error": True,
        "on_delivery": on_delivery,
        "log_level": 3,
        **extra,
    }
    return Producer(conf), errors


def produce(spec: dict[str, Any]) -> dict[str, Any]:
    """tps [[topic, partition]...], count, size, acks, compression, linger_ms, batch_bytes, timeout_s.

    Optional: "client_conf" (extra librdkafka settings, e.g. TLS and SASL), "idempotent" (an idempotent
    producer, acks=all), and "commit_every_ms" or "commit_every_msgs" (a
    transactional producer committing at that interval, so idempotent and transactional runs differ only by the
    transactions; the clock starts after one warm-up message, and init_transactions)."""
    tps = [tuple(tp) for tp in spec["tps"]]
    count = int(spec["count"])
    values = value_pool(int(spec["size"]))
    every_ms = spec.get("commit_every_ms")
    per_txn = spec.get("commit_every_msgs")
    transactional = every_ms is not None or per_txn is not None
    idempotent = transactional or bool(spec.get("idempotent"))
    extra: dict[str, Any] = {}
    if transactional:
        extra["transactional.id"] = f"bench-txn-{uuid.uuid4().hex[:8]}"
    producer, errors = _producer(
        spec["bootstrap"],
        acks="all" if idempotent else str(spec.get("acks", "1")),
        **{
            "compression.type": spec.get("compression", "none"),
            "linger.ms": spec.get("linger_ms", 5),
            "batch.size": spec.get("batch_bytes", 1 << 20),
            "queue.buffering.max.messages": 500_000,
            "enable.idempotence": idempotent,
            **extra,
            **spec.get("client_conf", {}),
        },
    )
    deadline = time.monotonic() + float(spec.get("timeout_s", 120))
    if idempotent:
        # Producer id, metadata and connections before the clock starts, the same way for both kinds.
        if transactional:
            producer.init_transactions(max(1.0, deadline - time.monotonic()))
            producer.begin_transaction()
        producer.produce(tps[0][0], values[0], partition=tps[0][1])
        if transactional:
            producer.commit_transaction(max(1.0, deadline - time.monotonic()))
        producer.flush(max(0.1, deadline - time.monotonic()))
    send = producer.produce
    poll = producer.poll
    n_tps = len(tps)
    n_values = len(values)
    commit_after_s = float(every_ms) / 1000 if every_ms is not None else float("inf")
    commit_after_msgs = int(per_txn) if per_txn is not None else count + 1
    commits = 0
    cpu_start = _cpu_seconds()
    start = time.perf_counter()
    if transactional:
        producer.begin_transaction()
    txn_started = time.monotonic()
    in_txn = 0
    for i in range(count):
        topic, partition = tps[i % n_tps]
        value = values[i % n_values]
        while True:
            try:
                send(topic, value, partition=partition)
                break
            except BufferError:
                poll(0.001)
                if time.monotonic() > deadline:
                    return {"ok": False, "error": f"timeout while producing after {i} messages"}
        if transactional:
            in_txn += 1
            if in_txn >= commit_after_msgs or time.monotonic() - txn_started >= commit_after_s:
                producer.commit_transaction(max(1.0, deadline - time.monotonic()))
                commits += 1
                producer.begin_transaction()
                txn_started = time.monotonic()
                in_txn = 0
        if i % 20_000 == 0:
            poll(0)
    if transactional:
        producer.commit_transaction(max(1.0, deadline - time.monotonic()))  # empty when the loop just committed
        commits += 1 if in_txn else 0
    remaining = producer.flush(max(0.1, deadline - time.monotonic()))
    seconds = time.perf_counter() - start
    client_cpu = (_cpu_seconds() - cpu_start) / seconds
    if remaining:
        return {"ok": False, "error": f"{remaining} messages not delivered before the timeout"}
    if errors:
        return {"ok": False, "error": f"{len(errors)} delivery errors, first: {errors[0]}"}
    total_bytes = count * len(values[0])
    return {
        "ok": True,
        "seconds": seconds,
        "messages": count,
        "commits": commits,
        "MB/s": total_bytes / seconds / 1e6,
        "msg/s": count / seconds,
        "client_cpu": client_cpu,
    }


def _consumer(bootstrap: str, **extra: Any) -> Any:
    from confluent_kafka import Consumer

    return Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"bench-{uuid.uuid4().hex[:8]}",
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            "enable.partition.eof": True,
            "log_level": 3,
            **extra,
        }
    )


_THROUGHPUT_CONSUMER = {
    "fetch.max.bytes": 64 << 20,
    "max.partition.fetch.bytes": 8 << 20,
    "queued.max.messages.kbytes": 256 << 10,
    "fetch.wait.max.ms": 100,
}


def _drain(consumers: list[Any], partitions: int, deadline: float) -> tuple[int, int, int]:
    """Consume until each consumer saw EOF on every partition: (messages, bytes, ns of the last message).

    It stops at the end of the log, not at an expected count: a broker that dropped data (the mock
    trims its log) must not stall the run; callers compare the count with what was produced.
    """
    from confluent_kafka import KafkaError

    eof = [set() for _ in consumers]
    got = [0] * len(consumers)
    total_bytes = 0
    last_ns = time.monotonic_ns()
    active = list(range(len(consumers)))
    while active and time.monotonic() < deadline:
        for idx in list(active):
            batch = consumers[idx].consume(num_messages=2000, timeout=0.05 if len(active) == 1 else 0.005)
            n = 0
            for msg in batch:
                err = msg.error()
                if err is None:
                    n += 1
                    total_bytes += len(msg)
                elif err.code() == KafkaError._PARTITION_EOF:
                    eof[idx].add(msg.partition() if msg.topic() is None else (msg.topic(), msg.partition()))
                else:
                    raise RuntimeError(f"consume error: {err}")
            if n:
                got[idx] += n
                last_ns = time.monotonic_ns()
            if len(eof[idx]) >= partitions:
                active.remove(idx)
    return sum(got), total_bytes, last_ns


def consume(spec: dict[str, Any]) -> dict[str, Any]:
    """tps, expected (messages, echoed back), timeout_s: read from the earliest offset to the end.
    Optional "client_conf": extra consumer settings (security), as for produce."""
    from confluent_kafka import OFFSET_BEGINNING, TopicPartition

    tps = [TopicPartition(t, p, OFFSET_BEGINNING) for t, p in spec["tps"]]
    consumer = _consumer(spec["bootstrap"], **_THROUGHPUT_CONSUMER, **spec.get("client_conf", {}))
    deadline = time.monotonic() + float(spec.get("timeout_s", 120))
    cpu_start = _cpu_seconds()
    start_ns = time.monotonic_ns()
    consumer.assign(tps)
    messages, total_bytes, last_ns = _drain([consumer], len(tps), deadline)
    cpu = _cpu_seconds() - cpu_start
    low = [consumer.get_watermark_offsets(tp, timeout=5)[0] for tp in tps]
    consumer.close()
    seconds = max(1e-9, (last_ns - start_ns) / 1e9)
    return {
        "ok": True,
        "seconds": seconds,
        "messages": messages,
        "expected": spec.get("expected"),
        "log_start_offsets": low,
        "timed_out": time.monotonic() >= deadline,
        "MB/s": total_bytes / seconds / 1e6,
        "client_cpu": cpu / seconds,
    }


def fanout(spec: dict[str, Any]) -> dict[str, Any]:
    """tps, consumers (in this process), timeout_s; prints READY, waits for GO, reads to the end."""
    from confluent_kafka import OFFSET_BEGINNING, TopicPartition

    tps = [TopicPartition(t, p, OFFSET_BEGINNING) for t, p in spec["tps"]]
    consumers = [_consumer(spec["bootstrap"], **_THROUGHPUT_CONSUMER) for _ in range(int(spec["consumers"]))]
    for consumer in consumers:
        consumer.list_topics(timeout=10)  # connected before the clock starts
    print("READY", flush=True)
    if sys.stdin.readline().strip() != "GO":
        return {"ok": False, "error": "no GO"}
    cpu_start = _cpu_seconds()
    start_ns = time.monotonic_ns()
    for consumer in consumers:
        consumer.assign(tps)
    deadline = time.monotonic() + float(spec.get("timeout_s", 120))
    messages, total_bytes, last_ns = _drain(consumers, len(tps), deadline)
    cpu = _cpu_seconds() - cpu_start
    for consumer in consumers:
        consumer.close()
    return {
        "ok": True,
        "start_ns": start_ns,
        "end_ns": last_ns,
        "messages": messages,
        "bytes": total_bytes,
        "cpu_seconds": cpu,
        "timed_out": time.monotonic() >= deadline,
    }


def latency_consumer(spec: dict[str, Any]) -> dict[str, Any]:
    """tp, count, warmup, fetch_wait_ms, timeout_s: prints READY once fetching from the end of the partition."""
    from confluent_kafka import KafkaError, TopicPartition

    topic, partition = spec["tp"]
    consumer = _consumer(
        spec["bootstrap"],
        **{
            "fetch.wait.max.ms": int(spec.get("fetch_wait_ms", 500)),
            "fetch.min.bytes": 1,
            # Room for a backlog in one fetch, so a slow round does not snowball into the next.
            "max.partition.fetch.bytes": 8 << 20,
        },
    )
    _low, high = consumer.get_watermark_offsets(TopicPartition(topic, partition), timeout=10)
    consumer.assign([TopicPartition(topic, partition, high)])
    consumer.consume(num_messages=1, timeout=0.5)  # fetch session up before the producer starts
    print("READY", flush=True)
    count = int(spec["count"])
    warmup = int(spec.get("warmup", 0))
    deadline = time.monotonic() + float(spec.get("timeout_s", 60))
    latencies: list[int] = []
    seen = 0
    unpack = struct.Struct(">q").unpack_from
    while seen < count and time.monotonic() < deadline:
        # poll(), not consume(n): consume waits for n messages or the whole timeout, which adds latency.
        msg = consumer.poll(0.1)
        if msg is not None:
            now = time.monotonic_ns()
            err = msg.error()
            if err is not None:
                if err.code() == KafkaError._PARTITION_EOF:
                    continue
                raise RuntimeError(f"consume error: {err}")
            seen += 1
            if seen > warmup:
                latencies.append(now - unpack(msg.value())[0])
    consumer.close()
    if not latencies:
        return {"ok": False, "error": f"no messages received ({seen} seen)"}
    latencies.sort()

    def pct(q: float) -> float:
        return latencies[min(len(latencies) - 1, int(q * len(latencies)))] / 1e6

    return {
        "ok": True,
        "received": seen,
        "samples": len(latencies),
        "p50_ms": pct(0.50),
        "p99_ms": pct(0.99),
        "p99.9_ms": pct(0.999),
        "max_ms": latencies[-1] / 1e6,
    }


def latency_producer(spec: dict[str, Any]) -> dict[str, Any]:
    """tp, rate (msg/s), count, size, acks, linger_ms: each value starts with its send time (monotonic ns)."""
    topic, partition = spec["tp"]
    rate = float(spec["rate"])
    count = int(spec["count"])
    pad = value_pool(int(spec["size"]) - 8, count=1)[0]
    producer, errors = _producer(
        spec["bootstrap"], acks=str(spec.get("acks", "1")), **{"linger.ms": spec.get("linger_ms", 0)}
    )
    pack = struct.Struct(">q").pack
    start = time.monotonic_ns()
    sent = 0
    while sent < count:
        now = time.monotonic_ns()
        due = min(count, int((now - start) * rate / 1e9) + 1)
        while sent < due:
            producer.produce(topic, pack(time.monotonic_ns()) + pad, partition=partition)
            sent += 1
        producer.poll(0)
        next_at = start + sent * 1e9 / rate
        pause = (next_at - time.monotonic_ns()) / 1e9
        if pause > 0:
            time.sleep(pause)
    remaining = producer.flush(30)
    achieved = count / ((time.monotonic_ns() - start) / 1e9)
    if remaining or errors:
        return {"ok": False, "error": f"{remaining} undelivered, errors: {errors[:1]}"}
    return {"ok": True, "sent": sent, "achieved_rate": achieved}


def ack_latency(spec: dict[str, Any]) -> dict[str, Any]:
    """tp, rate (msg/s), count, warmup, size, timeout_s, client_conf: an idempotent producer (acks=all) sending at
    a fixed rate; the time from produce() to each delivery report (librdkafka's own per-message latency), and the
    CPU the client process used per second of the run (librdkafka's threads included)."""
    from confluent_kafka import Producer

    topic, partition = spec["tp"]
    rate = float(spec["rate"])
    count = int(spec["count"])
    warmup = int(spec.get("warmup", 0))
    value = value_pool(int(spec.get("size", 1024)), count=1)[0]
    latencies: list[float] = []
    errors: list[str] = []

    def on_delivery(err: Any, msg: Any) -> None:
        if err is not None:
            errors.append(str(err))
        else:
            latencies.append(msg.latency())

    producer = Producer({"bootstrap.servers": spec["bootstrap"], "enable.idempotence": True, "acks": "all",
                         "log_level": 3, "on_delivery": on_delivery, **spec.get("client_conf", {})})
    # Producer id, metadata and connections before the clock starts.
    producer.produce(topic, value, partition=partition)
    producer.flush(30)
    latencies.clear()
    deadline = time.monotonic() + float(spec.get("timeout_s", 120))
    cpu_start = _cpu_seconds()
    start = time.monotonic_ns()
    sent = 0
    while sent < count and time.monotonic() < deadline:
        now = time.monotonic_ns()
        due = min(count, int((now - start) * rate / 1e9) + 1)
        while sent < due:
            producer.produce(topic, value, partition=partition)
            sent += 1
        producer.poll(0)
        pause = (start + sent * 1e9 / rate - time.monotonic_ns()) / 1e9
        if pause > 0:
            time.sleep(pause)
    remaining = producer.flush(max(0.1, deadline - time.monotonic()))
    seconds = (time.monotonic_ns() - start) / 1e9
    client_cpu = (_cpu_seconds() - cpu_start) / seconds
    if remaining or errors:
        return {"ok": False, "error": f"{remaining} undelivered, errors: {errors[:1]}"}
    measured = sorted(latencies[warmup:])
    if not measured:
        return {"ok": False, "error": "no delivery reports"}

    def pct(q: float) -> float:
        return measured[min(len(measured) - 1, int(q * len(measured)))] * 1000

    return {"ok": True, "sent": sent, "msg/s": sent / seconds, "p50_ms": pct(0.50), "p99_ms": pct(0.99),
            "client_cpu": client_cpu}


def metadata(spec: dict[str, Any]) -> dict[str, Any]:
    """calls: time full Metadata requests (all topics) after one warm-up call; "interval_ms" apart (default 0);
    with "duration_s", as many calls as fit in that time instead."""
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": spec["bootstrap"], "log_level": 3})
    first = admin.list_topics(timeout=30)
    partitions = sum(len(t.partitions) for t in first.topics.values())
    times = []
    interval_s = float(spec.get("interval_ms", 0)) / 1000
    calls = int(spec.get("calls", 5))
    until = time.monotonic() + float(spec["duration_s"]) if "duration_s" in spec else None
    while (len(times) < calls) if until is None else (time.monotonic() < until):
        if interval_s:
            time.sleep(interval_s)
        t0 = time.perf_counter()
        admin.list_topics(timeout=30)
        times.append((time.perf_counter() - t0) * 1000)
    times.sort()
    return {"ok": True, "partitions": partitions, "metadata_ms": times[len(times) // 2], "all_ms": times}


LOADS: dict[str, Callable[[dict[str, Any]], dict[str, Any]]] = {
    "produce": produce,
    "consume": consume,
    "fanout": fanout,
    "latency_consumer": latency_consumer,
    "latency_producer": latency_producer,
    "metadata": metadata,
    "ack_latency": ack_latency,
    "rebalance": lambda spec: __import__("bench.rebalance", fromlist=["rebalance_load"]).rebalance_load(spec),
    "share": lambda spec: __import__("bench.share_groups", fromlist=["share_load"]).share_load(spec),
}


def main(argv: list[str]) -> int:
    try:
        spec = json.loads(argv[0])
        result = LOADS[spec["kind"]](spec)
    except Exception as exc:  # noqa: BLE001 - every failure becomes a RESULT line the harness can report
        result = {"ok": False, "error": f"{type(exc).__name__}: {exc}"}
    print("RESULT " + json.dumps(result), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

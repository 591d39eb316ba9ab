"""Consumer-group helpers for the group tests: confluent-kafka consumers polled round-robin in one thread.

- `create_topic(bootstrap)`, `produce(bootstrap, start, n)`: message i goes to partition i % 6 with value
  b"m<i>", so (partition, offset) -> value is known: offset o of partition p holds m<o * 6 + p>.
- `new_consumer(bootstrap, name, strategy="range", **extra)`: a subscribed consumer, manual commits.
- `Group`: members by name, `poll_once()` (consume, then commit synchronously whatever was consumed),
  `run_until(condition, timeout, what)`, `balanced()` (all six partitions, disjoint, equal shares),
  `consumed` (a Counter of (partition, offset)), `close(name)`, `close_all()`.
- `all_offsets(per_partition, start)`: the set of (partition, offset) pairs a phase produced.
"""

from __future__ import annotations

import time
from collections import Counter
from typing import Any

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer
from confluent_kafka.admin import AdminClient, NewTopic

TOPIC = "group-e2e"
GROUP = "group-e2e"
PARTITIONS = 6


def create_topic(bootstrap: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for f in admin.create_topics([NewTopic(TOPIC, PARTITIONS, 1)], operation_timeout=10).values():
        f.result(15)


def produce(bootstrap: str, start: int, n: int) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True, "linger.ms": 5})
    failures: list[Any] = []
    for i in range(start, start + n):
        producer.produce(TOPIC, key=str(i).encode(), value=f"m{i}".encode(), partition=i % PARTITIONS,
                         on_delivery=lambda err, _msg: failures.append(err) if err else None)
    assert producer.flush(30) == 0
    assert failures == []


def new_consumer(bootstrap: str, name: str, strategy: str = "range", **extra: Any) -> Consumer:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": GROUP, "client.id": name,
                         "auto.offset.reset": "earliest", "enable.auto.commit": False,
                         "session.timeout.ms": 6000, "heartbeat.interval.ms": 300,
                         "fetch.wait.max.ms": 100, "partition.assignment.strategy": strategy, **extra})
    consumer.subscribe([TOPIC])
    return consumer


class Group:
    """Round-robin polling of several consumers in one thread; records what each consumed."""

    def __init__(self) -> None:
        self.members: dict[str, Consumer] = {}
        self.consumed: Counter[tuple[int, int]] = Counter()
        self.values: dict[tuple[int, int], bytes] = {}
        self.commit_failures = 0

    def poll_once(self) -> None:
        for consumer in self.members.values():
            got = False
            for msg in consumer.consume(num_messages=500, timeout=0.05):
                if msg.error() is not None:
                    assert msg.error().code() == KafkaError._PARTITION_EOF, msg.error()
                    continue
                self.consumed[(msg.partition(), msg.offset())] += 1
                self.values[(msg.partition(), msg.offset())] = msg.value()
                got = True
            if got:
                try:
                    consumer.commit(asynchronous=False)
                except KafkaException:
                    self.commit_failures += 1  # e.g. a rebalance in progress: redelivery is then allowed

    def assignments(self) -> dict[str, set[int]]:
        return {name: {tp.partition for tp in c.assignment()} for name, c in self.members.items()}

    def balanced(self) -> bool:
        parts = list(self.assignments().values())
        union = set().union(*parts)
        return (union == set(range(PARTITIONS)) and sum(len(p) for p in parts) == PARTITIONS
                and all(len(p) == PARTITIONS // len(parts) for p in parts))

    def run_until(self, condition: Any, timeout: float, what: str) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self.poll_once()
            if condition():
                return
        raise AssertionError(f"timed out after {timeout}s waiting for {what}; "
                             f"assignments {self.assignments()}, "
                             f"consumed {len(self.consumed)}")

    def close(self, name: str) -> None:
        self.members.pop(name).close()

    def close_all(self) -> None:
        for name in list(self.members):
            self.close(name)


def all_offsets(per_partition: int, start: int = 0) -> set[tuple[int, int]]:
    return {(p, o) for p in range(PARTITIONS) for o in range(start, start + per_partition)}



"""Classic and KIP-848 consumer groups side by side with stock confluent-kafka 2.16 consumers over real sockets
(`group.consumer.migration.policy=bidirectional`, Kafka 4.0's default): a classic group's consumers
(`group.protocol=classic`) replaced one by one by `group.protocol=consumer` consumers while a producer keeps
writing (the group is upgraded online when the first one joins), then the reverse (downgraded when the last
consumer-protocol member leaves). Throughout: no partition owned twice at any poll, no committed offset lost,
no record consumed twice with synchronous commits after each batch, and every partition consumed again within
the rebalance timeout.
"""

from __future__ import annotations

import itertools
import time
from collections import Counter
from collections.abc import Callable
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from broker.coordinator.group import GroupState

PARTITIONS = 6
REBALANCE_TIMEOUT_MS = 10000
BROKER = {"group.consumer.heartbeat.interval.ms": "300", "group.consumer.min.heartbeat.interval.ms": "300",
          "group.initial.rebalance.delay.ms": "0"}  # the migration policy is the default: bidirectional
RETRIABLE_COMMIT_ERRORS = {KafkaError.STALE_MEMBER_EPOCH, KafkaError.REBALANCE_IN_PROGRESS,
                           KafkaError.ILLEGAL_GENERATION, KafkaError.UNKNOWN_MEMBER_ID}


def create_topic(bootstrap: str, topic: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_topics([NewTopic(topic, PARTITIONS, 1)], operation_timeout=10).values():
        future.result(15)


def new_consumer(bootstrap: str, group: str, topic: str, protocol: str, strategy: str) -> Consumer:
    config: dict[str, Any] = {
        "bootstrap.servers": bootstrap, "group.id": group, "group.protocol": protocol,
        "auto.offset.reset": "earliest", "enable.auto.commit": False, "fetch.wait.max.ms": 100}
    if protocol == "classic":
        config.update({"partition.assignment.strategy": strategy, "session.timeout.ms": 6000,
                       "heartbeat.interval.ms": 300, "max.poll.interval.ms": REBALANCE_TIMEOUT_MS})
    consumer = Consumer(config)
    consumer.subscribe([topic])
    return consumer


class Run:
    """Consumers polled round-robin in this thread while a producer writes to every partition; each batch is
    committed synchronously before the next poll."""

    def __init__(self, bootstrap: str, topic: str) -> None:
        self.topic = topic
        self.producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
        self.seq = itertools.count()
        self.produced: Counter[int] = Counter()
        self.consumers: dict[str, Consumer] = {}
        self.consumed: Counter[tuple[int, int]] = Counter()  # (partition, offset) -> times consumed
        self.committed: dict[int, int] = {}  # partition -> highest offset a successful commit covered
        self.replayed_after_commit: list[tuple[int, int]] = []
        self.failed_commits = 0
        self.last_consumed: dict[int, float] = {}
        self.max_gap = 0.0
        self.max_gap_at: Any = None
        self.producing = True
        self.exclusive = True

    def produce(self) -> None:
        if not self.producing:
            return
        for p in range(PARTITIONS):
            self.producer.produce(self.topic, str(next(self.seq)).encode(), partition=p)
            self.produced[p] += 1
        self.producer.poll(0)

    def poll_once(self) -> None:
        self.produce()
        for consumer in list(self.consumers.values()):
            batch = [m for m in consumer.consume(num_messages=50, timeout=0.05) if m.error() is None]
            if not batch:
                continue
            now = time.monotonic()
            for msg in batch:
                p, offset = msg.partition(), msg.offset()
                if offset < self.committed.get(p, 0):
                    self.replayed_after_commit.append((p, offset))
                self.consumed[(p, offset)] += 1
                gap = now - self.last_consumed.get(p, now)
                if gap > self.max_gap:
                    self.max_gap, self.max_gap_at = gap, (p, time.strftime("%H:%M:%S"), dict(self.assignments()))
                self.last_consumed[p] = now
            self.commit(consumer, batch)
        owned = [p for parts in self.assignments().values() for p in parts]
        assert not self.exclusive or len(owned) == len(set(owned)), f"a partition owned twice: {self.assignments()}"

    def commit(self, consumer: Consumer, batch: list[Any]) -> None:
        last: dict[int, int] = {}
        for msg in batch:
            last[msg.partition()] = max(last.get(msg.partition(), -1), msg.offset())
        offsets = [TopicPartition(self.topic, p, o + 1) for p, o in last.items()]
        for _ in range(20):
            try:
                consumer.commit(offsets=offsets, asynchronous=False)
                break
            except KafkaException as e:
                if e.args[0].code() not in RETRIABLE_COMMIT_ERRORS:
                    raise
                if e.args[0].code() != KafkaError.STALE_MEMBER_EPOCH:
                    # The member lost the generation (it rejoins): the batch may be delivered again, which
                    # is not a violation of committed offsets.
                    self.failed_commits += 1
                    return
                time.sleep(0.02)
        else:
            self.failed_commits += 1
            return
        for tp in offsets:
            self.committed[tp.partition] = max(self.committed.get(tp.partition, 0), tp.offset)

    def assignments(self) -> dict[str, set[int]]:
        return {name: {tp.partition for tp in c.assignment()} for name, c in self.consumers.items()}

    def run_until(self, condition: Callable[[], bool], timeout: float, what: str) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self.poll_once()
            if condition():
                return
        raise AssertionError(f"timed out after {timeout}s waiting for {what}: {self.assignments()}")

    def covered_with(self, name: str) -> Callable[[], bool]:
        """Every partition owned once, `name` owning some, and every partition consumed since."""
        def check() -> bool:
            parts = self.assignments()
            owned = [p for ps in parts.values() for p in ps]
            return sorted(owned) == list(range(PARTITIONS)) and bool(parts.get(name))
        return check

    def settle(self, seconds: float) -> None:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            self.poll_once()

    def replace(self, old: str, new: str, consumer: Consumer) -> None:
        self.consumers[new] = consumer
        self.run_until(self.covered_with(new), 30, f"{new} to get partitions next to {old}")
        self.settle(0.5)
        self.consumers.pop(old).close()
        self.run_until(lambda: sorted(p for ps in self.assignments().values() for p in ps) == list(range(PARTITIONS))
                       and len(self.assignments()) == 3, 30, f"the partitions of {old} taken over")
        self.settle(1.0)

    def drain_and_check(self, coordinator: Any, group: str) -> None:
        self.producing = False
        assert self.producer.flush(15) == 0
        total = sum(self.produced.values())
        self.run_until(self.all_consumed, 30, "every produced record consumed")
        self.producing = True
        assert len(self.consumed) == total
        assert self.replayed_after_commit == [], "records consumed again after their offset was committed"
        assert self.max_gap * 1000 < REBALANCE_TIMEOUT_MS, \
            f"a partition unconsumed for {self.max_gap:.1f}s: {self.max_gap_at}"
        # No committed offset lost: the group's committed offsets are at least what the consumers committed.
        any_consumer = next(iter(self.consumers.values()))
        stored = any_consumer.committed([TopicPartition(self.topic, p) for p in range(PARTITIONS)], 10)
        assert all(tp.offset >= self.committed.get(tp.partition, 0) for tp in stored), (stored, self.committed)
        assert coordinator.group(group) is not None
        print(f"\nconsumed {total} records, {sum(self.consumed.values()) - total} again after a failed commit "
              f"({self.failed_commits} failed commits), longest gap {self.max_gap:.2f}s")

    def all_consumed(self) -> bool:
        return all(sum(1 for (p, _) in self.consumed if p == q) >= self.produced[q] for q in range(PARTITIONS))

    def close(self) -> None:
        for consumer in self.consumers.values():
            consumer.close()
        self.consumers.clear()


@pytest.mark.parametrize("strategy", ["range", "cooperative-sticky"])
def test_classic_consumers_replaced_by_consumer_protocol_ones_then_back(broker_factory: Any, strategy: str) -> None:
    broker = broker_factory(BROKER)
    topic = group = f"migrate-{strategy}"
    create_topic(broker.bootstrap, topic)
    coordinator = broker.server.group_coordinator.coordinator
    run = Run(broker.bootstrap, topic)
    try:
        # The classic group forms one member at a time, before anything is produced. What is checked is the
        # migration: while librdkafka's cooperative-sticky consumers form a classic group, a synchronous commit
        # that meets a rebalance can block this single polling thread for seconds, and the members not polled
        # meanwhile miss theirs (the classic protocol leaves ownership and timing to the clients).
        run.exclusive, run.producing = False, False
        for name in ("c1", "c2", "c3"):
            run.consumers[name] = new_consumer(broker.bootstrap, group, topic, "classic", strategy)
            run.run_until(run.covered_with(name), 30, f"the classic group to give {name} partitions")
            run.settle(0.5)
        run.run_until(lambda: coordinator.group(group).size == 3 and coordinator.group(group).is_in(GroupState.STABLE)
                      and run.covered_with("c3")(), 40, "a stable classic group of three")
        assert coordinator.group(group).consumer is None
        run.producing = True
        run.settle(1.0)
        # Gaps and ownership are measured during the migration, not while the classic group formed.
        run.exclusive, run.max_gap = True, 0.0
        run.last_consumed.clear()

        # Upgrade: each classic consumer is replaced by a consumer-protocol one.
        for i, old in enumerate(("c1", "c2", "c3"), 1):
            run.replace(old, f"n{i}", new_consumer(broker.bootstrap, group, topic, "consumer", strategy))
            consumer_group = coordinator.group(group).consumer
            assert consumer_group is not None, "the group was not upgraded"
            assert sum(m.classic is not None for m in consumer_group.members.values()) == 3 - i
        run.drain_and_check(coordinator, group)

        # Downgrade: each consumer-protocol consumer is replaced by a classic one; the last one leaving turns
        # the group back into a classic group.
        for i, old in enumerate(("n1", "n2", "n3"), 1):
            run.replace(old, f"k{i}", new_consumer(broker.bootstrap, group, topic, "classic", strategy))
        entry = coordinator.group(group)
        assert entry.consumer is None and entry.size == 3, "the group was not downgraded"
        run.drain_and_check(coordinator, group)
    finally:
        run.close()


def test_a_half_upgraded_group_survives_a_broker_restart(broker_factory: Any, tmp_path: Any) -> None:
    """Two classic members and one consumer-protocol member: the converted group (its classic members' protocols
    and session timeouts included) is loaded back from __consumer_offsets after a restart, and all three carry on
    consuming in it without a committed record consumed again."""
    broker = broker_factory(BROKER, data_dir=tmp_path / "restarted")
    topic = group = "migrate-restart"
    create_topic(broker.bootstrap, topic)
    run = Run(broker.bootstrap, topic)
    try:
        run.exclusive = False
        for name in ("c1", "c2"):
            run.consumers[name] = new_consumer(broker.bootstrap, group, topic, "classic", "range")
            run.run_until(run.covered_with(name), 30, f"{name} in the classic group")
        run.exclusive = True
        run.consumers["n1"] = new_consumer(broker.bootstrap, group, topic, "consumer", "range")
        run.run_until(run.covered_with("n1"), 30, "n1 next to the classic members")
        run.settle(1.0)
        before = broker.server.group_coordinator.coordinator.group(group).consumer
        kinds = {m.member_id: m.classic is not None for m in before.members.values()}
        assert sorted(kinds.values()) == [False, True, True]

        port = broker.port
        broker.stop()
        broker = broker_factory(BROKER, data_dir=tmp_path / "restarted", port=port)
        coordinator = broker.server.group_coordinator.coordinator
        deadline = time.monotonic() + 20
        while (coordinator.group(group) is None or coordinator.group(group).consumer is None) \
                and time.monotonic() < deadline:
            time.sleep(0.1)
        loaded = coordinator.group(group).consumer
        assert {m.member_id: m.classic is not None for m in loaded.members.values()} == kinds
        assert all(m.classic == before.members[m.member_id].classic for m in loaded.members.values())
        run.last_consumed.clear()
        run.settle(3.0)
        run.drain_and_check(coordinator, group)
        assert {m.member_id for m in coordinator.group(group).consumer.members.values()} == set(kinds), \
            "a member had to join again"
    finally:
        run.close()

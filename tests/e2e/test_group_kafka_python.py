"""The group test with kafka-python's own group implementation: three KafkaConsumers (one thread each) on
six partitions split them two each; one leaves, the other two take over; a new one joins and gets its
share; every produced message is consumed, and the committed offsets are the log ends.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from typing import Any

from kafka import KafkaConsumer, TopicPartition
from kafka.errors import CommitFailedError

from tests.e2e.group_support import PARTITIONS, TOPIC, all_offsets, create_topic, produce
from tests.e2e.support import wait_until

GROUP = "kp-group"


class Member(threading.Thread):
    """One KafkaConsumer, used only from its own thread (kafka-python consumers are not thread-safe)."""

    def __init__(self, bootstrap: str, name: str, consumed: Counter[tuple[int, int]], lock: threading.Lock):
        super().__init__(name=name, daemon=True)
        self.bootstrap, self.consumed, self.lock = bootstrap, consumed, lock
        self.stop_event = threading.Event()
        self.assignment: set[int] = set()
        self.errors: list[BaseException] = []

    def run(self) -> None:
        try:
            consumer = KafkaConsumer(TOPIC, bootstrap_servers=self.bootstrap, group_id=GROUP,
                                     client_id=self.name, auto_offset_reset="earliest",
                                     enable_auto_commit=False, session_timeout_ms=6000,
                                     heartbeat_interval_ms=300, fetch_max_wait_ms=100)
        except BaseException as e:  # noqa: BLE001 - reported by the test thread
            self.errors.append(e)
            return
        try:
            deadline = time.monotonic() + 60
            while not self.stop_event.is_set() and time.monotonic() < deadline:
                batches = consumer.poll(timeout_ms=100)
                with self.lock:
                    for tp, records in batches.items():
                        for r in records:
                            self.consumed[(tp.partition, r.offset)] += 1
                if batches:
                    try:
                        consumer.commit()
                    except CommitFailedError:
                        pass  # a rebalance began: the next owner re-reads from the last commit

                self.assignment = {tp.partition for tp in consumer.assignment()}
        except BaseException as e:  # noqa: BLE001
            self.errors.append(e)
        finally:
            consumer.close()  # LeaveGroup


def balanced(members: list[Member]) -> bool:
    parts = [m.assignment for m in members]
    return (set().union(*parts) == set(range(PARTITIONS)) and sum(len(p) for p in parts) == PARTITIONS
            and all(len(p) == PARTITIONS // len(parts) for p in parts))


def test_kafka_python_group_splits_rebalances_and_consumes_everything(broker: Any) -> None:
    create_topic(broker.bootstrap)
    produce(broker.bootstrap, 0, 600)
    consumed: Counter[tuple[int, int]] = Counter()
    lock = threading.Lock()
    members = [Member(broker.bootstrap, f"kp-{i}", consumed, lock) for i in range(3)]
    for m in members:
        m.start()
    try:
        wait_until(lambda: balanced(members), 30, "three consumers to split six partitions")
        leaving = members.pop()
        leaving.stop_event.set()
        leaving.join(15)
        wait_until(lambda: balanced(members), 30, "two consumers to take over")
        members.append(Member(broker.bootstrap, "kp-new", consumed, lock))
        members[-1].start()
        wait_until(lambda: balanced(members), 30, "the new consumer to get its share")
        produce(broker.bootstrap, 600, 600)
        wait_until(lambda: set(consumed) >= all_offsets(200), 30, "every message")
    finally:
        for m in members:
            m.stop_event.set()
        for m in members:
            m.join(15)
    assert [e for m in [*members, leaving] for e in m.errors] == []
    assert set(consumed) == all_offsets(200)
    check = KafkaConsumer(bootstrap_servers=broker.bootstrap, group_id=GROUP, enable_auto_commit=False)
    try:
        tps = [TopicPartition(TOPIC, p) for p in range(PARTITIONS)]
        assert {tp.partition: check.committed(tp) for tp in tps} == {p: 200 for p in range(PARTITIONS)}
    finally:
        check.close()

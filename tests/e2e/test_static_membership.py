"""Static membership (KIP-345, `group.instance.id`): a member that restarts within its session timeout gets
its partitions back without a rebalance, so the other member is never interrupted.
"""

from __future__ import annotations

import time
from typing import Any

from confluent_kafka import Consumer

from tests.e2e.group_support import GROUP, PARTITIONS, TOPIC, create_topic, produce


class Member:
    def __init__(self, bootstrap: str, instance_id: str) -> None:
        self.revoked = 0
        self.consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": GROUP,
                                  "group.instance.id": instance_id, "client.id": instance_id,
                                  "session.timeout.ms": 10000, "heartbeat.interval.ms": 300,
                                  "partition.assignment.strategy": "range", "auto.offset.reset": "earliest"})
        self.consumer.subscribe([TOPIC], on_revoke=self._on_revoke)

    def _on_revoke(self, _consumer: Any, partitions: list[Any]) -> None:
        if partitions:
            self.revoked += 1

    def partitions(self) -> set[int]:
        return {tp.partition for tp in self.consumer.assignment()}


def run_until(members: list[Member], condition: Any, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for m in members:
            m.consumer.poll(0.05)
        if condition():
            return
    raise AssertionError(f"timed out after {timeout}s waiting for {what}: "
                         f"{[m.partitions() for m in members]}")


def test_static_member_restart_keeps_its_partitions_without_rebalance(broker: Any) -> None:
    create_topic(broker.bootstrap)
    produce(broker.bootstrap, 0, 60)
    a = Member(broker.bootstrap, "static-a")
    b = Member(broker.bootstrap, "static-b")
    try:
        run_until([a, b], lambda: a.partitions() | b.partitions() == set(range(PARTITIONS))
                  and len(a.partitions()) == len(b.partitions()) == 3, 30, "two static members to split")
        before_a, before_b = a.partitions(), b.partitions()
        revoked_a = a.revoked

        b.consumer.close()  # a static member sends no LeaveGroup: the coordinator keeps its slot
        b = Member(broker.bootstrap, "static-b")
        run_until([a, b], lambda: b.partitions() == before_b, 8, "the restarted static member")
        assert a.partitions() == before_a
        # Keep polling a little: a rebalance would show up as a revocation on the other member.
        deadline = time.monotonic() + 1.5
        while time.monotonic() < deadline:
            a.consumer.poll(0.05)
            b.consumer.poll(0.05)
        assert a.revoked == revoked_a, "the other member was rebalanced"
        assert (a.partitions(), b.partitions()) == (before_a, before_b)
    finally:
        a.consumer.close()
        b.consumer.close()

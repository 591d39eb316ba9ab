"""A consumer group of three confluent-kafka consumers on six partitions, across membership changes.

The three split the partitions two each; one leaves (LeaveGroup) and the other two take over; a new one
joins and the group splits them again. Every produced message is consumed, exactly once (each consumer
commits synchronously after every batch it processed), and the committed offsets are the log ends.
Run with the eager assignors (range, roundrobin) and the incremental one (cooperative-sticky, KIP-429).
"""

from __future__ import annotations

from typing import Any

import pytest
from confluent_kafka import TopicPartition

from tests.e2e.group_support import PARTITIONS, TOPIC, Group, all_offsets, create_topic, new_consumer, produce


@pytest.mark.parametrize("strategy", ["range", "roundrobin", "cooperative-sticky"])
def test_group_splits_rebalances_and_consumes_everything(broker: Any, strategy: str) -> None:
    create_topic(broker.bootstrap)
    produce(broker.bootstrap, 0, 600)

    group = Group()
    try:
        for name in ("c1", "c2", "c3"):
            group.members[name] = new_consumer(broker.bootstrap, name, strategy)
        group.run_until(group.balanced, 30, "three consumers to split six partitions")
        produce(broker.bootstrap, 600, 600)
        group.run_until(lambda: len(group.consumed) >= 600, 30, "the first messages")

        group.close("c3")  # LeaveGroup: its partitions go to the others
        group.run_until(lambda: group.balanced() and len(group.members) == 2, 30,
                        "two consumers to take over")
        group.members["c4"] = new_consumer(broker.bootstrap, "c4", strategy)
        group.run_until(group.balanced, 30, "the new consumer to get its share")
        produce(broker.bootstrap, 1200, 600)
        group.run_until(lambda: set(group.consumed) >= all_offsets(300), 30, "every message")
        assert set(group.consumed) == all_offsets(300)
        if group.commit_failures == 0:
            assert max(group.consumed.values()) == 1, "a message was delivered twice despite sync commits"
        for (p, o), value in group.values.items():
            assert value == f"m{o * PARTITIONS + p}".encode()

        committed = group.members["c1"].committed([TopicPartition(TOPIC, p) for p in range(PARTITIONS)],
                                                  timeout=10)
        assert {tp.partition: tp.offset for tp in committed} == {p: 300 for p in range(PARTITIONS)}
    finally:
        group.close_all()


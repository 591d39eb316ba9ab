"""Committed group offsets survive a restart of the broker process and of every consumer.

Three confluent-kafka consumers on six partitions consume and commit everything produced so far; then the
consumers close and the broker stops with SIGTERM; the broker restarts on the same data dir and port,
more messages are produced, and a new generation of three consumers in the same group reads exactly those:
nothing below the committed offsets again (auto.offset.reset=earliest would replay from 0 had the offsets
been lost), and everything above them.
"""

from __future__ import annotations

from typing import Any

from confluent_kafka import TopicPartition

from tests.e2e.group_support import PARTITIONS, TOPIC, Group, all_offsets, create_topic, new_consumer, produce


def test_committed_offsets_resume_after_broker_and_consumer_restart(broker_factory: Any) -> None:
    first = broker_factory(process=True)
    create_topic(first.bootstrap)
    produce(first.bootstrap, 0, 600)
    group = Group()
    try:
        for name in ("c1", "c2", "c3"):
            group.members[name] = new_consumer(first.bootstrap, name)
        group.run_until(lambda: group.balanced() and set(group.consumed) >= all_offsets(100), 30,
                        "three consumers to consume everything")
        committed = group.members["c1"].committed([TopicPartition(TOPIC, p) for p in range(PARTITIONS)],
                                                  timeout=10)
        assert {tp.partition: tp.offset for tp in committed} == {p: 100 for p in range(PARTITIONS)}
    finally:
        group.close_all()

    assert first.stop() == 0, first.log_tail()
    second = broker_factory(data_dir=first.data_dir, process=True, port=first.port)
    produce(second.bootstrap, 600, 300)

    group = Group()
    try:
        for name in ("d1", "d2", "d3"):
            group.members[name] = new_consumer(second.bootstrap, name)
        group.run_until(lambda: group.balanced() and set(group.consumed) >= all_offsets(50, start=100), 30,
                        "the new generation to split the partitions and read the post-restart messages")
        assert set(group.consumed) == all_offsets(50, start=100)
        for (p, o), value in group.values.items():
            assert value == f"m{o * PARTITIONS + p}".encode()
    finally:
        group.close_all()
    assert second.stop() == 0, second.log_tail()

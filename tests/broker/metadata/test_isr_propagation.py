"""ISR change notifications are batched like Kafka's maybePropagateIsrChanges."""

from __future__ import annotations

from broker.metadata.isr_propagation import IsrChangePropagator
from storage.values import TopicPartition

A0, A1 = TopicPartition("a", 0), TopicPartition("a", 1)


def test_nothing_pending_nothing_due():
    assert IsrChangePropagator().due(10**9) == []


def test_burst_is_announced_once_quiet_for_the_blackout():
    p = IsrChangePropagator(blackout_ms=5000, max_interval_ms=60000, now_ms=0)
    p.record(A1, 1000)
    p.record(A0, 3000)
    p.record(("a", 0), 4000)
    assert p.due(8000) == []  # last change at 4000: quiet only after 9000
    assert p.due(9001) == [A0, A1]
    assert p.due(20000) == [] and p.pending == frozenset()


def test_steady_trickle_is_announced_at_the_max_interval():
    p = IsrChangePropagator(blackout_ms=5000, max_interval_ms=60000, now_ms=0)
    now = 0
    announced: list[list[TopicPartition]] = []
    while now <= 70000:
        p.record(A0, now)  # a change every second: never quiet
        batch = p.due(now)
        if batch:
            announced.append(batch)
        now += 1000
    assert announced == [[A0]]  # once, when 60 s had passed since the start

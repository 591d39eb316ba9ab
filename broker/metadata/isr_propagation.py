"""Batching of ISR change notifications, as Kafka's ReplicaManager does in ZooKeeper mode.

Contract: pure bookkeeping, no I/O and no clock of its own (callers pass `now_ms`). A leader calls
`record(tp, now_ms)` after every ISR change it wrote to the partition state znode, and calls
`due(now_ms)` periodically (Kafka: every 2.5 s). `due` returns the partitions to announce with
`MetadataStore.propagate_isr_change` — and forgets them — when there are changes and either no
new change arrived for `blackout_ms` (the burst is over) or `max_interval_ms` passed since the last
announcement (a steady trickle still gets through). Kafka's constants are 5 s and 60 s; a cluster
that wants clients to see ISR changes sooner passes smaller values.
"""

from __future__ import annotations

from storage.values import TopicPartition

ISR_CHANGE_PROPAGATION_BLACKOUT_MS = 5_000
ISR_CHANGE_PROPAGATION_INTERVAL_MS = 60_000
ISR_CHANGE_CHECK_INTERVAL_MS = 2_500


class IsrChangePropagator:
    def __init__(
        self,
        blackout_ms: int = ISR_CHANGE_PROPAGATION_BLACKOUT_MS,
        max_interval_ms: int = ISR_CHANGE_PROPAGATION_INTERVAL_MS,
        now_ms: int = 0,
    ) -> None:
        self.blackout_ms = blackout_ms
        self.max_interval_ms = max_interval_ms
        self._pending: set[TopicPartition] = set()
        self._last_change_ms = now_ms
        self._last_propagation_ms = now_ms

    @property
    def pending(self) -> frozenset[TopicPartition]:
        return frozenset(self._pending)

    def record(self, tp: TopicPartition, now_ms: int) -> None:
        self._pending.add(TopicPartition(*tp))
        self._last_change_ms = now_ms

    def due(self, now_ms: int) -> list[TopicPartition]:
        if not self._pending:
            return []
        quiet = self._last_change_ms + self.blackout_ms < now_ms
        overdue = self._last_propagation_ms + self.max_interval_ms < now_ms
        if not (quiet or overdue):
            return []
        batch = sorted(self._pending)
        self._pending.clear()
        self._last_propagation_ms = now_ms
        return batch

"""Transactional produce next to idempotent produce (issue 12), a scenario of `bench.scenarios`.

Contract: `TransactionsScenario(count, reps)` measures, per repetition and target, three produce loads of
`count` 1 KiB messages to one partition with the same producer settings (acks=all, idempotence on, linger.ms 5,
batch.size 1 MiB): idempotent, transactional committing every 100 ms, transactional committing every 1,000
messages. It reports each load's MB/s and each transactional load's ratio to the idempotent one of the same
repetition (adjacent in time, so machine drift mostly cancels; the order alternates between repetitions). Kafka
loses about 3-10% to transactions at these commit intervals; the goal is a ratio of at least 0.9.

librdkafka's mock cluster serves InitProducerId, AddPartitionsToTxn and EndTxn and appends a marker per
partition, so it is a fair peer for the producer's side (its Fetch ignores isolation.level, which this scenario
never reads).
"""

from __future__ import annotations

import uuid
from typing import Any

from bench.runner import delete_topics, ensure_partitions, run_load
from bench.scenarios import KIB, MIB, Context, Metric, Scenario, Values
from bench.targets import Target

# (metric name, the load's extra settings); None: the idempotent baseline.
LOADS: list[tuple[str, dict[str, Any] | None]] = [
    ("idempotent", None),
    ("txn 100 ms", {"commit_every_ms": 100}),
    ("txn 1,000 msgs", {"commit_every_msgs": 1000}),
]
RATIO_GOAL = 0.9


def _ratio_name(load: str) -> str:
    return f"{load} / idempotent"


class TransactionsScenario(Scenario):
    profiled = True

    def __init__(self, count: int, reps: int) -> None:
        self.count = count
        self.reps = reps
        self.id = "transactions vs idempotent p=1"
        self.metrics = [Metric(name, "MB/s", True) for name, _ in LOADS] + [
            Metric(_ratio_name(name), "x", True, goal=RATIO_GOAL, compare=False)
            for name, settings in LOADS if settings is not None
        ]

    def run(self, target: Target, ctx: Context, rep: int) -> tuple[Values, list[str]]:
        topic_tps = ensure_partitions(target, f"bench-txn-{uuid.uuid4().hex[:8]}", 1, ctx.timeout(60))
        per_load = ctx.timeout(180) / len(LOADS)
        order = LOADS if rep % 2 == 0 else LOADS[::-1]
        values: Values = {}
        commits: dict[str, int] = {}
        try:
            for name, settings in order:
                spec = {"kind": "produce", "bootstrap": target.bootstrap, "tps": topic_tps, "count": self.count,
                        "size": KIB, "linger_ms": 5, "batch_bytes": MIB, "idempotent": True, **(settings or {})}
                result = run_load(spec, max(3.0, per_load))
                values[name] = result["MB/s"]
                commits[name] = result.get("commits", 0)
        finally:
            delete_error = delete_topics(target, {t for t, _ in topic_tps})
        baseline = values["idempotent"]
        for name, settings in LOADS:
            if settings is not None and baseline > 0:
                values[_ratio_name(name)] = values[name] / baseline
        notes = [f"{self.count:,} msgs per load, acks=all, linger.ms 5"]
        if rep == 0:  # one sample of the commit counts, not one note per repetition
            notes.append("first repetition: " + ", ".join(
                f"{name} {commits[name]} commits" for name, settings in LOADS if settings is not None))
        if delete_error:
            notes.append(delete_error)
        if target.kind == "mock":
            notes.append("the mock writes transaction markers but does not keep transaction state on disk")
        return values, notes

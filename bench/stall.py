"""A stalled disk write and everyone else (issue 16), a scenario of `bench.scenarios`.

Contract: `StallScenario(seconds, stall_ms, reps)` starts two brokers of ours with the writes of one topic
(`bench-stall-slow-*`) slowed by `stall_ms` each (the `BROKER_WRITE_STALL_MS` / `BROKER_WRITE_STALL_TOPIC` fault
injection of `storage.log_writer`, as a disk throttling dirty pages would stall them): one appending on its event
loop as before (`BROKER_SYNC_APPENDS=1`), one with its writer threads (the default). For each, alternately and
in rotating order, two phases of `seconds` with a producer (acks=1, linger 1 ms, 500 msg/s) writing to a topic on
the same writer thread: the control phase to a topic whose writes are not slowed, the stalled phase to the
slowed one; in both an end-to-end latency load on another topic (2,000 msg/s, acks=1) and a Metadata poller
(every 20 ms) are timed. Reported per broker: their p99 in each phase and the ratio stalled / control, which
isolates what the stall does to others from what the extra load costs on this 2-core machine (goal for the
writer threads: ≤ 1.5, i.e. the p99 does not move). Only our broker: the fault injection is ours.
"""

from __future__ import annotations

import tempfile
import time
import uuid
import zlib
from pathlib import Path
from typing import Any

from bench.runner import LoadProcess, delete_topics, ensure_partitions, run_load
from bench.scenarios import KIB, Context, Metric, Scenario, Values
from bench.targets import AttachedTarget, OurBrokerCli, Target

MODES = {"loop": {"BROKER_SYNC_APPENDS": "1"}, "writers": {}}
LABELS = {"loop": "appends on the loop", "writers": "writer threads"}
SLOW_PREFIX = "bench-stall-slow"
RATE = 2_000
SLOW_RATE = 500
METADATA_EVERY_MS = 20


def _pct(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))]


def _topic_name(prefix: str, slow: str, same_writer: bool) -> str:
    """A topic name whose partition 0 gets the same writer thread as `slow`'s, or another one (broker.server.log_writes
    assigns by name): the latency load measures what the stall does to others, not its own queue."""
    from broker.server.log_writes import WRITERS_PER_DIR

    slot = zlib.crc32(slow.encode()) % WRITERS_PER_DIR
    while True:
        name = f"{prefix}-{uuid.uuid4().hex[:8]}"
        if (zlib.crc32(name.encode()) % WRITERS_PER_DIR == slot) == same_writer:
            return name


class StallScenario(Scenario):
    profiled = False

    def __init__(self, seconds: float, stall_ms: int, reps: int) -> None:
        self.seconds = seconds
        self.stall_ms = stall_ms
        self.reps = reps
        self.id = f"stall: one topic's writes slowed {stall_ms} ms"
        self.metrics = []
        for mode in MODES:
            label = LABELS[mode]
            for what in ("e2e", "metadata"):
                self.metrics += [Metric(f"{label}: {what} p99 control", "ms", False, compare=False),
                                 Metric(f"{label}: {what} p99 stalled", "ms", False, compare=False),
                                 Metric(f"{label}: {what} p99 stalled / control", "x", False, compare=False,
                                        goal=1.5 if mode == "writers" else None)]

    def not_applicable(self, target: Target) -> str | None:
        if target.kind != "ours":
            return "needs our broker's write-stall fault injection"
        return None

    def _brokers(self, ctx: Context) -> dict[str, OurBrokerCli]:
        key = (self.id, "brokers")
        if key not in ctx.state:
            work = Path(tempfile.mkdtemp(prefix="bench-stall-", dir=ctx.work_dir))
            brokers: dict[str, OurBrokerCli] = {}
            ctx.state[key] = brokers
            for mode, env in MODES.items():
                broker = OurBrokerCli(work / mode)
                brokers[mode] = broker
                broker.start(ctx.timeout(30), env={"BROKER_WRITE_STALL_MS": str(self.stall_ms),
                                                   "BROKER_WRITE_STALL_TOPIC": SLOW_PREFIX, **env})
        return ctx.state[key]

    def _phase(self, attached: AttachedTarget, fast: tuple[str, int], background_tp: tuple[str, int],
               ctx: Context) -> tuple[float, float]:
        """(e2e p99, metadata p99) in ms over one phase, a producer writing to `background_tp` meanwhile."""
        count = int(RATE * self.seconds)
        consumer = LoadProcess({"kind": "latency_consumer", "bootstrap": attached.bootstrap, "tp": fast,
                                "count": count, "warmup": RATE // 10, "fetch_wait_ms": 500,
                                "timeout_s": ctx.timeout(self.seconds + 30)})
        metadata = LoadProcess({"kind": "metadata", "bootstrap": attached.bootstrap, "interval_ms": METADATA_EVERY_MS,
                                "duration_s": self.seconds + 1})
        background = None
        try:
            consumer.wait_for("READY", ctx.timeout(30))
            background = LoadProcess({"kind": "latency_producer", "bootstrap": attached.bootstrap,
                                      "tp": background_tp, "rate": SLOW_RATE,
                                      "count": int(SLOW_RATE * (self.seconds + 30)), "size": KIB, "acks": "1",
                                      "linger_ms": 1, "timeout_s": self.seconds + 30})
            time.sleep(1.0)  # the background writes are under way before the clock starts
            run_load({"kind": "latency_producer", "bootstrap": attached.bootstrap, "tp": fast, "rate": RATE,
                      "count": count, "size": KIB, "acks": "1", "linger_ms": 1}, ctx.timeout(self.seconds + 30))
            e2e = consumer.result(ctx.timeout(self.seconds + 30))
            polled = metadata.result(ctx.timeout(self.seconds + 30))
        finally:
            for process in (consumer, metadata, background):
                if process is not None:
                    process.kill()
        return e2e["p99_ms"], _pct(polled["all_ms"], 0.99)

    def run(self, target: Target, ctx: Context, rep: int) -> tuple[Values, list[str]]:
        brokers = self._brokers(ctx)
        order = list(MODES) if rep % 2 == 0 else list(reversed(MODES))
        values: Values = {}
        for mode in order:
            broker = brokers[mode]
            attached = AttachedTarget(f"ours-{mode}", "ours", broker.bootstrap, broker.pid)
            slow_name = f"{SLOW_PREFIX}-{uuid.uuid4().hex[:8]}"
            slow = ensure_partitions(attached, slow_name, 1, ctx.timeout(60))[0]
            control = ensure_partitions(attached, _topic_name("bench-stall-control", slow_name, True), 1,
                                        ctx.timeout(60))[0]
            fast = ensure_partitions(attached, _topic_name("bench-stall-fast", slow_name, False), 1,
                                     ctx.timeout(60))[0]
            try:
                unstalled = self._phase(attached, fast, control, ctx)
                stalled = self._phase(attached, fast, slow, ctx)
            finally:
                delete_topics(attached, {slow[0], control[0], fast[0]})
            label = LABELS[mode]
            for i, what in enumerate(("e2e", "metadata")):
                values[f"{label}: {what} p99 control"] = unstalled[i]
                values[f"{label}: {what} p99 stalled"] = stalled[i]
                values[f"{label}: {what} p99 stalled / control"] = stalled[i] / max(unstalled[i], 0.001)
        notes = [f"each write to the slowed topic sleeps {self.stall_ms} ms first (fault injection); a producer "
                 f"sends it (in the control phase, a topic not slowed) {SLOW_RATE} msg/s while the e2e load "
                 f"({RATE:,} msg/s, 1 KiB, acks=1) and a Metadata poller (every {METADATA_EVERY_MS} ms) run on "
                 f"other topics; {self.seconds:g} s per phase"]
        return values, notes

    def cleanup(self, target: Target, ctx: Context) -> None:
        brokers: dict[str, Any] = ctx.state.pop((self.id, "brokers"), {})
        for broker in brokers.values():
            broker.stop()

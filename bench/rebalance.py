"""Rebalance time when a ninth member joins a group of 8 (issue 19), a scenario of `bench.scenarios`, and its
client load (`python -m bench.loads` kind "rebalance").

Contract: `RebalanceScenario(reps)` starts one broker of the target's (ours, or a Kafka node for a `kafka` target)
with 1 s consumer-group heartbeats
(`group.consumer.heartbeat.interval.ms`) and no initial rebalance delay, and for each protocol, in rotating
order, runs the load against a fresh 16-partition topic and group: classic with the eager `range` assignor,
classic with `cooperative-sticky`, and the KIP-848 consumer protocol (server-side `uniform` assignor); classic
members heartbeat every second too (`heartbeat.interval.ms`), so the protocols differ, not the cadence. Reported
per protocol: the rebalance time (from the ninth member's creation to every partition owned by exactly one
member, the newcomer included) and the longest time a partition had no owner meanwhile (what a rebalance
costs consumption: eager classic members give everything up). Ours and Kafka; n/a for the mock (its group
coordinator is not what is measured).

The load creates the 8 members in one process, polls them round-robin (the classic protocol needs the
application's polls for its rebalance callbacks) until the assignment is complete and unchanged for 1 s, then
creates the ninth and times the rebalance; every wait is bounded by "timeout_s".
"""

from __future__ import annotations

import time
import uuid
from typing import Any

from bench.runner import delete_topics, ensure_partitions, run_load
from bench.scenarios import Context, Metric, OwnBrokerScenario, Values
from bench.targets import Target

MEMBERS = 8
PARTITIONS = 16
HEARTBEAT_MS = 1000
# label -> (group.protocol, partition.assignment.strategy)
PROTOCOLS = {"classic eager (range)": ("classic", "range"),
             "classic cooperative-sticky": ("classic", "cooperative-sticky"),
             "consumer protocol (KIP-848)": ("consumer", None)}


# ---------------------------------------------------------------- the load (runs in its own process)
def rebalance_load(spec: dict[str, Any]) -> dict[str, Any]:
    from confluent_kafka import Consumer

    deadline = time.monotonic() + spec["timeout_s"]
    partitions = spec["partitions"]

    def member() -> Any:
        config: dict[str, Any] = {"bootstrap.servers": spec["bootstrap"], "group.id": spec["group"],
                                  "group.protocol": spec["protocol"], "enable.auto.commit": False, "log_level": 3}
        if spec["protocol"] == "classic":
            config.update({"partition.assignment.strategy": spec["strategy"], "session.timeout.ms": 10000,
                           "heartbeat.interval.ms": spec["heartbeat_ms"]})
        consumer = Consumer(config)
        consumer.subscribe([spec["topic"]])
        return consumer

    def owners(consumers: list[Any]) -> list[int]:
        for consumer in consumers:
            consumer.consume(num_messages=10, timeout=0.005)
        return [tp.partition for c in consumers for tp in c.assignment()]

    def complete(owned: list[int]) -> bool:
        return sorted(owned) == list(range(partitions))

    consumers = [member() for _ in range(spec["members"])]
    try:
        stable_since = None
        while True:
            if time.monotonic() > deadline:
                raise TimeoutError("the first 8 members never shared every partition")
            if complete(owners(consumers)):
                stable_since = stable_since or time.monotonic()
                if time.monotonic() - stable_since >= 1.0:
                    break
            else:
                stable_since = None
        consumers.append(member())
        started = time.monotonic()
        unowned_since: dict[int, float] = {}
        longest_unowned = 0.0
        while True:
            now = time.monotonic()
            if now > deadline:
                raise TimeoutError("the ninth member never got partitions")
            owned = owners(consumers)
            now = time.monotonic()
            for p in range(partitions):
                if p in owned:
                    if p in unowned_since:
                        longest_unowned = max(longest_unowned, now - unowned_since.pop(p))
                else:
                    unowned_since.setdefault(p, now)
            if complete(owned) and consumers[-1].assignment():
                return {"ok": True, "rebalance_s": now - started, "max_unowned_s": longest_unowned}
    finally:
        for consumer in consumers:
            consumer.close()


# ---------------------------------------------------------------- the scenario
class RebalanceScenario(OwnBrokerScenario):
    profiled = False
    broker_prefix = "bench-rebalance-"
    broker_overrides = {"group.consumer.heartbeat.interval.ms": str(HEARTBEAT_MS),
                        "group.consumer.min.heartbeat.interval.ms": str(HEARTBEAT_MS),
                        "group.initial.rebalance.delay.ms": "0"}

    def __init__(self, reps: int) -> None:
        self.reps = reps
        self.id = f"rebalance: {MEMBERS} members, one joins (classic vs consumer protocol)"
        self.metrics = []
        for label in PROTOCOLS:
            self.metrics += [Metric(f"{label}: rebalance", "s", False),
                             Metric(f"{label}: longest unowned partition", "s", False)]

    def run(self, target: Target, ctx: Context, rep: int) -> tuple[Values, list[str]]:
        attached = self._attached(target, ctx)
        labels = list(PROTOCOLS)
        labels = labels[rep % len(labels):] + labels[:rep % len(labels)]
        values: Values = {}
        for label in labels:
            protocol, strategy = PROTOCOLS[label]
            name = f"bench-rebalance-{uuid.uuid4().hex[:8]}"
            topic = ensure_partitions(attached, name, PARTITIONS, ctx.timeout(60))[0][0]
            try:
                result = run_load({"kind": "rebalance", "bootstrap": attached.bootstrap, "topic": topic, "group": name,
                                   "partitions": PARTITIONS, "members": MEMBERS, "protocol": protocol,
                                   "strategy": strategy, "heartbeat_ms": HEARTBEAT_MS},
                                  ctx.timeout(60) / len(labels))
            finally:
                delete_topics(attached, {topic})
            values[f"{label}: rebalance"] = result["rebalance_s"]
            values[f"{label}: longest unowned partition"] = result["max_unowned_s"]
        notes = [f"{MEMBERS} members of a {PARTITIONS}-partition topic, then a ninth; heartbeats every "
                 f"{HEARTBEAT_MS} ms in both protocols (broker group.consumer.heartbeat.interval.ms, client "
                 "heartbeat.interval.ms); rebalance = until every partition has exactly one owner, the newcomer "
                 "included, as the members' assignment() shows it; the 8 start together, so their heartbeats are "
                 "about aligned"]
        return values, notes


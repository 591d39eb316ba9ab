"""Share-group throughput next to a consumer group's on the same topic (issue 19), a scenario of
`bench.scenarios`, and its client load (`python -m bench.loads` kind "share").

Contract: `ShareGroupScenario(count, reps)` starts one broker of the target's (ours, or a Kafka node for a `kafka`
target) with 1 s share and consumer-group heartbeats,
fills a fresh 4-partition topic with `count` records of 100 bytes, then, in rotating order, reads them all with 4
confluent-kafka ShareConsumer members of a share group (implicit acknowledgement: every record accepted on the next
poll; the group config `share.auto.offset.reset=earliest`) and with 4 Consumer members of a KIP-848 consumer group
(`group.protocol=consumer`, `auto.offset.reset=earliest`, auto-commit every 100 ms). Reported per kind, side by
side: records/s (distinct records) from the first record received to the last, the records received more than once,
and the time from the members' creation to their first record (joining, assignment, and for the share group the
share-partition state's initialization). The members of a kind are polled round-robin in one process, so both kinds
get the same client CPU; every wait is bounded by "timeout_s". Ours and Kafka; n/a for the mock (it serves no share
groups).
"""

from __future__ import annotations

import time
import uuid
from typing import Any

from bench.runner import delete_topics, ensure_partitions, run_load
from bench.scenarios import Context, Metric, OwnBrokerScenario, Values
from bench.targets import Target

MEMBERS = 4
PARTITIONS = 4
HEARTBEAT_MS = 1000
KINDS = {"share group (4 ShareConsumers)": "share", "consumer group (4 Consumers, KIP-848)": "consumer"}


# ---------------------------------------------------------------- the load (runs in its own process)
def share_load(spec: dict[str, Any]) -> dict[str, Any]:
    from confluent_kafka import Consumer, ShareConsumer
    from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, ResourceType

    deadline = time.monotonic() + spec["timeout_s"]
    bootstrap, group, count = spec["bootstrap"], spec["group"], int(spec["count"])
    if spec["mode"] == "share":
        admin = AdminClient({"bootstrap.servers": bootstrap})
        resource = ConfigResource(ResourceType.GROUP, group, incremental_configs=[ConfigEntry(
            "share.auto.offset.reset", "earliest", incremental_operation=AlterConfigOpType.SET)])
        admin.incremental_alter_configs([resource])[ConfigResource(ResourceType.GROUP, group)].result(15)

        def member() -> Any:
            consumer = ShareConsumer({"bootstrap.servers": bootstrap, "group.id": group, "log_level": 3})
            consumer.subscribe([spec["topic"]])
            return consumer

        def take(consumer: Any) -> list[tuple[int, int]]:
            return [(m.partition(), m.offset()) for m in consumer.poll(0.005) if m.error() is None]
    else:
        def member() -> Any:
            consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "group.protocol": "consumer",
                                 "auto.offset.reset": "earliest", "auto.commit.interval.ms": 100,
                                 "log_level": 3})
            consumer.subscribe([spec["topic"]])
            return consumer

        def take(consumer: Any) -> list[tuple[int, int]]:
            return [(m.partition(), m.offset()) for m in consumer.consume(num_messages=500, timeout=0.005)
                    if m.error() is None]

    created = time.monotonic()
    consumers = [member() for _ in range(spec["members"])]
    try:
        seen: set[tuple[int, int]] = set()
        received, first = 0, None
        while len(seen) < count:
            if time.monotonic() > deadline:
                raise TimeoutError(f"{len(seen)} of {count} records received")
            for consumer in consumers:
                got = take(consumer)
                if got and first is None:
                    first = time.monotonic()
                received += len(got)
                seen.update(got)
        assert first is not None
        elapsed = max(time.monotonic() - first, 1e-6)
        # Records/s counts distinct records; a record received twice (a consumer-group rebalance) is extra work.
        return {"ok": True, "records_per_s": count / elapsed, "first_record_s": first - created,
                "received": received, "duplicates": received - len(seen)}
    finally:
        for consumer in consumers:
            consumer.close()


# ---------------------------------------------------------------- the scenario
class ShareGroupScenario(OwnBrokerScenario):
    profiled = False
    broker_prefix = "bench-share-"
    broker_overrides = {"group.share.heartbeat.interval.ms": str(HEARTBEAT_MS),
                        "group.share.min.heartbeat.interval.ms": str(HEARTBEAT_MS),
                        "group.consumer.heartbeat.interval.ms": str(HEARTBEAT_MS),
                        "group.consumer.min.heartbeat.interval.ms": str(HEARTBEAT_MS)}

    def __init__(self, count: int, reps: int) -> None:
        self.count = count
        self.reps = reps
        self.id = f"share groups: {MEMBERS} share consumers vs a {MEMBERS}-member consumer group"
        self.metrics = []
        for label in KINDS:
            self.metrics += [Metric(f"{label}: throughput", "records/s", True),
                             Metric(f"{label}: first record", "s", False),
                             Metric(f"{label}: records received twice", "records", False)]

    def run(self, target: Target, ctx: Context, rep: int) -> tuple[Values, list[str]]:
        attached = self._attached(target, ctx)
        name = f"bench-share-{uuid.uuid4().hex[:8]}"
        tps = ensure_partitions(attached, name, PARTITIONS, ctx.timeout(60))
        topic = tps[0][0]
        values: Values = {}
        try:
            run_load({"kind": "produce", "bootstrap": attached.bootstrap, "tps": tps, "count": self.count, "size": 100,
                      "acks": "1", "compression": "none", "timeout_s": ctx.timeout(30)}, ctx.timeout(40))
            labels = list(KINDS)
            labels = labels[rep % len(labels):] + labels[:rep % len(labels)]
            for label in labels:
                result = run_load({"kind": "share", "bootstrap": attached.bootstrap, "topic": topic,
                                   "group": f"{name}-{KINDS[label]}", "mode": KINDS[label], "members": MEMBERS,
                                   "count": self.count, "timeout_s": ctx.timeout(25)}, ctx.timeout(30))
                values[f"{label}: throughput"] = result["records_per_s"]
                values[f"{label}: first record"] = result["first_record_s"]
                values[f"{label}: records received twice"] = result["duplicates"]
        finally:
            delete_topics(attached, {topic})
        notes = [f"{self.count} records of 100 B in {PARTITIONS} partitions, read by {MEMBERS} members polled "
                 f"round-robin in one process; heartbeats every {HEARTBEAT_MS} ms; share members accept every "
                 "record (implicit acknowledgement), consumer members auto-commit every 100 ms; throughput counts "
                 "from the first record, so it includes what assignment still settles after it (the consumer group's "
                 "members join one by one; the share group's partitions are assigned once initialized)"]
        return values, notes


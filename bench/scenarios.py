"""The benchmark scenarios (issue 7), each runnable against any `Target`.

Contract: `build_scenarios(quick) -> list[Scenario]`. A `Scenario` has an `id`, its `metrics`
(name, unit, direction, the issue's goal for our broker and, for produce, the required ratio
against the mock), `reps`, and:
- `not_applicable(target) -> str | None`: a reason when the scenario cannot run there
  (e.g. recovery after kill -9 needs a broker process we own and that persists data);
- `run(target, ctx, rep) -> (values, notes)`: one measurement; raises on failure (the harness
  turns that into an error row, never a crashed run);
- `cleanup(target, ctx)`: after the last repetition (deletes topics, stops fresh brokers).
`profiled` scenarios get one extra, uncounted run against our broker under py-spy with --profile.
Sizes: --quick keeps every scenario small (the whole run ≤ 60 s); the full run uses the issue's
sizes (300,000 x 1 KiB produce, 1 GiB consume and recovery, 1,000 partitions).
"""

from __future__ import annotations

import shutil
import tempfile
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.runner import LoadError, LoadProcess, delete_topics, ensure_partitions, run_load
from bench.targets import (
    KAFKA_WARMUP_MESSAGES,
    AttachedTarget,
    KafkaCluster,
    KafkaProcess,
    KafkaTarget,
    MockProcess,
    OurBrokerCli,
    Target,
    TargetError,
    wait_topics_gone,
    warm_up_kafka,
)
from bench.wire import wait_for_api_versions

KIB = 1024
MIB = 1024 * KIB
GIB = 1024 * MIB


@dataclass(frozen=True)
class Metric:
    name: str
    unit: str
    higher_is_better: bool
    goal: float | None = None  # for our broker: >= goal if higher_is_better else <= goal
    peer_ratio_goal: float | None = None  # ours/mock must be >= this (produce)
    compare: bool = True  # False: context for another metric (client CPU), no ours/peer ratio
    optional: bool = False  # measured only where possible (broker CPU needs the broker's pid): no error when absent


@dataclass
class Context:
    quick: bool
    work_dir: Path
    results_dir: Path
    stamp: str
    deadline: float
    profile: bool = False
    state: dict[tuple[str, str], Any] = field(default_factory=dict)

    def remaining(self) -> float:
        return self.deadline - time.monotonic()

    # Set by the harness before each run: this run's fair share of the remaining budget, so a broker
    # that hangs in one scenario cannot starve the others.
    run_cap: float = 60.0

    def timeout(self, wanted: float) -> float:
        return max(3.0, min(wanted, self.run_cap))


Values = dict[str, float]

# CPU the client load process(es) used, in cores (1.0 = one core busy the whole run): next to a
# throughput it tells whether the client, not the broker, was the limit on this 2-core machine.
CLIENT_CPU = Metric("client CPU", "cores", False, compare=False)
# CPU seconds the broker process spent per GB moved (user + system, all threads): its efficiency, independent of
# how much CPU the client left it. Only for brokers whose process we know (ours, the mock, a Kafka JVM we started);
# the ours/peer ratio says how much more (> 1) or less CPU ours spends on the same gigabyte.
BROKER_CPU = Metric("broker CPU", "s/GB", False, optional=True)


def _broker_cpu(target: Target, cpu_before: float | None, data_bytes: float) -> Values:
    cpu_after = target.cpu_seconds()
    if cpu_before is None or cpu_after is None or data_bytes <= 0:
        return {}
    return {"broker CPU": (cpu_after - cpu_before) / (data_bytes / 1e9)}


class Scenario:
    id = ""
    metrics: list[Metric] = []
    reps = 1
    profiled = False
    # Scenarios that start their own broker process run even when the long-lived target did not start.
    fresh_broker = False

    def not_applicable(self, target: Target) -> str | None:
        return None

    def run(self, target: Target, ctx: Context, rep: int) -> tuple[Values, list[str]]:
        raise NotImplementedError

    def cleanup(self, target: Target, ctx: Context) -> None:
        pass


class OwnBrokerScenario(Scenario):
    """A scenario that runs against a broker it starts itself, once per run and target (kept in the context,
    stopped at cleanup): ours with `broker_overrides`, or for a `kafka` target a Kafka node of that version with
    the same overrides (they are Kafka's keys); n/a for the mock and a bootstrap address."""

    fresh_broker = True
    broker_prefix = "bench-own-"
    broker_overrides: dict[str, str] = {}

    def not_applicable(self, target: Target) -> str | None:
        if target.kind not in ("ours", "kafka"):
            return "starts a broker of its own: ours or Kafka"
        return None

    def _broker(self, target: Target, ctx: Context) -> Any:
        """The started broker (`OurBrokerCli` or `KafkaProcess`: `.bootstrap`, `.pid`, `.stop()`)."""
        key = (self.id, target.name)
        if key not in ctx.state:
            work = Path(tempfile.mkdtemp(prefix=self.broker_prefix, dir=ctx.work_dir))
            if isinstance(target, KafkaTarget):
                kafka = KafkaProcess(target.version, work, self.broker_overrides)
                kafka.start(ctx.timeout(120))
                ctx.state[key] = kafka
                # Warmed as the run's main Kafka node is, so that its JIT is not what is measured.
                warm_up_kafka(AttachedTarget(target.name, "kafka", kafka.bootstrap, kafka.pid),
                              kafka_warmup_messages(ctx))
                return kafka
            broker = OurBrokerCli(work, self.broker_overrides)
            broker.start(ctx.timeout(30))
            ctx.state[key] = broker
        return ctx.state[key]

    def _attached(self, target: Target, ctx: Context) -> AttachedTarget:
        broker = self._broker(target, ctx)
        return AttachedTarget(target.name, target.kind, broker.bootstrap, broker.pid)

    def cleanup(self, target: Target, ctx: Context) -> None:
        broker = ctx.state.pop((self.id, target.name), None)
        if broker is not None:
            broker.stop()


def kafka_warmup_messages(ctx: Context) -> int:
    """How many messages warm up a Kafka node a scenario starts itself: as many as the run's main Kafka node gets,
    fewer in a quick (smoke) run."""
    return 10_000 if ctx.quick else KAFKA_WARMUP_MESSAGES


def _produce_spec(bootstrap: str, tps: Any, count: int, *, acks: str = "1",
                  compression: str = "none") -> dict[str, Any]:
    """A produce load with the issue's producer settings: 1 KiB values, linger.ms 5, batch.size 1 MiB."""
    return {"kind": "produce", "bootstrap": bootstrap, "tps": tps, "count": count, "size": KIB, "acks": acks,
            "compression": compression, "linger_ms": 5, "batch_bytes": MIB}


def _unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


class ProduceScenario(Scenario):
    profiled = True

    def __init__(self, partitions: int, acks: str, compression: str, count: int, reps: int) -> None:
        self.partitions = partitions
        self.acks = acks
        self.compression = compression
        self.count = count
        self.reps = reps
        acks_label = "all" if acks == "-1" else acks
        self.id = f"produce p={partitions} acks={acks_label} {compression}"
        self.metrics = [Metric("MB/s", "MB/s", True, goal=400.0, peer_ratio_goal=1.0), CLIENT_CPU, BROKER_CPU]

    def run(self, target: Target, ctx: Context, rep: int) -> tuple[Values, list[str]]:
        tps = ensure_partitions(target, _unique("bench-produce"), self.partitions, ctx.timeout(60))
        cpu_before = target.cpu_seconds()
        try:
            result = run_load(
                _produce_spec(target.bootstrap, tps, self.count, acks=self.acks, compression=self.compression),
                ctx.timeout(120),
            )
        finally:
            delete_error = delete_topics(target, {t for t, _ in tps})
        notes = [delete_error] if delete_error else []
        if target.kind == "mock" and len({t for t, _ in tps}) > 1:
            notes.append(f"{self.partitions} partitions spread over auto-created 4-partition topics")
        values = {"MB/s": result["MB/s"], "client CPU": result["client_cpu"]}
        return {**values, **_broker_cpu(target, cpu_before, self.count * KIB)}, notes


class _FilledTopic:
    """A topic filled once per target and read by every repetition."""

    def __init__(self, messages: int, partitions: int = 1) -> None:
        self.messages = messages
        self.partitions = partitions

    def get(self, scenario: Scenario, target: Target, ctx: Context) -> list[tuple[str, int]]:
        key = (scenario.id, target.name)
        if key not in ctx.state:
            tps = ensure_partitions(target, _unique("bench-filled"), self.partitions, ctx.timeout(60))
            ctx.state[key] = tps
            run_load(
                _produce_spec(target.bootstrap, tps, self.messages),
                ctx.timeout(300),
            )
        return ctx.state[key]

    def cleanup(self, scenario: Scenario, target: Target, ctx: Context) -> None:
        tps = ctx.state.pop((scenario.id, target.name), None)
        if tps:
            delete_topics(target, {t for t, _ in tps})


class ConsumeScenario(Scenario):
    profiled = True

    def __init__(self, total_bytes: int, reps: int) -> None:
        self.messages = total_bytes // KIB
        self.reps = reps
        label = f"{total_bytes // GIB} GiB" if total_bytes >= GIB else f"{total_bytes // MIB} MiB"
        self.id = f"consume {label} from earliest"
        self.metrics = [Metric("MB/s", "MB/s", True, goal=1000.0), CLIENT_CPU, BROKER_CPU]
        self.topic = _FilledTopic(self.messages)

    def run(self, target: Target, ctx: Context, rep: int) -> tuple[Values, list[str]]:
        tps = self.topic.get(self, target, ctx)
        cpu_before = target.cpu_seconds()
        result = run_load(
            {"kind": "consume", "bootstrap": target.bootstrap, "tps": tps, "expected": self.messages},
            ctx.timeout(180),
        )
        if result["messages"] == 0 or (result.get("timed_out") and target.kind != "mock"):
            raise LoadError(
                f"consumed {result['messages']} of {self.messages} messages before the "
                f"{ctx.timeout(180):.0f}s timeout (log start offsets {result['log_start_offsets']})"
            )
        notes = []
        if result["messages"] != self.messages:
            notes.append(
                f"{target.name} returned {result['messages']} of {self.messages} messages "
                f"(log start offset {result['log_start_offsets']}; the mock keeps little data)"
                if target.kind == "mock"
                else f"{target.name} returned {result['messages']} of {self.messages} messages"
            )
        if result.get("timed_out"):
            notes.append("consume timed out")
        values = {"MB/s": result["MB/s"], "client CPU": result["client_cpu"]}
        return {**values, **_broker_cpu(target, cpu_before, result["MB/s"] * 1e6 * result["seconds"])}, notes

    def cleanup(self, target: Target, ctx: Context) -> None:
        self.topic.cleanup(self, target, ctx)


class LatencyScenario(Scenario):
    # linger.ms=1, not 0: at 10,000 msg/s linger 0 turns every record into its own produce request, which
    # measures request-rate saturation rather than latency; 1 ms bounds what batching can add.
    # fetch.wait.max.ms is librdkafka's default: a broker that answers a waiting fetch on append is not
    # affected by it, one that does not shows it in the tail.
    LINGER_MS = 1
    FETCH_WAIT_MS = 500

    def __init__(self, rate: int, seconds: float, reps: int) -> None:
        self.rate = rate
        self.count = int(rate * seconds)
        self.warmup = min(self.count // 10, rate // 2)
        self.reps = reps
        self.id = f"e2e latency {rate:,} msg/s x {seconds:g}s"
        self.metrics = [
            Metric("p50", "ms", False),
            Metric("p99", "ms", False, goal=5.0),
            Metric("p99.9", "ms", False),
        ]

    def run(self, target: Target, ctx: Context, rep: int, acks: str = "1") -> tuple[Values, list[str]]:
        key = (self.id, target.name)
        if key not in ctx.state:
            ctx.state[key] = ensure_partitions(target, _unique("bench-latency"), 1, ctx.timeout(60))
        tp = ctx.state[key][0]
        seconds = self.count / self.rate
        consumer = LoadProcess(
            {
                "kind": "latency_consumer",
                "bootstrap": target.bootstrap,
                "tp": tp,
                "count": self.count,
                "warmup": self.warmup,
                "fetch_wait_ms": self.FETCH_WAIT_MS,
                "timeout_s": ctx.timeout(seconds + 20),
            }
        )
        try:
            consumer.wait_for("READY", ctx.timeout(30))
            sent = run_load(
                {
                    "kind": "latency_producer",
                    "bootstrap": target.bootstrap,
                    "tp": tp,
                    "rate": self.rate,
                    "count": self.count,
                    "size": KIB,
                    "acks": acks,
                    "linger_ms": self.LINGER_MS,
                },
                ctx.timeout(seconds + 30),
            )
            result = consumer.result(ctx.timeout(seconds + 20) + 5)
        finally:
            consumer.kill()
        notes = [
            f"producer acks={acks} linger.ms={self.LINGER_MS}, consumer fetch.wait.max.ms={self.FETCH_WAIT_MS}, "
            f"{self.warmup} warm-up msgs"
        ]
        if target.kind == "mock":
            notes.append("mock answers a waiting fetch only at fetch.wait.max.ms, not on append")
        if sent["achieved_rate"] < 0.95 * self.rate:
            notes.append(f"producer only reached {sent['achieved_rate']:.0f} msg/s")
        if result["received"] < self.count:
            notes.append(f"received {result['received']} of {self.count}")
        return {"p50": result["p50_ms"], "p99": result["p99_ms"], "p99.9": result["p99.9_ms"]}, notes

    def cleanup(self, target: Target, ctx: Context) -> None:
        tps = ctx.state.pop((self.id, target.name), None)
        if tps:
            delete_topics(target, {t for t, _ in tps})


class FanoutScenario(Scenario):
    profiled = True

    def __init__(self, consumers: int, processes: int, total_bytes: int, reps: int) -> None:
        self.consumers = consumers
        self.processes = processes
        self.messages = total_bytes // KIB
        self.reps = reps
        self.id = f"fetch fan-out {consumers} consumers x {total_bytes // MIB} MiB"
        self.metrics = [Metric("MB/s", "MB/s", True), CLIENT_CPU]
        self.topic = _FilledTopic(self.messages)

    def run(self, target: Target, ctx: Context, rep: int) -> tuple[Values, list[str]]:
        tps = self.topic.get(self, target, ctx)
        per_process = self.consumers // self.processes
        loads = [
            LoadProcess(
                {
                    "kind": "fanout",
                    "bootstrap": target.bootstrap,
                    "tps": tps,
                    "consumers": per_process,
                    "timeout_s": ctx.timeout(120),
                }
            )
            for _ in range(self.processes)
        ]
        try:
            for load in loads:
                load.wait_for("READY", ctx.timeout(60))
            for load in loads:
                load.send("GO")
            results = [load.result(ctx.timeout(120) + 5) for load in loads]
        finally:
            for load in loads:
                load.kill()
        seconds = (max(r["end_ns"] for r in results) - min(r["start_ns"] for r in results)) / 1e9
        total = sum(r["bytes"] for r in results)
        messages = sum(r["messages"] for r in results)
        notes = [f"{self.processes} client processes x {per_process} consumers, each reads the whole topic"]
        if messages != self.messages * self.consumers:
            notes.append(f"delivered {messages} of {self.messages * self.consumers} messages")
        client_cpu = sum(r["cpu_seconds"] for r in results) / max(seconds, 1e-9)
        return {"MB/s": total / max(seconds, 1e-9) / 1e6, "client CPU": client_cpu}, notes

    def cleanup(self, target: Target, ctx: Context) -> None:
        self.topic.cleanup(self, target, ctx)


def _fresh_dir(ctx: Context, prefix: str) -> Path:
    return Path(tempfile.mkdtemp(prefix=prefix, dir=ctx.work_dir)) / "logs"


def _start_fresh(target: Target, ctx: Context, prefix: str) -> tuple[Any, float]:
    """A new broker process of the target's kind; returns (handle, seconds to first ApiVersions)."""
    if target.kind == "ours":
        broker = OurBrokerCli(_fresh_dir(ctx, prefix))
        answered = broker.start(ctx.timeout(30))
        return broker, answered - broker.spawned_at
    if isinstance(target, KafkaTarget):
        kafka = KafkaProcess(target.version, _fresh_dir(ctx, prefix).parent)
        kafka.format()  # a JVM of its own before the clock starts: a KRaft user formats once, not at every start
        kafka.spawn()
        try:
            answered = kafka.wait_answering(time.monotonic() + ctx.timeout(120))
        except TargetError:
            kafka.stop()
            raise
        return kafka, answered - kafka.spawned_at
    mock = MockProcess()
    spawned_at = time.monotonic()
    mock.spawn()
    try:
        host, _, port = mock.wait_bootstrap(ctx.timeout(15)).split(",")[0].rpartition(":")
        answered = wait_for_api_versions(host, int(port), time.monotonic() + ctx.timeout(30))
    except Exception:
        mock.stop()
        raise
    return mock, answered - spawned_at


def _owned_only(target: Target) -> str | None:
    return "needs a broker process the harness starts itself" if target.kind == "external" else None


class StartupScenario(Scenario):
    fresh_broker = True
    id = "start-up to first ApiVersions"
    metrics = [Metric("seconds", "s", False, goal=0.3)]

    def __init__(self, reps: int) -> None:
        self.reps = reps

    def not_applicable(self, target: Target) -> str | None:
        return _owned_only(target)

    def run(self, target: Target, ctx: Context, rep: int) -> tuple[Values, list[str]]:
        broker, seconds = _start_fresh(target, ctx, "startup-")
        broker.stop()
        notes = {
            "ours": ["includes interpreter start (python -m broker)"],
            "kafka": ["JVM start of kafka.Kafka (KRaft combined node, formatted beforehand) to its first answer"],
        }.get(target.kind, ["python + confluent_kafka import + mock cluster start"])
        return {"seconds": seconds}, notes


class PartitionsScenario(Scenario):
    fresh_broker = True

    def __init__(self, partitions: int, reps: int) -> None:
        self.partitions = partitions
        self.reps = reps
        self.id = f"{partitions:,} partitions (fresh broker)"
        self.metrics = [
            Metric("create", "s", False),
            Metric("metadata", "ms", False),
            Metric("RSS", "MB", False, goal=80.0 if partitions >= 1000 else None),
        ]

    def not_applicable(self, target: Target) -> str | None:
        return _owned_only(target)

    def run(self, target: Target, ctx: Context, rep: int) -> tuple[Values, list[str]]:
        import psutil

        broker, _ = _start_fresh(target, ctx, "partitions-")
        try:
            fresh = AttachedTarget(target.name, target.kind, broker.bootstrap, broker.pid)
            t0 = time.monotonic()
            tps = ensure_partitions(fresh, "bench-many", self.partitions, timeout_s=ctx.timeout(120))
            created = time.monotonic() - t0
            # One record per partition, so brokers that create segment files lazily pay for them too.
            run_load(
                _produce_spec(broker.bootstrap, tps, len(tps)),
                ctx.timeout(120),
            )
            values = {"create": created, "RSS": psutil.Process(broker.pid).memory_info().rss / 1e6}
            notes = []
            # A failing Metadata request must not hide the creation time and RSS already measured.
            try:
                meta = run_load({"kind": "metadata", "bootstrap": broker.bootstrap, "calls": 5}, ctx.timeout(60))
                values["metadata"] = meta["metadata_ms"]
                if meta["partitions"] < self.partitions:
                    notes.append(f"metadata listed {meta['partitions']} partitions")
            except LoadError as exc:
                notes.append(f"metadata failed: {exc}")
        finally:
            broker.stop()
        if target.kind == "mock":
            notes.append("RSS of a python process hosting librdkafka; topics auto-created, 4 partitions each")
        elif target.kind == "kafka":
            notes.append("RSS of the JVM (512 MB heap, -Xms512m: heap pages count once touched)")
        return values, notes


class RecoveryScenario(Scenario):
    fresh_broker = True

    def __init__(self, total_bytes: int, reps: int) -> None:
        self.messages = total_bytes // KIB
        self.reps = reps
        label = f"{total_bytes // GIB} GiB" if total_bytes >= GIB else f"{total_bytes // MIB} MiB"
        self.id = f"recovery of {label} unflushed after kill -9"
        self.metrics = [Metric("first ApiVersions", "s", False), Metric("data served", "s", False, goal=3.0)]

    def not_applicable(self, target: Target) -> str | None:
        if target.kind == "mock":
            return "mock keeps no log on disk"
        if target.kind != "ours":
            return "needs a broker process of ours (restarted on the same log dir)"
        return None

    def run(self, target: Target, ctx: Context, rep: int) -> tuple[Values, list[str]]:
        from confluent_kafka import Consumer, TopicPartition

        broker, _ = _start_fresh(target, ctx, "recovery-")
        log_dir = broker.log_dir
        try:
            fresh = AttachedTarget("ours", "ours", broker.bootstrap, broker.pid)
            tps = ensure_partitions(fresh, "bench-recovery", 1, ctx.timeout(60))
            run_load(
                _produce_spec(broker.bootstrap, tps, self.messages),
                ctx.timeout(300),
            )
        finally:
            broker.kill()
        restarted = OurBrokerCli(log_dir)
        restarted.spawn()
        try:
            ready = wait_for_api_versions("127.0.0.1", restarted.port, time.monotonic() + ctx.timeout(60))
            consumer = Consumer(
                {"bootstrap.servers": restarted.bootstrap, "group.id": "bench-recovery", "log_level": 3}
            )
            deadline = time.monotonic() + ctx.timeout(60)
            high = -1
            while time.monotonic() < deadline:
                try:
                    _low, high = consumer.get_watermark_offsets(TopicPartition(tps[0][0], 0), timeout=1)
                except Exception:  # noqa: BLE001 - partition not loaded yet: keep polling
                    high = -1
                if high >= self.messages:
                    break
                time.sleep(0.005)
            served = time.monotonic()
            consumer.close()
            if high < self.messages:
                raise LoadError(f"after restart the high watermark is {high}, expected {self.messages}")
        except Exception:
            tail = restarted.output_tail()
            restarted.stop()
            shutil.rmtree(log_dir.parent, ignore_errors=True)
            raise LoadError(f"recovery failed | output: {tail}") from None
        restarted.stop()
        shutil.rmtree(log_dir.parent, ignore_errors=True)
        return {
            "first ApiVersions": ready - restarted.spawned_at,
            "data served": served - restarted.spawned_at,
        }, ["times from process spawn; includes interpreter start"]


class ReplicatedScenario(Scenario):
    """acks=all to RF=3: our 3-broker cluster (broker.local_cluster.LocalCluster, with ZooKeeper) beside Kafka's three
    KRaft brokers and a KRaft controller (`KafkaCluster`) or a 3-broker mock."""

    fresh_broker = True

    def __init__(self, count: int, latency_seconds: float, reps: int) -> None:
        self.count = count
        self.latency = LatencyScenario(10_000, latency_seconds, 1)
        self.reps = reps
        self.id = "acks=all RF=3 (3 brokers)"
        # Issue 16's goals: p99 <= 20 ms at 10,000 msg/s, and RF=3 acks=all at least half of RF=1 acks=1 on the
        # same brokers (measured in the same repetition, on a topic of one replica).
        self.metrics = [
            Metric("produce", "MB/s", True),
            Metric("produce RF=1 acks=1", "MB/s", True, compare=False),
            Metric("RF=3 acks=all / RF=1 acks=1", "x", True, goal=0.5, compare=False),
            Metric("e2e p50", "ms", False),
            Metric("e2e p99", "ms", False, goal=20.0),
            Metric("e2e p99.9", "ms", False),
        ]

    def not_applicable(self, target: Target) -> str | None:
        return "needs a cluster the harness starts itself" if target.kind == "external" else None

    def _cluster(self, target: Target, ctx: Context) -> Target:
        key = (self.id, target.name)
        if key not in ctx.state:
            if target.kind == "ours":
                try:
                    from broker.local_cluster import LocalCluster
                except Exception as exc:  # noqa: BLE001 - a half-written broker may fail to import in any way
                    raise TargetError(f"broker.local_cluster is not importable: {type(exc).__name__}: {exc}") from exc
                # Deleted topics leave at once: each repetition's data is gone before the next one starts.
                cluster = LocalCluster(3, {"min.insync.replicas": "2", "file.delete.delay.ms": "0"})
                cluster.start()
                ctx.state[key] = (cluster, AttachedTarget("ours", "ours", cluster.bootstrap))
            elif isinstance(target, KafkaTarget):
                kafka = KafkaCluster(target.version, Path(tempfile.mkdtemp(prefix="bench-rf3-", dir=ctx.work_dir)),
                                     3, {"min.insync.replicas": "2"})
                kafka.start()
                ctx.state[key] = (kafka, AttachedTarget(target.name, "kafka", kafka.bootstrap))
                warm_up_kafka(ctx.state[key][1], kafka_warmup_messages(ctx), replication_factor=3)
            else:
                mock = MockProcess(3)
                mock.spawn()
                try:
                    bootstrap = mock.wait_bootstrap()
                except TargetError:
                    mock.stop()
                    raise
                ctx.state[key] = (mock, AttachedTarget(target.name, "mock", bootstrap, mock.pid))
        return ctx.state[key][1]

    def run(self, target: Target, ctx: Context, rep: int) -> tuple[Values, list[str]]:
        cluster = self._cluster(target, ctx)
        # Fresh topics each repetition, deleted after it: otherwise every repetition appends another ~1.2 GB of
        # replicas to the same logs, and the repetitions no longer measure the same thing.
        tps = ensure_partitions(cluster, _unique("bench-rf3"), 1, ctx.timeout(60), replication_factor=3)
        rf1 = ensure_partitions(cluster, _unique("bench-rf1"), 1, ctx.timeout(60))
        try:
            # Which load goes first alternates, so whatever the first leaves behind (dirty pages being written
            # back, a warmer cache) does not always fall on the same side of the ratio.
            runs = {"-1": tps, "1": rf1}
            order = ("-1", "1") if rep % 2 else ("1", "-1")
            done = {acks: run_load(_produce_spec(cluster.bootstrap, runs[acks], self.count, acks=acks),
                                   ctx.timeout(120)) for acks in order}
            result, single = done["-1"], done["1"]
            ctx.state[(self.latency.id, cluster.name)] = tps
            latency, notes = self.latency.run(cluster, ctx, rep, acks="-1")
        finally:
            delete_error = self._delete(target, ctx, {tps[0][0], rf1[0][0]})
        notes = [n for n in notes if "warm-up" not in n] + ([delete_error] if delete_error else [])
        notes.append("1 partition, RF=3, min.insync.replicas=2; latency at 10,000 msg/s with acks=all; "
                     "RF=1 acks=1 on a one-replica topic of the same cluster, the two in alternating order; "
                     "fresh topics each repetition")
        return {"produce": result["MB/s"], "produce RF=1 acks=1": single["MB/s"],
                "RF=3 acks=all / RF=1 acks=1": result["MB/s"] / max(single["MB/s"], 1e-9),
                "e2e p50": latency["p50"], "e2e p99": latency["p99"], "e2e p99.9": latency["p99.9"]}, notes

    def _delete(self, target: Target, ctx: Context, topics: set[str]) -> str | None:
        handle, attached = ctx.state[(self.id, target.name)]
        error = delete_topics(attached, topics)
        log_dirs = {"ours": lambda: [b.data_dir / "logs" for b in handle.brokers],
                    "kafka": lambda: handle.data_dirs}.get(attached.kind, list)()
        if error is None and not all(wait_topics_gone(d, topics, 30) for d in log_dirs):
            error = f"deleted topics {sorted(topics)} still on disk after 30 s"
        return error

    def cleanup(self, target: Target, ctx: Context) -> None:
        ctx.state.pop((self.latency.id, target.name), None)
        entry = ctx.state.pop((self.id, target.name), None)
        if entry is not None:
            handle = entry[0]
            if hasattr(handle, "cleanup"):
                handle.cleanup()
            else:
                handle.stop()


def build_scenarios(quick: bool) -> list[Scenario]:
    # Imported here: bench.transactions and bench.security build on this module's Scenario and Metric.
    from bench.controller import ControllerScenario
    from bench.rebalance import RebalanceScenario
    from bench.security import SecurityScenario
    from bench.share_groups import ShareGroupScenario
    from bench.stall import StallScenario
    from bench.transactions import TransactionsScenario

    produce_count = 50_000 if quick else 300_000
    produce_reps = 1 if quick else 3
    produce = [
        ProduceScenario(partitions, acks, compression, produce_count, produce_reps)
        for partitions in (1, 8)
        for acks in ("1", "-1")
        for compression in ("none", "lz4")
    ]
    if quick:
        produce = [s for s in produce if (s.partitions, s.acks, s.compression) in {(1, "1", "none"), (8, "-1", "lz4")}]
    return [
        *produce,
        ConsumeScenario(32 * MIB if quick else GIB, 1 if quick else 3),
        LatencyScenario(10_000, 2 if quick else 10, 1 if quick else 3),
        FanoutScenario(16, 4, 8 * MIB if quick else 64 * MIB, 1 if quick else 3),
        PartitionsScenario(100 if quick else 1000, 1 if quick else 2),
        StartupScenario(2 if quick else 5),
        RecoveryScenario(16 * MIB if quick else GIB, 1 if quick else 2),
        TransactionsScenario(20_000 if quick else 200_000, 1 if quick else 3),
        SecurityScenario(5_000 if quick else 200_000, 1 if quick else 3),
        StallScenario(2 if quick else 5, 20, 1 if quick else 3),
        # Three groups of 9 members forming and rebalancing take ~35 s: beyond the quick run's minute.
        *([] if quick else [RebalanceScenario(3)]),
        # A broker of its own, filling a topic and two groups of 4 reading it: ~30 s, beyond the quick run's minute.
        *([] if quick else [ShareGroupScenario(100_000, 3)]),
        # 8,000 partitions through a fresh KRaft node (~1 min a repetition here): beyond the quick run's minute.
        *([] if quick else [ControllerScenario(1000, 8, 2)]),
        # Starting ZooKeeper and three brokers does not fit the quick run's minute.
        *([] if quick else [ReplicatedScenario(300_000, 5, 3)]),
    ]

"""Brokers the benchmark runs against: ours, librdkafka's mock cluster, or any bootstrap address.

Contract:
- `parse_targets("ours,mock,kafka,kafka:3.7.2,127.0.0.1:9092")` -> list of `Target` (not started); `kafka` is
  Apache Kafka `DEFAULT_KAFKA_VERSION` (`kafka:VERSION` another), a KRaft combined node the harness starts.
- `Target.start()` brings the broker up (or just remembers the address for an external one) and
  sets `bootstrap`; `Target.stop()` is idempotent and never raises; `Target.pid` is the broker
  process id when we own it (RSS, broker CPU, profiles), else None; `Target.kind` is "ours", "mock",
  "kafka" or "external"; `Target.name` is the label printed in the table.
- `OurBrokerCli` and `MockProcess` are single broker processes spawned directly by the harness
  for the scenarios that time the process itself (start-up, recovery after kill -9, RSS with
  1,000 partitions); they do not go through `broker.testing` so that no helper's polling
  interval ends up inside the measurement. `KafkaProcess` is the same for a real Kafka node.
Every process we spawn listens on 127.0.0.1 only and is stopped by `stop()`/`kill()`.
"""

from __future__ import annotations

import os
import selectors
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.wire import free_port

MOCK_AUTO_CREATE_PARTITIONS = 4


class TargetError(Exception):
    """A broker could not be started or reached."""


def cpu_seconds_of(pid: int | None) -> float | None:
    """User + system CPU a process has used so far (all its threads), None if unknown."""
    if pid is None:
        return None
    import psutil

    try:
        times = psutil.Process(pid).cpu_times()
    except psutil.Error:
        return None
    return times.user + times.system


def wait_topics_gone(data_dir: Path, topics: set[str], timeout_s: float) -> bool:
    """After DeleteTopics: wait until our broker has removed the topics' partition directories from `data_dir`.

    It removes them file.delete.delay.ms after the delete. Waiting keeps that I/O (freeing hundreds of MB of page
    cache) out of the next measurement."""
    deadline = time.monotonic() + timeout_s
    while any(any(data_dir.glob(f"{topic}-*")) for topic in topics):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)
    return True


def _rss_of(pid: int | None) -> int | None:
    if pid is None:
        return None
    import psutil

    try:
        return psutil.Process(pid).memory_info().rss
    except psutil.Error:
        return None


class Target:
    kind = "external"

    def __init__(self, name: str) -> None:
        self.name = name
        self.bootstrap = ""
        self.pid: int | None = None

    def start(self) -> None:
        raise NotImplementedError

    def stop(self) -> None:
        pass

    def rss_bytes(self) -> int | None:
        return _rss_of(self.pid)

    def wait_removed_from_disk(self, topics: set[str], timeout_s: float) -> bool:
        """After DeleteTopics: wait until the broker has removed the topics' data (only where we can see it)."""
        return True

    def cpu_seconds(self) -> float | None:
        """User + system CPU the broker process has used so far (all its threads), None if unknown."""
        return cpu_seconds_of(self.pid)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r}, bootstrap={self.bootstrap!r}, pid={self.pid})"


class AttachedTarget(Target):
    """A broker some scenario already started itself, seen through the `Target` interface."""

    def __init__(self, name: str, kind: str, bootstrap: str, pid: int | None = None) -> None:
        super().__init__(name)
        self.kind = kind
        self.bootstrap = bootstrap
        self.pid = pid

    def start(self) -> None:
        pass


class ExternalTarget(Target):
    kind = "external"

    def __init__(self, bootstrap: str) -> None:
        super().__init__(f"peer@{bootstrap}")
        self._address = bootstrap

    def start(self) -> None:
        from bench.wire import ProbeError, api_versions_probe

        host, _, port = self._address.split(",")[0].rpartition(":")
        try:
            api_versions_probe(host, int(port), timeout_s=3.0)
        except (ProbeError, ValueError) as exc:
            raise TargetError(f"{self._address}: {exc}") from exc
        self.bootstrap = self._address


class MockProcess:
    """`python -m bench.mock_cluster N` as a child process."""

    def __init__(self, brokers: int = 1) -> None:
        self.brokers = brokers
        self.proc: subprocess.Popen[bytes] | None = None
        self.bootstrap = ""

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc else None

    def spawn(self) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "bench.mock_cluster", str(self.brokers)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )

    def wait_bootstrap(self, timeout_s: float = 15.0) -> str:
        assert self.proc is not None and self.proc.stdout is not None  # internal invariant, not input
        with selectors.DefaultSelector() as sel:
            sel.register(self.proc.stdout, selectors.EVENT_READ)
            if not sel.select(timeout_s):
                raise TargetError("mock cluster did not print its bootstrap in time")
        line = self.proc.stdout.readline().decode(errors="replace").strip()
        if not line.startswith("BOOTSTRAP "):
            raise TargetError(f"mock cluster failed to start: {line!r}")
        self.bootstrap = line.split(" ", 1)[1]
        return self.bootstrap

    def stop(self) -> None:
        if self.proc is None:
            return
        try:
            if self.proc.stdin:
                self.proc.stdin.close()
            self.proc.terminate()
            self.proc.wait(timeout=5)
        except (OSError, subprocess.TimeoutExpired):
            self.proc.kill()
            self.proc.wait(timeout=5)
        self.proc = None


class MockTarget(Target):
    kind = "mock"

    def __init__(self, brokers: int = 1) -> None:
        super().__init__("mock" if brokers == 1 else f"mock{brokers}")
        self._process = MockProcess(brokers)

    def start(self) -> None:
        self._process.spawn()
        try:
            self.bootstrap = self._process.wait_bootstrap()
        except TargetError:
            self._process.stop()
            raise
        self.pid = self._process.pid

    def stop(self) -> None:
        self._process.stop()
        self.pid = None


class OurBrokerCli:
    """`python -m broker --override ...` spawned directly, output to `log_path`."""

    def __init__(self, log_dir: Path, overrides: dict[str, str] | None = None, port: int | None = None) -> None:
        self.log_dir = log_dir
        self.port = port or free_port()
        self.overrides = {
            "listeners": f"PLAINTEXT://127.0.0.1:{self.port}",
            "log.dirs": str(log_dir),
            **(overrides or {}),
        }
        self.proc: subprocess.Popen[bytes] | None = None
        self.spawned_at = 0.0
        self.output_path = log_dir.parent / f"{log_dir.name}.broker-output.txt"

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc else None

    def spawn(self, env: dict[str, str] | None = None, cwd: Path | None = None) -> None:
        """`cwd`: the source tree to run (its packages come first on sys.path); default this process's."""
        self.log_dir.mkdir(parents=True, exist_ok=True)
        args = [sys.executable, "-m", "broker"]
        for key, value in self.overrides.items():
            args += ["--override", f"{key}={value}"]
        with open(self.output_path, "ab") as out:
            self.spawned_at = time.monotonic()
            self.proc = subprocess.Popen(
                args,
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
                env={**os.environ, **(env or {})},
                cwd=cwd,
            )

    def start(self, timeout_s: float, env: dict[str, str] | None = None) -> float:
        """`spawn`, then wait until the broker answers ApiVersions: returns when (time.monotonic()); a broker that
        does not answer within `timeout_s` is stopped and TargetError raised with the tail of its output."""
        from bench.wire import wait_for_api_versions

        self.spawn(env)
        try:
            return wait_for_api_versions("127.0.0.1", self.port, time.monotonic() + timeout_s)
        except Exception as exc:
            tail = self.output_tail()
            self.stop()
            raise TargetError(f"our broker did not answer ApiVersions: {exc} | output: {tail}") from exc

    def output_tail(self, limit: int = 1500) -> str:
        try:
            return self.output_path.read_text(errors="replace")[-limit:]
        except OSError:
            return ""

    def exited(self) -> int | None:
        return self.proc.poll() if self.proc else None

    def kill(self) -> None:
        """SIGKILL: the unclean shutdown the recovery scenario needs."""
        if self.proc is None:
            return
        self.proc.kill()
        self.proc.wait(timeout=10)
        self.proc = None

    def stop(self) -> None:
        if self.proc is None:
            return
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=10)
        self.proc = None


class OursTarget(Target):
    """Our broker through `broker.testing.start_broker_process` (the team's supported way)."""

    kind = "ours"

    def __init__(self, work_dir: Path) -> None:
        super().__init__("ours")
        self._work_dir = work_dir
        self._handle: object | None = None
        self._data_dir: Path | None = None

    def start(self) -> None:
        try:
            from broker.testing import start_broker_process
        except Exception as exc:  # noqa: BLE001 - a half-written broker may fail to import in any way
            raise TargetError(f"broker.testing is not importable: {type(exc).__name__}: {exc}") from exc
        data_dir = Path(tempfile.mkdtemp(prefix="ours-", dir=self._work_dir))
        try:
            handle = start_broker_process({"num.partitions": "1"}, data_dir=data_dir)
        except Exception as exc:  # noqa: BLE001
            raise TargetError(f"start_broker_process failed: {type(exc).__name__}: {exc}") from exc
        self._handle = handle
        self._data_dir = data_dir
        self.bootstrap = handle.bootstrap
        self.pid = handle.pid

    def wait_removed_from_disk(self, topics: set[str], timeout_s: float) -> bool:
        return True if self._data_dir is None else wait_topics_gone(self._data_dir, topics, timeout_s)

    def stop(self) -> None:
        if self._handle is None:
            return
        try:
            self._handle.stop()  # type: ignore[attr-defined]
        except Exception:  # noqa: BLE001 - stopping must never hide the results
            pass
        self._handle = None
        self.pid = None


# Apache Kafka's release the bench compares against by default (`--target kafka`); `kafka:VERSION` picks another
# (3.7.x is the last with ZooKeeper mode, here run as KRaft too).
DEFAULT_KAFKA_VERSION = "4.4.0"
# kafka-server-start.sh's JVM (G1, -server) with the 512 MB heap of the runs: realkafka's test JVM (serial
# GC, C1 only) starts faster but would understate Kafka's throughput and overstate its CPU per GB.
KAFKA_BENCH_JVM_OPTIONS = ("-Xms512m", "-Xmx512m", "-server", "-XX:+UseG1GC", "-XX:MaxGCPauseMillis=20",
                           "-XX:InitiatingHeapOccupancyPercent=35", "-XX:+ExplicitGCInvokesConcurrent",
                           "-XX:MaxInlineLevel=15", "-Djava.awt.headless=true", "-Djava.net.preferIPv4Stack=true")
# Deleted topics leave the disk after a second (Kafka waits a minute by default, and its deleting task first runs
# log.initial.task.delay.ms, 30 s, after start), the delay broker.testing gives ours: each scenario's data is gone
# before the next one starts (`wait_removed_from_disk`). One partition per topic unless asked, as ours.
# Messages (1 KiB) produced and read back once after Kafka starts, before any measurement (`KafkaTarget._warm_up`).
KAFKA_WARMUP_MESSAGES = 100_000
# The share coordinator's topic is sized for one node as realkafka sizes the others (Kafka's default RF 3 leaves a
# single node's share groups without state: no records ever delivered).
KAFKA_BENCH_PROPERTIES = {"log.segment.delete.delay.ms": "1000", "log.initial.task.delay.ms": "0",
                          "num.partitions": "1", "share.coordinator.state.topic.replication.factor": "1",
                          "share.coordinator.state.topic.min.isr": "1"}


class KafkaProcess:
    """A real Apache Kafka KRaft combined node (broker and controller in one JVM, `realkafka.node.kraft_node`) on
    free loopback ports, its files under `directory`. `format()` runs Kafka's storage tool (a JVM of its own, not
    part of any measurement); `spawn()` starts `kafka.Kafka` and records when, so the start-up scenario times it
    as it times ours; `pid` is the broker's JVM itself (no wrapper script), whose CPU and RSS are the broker's."""

    def __init__(self, version: str, directory: Path, overrides: dict[str, str] | None = None) -> None:
        from realkafka.node import kraft_node

        controller_port = free_port()
        self.version = version
        self.node = kraft_node(version, 1, "broker,controller", directory, voters=f"1@127.0.0.1:{controller_port}",
                               port=free_port(), controller_port=controller_port,
                               overrides={**KAFKA_BENCH_PROPERTIES, **(overrides or {})},
                               jvm_options=KAFKA_BENCH_JVM_OPTIONS)
        self.spawned_at = 0.0

    @property
    def controller_port(self) -> int:
        return self.node.controller_port

    @property
    def bootstrap(self) -> str:
        return self.node.bootstrap

    @property
    def port(self) -> int:
        return self.node.port

    @property
    def pid(self) -> int | None:
        return self.node.proc.pid if self.node.proc else None

    @property
    def data_dir(self) -> Path:
        return self.node.log_dirs[0]

    def format(self) -> None:
        from realkafka.jars import JarsUnavailable
        from realkafka.node import new_cluster_id

        try:
            self.node.format(new_cluster_id())
        except (JarsUnavailable, RuntimeError, subprocess.TimeoutExpired) as exc:
            raise TargetError(f"Kafka {self.version}: {exc}") from exc

    def spawn(self) -> None:
        from realkafka.node import write_properties

        write_properties(self.node.config_path, self.node.properties)
        with open(self.node.directory / "stdout.log", "ab") as out:
            self.spawned_at = time.monotonic()
            self.node.proc = subprocess.Popen(self.node.java("kafka.Kafka", [str(self.node.config_path)]),
                                              stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                              start_new_session=True)

    def start(self, timeout_s: float = 120.0) -> None:
        """Format, spawn and wait until the broker answers ApiVersions and has a controller (CreateTopics works)."""
        self.format()
        self.spawn()
        try:
            self.wait_answering(time.monotonic() + timeout_s)
        except TargetError:
            self.stop()
            raise

    def wait_answering(self, deadline: float) -> float:
        """The time.monotonic() of the first answered ApiVersions; TargetError if the JVM exits or time runs out."""
        from bench.wire import ProbeError, wait_for_api_versions

        while True:
            # Slices of a second: a JVM that exits (a port taken, a bad property) is noticed at once.
            try:
                return wait_for_api_versions("127.0.0.1", self.port, min(deadline, time.monotonic() + 1.0))
            except ProbeError as exc:
                proc = self.node.proc
                if proc is None or proc.poll() is not None or time.monotonic() >= deadline:
                    code = None if proc is None else proc.returncode
                    raise TargetError(f"Kafka {self.version} did not answer ApiVersions (exit code {code}): {exc} "
                                      f"| {self.output_tail()}") from exc

    def output_tail(self) -> str:
        return self.node.log_tail(20)[-1500:]

    def kill(self) -> None:
        self.node.kill()
        self.node.proc = None

    def stop(self) -> None:
        """SIGTERM (Kafka's controlled shutdown), kill -9 after 30 s."""
        from realkafka.node import terminate

        terminate(self.node.proc, 30)
        self.node.proc = None


class KafkaCluster:
    """Apache Kafka as a cluster of `brokers` KRaft brokers and one KRaft controller, each a JVM of its own (the
    counterpart of `broker.local_cluster.LocalCluster`'s ZooKeeper and brokers), on free loopback ports under
    `directory`; `overrides` go to every broker. `start()` formats every node with one cluster id and returns once
    all brokers answer ApiVersions; `stop()` is SIGTERM to all, never raises."""

    def __init__(self, version: str, directory: Path, brokers: int = 3,
                 overrides: dict[str, str] | None = None) -> None:
        from realkafka.node import kraft_node

        controller_port = free_port()
        voters = f"{brokers + 1}@127.0.0.1:{controller_port}"
        self.version = version
        self.controller = kraft_node(version, brokers + 1, "controller", directory / "controller", voters=voters,
                                     controller_port=controller_port, jvm_options=KAFKA_BENCH_JVM_OPTIONS)
        internal = {name: str(min(3, brokers)) for name in (
            "offsets.topic.replication.factor", "transaction.state.log.replication.factor",
            "share.coordinator.state.topic.replication.factor")}
        self.brokers = [kraft_node(version, i + 1, "broker", directory / f"broker-{i + 1}", voters=voters,
                                   port=free_port(),
                                   overrides={**KAFKA_BENCH_PROPERTIES, **internal, **(overrides or {})},
                                   jvm_options=KAFKA_BENCH_JVM_OPTIONS)
                       for i in range(brokers)]

    @property
    def bootstrap(self) -> str:
        return ",".join(b.bootstrap for b in self.brokers)

    @property
    def data_dirs(self) -> list[Path]:
        return [b.log_dirs[0] for b in self.brokers]

    def start(self, timeout_s: float = 180.0) -> None:
        from realkafka.jars import JarsUnavailable
        from realkafka.node import new_cluster_id

        cluster_id = new_cluster_id()
        try:
            for node in (self.controller, *self.brokers):
                node.format(cluster_id)
            self.controller.start(timeout_s)
            for node in self.brokers:  # one at a time: a 2-core machine starts JVMs no faster side by side
                node.start(timeout_s)
        except (JarsUnavailable, RuntimeError, TimeoutError, subprocess.TimeoutExpired) as exc:
            self.stop()
            raise TargetError(f"Kafka {self.version} cluster: {exc}") from exc

    def stop(self) -> None:
        from realkafka.node import terminate

        for node in (*self.brokers, self.controller):
            try:
                terminate(node.proc, 30)
            except Exception:  # noqa: BLE001 - stopping must never hide the results
                pass
            node.proc = None


def warm_up_kafka(target: Target, messages: int = KAFKA_WARMUP_MESSAGES, replication_factor: int = 1) -> None:
    """Produce `messages` (1 KiB) to a Kafka broker and read them back once before anything is measured: the JVM
    interprets, then compiles its hot paths, and without this the first repetitions measured that (the first
    produce's broker CPU per GB was twice the others'). Ours has nothing to warm up."""
    from bench.runner import delete_topics, ensure_partitions, run_load

    tps = ensure_partitions(target, "bench-warmup", 1, 60, replication_factor=replication_factor)
    try:
        acks = "1" if replication_factor == 1 else "all"
        run_load({"kind": "produce", "bootstrap": target.bootstrap, "tps": tps, "count": messages, "size": 1024,
                  "acks": acks, "compression": "none", "linger_ms": 5, "batch_bytes": 1 << 20}, 120)
        run_load({"kind": "consume", "bootstrap": target.bootstrap, "tps": tps, "expected": messages}, 120)
    finally:
        delete_topics(target, {"bench-warmup"})


class KafkaTarget(Target):
    """Apache Kafka `version` as a KRaft combined node the harness starts and stops (`KafkaProcess`)."""

    kind = "kafka"

    def __init__(self, work_dir: Path, version: str = DEFAULT_KAFKA_VERSION,
                 warmup_messages: int = KAFKA_WARMUP_MESSAGES) -> None:
        super().__init__(f"kafka-{version}")
        self.version = version
        self.warmup_messages = warmup_messages
        self._work_dir = work_dir
        self._process: KafkaProcess | None = None

    def start(self) -> None:
        directory = Path(tempfile.mkdtemp(prefix=f"kafka-{self.version}-", dir=self._work_dir))
        process = KafkaProcess(self.version, directory)
        process.start()
        self._process = process
        self.bootstrap = process.bootstrap
        self.pid = process.pid
        if self.warmup_messages:
            try:
                self._warm_up()
            except Exception as exc:  # noqa: BLE001 - a failed warm-up leaves a cold JVM, not a failed run
                print(f"bench: warming Kafka {self.version} up failed: {exc}", file=sys.stderr)

    def _warm_up(self) -> None:
        warm_up_kafka(self, self.warmup_messages)

    def wait_removed_from_disk(self, topics: set[str], timeout_s: float) -> bool:
        # Kafka renames a deleted partition's directory to `<topic>-<p>.<id>-delete` and removes it
        # log.segment.delete.delay.ms (1 s here) later: `<topic>-*` matches both.
        return True if self._process is None else wait_topics_gone(self._process.data_dir, topics, timeout_s)

    def stop(self) -> None:
        if self._process is None:
            return
        try:
            self._process.stop()
        except Exception:  # noqa: BLE001 - stopping must never hide the results
            pass
        self._process = None
        self.pid = None


def parse_targets(spec: str, work_dir: Path) -> list[Target]:
    targets: list[Target] = []
    for item in (part.strip() for part in spec.split(",")):
        if not item:
            continue
        if item == "ours":
            targets.append(OursTarget(work_dir))
        elif item == "mock":
            targets.append(MockTarget())
        elif item == "kafka" or item.startswith("kafka:"):
            version = item.partition(":")[2] or DEFAULT_KAFKA_VERSION
            if not version[:1].isdigit():
                raise ValueError(f"bad Kafka version in target {item!r}: use e.g. kafka:4.4.0")
            targets.append(KafkaTarget(work_dir, version))
        elif ":" in item:
            targets.append(ExternalTarget(item))
        else:
            raise ValueError(f"unknown target {item!r}: use ours, mock, kafka, kafka:VERSION or host:port")
    if not targets:
        raise ValueError("no targets given")
    return targets

"""Real Apache Kafka (from Maven Central, `realkafka`) and our broker in one cluster.

- `Nodes(directory)`: starts real Kafka nodes and our brokers under one directory and stops them all (`close`);
  `kraft_quorum(version, ...)` a Kafka KRaft controller, formatted by Kafka's storage tool with the release's
  defaults unless `features` / `release_version` say otherwise; `kafka_kraft_broker(...)` a Kafka broker of
  that cluster; `our_kraft_broker(...)` ours, formatted with `python -m broker format` and started as
  `python -m broker` with the same keys a Kafka broker takes; `kafka_zk_broker(...)` / `our_zk_broker(...)` the
  two kinds of ZooKeeper-mode broker.
- `our_broker(...)`: one broker of ours on its own (the single-node default, no controller quorum).
- `java_app(name, classpath, main_class, args)`: a JVM of the test's own (a Kafka Streams application, a Connect
  worker) under `<directory>/<name>`, its stdout and stderr in files there; `JavaApp.wait_for` a line on its
  stdout, `kill()` is kill -9, `stop()` SIGTERM.
- `Nodes.report()`: the tail of every node's and application's log, printed by the interop conftest when a test
  fails (the directories are kept under pytest's basetemp).
"""

from __future__ import annotations

import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from broker.testing import BrokerProcess, free_port
from realkafka.node import KafkaNode, kraft_node, new_cluster_id, terminate, zookeeper_broker

# Our broker, quick to notice what tests do to it (the Kafka side keeps its defaults).
OURS_FAST = {"broker.heartbeat.interval.ms": "500", "replica.fetch.wait.max.ms": "200",
             "offsets.topic.num.partitions": "4", "offsets.topic.replication.factor": "1",
             "transaction.state.log.num.partitions": "4", "transaction.state.log.replication.factor": "1",
             "transaction.state.log.min.isr": "1"}


@dataclass
class KRaftQuorum:
    version: str
    cluster_id: str
    controller: KafkaNode

    @property
    def voters(self) -> str:
        return f"{self.controller.node_id}@127.0.0.1:{self.controller.controller_port}"


# A client-side JVM on the 2-core test machine: a small heap, the serial collector, C1 only.
APP_JVM_OPTIONS = ("-Xms64m", "-Xmx384m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-XX:-UsePerfData",
                   "-Djava.awt.headless=true")


class JavaApp:
    """`java -cp CLASSPATH MAIN_CLASS ARGS` with its output in `directory` (stdout.log, stderr.log); a restart
    appends to the same files, and `wait_for` reads only what the current run wrote."""

    def __init__(self, name: str, directory: Path, classpath: str, main_class: str, args: list[str], *,
                 jvm_options: tuple[str, ...] = APP_JVM_OPTIONS) -> None:
        self.name = name
        self.directory = Path(directory)
        self.command = ["java", *jvm_options, "-cp", classpath, main_class, *args]
        self.proc: subprocess.Popen[bytes] | None = None
        self._stdout_start = 0

    @property
    def stdout_path(self) -> Path:
        return self.directory / "stdout.log"

    @property
    def stderr_path(self) -> Path:
        return self.directory / "stderr.log"

    def start(self) -> JavaApp:
        self.directory.mkdir(parents=True, exist_ok=True)
        self._stdout_start = self.stdout_path.stat().st_size if self.stdout_path.exists() else 0
        with open(self.stdout_path, "ab") as out, open(self.stderr_path, "ab") as err:
            self.proc = subprocess.Popen(self.command, stdin=subprocess.DEVNULL, stdout=out, stderr=err,
                                         cwd=self.directory)
        return self

    def output(self) -> str:
        """What the current run printed on stdout."""
        with open(self.stdout_path, "rb") as f:
            f.seek(self._stdout_start)
            return f.read().decode(errors="replace")

    def wait_for(self, text: str, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while text not in self.output():
            if self.proc is None or self.proc.poll() is not None:
                raise RuntimeError(f"{self.name} exited ({self.proc and self.proc.returncode}) before printing "
                                   f"{text!r}:\n{self.log_tail()}")
            if time.monotonic() > deadline:
                raise TimeoutError(f"{self.name} did not print {text!r} within {timeout}s:\n{self.log_tail()}")
            time.sleep(0.1)

    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def kill(self) -> None:
        """kill -9: no shutdown hook, no flush, no goodbye to the broker."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()

    def stop(self, timeout: float = 30.0) -> int | None:
        return terminate(self.proc, timeout)

    def log_tail(self, lines: int = 60) -> str:
        """The tails of its stdout and stderr, and of the `server.log` of a Kafka logging configuration
        (`realkafka.node.logging_options`) pointed at its directory."""
        parts = []
        for path in (self.stdout_path, self.stderr_path, self.directory / "server.log"):
            try:
                text = path.read_text(errors="replace").splitlines()[-lines:]
            except OSError:
                continue
            parts.append(f"-- {path.name}\n" + "\n".join(text))
        return "\n".join(parts)


class Nodes:
    def __init__(self, directory: Path) -> None:
        self.directory = Path(directory)
        self.kafka: list[KafkaNode] = []
        self.ours: list[BrokerProcess] = []
        self.apps: list[JavaApp] = []

    # ---- one broker of ours, and applications beside it
    def our_broker(self, *, overrides: dict[str, str] | None = None) -> BrokerProcess:
        broker = BrokerProcess({**OURS_FAST, "group.initial.rebalance.delay.ms": "0", **(overrides or {})},
                               data_dir=self.directory / f"ours-{len(self.ours)}")
        self.ours.append(broker)
        return broker.start(60)

    def java_app(self, name: str, classpath: str, main_class: str, args: list[str], *,
                 jvm_options: tuple[str, ...] = APP_JVM_OPTIONS) -> JavaApp:
        app = JavaApp(name, self.directory / name, classpath, main_class, args, jvm_options=jvm_options)
        self.apps.append(app)
        return app

    # ---- KRaft
    def kraft_quorum(self, version: str, *, node_id: int = 1, features: dict[str, int] | None = None,
                     release_version: str | None = None, overrides: dict[str, str] | None = None) -> KRaftQuorum:
        port = free_port()
        node = kraft_node(version, node_id, "controller", self.directory / f"kafka-controller-{node_id}",
                          voters=f"{node_id}@127.0.0.1:{port}", controller_port=port, overrides=overrides)
        cluster_id = new_cluster_id()
        node.format(cluster_id, features=features, release_version=release_version)
        self.kafka.append(node)
        node.start()
        return KRaftQuorum(version, cluster_id, node)

    def kafka_kraft_broker(self, quorum: KRaftQuorum, node_id: int, *, version: str | None = None,
                           overrides: dict[str, str] | None = None, start: bool = True) -> KafkaNode:
        node = kraft_node(version or quorum.version, node_id, "broker", self.directory / f"kafka-broker-{node_id}",
                          voters=quorum.voters, overrides=overrides)
        node.format(quorum.cluster_id)
        self.kafka.append(node)
        return node.start() if start else node

    def our_kraft_broker(self, quorum: KRaftQuorum, node_id: int, *, overrides: dict[str, str] | None = None,
                         start: bool = True) -> BrokerProcess:
        props = {"process.roles": "broker", "node.id": str(node_id), "controller.quorum.voters": quorum.voters,
                 "controller.listener.names": "CONTROLLER",
                 "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
                 "inter.broker.listener.name": "PLAINTEXT", **OURS_FAST, **(overrides or {})}
        broker = BrokerProcess(props, data_dir=self.directory / f"ours-{node_id}")
        args = [sys.executable, "-m", "broker", "format", "--cluster-id", quorum.cluster_id]
        for key, value in broker.props.items():
            args += ["--override", f"{key}={value}"]
        subprocess.run(args, check=True, capture_output=True, timeout=60)
        self.ours.append(broker)
        return broker.start(60) if start else broker

    # ---- ZooKeeper mode
    def kafka_zk_broker(self, version: str, broker_id: int, zookeeper_connect: str, *,
                        overrides: dict[str, str] | None = None, start: bool = True) -> KafkaNode:
        node = zookeeper_broker(version, broker_id, self.directory / f"kafka-zk-{broker_id}", zookeeper_connect,
                                overrides=overrides)
        self.kafka.append(node)
        return node.start() if start else node

    def our_zk_broker(self, broker_id: int, zookeeper_connect: str, *, overrides: dict[str, str] | None = None,
                      start: bool = True) -> BrokerProcess:
        props = {"broker.id": str(broker_id), "zookeeper.connect": zookeeper_connect, **OURS_FAST,
                 **(overrides or {})}
        broker = BrokerProcess(props, data_dir=self.directory / f"ours-zk-{broker_id}")
        self.ours.append(broker)
        return broker.start(60) if start else broker

    # ---- teardown and failure reports
    def close(self) -> None:
        for app in reversed(self.apps):
            app.stop(20)
        for broker in reversed(self.ours):
            try:
                broker.stop(20)
            except Exception:
                broker.kill()
        for node in reversed(self.kafka):
            node.stop(20)

    def report(self) -> str:
        parts = []
        for node in self.kafka:
            parts.append(f"==== Kafka {node.version} node {node.node_id} ({node.directory})\n{node.log_tail(80)}")
        for broker in self.ours:
            parts.append(f"==== ours {broker.props.get('node.id') or broker.props.get('broker.id') or '(one node)'} "
                         f"({broker.data_dir})\n{broker.log_tail(80)}")
        for app in self.apps:
            parts.append(f"==== {app.name} ({app.directory})\n{app.log_tail(80)}")
        return "\n".join(parts)


def node_log(node: Any) -> str:
    """The whole log of a Kafka node or of our broker process."""
    if isinstance(node, KafkaNode):
        return node.log_text()
    return Path(node.log_path).read_text(errors="replace")

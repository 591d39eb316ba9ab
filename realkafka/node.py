"""A real Kafka node on loopback: a KRaft controller, broker or combined node, or a ZooKeeper-mode broker.

Contract:
- `KafkaNode(version, directory, properties)` runs `kafka.Kafka` from that version's jars (`realkafka.jars`)
  with the given `server.properties`; `kraft_node` and `zookeeper_broker` fill in what every node needs
  (listeners on free 127.0.0.1 ports, log dirs under `directory`, test-sized internal topics).
- `format(cluster_id, ...)` runs Kafka's storage tool (`kafka-storage.sh format`) as a KRaft user would;
  `start()` returns once the node logged that it started (a broker: registered and unfenced) and, for a
  broker, answers on its listener; `stop()` is SIGTERM (a controlled shutdown), `kill()` is kill -9.
- Everything the node writes stays under `directory`: `logs/server.log` (Kafka's log4j output),
  `stdout.log`, `data/`, the generated `server.properties` and log4j configuration. `log_tail()` for failures.
- The JVM is sized for a 2-core test machine (512 MB heap, serial GC, C1 only: a start in seconds) unless
  `jvm_options` says otherwise (the benchmarks use Kafka's own defaults).
"""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import time
from pathlib import Path
from typing import Any

from broker.testing import free_port
from realkafka import jars
from storage.checkpoints import random_kafka_uuid_str

TEST_JVM_OPTIONS = ("-Xms128m", "-Xmx512m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-XX:-UsePerfData",
                    "-Djava.awt.headless=true", "-Djava.net.preferIPv4Stack=true")
# What kafka-server-start.sh gives a broker (KAFKA_HEAP_OPTS, KAFKA_JVM_PERFORMANCE_OPTS).
KAFKA_JVM_OPTIONS = ("-Xms1G", "-Xmx1G", "-server", "-XX:+UseG1GC", "-XX:MaxGCPauseMillis=20",
                     "-XX:InitiatingHeapOccupancyPercent=35", "-XX:+ExplicitGCInvokesConcurrent",
                     "-Djava.awt.headless=true")
# Internal topics sized for one or two brokers, and no initial rebalance delay.
TEST_PROPERTIES = {
    "offsets.topic.replication.factor": "1",
    "offsets.topic.num.partitions": "4",
    "transaction.state.log.replication.factor": "1",
    "transaction.state.log.min.isr": "1",
    "transaction.state.log.num.partitions": "4",
    "group.initial.rebalance.delay.ms": "0",
}
_STARTED = re.compile(r"Kafka Server started|\] started \(kafka\.server\.KafkaServer\)")
_LOG4J2 = """status = warn
appender.file.type = File
appender.file.name = FILE
appender.file.fileName = ${sys:kafka.logs.dir}/server.log
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = INFO
rootLogger.appenderRef.file.ref = FILE
logger.state.name = state.change.logger
logger.state.level = INFO
"""
_LOG4J1 = """log4j.rootLogger=INFO, file
log4j.appender.file=org.apache.log4j.FileAppender
log4j.appender.file.File=${kafka.logs.dir}/server.log
log4j.appender.file.layout=org.apache.log4j.PatternLayout
log4j.appender.file.layout.ConversionPattern=[%d] %p %m (%c)%n
"""


def new_cluster_id() -> str:
    """A cluster id as `kafka-storage.sh random-uuid` prints one (a UUID in URL-safe base64, no padding)."""
    return random_kafka_uuid_str()


def write_properties(path: Path, properties: dict[str, str]) -> None:
    path.write_text("".join(f"{k}={v}\n" for k, v in properties.items()))


def logging_options(version: str, logs_dir: Path) -> list[str]:
    """JVM options sending a Kafka version's log4j output (Log4j 2 from 4.0, reload4j before) to
    `logs_dir/server.log` at INFO; the configuration file is written there too."""
    logs_dir.mkdir(parents=True, exist_ok=True)
    if jars.major(version) >= 4:
        config = logs_dir / "log4j2.properties"
        config.write_text(_LOG4J2)
        logging = [f"-Dlog4j2.configurationFile={config}"]
    else:
        config = logs_dir / "log4j.properties"
        config.write_text(_LOG4J1)
        logging = [f"-Dlog4j.configuration=file:{config}"]
    return [*logging, f"-Dkafka.logs.dir={logs_dir}"]


def java_command(version: str, main_class: str, args: list[str], *, logs_dir: Path,
                 jvm_options: tuple[str, ...] = TEST_JVM_OPTIONS, extra_classpath: str = "") -> list[str]:
    """`java` with a Kafka version's jars on the classpath and its logging pointed at `logs_dir`."""
    classpath = jars.classpath(jars.kafka_server(version))
    if extra_classpath:
        classpath = extra_classpath + os.pathsep + classpath
    return ["java", *jvm_options, *logging_options(version, logs_dir), "-cp", classpath, main_class, *args]


def terminate(proc: subprocess.Popen[bytes] | None, timeout: float) -> int | None:
    """SIGTERM and wait; kill -9 after `timeout`. The exit code, None for a process never started."""
    if proc is None:
        return None
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    return proc.returncode


class KafkaNode:
    def __init__(self, version: str, directory: Path, properties: dict[str, str], *,
                 jvm_options: tuple[str, ...] = TEST_JVM_OPTIONS) -> None:
        self.version = version
        self.directory = Path(directory)
        self.properties = dict(properties)
        self.jvm_options = jvm_options
        self.proc: subprocess.Popen[bytes] | None = None
        self.directory.mkdir(parents=True, exist_ok=True)

    # ---- what the node is
    @property
    def node_id(self) -> int:
        return int(self.properties.get("node.id") or self.properties["broker.id"])

    @property
    def roles(self) -> set[str]:
        return {r.strip() for r in self.properties.get("process.roles", "broker").split(",") if r.strip()}

    def listener_port(self, name: str) -> int:
        for listener in self.properties["listeners"].split(","):
            listener_name, _, address = listener.partition("://")
            if listener_name.strip() == name:
                return int(address.rsplit(":", 1)[1])
        raise KeyError(f"no listener {name} in {self.properties['listeners']}")

    @property
    def port(self) -> int:
        return self.listener_port("PLAINTEXT")

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def controller_port(self) -> int:
        return self.listener_port("CONTROLLER")

    @property
    def log_dirs(self) -> list[Path]:
        return [Path(p) for p in self.properties["log.dirs"].split(",")]

    @property
    def logs_dir(self) -> Path:
        return self.directory / "logs"

    @property
    def config_path(self) -> Path:
        return self.directory / "server.properties"

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def java(self, main_class: str, args: list[str]) -> list[str]:
        return java_command(self.version, main_class, args, logs_dir=self.logs_dir, jvm_options=self.jvm_options)

    # ---- lifecycle
    def format(self, cluster_id: str, *, features: dict[str, int] | None = None,
               release_version: str | None = None, standalone: bool = False,
               initial_controllers: str | None = None, no_initial_controllers: bool = False) -> str:
        """`kafka-storage.sh format -t <cluster_id> -c server.properties [...]`; returns what it printed."""
        write_properties(self.config_path, self.properties)
        args = ["format", "-t", cluster_id, "-c", str(self.config_path)]
        for name, level in (features or {}).items():
            args += ["--feature", f"{name}={level}"]
        if release_version:
            args += ["--release-version", release_version]
        if standalone:
            args.append("--standalone")
        if initial_controllers:
            args += ["--initial-controllers", initial_controllers]
        if no_initial_controllers:
            args.append("--no-initial-controllers")
        done = subprocess.run(self.java("kafka.tools.StorageTool", args), capture_output=True, text=True,
                              timeout=120)
        if done.returncode != 0:
            raise RuntimeError(f"kafka-storage format failed ({done.returncode}):\n{done.stdout}{done.stderr}")
        return done.stdout

    def start(self, timeout: float = 90.0) -> KafkaNode:
        write_properties(self.config_path, self.properties)
        log = self.logs_dir / "server.log"
        log_start = log.stat().st_size if log.exists() else 0
        with open(self.directory / "stdout.log", "ab") as out:
            self.proc = subprocess.Popen(self.java("kafka.Kafka", [str(self.config_path)]), stdout=out,
                                         stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"Kafka {self.version} node {self.node_id} exited with {self.proc.returncode}:\n"
                                   f"{self.log_tail()}")
            if _STARTED.search(self._log_since(log, log_start)) and self._answers():
                return self
            time.sleep(0.1)
        self.kill()
        raise TimeoutError(f"Kafka {self.version} node {self.node_id} did not start in {timeout:.0f}s:\n"
                           f"{self.log_tail()}")

    @staticmethod
    def _log_since(log: Path, offset: int) -> str:
        try:
            with open(log, "rb") as f:
                f.seek(offset)
                return f.read().decode(errors="replace")
        except OSError:
            return ""

    def _answers(self) -> bool:
        name = "PLAINTEXT" if "broker" in self.roles else "CONTROLLER"
        try:
            with socket.create_connection(("127.0.0.1", self.listener_port(name)), timeout=1):
                return True
        except (OSError, KeyError):
            return False

    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def stop(self, timeout: float = 60.0) -> int | None:
        """SIGTERM (a broker moves its leaderships away first) and wait; kill -9 after `timeout`."""
        return terminate(self.proc, timeout)

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()

    def suspend(self) -> None:
        if self.proc is not None:
            self.proc.send_signal(signal.SIGSTOP)

    def resume(self) -> None:
        if self.proc is not None:
            self.proc.send_signal(signal.SIGCONT)

    def log_text(self) -> str:
        try:
            return (self.logs_dir / "server.log").read_text(errors="replace")
        except OSError:
            return ""

    def log_tail(self, lines: int = 60) -> str:
        text = self.log_text().splitlines()[-lines:]
        try:
            text += (self.directory / "stdout.log").read_text(errors="replace").splitlines()[-20:]
        except OSError:
            pass
        return "\n".join(text)

    def __enter__(self) -> KafkaNode:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()


def kraft_node(version: str, node_id: int, roles: str, directory: Path, *, voters: str = "",
               bootstrap_servers: str = "", port: int | None = None, controller_port: int | None = None,
               overrides: dict[str, str] | None = None, **kwargs: Any) -> KafkaNode:
    """A KRaft node: `roles` is "controller", "broker" or "broker,controller". A node with the controller role
    listens on `controller_port` (free if None); `voters` is `controller.quorum.voters` (`id@host:port,...`),
    `bootstrap_servers` is `controller.quorum.bootstrap.servers` (a dynamic quorum, KIP-853)."""
    directory = Path(directory)
    role_set = {r.strip() for r in roles.split(",")}
    listeners = []
    if "broker" in role_set:
        listeners.append(f"PLAINTEXT://127.0.0.1:{port or free_port()}")
    if "controller" in role_set:
        listeners.append(f"CONTROLLER://127.0.0.1:{controller_port or free_port()}")
    props = {
        "process.roles": roles,
        "node.id": str(node_id),
        "listeners": ",".join(listeners),
        "controller.listener.names": "CONTROLLER",
        "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
        "log.dirs": str(directory / "data"),
    }
    if "broker" in role_set:
        props["inter.broker.listener.name"] = "PLAINTEXT"
        props["advertised.listeners"] = listeners[0]
    if voters:
        props["controller.quorum.voters"] = voters
    if bootstrap_servers:
        props["controller.quorum.bootstrap.servers"] = bootstrap_servers
    props.update(TEST_PROPERTIES)
    props.update(overrides or {})
    return KafkaNode(version, directory, props, **kwargs)


def zookeeper_broker(version: str, broker_id: int, directory: Path, zookeeper_connect: str, *,
                     port: int | None = None, overrides: dict[str, str] | None = None, **kwargs: Any) -> KafkaNode:
    """A ZooKeeper-mode broker (Kafka 3.x): it may win the controller election like any other broker."""
    if jars.major(version) >= 4:
        raise ValueError(f"Kafka {version} has no ZooKeeper mode")
    directory = Path(directory)
    listener = f"PLAINTEXT://127.0.0.1:{port or free_port()}"
    props = {
        "broker.id": str(broker_id),
        "zookeeper.connect": zookeeper_connect,
        "listeners": listener,
        "advertised.listeners": listener,
        "log.dirs": str(directory / "data"),
        "zookeeper.session.timeout.ms": "6000",
    }
    props.update(TEST_PROPERTIES)
    props.update(overrides or {})
    return KafkaNode(version, directory, props, **kwargs)

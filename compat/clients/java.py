"""The Java client (Apache Kafka's kafka-clients) adapters: compat/java/CompatClient.java, compiled with javac
against the real kafka-clients jars from Maven Central (`realkafka.jars.kafka_clients`, cached), run as one
long-lived JVM per adapter instance (one scenario run) that answers a command per line.

Three releases, `realkafka.JAVA_CLIENTS`: `java` is the newest and runs every scenario; `java-3.9` and `java-3.7`
(older clients users still run) run the core set (`OLDER_RELEASE_SCENARIOS`: produce, consume, groups classic
and KIP-848, transactions, admin), so the matrix stays short. ``--java-classpath`` / KAFKA_CLIENTS_CLASSPATH
replaces the jars of `java` (any kafka-clients jar with its dependencies). A client reports itself unavailable
only when Maven cannot resolve its jars or java/javac are missing; tests/compat fails rather than skip then.

Each handle (producer, transactional producer, consumer, share consumer) is an object in the JVM named by a
number, so a producer stays open across sends (its metadata goes stale as an application's does), a group
member keeps its membership between polls, and `send_offsets` hands the producer the member's
ConsumerGroupMetadata (generation and member id, KIP-447). Covers every adapter call but `api_versions`, which the
Java client does not expose.
"""

from __future__ import annotations

import os
import queue
import shutil
import subprocess
import tempfile
import threading
from collections.abc import Iterable, Sequence
from pathlib import Path
from urllib.parse import quote, unquote_plus

from compat.clients.base import ClientAdapter, ConsumerHandle, Offsets, ProducerHandle, TransactionalProducerHandle
from compat.model import ClusterView, GroupDescription, Message, NotSupported, ProduceFailed, ProducerFenced, Record
from realkafka import JAVA_CLIENTS
from realkafka.javac import compile_sources
from storage.values import TopicPartition

SOURCE = Path(__file__).resolve().parent.parent / "java" / "CompatClient.java"
# A short-lived client JVM: C1 only, the serial collector, the JDK's class-data archive; the client's own log at
# WARN (it goes to a file whose tail an unexpected exit reports).
JVM_OPTIONS = ("-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-Xshare:auto", "-Xss512k",
               "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn")
# The scenarios the older releases run: what users of an older client rely on most.
OLDER_RELEASE_SCENARIOS = frozenset({
    "metadata", "produce_consume", "compression_zstd", "idempotent_producer", "group_consume", "group_rebalance",
    "group_protocol_consumer", "commit_offsets_metadata", "transactions", "transactions_offsets", "admin_topics",
    "admin_configs", "admin_groups",
})

_override = ""
_lock = threading.Lock()
_compiled: dict[str, Path] = {}


def set_classpath(classpath: str) -> None:
    """A classpath replacing the newest release's jars for the `java` client ("" keeps Maven's)."""
    global _override
    _override = classpath


def _hex(b: bytes | None) -> str:
    return "-" if b is None else b.hex()


def _unhex(s: str) -> bytes | None:
    return None if s == "-" else bytes.fromhex(s)


def _enc(name: str) -> str:
    return quote(name, safe="")


def _dec(field: str) -> str:
    return unquote_plus(field)


def _tp(tp: TopicPartition) -> str:
    return f"{_enc(tp.topic)}:{tp.partition}"


def compile_client(classpath: str) -> Path:
    """The directory of CompatClient.class compiled against this classpath (cached, realkafka.javac)."""
    with _lock:
        if classpath not in _compiled:
            _compiled[classpath] = compile_sources([SOURCE], classpath)
        return _compiled[classpath]


class JavaError(Exception):
    """A command the JVM answered with an error: `error` is Kafka's error name (or the Java exception's class)."""

    def __init__(self, command: str, error: str, detail: str) -> None:
        super().__init__(f"java {command} failed: {error} {detail}".rstrip())
        self.error = error
        self.detail = detail


class JavaSession:
    """One JVM running CompatClient against a bootstrap: `call` writes a command (and its payload lines) and returns
    the answer's data lines, raising JavaError on "= ERR". A reader thread takes the JVM's stdout, so every wait is
    bounded; a command left unanswered in time ends the JVM (a later answer would be taken for the next one's)."""

    def __init__(self, classpath: str, bootstrap: str, timeout_s: float) -> None:
        self._timeout = timeout_s
        compiled = compile_client(classpath)
        self._log = tempfile.NamedTemporaryFile(prefix="compat-java-", suffix=".log", delete=False)  # noqa: SIM115
        self._proc = subprocess.Popen(
            ["java", *JVM_OPTIONS, "-cp", f"{compiled}{os.pathsep}{classpath}", "CompatClient", bootstrap],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._log, text=True, encoding="utf-8")
        self._lines: queue.Queue[str | None] = queue.Queue()
        threading.Thread(target=self._pump, name="compat-java-stdout", daemon=True).start()

    def _pump(self) -> None:
        assert self._proc.stdout is not None  # created with stdout=PIPE
        for line in self._proc.stdout:
            self._lines.put(line.rstrip("\n"))
        self._lines.put(None)

    def _log_tail(self) -> str:
        try:
            lines = Path(self._log.name).read_text(errors="replace").strip().splitlines()
        except OSError:
            return ""
        errors = [x for x in lines if "Exception" in x or "Error" in x]
        return (errors or lines or [""])[-1]

    def call(self, command: str, payload: Sequence[str] = (), timeout_s: float | None = None) -> list[str]:
        if self._proc.poll() is not None:
            raise RuntimeError(f"the Java client has exited ({self._proc.returncode}): {self._log_tail()}")
        assert self._proc.stdin is not None  # created with stdin=PIPE
        self._proc.stdin.write("\n".join([command, *payload]) + "\n")
        self._proc.stdin.flush()
        what = command.split(" ", 1)[0]
        data: list[str] = []
        while True:
            try:
                line = self._lines.get(timeout=(timeout_s or self._timeout) + 30)
            except queue.Empty:
                self._proc.kill()
                raise TimeoutError(f"the Java client did not answer {what}") from None
            if line is None:
                raise RuntimeError(f"the Java client exited during {what}: {self._log_tail()}")
            if line == "= OK":
                return data
            if line.startswith("= ERR "):
                f = line[len("= ERR "):].split(" ", 1)
                raise JavaError(what, f[0], f[1] if len(f) > 1 else "")
            data.append(line)

    def close(self) -> None:
        """Closes every handle still open (consumers leave their groups), then the JVM."""
        if self._proc.stdin is not None and not self._proc.stdin.closed:
            try:
                self._proc.stdin.close()
            except OSError:
                pass
        try:
            self._proc.wait(60)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait()
        self._log.close()
        os.unlink(self._log.name)


def _record_line(r: Record) -> str:
    headers = ",".join(f"{_enc(k)}={v.hex()}" for k, v in r.headers)
    part = "-" if r.partition is None else str(r.partition)
    ts = "-" if r.timestamp_ms is None else str(r.timestamp_ms)
    return f"R {part} {ts} {_hex(r.key)} {_hex(r.value)} {headers}"


def _message(line: str) -> Message:
    f = line.split(" ")
    headers = tuple((_dec(k), bytes.fromhex(v)) for k, _, v in (h.partition("=") for h in f[7].split(",") if h))
    return Message(_dec(f[1]), int(f[2]), int(f[3]), _unhex(f[5]), _unhex(f[6]), headers, int(f[4]))


class _Handle:
    def __init__(self, session: JavaSession, answer: list[str]) -> None:
        self._s = session
        self.handle = next(line.split(" ")[1] for line in answer if line.startswith("H "))

    def close(self) -> None:
        try:
            self._s.call(f"close {self.handle}")
        except RuntimeError:  # the JVM has gone: nothing left open
            pass


class JavaProducer(_Handle, ProducerHandle):
    def send(self, topic: str, records: Sequence[Record]) -> list[tuple[int, int]]:
        out = self._s.call(f"send {self.handle} {_enc(topic)} {len(records)}", [_record_line(r) for r in records])
        result = []
        for line in out:
            f = line.split(" ", 2)
            if f[0] == "F":
                raise ProduceFailed(f[1], f[2] if len(f) > 2 else "")
            result.append((int(f[1]), int(f[2])))
        return result


# Kafka's errors for a producer fenced by a newer instance (ProducerFencedException, InvalidProducerEpochException).
_FENCED = {"PRODUCER_FENCED", "INVALID_PRODUCER_EPOCH"}


class JavaTransactionalProducer(JavaProducer, TransactionalProducerHandle):
    def _fenced(self, command: str) -> None:
        try:
            self._s.call(command)
        except JavaError as e:
            if e.error in _FENCED:
                raise ProducerFenced(f"{e.error}: {e.detail}") from e
            raise

    def send(self, topic: str, records: Sequence[Record]) -> list[tuple[int, int]]:
        try:
            return super().send(topic, records)
        except ProduceFailed as e:
            if e.error in _FENCED:
                raise ProducerFenced(str(e)) from e
            raise

    def begin(self) -> None:
        self._fenced(f"begin {self.handle}")

    def send_offsets(self, offsets: dict[TopicPartition, int], group_id: str,
                     consumer: ConsumerHandle | None = None) -> None:
        if not isinstance(consumer, JavaConsumer) or consumer._s is not self._s:
            raise NotSupported("the Java client takes the group metadata from a consumer of the group")
        self._fenced(f"offsets {self.handle} {consumer.handle} "
                     + " ".join(f"{_tp(tp)}:{o}" for tp, o in offsets.items()))

    def commit(self) -> None:
        self._fenced(f"commit {self.handle}")

    def abort(self) -> None:
        self._fenced(f"abort {self.handle}")


class JavaConsumer(_Handle, ConsumerHandle):
    name = "the Java client's consumer"

    def poll(self, max_records: int, timeout_s: float) -> list[Message]:
        out = self._s.call(f"poll {self.handle} {max(1, max_records)} {int(timeout_s * 1000)}", timeout_s=timeout_s)
        return [_message(line) for line in out if line.startswith("M ")]

    def assignment(self) -> set[TopicPartition]:
        out = self._s.call(f"assignment {self.handle}")
        return {TopicPartition(_dec(f[1]), int(f[2])) for f in (line.split(" ") for line in out)}

    def commit(self, offsets: dict[TopicPartition, tuple[int, str]]) -> None:
        self._s.call(f"commit_offsets {self.handle} "
                     + " ".join(f"{_tp(tp)}:{o}:{md.encode().hex()}" for tp, (o, md) in offsets.items()))

    def committed(self, tps: Sequence[TopicPartition]) -> dict[TopicPartition, tuple[int, str] | None]:
        out: dict[TopicPartition, tuple[int, str] | None] = {}
        for f in (line.split(" ") for line in self._s.call(f"committed {self.handle} "
                                                           + " ".join(_tp(tp) for tp in tps))):
            metadata = _unhex(f[4])
            out[TopicPartition(_dec(f[1]), int(f[2]))] = (
                None if f[3] == "-" else (int(f[3]), (metadata or b"").decode()))
        return out

    def seek(self, tp: TopicPartition, offset: int) -> None:
        self._s.call(f"seek {self.handle} {_tp(tp)}:{offset}")

    def pause(self, tps: Iterable[TopicPartition]) -> None:
        self._s.call(f"pause {self.handle} " + " ".join(_tp(tp) for tp in tps))

    def resume(self, tps: Iterable[TopicPartition]) -> None:
        self._s.call(f"resume {self.handle} " + " ".join(_tp(tp) for tp in tps))


def _ids(field: str) -> list[int]:
    return [] if field == "-" else [int(x) for x in field.split(",")]


class JavaAdapter(ClientAdapter):
    """The newest release of JAVA_CLIENTS (or the --java-classpath jars); subclasses pin older releases."""

    supports_security = False  # its secured settings are not wired yet: a secured target reports it skipped
    name = "java"
    version = JAVA_CLIENTS[-1]
    _session: JavaSession | None = None  # started by the first call

    @classmethod
    def classpath(cls) -> str:
        if cls.name == JavaAdapter.name and _override:
            return _override
        from realkafka import jars
        return jars.classpath(jars.kafka_clients(cls.version))

    @classmethod
    def unavailable_reason(cls) -> str | None:
        if shutil.which("javac") is None or shutil.which("java") is None:
            return "java/javac not on PATH (Debian: default-jdk-headless)"
        from realkafka.jars import JarsUnavailable
        try:
            cls.classpath()
        except JarsUnavailable as e:
            return f"kafka-clients {cls.version} not resolved: {str(e).splitlines()[0]}"
        return None

    @property
    def session(self) -> JavaSession:
        if self._session is None:
            self._session = JavaSession(self.classpath(), self.bootstrap, self.timeout_s)
        return self._session

    def call(self, command: str) -> list[str]:
        return self.session.call(command)

    def _view(self, lines: list[str], view: ClusterView) -> ClusterView:
        for f in (line.split(" ") for line in lines):
            if f[0] == "B":
                view.brokers[int(f[1])] = (f[2], int(f[3]))
            elif f[0] == "C":
                view.controller_id = int(f[1])
            elif f[0] == "I":
                view.cluster_id = f[1]
            elif f[0] == "T":
                view.topics.setdefault(_dec(f[1]), {})[int(f[2])] = int(f[3])
            elif f[0] == "E" and view.topic_errors is not None:
                view.topic_errors[_dec(f[1])] = int(f[2])
        return view

    def cluster(self, topics: Sequence[str] | None = None) -> ClusterView:
        return self._view(self.call(" ".join(["metadata", *(_enc(t) for t in topics or [])])),
                          ClusterView(topic_errors={}))

    def describe_cluster(self) -> ClusterView:
        return self._view(self.call("cluster"), ClusterView())

    def producer(self, *, acks: int = -1, compression: str = "none", idempotent: bool = False,
                 max_request_size: int | None = None, timeout_s: float | None = None) -> ProducerHandle:
        timeout_ms = int((timeout_s or self.timeout_s) * 1000)
        return JavaProducer(self.session, self.call(
            f"producer {acks} {compression} {'true' if idempotent else 'false'} {max_request_size or 1048576} "
            f"{timeout_ms}"))

    def transactional_producer(self, transactional_id: str, *, timeout_s: float | None = None
                               ) -> TransactionalProducerHandle:
        timeout_ms = int((timeout_s or self.timeout_s) * 1000)
        try:
            answer = self.call(f"txn {_enc(transactional_id)} {timeout_ms}")
        except JavaError as e:
            if e.error in _FENCED:
                raise ProducerFenced(f"{e.error}: {e.detail}") from e
            raise
        return JavaTransactionalProducer(self.session, answer)

    def consumer(self, *, group_id: str | None = None, subscribe: Sequence[str] = (),
                 assign: Sequence[TopicPartition] = (), group_instance_id: str | None = None,
                 auto_offset_reset: str = "earliest", allow_auto_create_topics: bool = False,
                 isolation_level: str | None = None, group_protocol: str = "classic") -> ConsumerHandle:
        fields = [_enc(group_id) if group_id else "-", _enc(group_instance_id) if group_instance_id else "-",
                  auto_offset_reset, "true" if allow_auto_create_topics else "false", isolation_level or "-",
                  group_protocol, ",".join(_enc(t) for t in subscribe) or "-",
                  ",".join(_tp(tp) for tp in assign) or "-"]
        return JavaConsumer(self.session, self.call(" ".join(["consumer", *fields])))

    def share_consumer(self, *, group_id: str, subscribe: Sequence[str]) -> ConsumerHandle:
        try:
            answer = self.call(f"share {_enc(group_id)} {','.join(_enc(t) for t in subscribe)}")
        except JavaError as e:
            if e.error == "UnsupportedOperationException":
                raise NotSupported(f"kafka-clients {self.version}: {e.detail}") from e
            raise
        return JavaConsumer(self.session, answer)

    def list_offsets(self, tps: Sequence[TopicPartition], spec: str | int) -> Offsets:
        out: Offsets = {}
        for f in (line.split(" ") for line in self.call(f"list_offsets {spec} " + " ".join(_tp(tp) for tp in tps))):
            out[TopicPartition(_dec(f[1]), int(f[2]))] = max(int(f[3]), -1)
        return out

    def create_topic(self, name: str, partitions: int, replication_factor: int = 1,
                     configs: dict[str, str] | None = None) -> None:
        self.call(" ".join([f"create {_enc(name)} {partitions} {replication_factor}",
                            *(f"{k}={v.encode().hex()}" for k, v in (configs or {}).items())]))

    def delete_topic(self, name: str) -> None:
        self.call(f"delete {_enc(name)}")

    def create_partitions(self, name: str, total: int) -> None:
        self.call(f"partitions {_enc(name)} {total}")

    def describe_configs(self, resource_type: str, name: str) -> dict[str, str]:
        lines = self.call(f"describe_configs {resource_type} {_enc(name)}")
        return {f[1]: bytes.fromhex(f[2]).decode() for f in (line.split(" ") for line in lines)}

    def alter_topic_config(self, name: str, configs: dict[str, str]) -> None:
        self.call(" ".join([f"alter_config {_enc(name)}", *(f"{k}={v.encode().hex()}" for k, v in configs.items())]))

    def delete_records(self, offsets: Offsets) -> Offsets:
        lines = self.call("delete_records " + " ".join(f"{_tp(tp)}:{o}" for tp, o in offsets.items()))
        return {TopicPartition(_dec(f[1]), int(f[2])): int(f[3]) for f in (line.split(" ") for line in lines)}

    def describe_log_dirs(self) -> dict[str, dict[TopicPartition, int]]:
        out: dict[str, dict[TopicPartition, int]] = {}
        for f in (line.split(" ") for line in self.call("log_dirs")):
            out.setdefault(_dec(f[2]), {})[TopicPartition(_dec(f[3]), int(f[4]))] = int(f[5])
        return out

    def list_reassignments(self, tps: Sequence[TopicPartition] | None = None
                           ) -> dict[TopicPartition, tuple[list[int], list[int], list[int]]]:
        lines = self.call(" ".join(["reassignments", *(_tp(tp) for tp in tps or [])]))
        return {TopicPartition(_dec(f[1]), int(f[2])): (_ids(f[3]), _ids(f[4]), _ids(f[5]))
                for f in (line.split(" ") for line in lines)}

    def alter_reassignments(self, targets: dict[TopicPartition, list[int] | None]) -> dict[TopicPartition, str | None]:
        lines = self.call("reassign " + " ".join(f"{_tp(tp)}:{','.join(map(str, r)) if r else '-'}"
                                                 for tp, r in targets.items()))
        return {TopicPartition(_dec(f[1]), int(f[2])): None if f[3] == "OK" else f[3]
                for f in (line.split(" ") for line in lines)}

    def list_groups(self) -> set[str]:
        return {_dec(line.split(" ")[1]) for line in self.call("groups")}

    def describe_group(self, group_id: str) -> GroupDescription:
        state, protocol_type, members, instances = "", "", [], []
        for f in (line.split(" ") for line in self.call(f"describe_group {_enc(group_id)}")):
            if f[0] == "S":
                state, protocol_type = f[1], "" if f[2] == "simple" else "consumer"
            elif f[0] == "M":
                members.append(_dec(f[1]))
                instances.append(None if f[2] == "-" else _dec(f[2]))
        return GroupDescription(group_id, state, protocol_type, tuple(members), tuple(instances))

    def delete_group(self, group_id: str) -> None:
        self.call(f"delete_group {_enc(group_id)}")

    def close(self) -> None:
        if self._session is not None:
            self._session.close()
            self._session = None


def _older_release(version: str) -> type[JavaAdapter]:
    """The adapter of an older kafka-clients release: `java-<major>.<minor>`, the core scenarios only."""
    short = ".".join(version.split(".")[:2])
    return type(f"JavaAdapter{short.replace('.', '')}", (JavaAdapter,), {
        "name": f"java-{short}", "version": version, "scenarios": OLDER_RELEASE_SCENARIOS,
        "__doc__": f"kafka-clients {version} (the core scenarios)."})


OLDER_RELEASES: tuple[type[JavaAdapter], ...] = tuple(_older_release(v) for v in reversed(JAVA_CLIENTS[:-1]))

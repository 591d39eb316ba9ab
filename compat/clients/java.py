"""The Java client (kafka-clients) adapter: runs compat/java/CompatClient.java, compiled once per
classpath with javac into a cache directory, one JVM per operation.

Enabled only with a classpath holding a kafka-clients jar (``--java-classpath`` or
KAFKA_CLIENTS_CLASSPATH); otherwise every scenario skips with that reason. Covers metadata,
produce (all codecs, acks, idempotence, headers, timestamps), manually assigned consumption with
seek and an isolation level, ListOffsets, create/delete topics, DescribeCluster, and a transactional
producer (one long-lived JVM answering a command per line: begin, send, sendOffsetsToTransaction with
the group's ConsumerGroupMetadata, commit, abort); group scenarios are not scripted.
"""

from __future__ import annotations

import hashlib
import queue
import shutil
import subprocess
import tempfile
import threading
from collections.abc import Sequence
from pathlib import Path

from compat.clients.base import (
    ClientAdapter,
    ConsumerHandle,
    Offsets,
    PositionedConsumer,
    ProducerHandle,
    TransactionalProducerHandle,
)
from compat.model import ClusterView, Message, NotSupported, ProduceFailed, ProducerFenced, Record
from storage.values import TopicPartition

SOURCE = Path(__file__).resolve().parent.parent / "java" / "CompatClient.java"
_classpath = ""
_compiled: dict[str, Path] = {}
_lock = threading.Lock()


def set_classpath(classpath: str) -> None:
    global _classpath
    _classpath = classpath


def _hex(b: bytes | None) -> str:
    return "-" if b is None else b.hex()


def _unhex(s: str) -> bytes | None:
    return None if s == "-" else bytes.fromhex(s)


def _compiled_dir() -> Path:
    with _lock:
        if _classpath in _compiled:
            return _compiled[_classpath]
        digest = hashlib.sha256((_classpath + SOURCE.read_text()).encode()).hexdigest()[:12]
        out = Path(tempfile.gettempdir()) / f"compat-java-{digest}"
        if not (out / "CompatClient.class").exists():
            out.mkdir(parents=True, exist_ok=True)
            r = subprocess.run(["javac", "-cp", _classpath, "-d", str(out), str(SOURCE)], capture_output=True,
                               text=True, timeout=120)
            if r.returncode != 0:
                raise RuntimeError(f"javac failed: {r.stderr.strip().splitlines()[:1]}")
        _compiled[_classpath] = out
        return out


def _java(args: list[str], timeout_s: float, stdin: str | None = None) -> list[str]:
    cp = f"{_compiled_dir()}:{_classpath}"
    r = subprocess.run(["java", "-cp", cp, "CompatClient", *args], input=stdin, capture_output=True, text=True,
                       timeout=timeout_s + 30)
    if r.returncode != 0:
        lines = [x for x in r.stderr.splitlines() if "Exception" in x or "Error" in x] or r.stderr.splitlines()
        raise RuntimeError(f"java {args[0]} failed: {(lines or ['exit ' + str(r.returncode)])[0]}")
    return r.stdout.splitlines()


class JavaProducer(ProducerHandle):
    def __init__(self, adapter: JavaAdapter, opts: list[str]) -> None:
        self._a = adapter
        self._opts = opts

    def send(self, topic: str, records: Sequence[Record]) -> list[tuple[int, int]]:
        lines = [_record_line(r) for r in records]
        out = _java(["produce", self._a.bootstrap, topic, *self._opts], self._a.timeout_s, "\n".join(lines) + "\n")
        return _delivered(out)


def _record_line(r: Record) -> str:
    headers = ",".join(f"{k}={v.hex()}" for k, v in r.headers)
    part = "-" if r.partition is None else str(r.partition)
    ts = "-" if r.timestamp_ms is None else str(r.timestamp_ms)
    return f"R {part} {ts} {_hex(r.key)} {_hex(r.value)} {headers}"


def _delivered(out: list[str]) -> list[tuple[int, int]]:
    """(partition, offset) per "OK p o" answer; the first "ERR name msg" raises ProduceFailed."""
    result = []
    for line in out:
        f = line.split(" ", 2)
        if f[0] == "ERR":
            raise ProduceFailed(f[1], f[2] if len(f) > 2 else "")
        if f[0] == "OK":
            result.append((int(f[1]), int(f[2])))
    return result


# Kafka's errors for a producer fenced by a newer instance (ProducerFencedException, InvalidProducerEpochException).
_FENCED = {"PRODUCER_FENCED", "INVALID_PRODUCER_EPOCH"}


class JavaTransactionalProducer(TransactionalProducerHandle):
    """`CompatClient txn`: one JVM holding a KafkaProducer with a transactional.id for the handle's life, one
    command per stdin line and one answer line per command (stdout read by a thread, so every wait is bounded)."""

    def __init__(self, adapter: JavaAdapter, transactional_id: str, timeout_s: float) -> None:
        self._timeout = timeout_s
        cp = f"{_compiled_dir()}:{_classpath}"
        self._proc = subprocess.Popen(
            ["java", "-cp", cp, "CompatClient", "txn", adapter.bootstrap, transactional_id,
             str(int(timeout_s * 1000))],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        self._lines: queue.Queue[str] = queue.Queue()
        threading.Thread(target=self._pump, daemon=True).start()
        self._answer("initTransactions")

    def _pump(self) -> None:
        assert self._proc.stdout is not None  # created with stdout=PIPE
        for line in self._proc.stdout:
            self._lines.put(line.rstrip("\n"))
        self._lines.put("")

    def _read(self, what: str) -> str:
        try:
            line = self._lines.get(timeout=self._timeout + 30)
        except queue.Empty:
            raise TimeoutError(f"the Java client did not answer {what}") from None
        if not line:
            raise RuntimeError(f"the Java client exited during {what}")
        return line

    def _answer(self, what: str) -> None:
        line = self._read(what)
        if line.startswith("ERR "):
            f = line.split(" ", 2)
            if f[1] in _FENCED:
                raise ProducerFenced(f"{f[1]}: {f[2] if len(f) > 2 else ''}")
            raise RuntimeError(f"java {what} failed: {line[4:]}")

    def _command(self, line: str) -> None:
        assert self._proc.stdin is not None  # created with stdin=PIPE
        self._proc.stdin.write(line + "\n")
        self._proc.stdin.flush()

    def begin(self) -> None:
        self._command("B")
        self._answer("beginTransaction")

    def send(self, topic: str, records: Sequence[Record]) -> list[tuple[int, int]]:
        self._command("\n".join([f"S {topic} {len(records)}", *(_record_line(r) for r in records)]))
        out = [self._read("send") for _ in records]
        try:
            return _delivered(out)
        except ProduceFailed as e:
            if e.error in _FENCED:
                raise ProducerFenced(str(e)) from e
            raise

    def send_offsets(self, offsets: dict[TopicPartition, int], group_id: str,
                     consumer: ConsumerHandle | None = None) -> None:
        self._command(" ".join(["O", group_id, *(f"{t}:{p}:{o}" for (t, p), o in offsets.items())]))
        self._answer("sendOffsetsToTransaction")

    def commit(self) -> None:
        self._command("C")
        self._answer("commitTransaction")

    def abort(self) -> None:
        self._command("A")
        self._answer("abortTransaction")

    def close(self) -> None:
        if self._proc.stdin is not None and not self._proc.stdin.closed:
            self._proc.stdin.close()
        try:
            self._proc.wait(30)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait()


class JavaAssignedConsumer(PositionedConsumer):
    name = "the Java runner's consumer"

    def __init__(self, adapter: JavaAdapter, assign: Sequence[TopicPartition], isolation_level: str | None) -> None:
        self._a = adapter
        self._isolation = [] if isolation_level is None else [isolation_level]
        super().__init__(assign, -2)  # -2: Kafka's "earliest"

    def poll(self, max_records: int, timeout_s: float) -> list[Message]:
        got: list[Message] = []
        for tp, pos in self._positions.items():
            out = _java(["consume", self._a.bootstrap, tp.topic, str(tp.partition), str(pos),
                         str(max(1, max_records - len(got))), str(int(max(timeout_s, 3.0) * 1000)),
                         *self._isolation], timeout_s)
            for line in out:
                f = line.split(" ")
                if f[0] != "M":
                    continue
                headers = tuple((h.split("=", 1)[0], bytes.fromhex(h.split("=", 1)[1]))
                                for h in (f[7].split(",") if len(f) > 7 and f[7] else []))
                got.append(Message(f[1], int(f[2]), int(f[3]), _unhex(f[5]), _unhex(f[6]), headers, int(f[4])))
                self._positions[tp] = int(f[3]) + 1
            if len(got) >= max_records:
                break
        return got


class JavaAdapter(ClientAdapter):
    supports_security = False  # its secured settings are not wired yet: a secured target reports it skipped
    name = "java"

    @classmethod
    def unavailable_reason(cls) -> str | None:
        if not _classpath:
            return "no kafka-clients jar given (--java-classpath or KAFKA_CLIENTS_CLASSPATH)"
        if shutil.which("javac") is None or shutil.which("java") is None:
            return "java/javac not on PATH"
        return None

    def cluster(self, topics: Sequence[str] | None = None) -> ClusterView:
        view = ClusterView()
        for line in _java(["metadata", self.bootstrap, *(topics or [])], self.timeout_s):
            f = line.split(" ")
            if f[0] == "B":
                view.brokers[int(f[1])] = (f[2], int(f[3]))
            elif f[0] == "C":
                view.controller_id = int(f[1])
            elif f[0] == "T":
                view.topics.setdefault(f[1], {})[int(f[2])] = int(f[3])
        return view

    def producer(self, *, acks: int = -1, compression: str = "none", idempotent: bool = False,
                 max_request_size: int | None = None, timeout_s: float | None = None) -> ProducerHandle:
        timeout_ms = int((timeout_s or self.timeout_s) * 1000)
        return JavaProducer(self, [str(acks), compression, "true" if idempotent else "false",
                                   str(max_request_size or 1048576), str(timeout_ms)])

    def transactional_producer(self, transactional_id: str, *, timeout_s: float | None = None
                               ) -> TransactionalProducerHandle:
        return JavaTransactionalProducer(self, transactional_id, timeout_s or self.timeout_s)

    def consumer(self, *, group_id: str | None = None, subscribe: Sequence[str] = (),
                 assign: Sequence[TopicPartition] = (), group_instance_id: str | None = None,
                 auto_offset_reset: str = "earliest", allow_auto_create_topics: bool = False,
                 isolation_level: str | None = None, group_protocol: str = "classic") -> ConsumerHandle:
        if group_id is not None or subscribe:
            raise NotSupported("the Java runner scripts no group consumer yet")
        return JavaAssignedConsumer(self, assign, isolation_level)

    def list_offsets(self, tps: Sequence[TopicPartition], spec: str | int) -> Offsets:
        out: Offsets = {}
        for line in _java(["offsets", self.bootstrap, str(spec), *(f"{t}:{p}" for t, p in tps)], self.timeout_s):
            f = line.split(" ")
            if f[0] == "O":
                out[TopicPartition(f[1], int(f[2]))] = max(int(f[3]), -1)
        return out

    def create_topic(self, name: str, partitions: int, replication_factor: int = 1,
                     configs: dict[str, str] | None = None) -> None:
        if configs:
            raise NotSupported("the Java runner creates topics without configs")
        _java(["create", self.bootstrap, name, str(partitions), str(replication_factor)], self.timeout_s)

    def delete_topic(self, name: str) -> None:
        _java(["delete", self.bootstrap, name], self.timeout_s)

    def describe_cluster(self) -> ClusterView:
        view = ClusterView()
        for line in _java(["cluster", self.bootstrap], self.timeout_s):
            f = line.split(" ")
            if f[0] == "I":
                view.cluster_id = f[1]
            elif f[0] == "C":
                view.controller_id = int(f[1])
            elif f[0] == "B":
                view.brokers[int(f[1])] = (f[2], int(f[3]))
        return view

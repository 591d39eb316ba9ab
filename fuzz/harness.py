"""One fuzz run against a broker subprocess, and the invariants checked after it (see `fuzz`)."""

from __future__ import annotations

import asyncio
import random
import re
import struct
import threading
import time
from dataclasses import dataclass, field

import psutil
import uvloop

from broker.testing import BrokerProcess
from fuzz.corpus import CORPORA
from fuzz.mutate import mutate
from protocol import SUPPORTED_VERSIONS, ApiKey, decode_response, encode_request, request_class

ACKED_TOPIC = "fuzz-acked"
# The inter-broker corpus plays a controller: a ZooKeeper-mode broker believes an UpdateMetadata from any controller
# whose epoch is not stale, as Kafka's does, so after that run its metadata cache may list brokers that do not exist
# until it reads the metadata store again. The data checks of that run come after a restart (alive, ApiVersions,
# memory and the log are checked before it).
RESTART_BEFORE_DATA_CHECKS = frozenset({"inter-broker"})
ACKED_RECORDS = 1000
# The broker runs with the file descriptors Kafka's operations guide recommends "as a starting point" (100,000; it
# needs root to raise the hard limit, else as many as the hard limit allows): a mutated CreatePartitions may take a
# topic to 10,000 partitions, within Kafka's bound.
OPEN_FILES = 100_000
# How long the new topic of the checks may take to have a leader: a run may have left the controller creating up
# to 10,000 partitions (Kafka's bound for one request), a few milliseconds of file work each.
NEW_TOPIC_TIMEOUT_S = 90.0
_ANSWER_TIMEOUT_S = 0.2
_MAX_ANSWER_BYTES = 64 << 20


@dataclass
class Report:
    corpus: str
    seed: int
    seconds: float
    connections: int
    sent: int = 0
    answered: int = 0
    closed_by_broker: int = 0
    timed_out: int = 0  # no answer within _ANSWER_TIMEOUT_S (parked requests, acks=0): the sender hangs up
    connect_failures: int = 0
    by_mutation: dict[str, int] = field(default_factory=dict)
    alive: bool = False
    api_versions: bool = False
    acked_read_back: int = 0
    new_topic_round_trip: bool = False
    new_topic_ready_s: float = 0.0  # how long the new topic took to have a leader
    peak_rss_mb: float = 0.0
    tracebacks: int = 0
    exceptions: list[str] = field(default_factory=list)
    error_lines: dict[str, int] = field(default_factory=dict)  # the log's ERROR lines, by what they say
    failures: list[str] = field(default_factory=list)

    @property
    def frames_per_second(self) -> float:
        return self.sent / self.seconds if self.seconds else 0.0

    def table(self) -> str:
        rows = [
            ("frames sent", f"{self.sent:,} ({self.answered:,} answered, {self.closed_by_broker:,} closed by the "
                            f"broker, {self.timed_out:,} unanswered in {_ANSWER_TIMEOUT_S} s), "
                            f"{self.frames_per_second:,.0f}/s"),
            ("process alive", "yes" if self.alive else "NO"),
            ("a fresh connection gets ApiVersions", "yes" if self.api_versions else "NO"),
            (f"the {ACKED_RECORDS:,} records produced before read back",
             "yes" if self.acked_read_back == ACKED_RECORDS else f"NO ({self.acked_read_back} read)"),
            ("a new topic takes a produce and gives it back",
             f"yes (ready in {self.new_topic_ready_s:.1f} s)" if self.new_topic_round_trip else "NO"),
            ("memory (peak RSS)", f"{self.peak_rss_mb:,.0f} MB"),
            ("unhandled exceptions in the log", f"{self.tracebacks} tracebacks"),
        ]
        width = max(len(r[0]) for r in rows)
        head = f"fuzz corpus={self.corpus} seed={self.seed} {self.seconds:.0f} s, {self.connections} connections"
        return "\n".join([head] + [f"  {k.ljust(width)}  {v}" for k, v in rows]
                         + [f"  exception: {e}" for e in self.exceptions]
                         + [f"  ERROR x{n}: {line}" for line, n in sorted(self.error_lines.items(),
                                                                       key=lambda kv: -kv[1])[:10]]
                         + [f"  FAILED: {f}" for f in self.failures])


# ---------------------------------------------------------------- the senders

class _Sender:
    def __init__(self, port: int, frames: list[bytes], seed: int, report: Report) -> None:
        self.port = port
        self.frames = frames
        self.seed = seed
        self.report = report
        self.api_keys = tuple(SUPPORTED_VERSIONS)

    async def run(self, seconds: float, connections: int) -> None:
        deadline = time.monotonic() + seconds
        await asyncio.gather(*(self._worker(i, deadline) for i in range(connections)))

    async def _worker(self, index: int, deadline: float) -> None:
        rng = random.Random(self.seed * 1_000_003 + index)
        report = self.report
        reader: asyncio.StreamReader | None = None
        writer: asyncio.StreamWriter | None = None
        while time.monotonic() < deadline:
            if writer is None:
                try:
                    async with asyncio.timeout(2):
                        reader, writer = await asyncio.open_connection("127.0.0.1", self.port)
                except (OSError, TimeoutError):
                    report.connect_failures += 1
                    await asyncio.sleep(0.05)
                    continue
            assert reader is not None
            frame, declared, kind = mutate(rng, rng.choice(self.frames), self.api_keys)
            report.sent += 1
            report.by_mutation[kind] = report.by_mutation.get(kind, 0) + 1
            try:
                writer.write(struct.pack(">i", declared) + frame)
                if declared != len(frame):  # the rest never comes: give the broker a moment, then hang up
                    await writer.drain()
                    await asyncio.sleep(0.01)
                    raise ConnectionAbortedError
                async with asyncio.timeout(_ANSWER_TIMEOUT_S):
                    (size,) = struct.unpack(">i", await reader.readexactly(4))
                    if not 0 < size <= _MAX_ANSWER_BYTES:
                        raise ConnectionAbortedError
                    await reader.readexactly(size)
                report.answered += 1
            except (asyncio.IncompleteReadError, ConnectionResetError, BrokenPipeError):
                report.closed_by_broker += 1
                writer = _close(writer)
            except TimeoutError:
                report.timed_out += 1
                writer = _close(writer)
            except (ConnectionAbortedError, OSError):
                writer = _close(writer)
        _close(writer)


def _close(writer: asyncio.StreamWriter | None) -> None:
    if writer is not None:
        writer.transport.abort()
    return None


# ---------------------------------------------------------------- the checks, with kafka-python as a user would

def _produce_acked(bootstrap: str, topic: str, count: int) -> list[bytes]:
    from kafka import KafkaProducer

    producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all", linger_ms=5, request_timeout_ms=10000)
    try:
        values = [f"{topic}-{i}".encode() for i in range(count)]
        futures = [producer.send(topic, value=v, partition=0) for v in values]
        for f in futures:
            f.get(timeout=20)
        return values
    finally:
        producer.close(5)


def _read_back(bootstrap: str, topic: str, expected: int, timeout_s: float = 20.0) -> list[bytes]:
    from kafka import KafkaConsumer, TopicPartition

    consumer = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False, fetch_max_wait_ms=100,
                             request_timeout_ms=10000, consumer_timeout_ms=1000)
    try:
        tp = TopicPartition(topic, 0)
        consumer.assign([tp])
        consumer.seek_to_beginning(tp)
        got: list[bytes] = []
        deadline = time.monotonic() + timeout_s
        while len(got) < expected and time.monotonic() < deadline:
            for records in consumer.poll(timeout_ms=500).values():
                got += [r.value for r in records]
        return got
    finally:
        consumer.close()


def _create_topic(bootstrap: str, topic: str, timeout_s: float = 10.0) -> float:
    """Create `topic` and wait until it has a leader; the seconds that took. A run may leave the controller busy with
    a large creation inside Kafka's bounds (a mutated CreatePartitions of 9,999 partitions is tens of seconds of
    file work here): then CreateTopics answers REQUEST_TIMED_OUT while the topic is still being created, and this
    waits for it, up to `timeout_s`."""
    from kafka import KafkaAdminClient
    from kafka.admin import NewTopic
    from kafka.errors import RequestTimedOutError, TopicAlreadyExistsError

    started = time.monotonic()
    admin = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=int(timeout_s * 1000))
    try:
        try:
            admin.create_topics([NewTopic(topic, 1, 1)], timeout_ms=int(timeout_s * 1000))
        except (RequestTimedOutError, TopicAlreadyExistsError):
            pass
        while time.monotonic() - started < timeout_s:
            [described] = admin.describe_topics([topic])
            if described["error_code"] == 0 and all(p["leader_id"] >= 0 for p in described["partitions"]):
                return time.monotonic() - started
            time.sleep(0.2)
        raise TimeoutError(f"topic {topic} had no leader after {timeout_s:.0f} s")
    finally:
        admin.close()


def _api_versions(port: int) -> bool:
    import socket

    request = request_class(ApiKey.API_VERSIONS)[3](client_software_name="fuzz", client_software_version="1")
    request.with_header(correlation_id=42, client_id="fuzz-check")
    frame = encode_request(request)
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
            sock.settimeout(5)
            sock.sendall(struct.pack(">i", len(frame)) + frame)
            data = b""
            while len(data) < 4 or len(data) < 4 + struct.unpack(">i", data[:4])[0]:
                chunk = sock.recv(65536)
                if not chunk:
                    return False
                data += chunk
        response = decode_response(data[4:], ApiKey.API_VERSIONS, 3)
        return response.error_code == 0 and response.header.correlation_id == 42
    except (OSError, ValueError):
        return False


class _RssSampler(threading.Thread):
    def __init__(self, pid: int) -> None:
        super().__init__(name="rss-sampler", daemon=True)
        self.process = psutil.Process(pid)
        self.peak = 0
        self.stop = threading.Event()

    def run(self) -> None:
        while not self.stop.is_set():
            try:
                self.peak = max(self.peak, self.process.memory_info().rss)
            except psutil.Error:
                return
            self.stop.wait(0.2)


_EXCEPTION_LINE = re.compile(r"^(\w+(\.\w+)*(Error|Exception|Exit|Interrupt)\b.*)$")


def _tracebacks(text: str) -> tuple[int, list[str]]:
    """How many tracebacks the log holds, and the exception line of each distinct one (at most 20)."""
    count = 0
    seen: dict[str, None] = {}
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if line.startswith("Traceback (most recent call last)"):
            count += 1
            for later in lines[i + 1:i + 200]:
                m = _EXCEPTION_LINE.match(later)
                if m:
                    seen.setdefault(m.group(1)[:200])
                    break
    return count, list(seen)[:20]


_CONNECTION = re.compile(r"\d+\.\d+\.\d+\.\d+:\d+#\d+")


def _error_lines(text: str) -> dict[str, int]:
    """The log's ERROR lines without their time and connection, counted (handler failures answered
    UNKNOWN_SERVER_ERROR or closed: bugs to look at, though no invariant breaks)."""
    counts: dict[str, int] = {}
    for line in text.splitlines():
        if "] ERROR " in line:
            key = _CONNECTION.sub("<conn>", line.split("] ERROR ", 1)[1])[:200]
            counts[key] = counts.get(key, 0) + 1
    return counts


def run(corpus: str = "clients", seconds: float = 60.0, seed: int = 1, connections: int = 64,
        max_rss_mb: float = 1024.0, overrides: dict[str, str] | None = None) -> Report:
    """Start a broker, acknowledge ACKED_RECORDS records, fuzz it for `seconds`, check the invariants."""
    frames = CORPORA[corpus]()
    report = Report(corpus, seed, seconds, connections)
    broker = BrokerProcess(overrides, open_files_limit=OPEN_FILES)
    broker.start()
    try:
        _create_topic(broker.bootstrap, ACKED_TOPIC)
        acked = _produce_acked(broker.bootstrap, ACKED_TOPIC, ACKED_RECORDS)
        sampler = _RssSampler(broker.pid)
        sampler.start()
        started = time.monotonic()
        try:
            uvloop.run(_Sender(broker.port, frames, seed, report).run(seconds, connections))
        finally:
            report.seconds = time.monotonic() - started
            sampler.stop.set()
            sampler.join()
        report.peak_rss_mb = sampler.peak / 2**20
        report.alive = broker.proc is not None and broker.proc.poll() is None
        report.api_versions = report.alive and _api_versions(broker.port)
        if report.api_versions and corpus in RESTART_BEFORE_DATA_CHECKS:
            broker.stop(timeout=20)
            broker.start()
        if report.api_versions:
            got = _read_back(broker.bootstrap, ACKED_TOPIC, len(acked))
            report.acked_read_back = sum(1 for a, b in zip(got, acked, strict=False) if a == b)
            try:
                fresh = f"fuzz-fresh-{seed}"
                report.new_topic_ready_s = _create_topic(broker.bootstrap, fresh, NEW_TOPIC_TIMEOUT_S)
                values = _produce_acked(broker.bootstrap, fresh, 10)
                report.new_topic_round_trip = _read_back(broker.bootstrap, fresh, 10) == values
            except Exception as e:  # noqa: BLE001 - a failed check is a finding, reported
                report.failures.append(f"new topic: {e!r}")
    finally:
        broker.stop(timeout=20)
        text = broker.log_path.read_text(errors="replace") if broker.log_path.exists() else ""
        report.tracebacks, report.exceptions = _tracebacks(text)
        report.error_lines = _error_lines(text)
        report.log_path = str(broker.log_path)  # type: ignore[attr-defined]
        broker.kill()
    if not report.alive:
        report.failures.append("the broker died")
    if not report.api_versions:
        report.failures.append("no ApiVersions answer on a fresh connection")
    if report.acked_read_back != ACKED_RECORDS:
        report.failures.append(f"{report.acked_read_back} of {ACKED_RECORDS} acknowledged records read back")
    if report.alive and report.api_versions and not report.new_topic_round_trip:
        report.failures.append("a new topic did not take a produce and give it back")
    if report.peak_rss_mb > max_rss_mb:
        report.failures.append(f"peak RSS {report.peak_rss_mb:.0f} MB over {max_rss_mb:.0f} MB")
    if report.tracebacks:
        report.failures.append(f"{report.tracebacks} tracebacks in the broker's log")
    if not report.failures:
        broker.cleanup()  # a failed run keeps its data directory and log (report.log_path)
    return report


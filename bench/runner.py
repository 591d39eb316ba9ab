"""Harness-side helpers: run a load process, prepare topics, profile a broker process.

Contract:
- `LoadProcess(spec)` starts `python -m bench.loads <spec>`; `wait_for("READY", timeout_s)`,
  `send("GO")`, `result(timeout_s) -> dict` (the load's RESULT object with ok=True, else
  `LoadError`). A load that overruns its timeout is killed with its process group.
- `run_load(spec, timeout_s)` = start + result.
- `ensure_partitions(target, base_name, partitions) -> list[(topic, partition)]`: `partitions`
  partitions ready for produce. For our broker and external brokers one topic created with
  CreateTopics; for the mock cluster (no CreateTopics) as many auto-created topics as needed,
  since the mock gives each auto-created topic 4 partitions.
- `delete_topics(target, topics)`: best effort, never raises (the mock has no DeleteTopics).
- `Profiler(pid, path)`: context manager recording the process with py-spy (speedscope format).
"""

from __future__ import annotations

import json
import os
import selectors
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.targets import Target


class LoadError(Exception):
    """A client load failed or timed out."""


class LoadProcess:
    def __init__(self, spec: dict[str, Any]) -> None:
        self.kind = spec["kind"]
        self._stderr = tempfile.TemporaryFile()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "bench.loads", json.dumps(spec)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            start_new_session=True,
        )

    def _readline(self, deadline: float) -> str | None:
        assert self.proc.stdout is not None  # internal invariant: created with stdout=PIPE
        with selectors.DefaultSelector() as sel:
            sel.register(self.proc.stdout, selectors.EVENT_READ)
            if not sel.select(max(0.0, deadline - time.monotonic())):
                return None
        line = self.proc.stdout.readline()
        return line.decode(errors="replace").rstrip("\n") if line else ""

    def _fail(self, message: str) -> LoadError:
        self.kill()
        self._stderr.seek(0)
        tail = self._stderr.read()[-600:].decode(errors="replace").strip()
        return LoadError(f"{self.kind}: {message}" + (f" | stderr: {tail}" if tail else ""))

    def wait_for(self, marker: str, timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        while True:
            line = self._readline(deadline)
            if line is None:
                raise self._fail(f"no {marker} within {timeout_s:.0f}s")
            if line == marker:
                return
            if line == "" or line.startswith("RESULT "):
                raise self._fail(f"exited before {marker}: {line[7:]}")

    def send(self, line: str) -> None:
        assert self.proc.stdin is not None  # internal invariant: created with stdin=PIPE
        self.proc.stdin.write(line.encode() + b"\n")
        self.proc.stdin.flush()

    def result(self, timeout_s: float) -> dict[str, Any]:
        deadline = time.monotonic() + timeout_s
        while True:
            line = self._readline(deadline)
            if line is None:
                raise self._fail(f"timed out after {timeout_s:.0f}s")
            if line == "":
                raise self._fail(f"exited with {self.proc.wait()} and no result")
            if line.startswith("RESULT "):
                break
        self.proc.wait(timeout=10)
        self._stderr.close()
        result = json.loads(line[7:])
        if not result.get("ok"):
            raise LoadError(f"{self.kind}: {result.get('error')}")
        return result

    def kill(self) -> None:
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.proc.wait(timeout=10)


def run_load(spec: dict[str, Any], timeout_s: float) -> dict[str, Any]:
    spec = {"timeout_s": timeout_s, **spec}
    return LoadProcess(spec).result(timeout_s + 5)


def _admin(bootstrap: str) -> Any:
    from confluent_kafka.admin import AdminClient

    return AdminClient({"bootstrap.servers": bootstrap, "log_level": 3})


def _wait_leaders(bootstrap: str, topic: str, partitions: int, timeout_s: float, isr: int = 1) -> None:
    admin = _admin(bootstrap)
    deadline = time.monotonic() + timeout_s
    seen = -1
    while time.monotonic() < deadline:
        metadata = admin.list_topics(topic, timeout=max(1.0, deadline - time.monotonic()))
        meta = metadata.topics.get(topic)
        if meta is not None and meta.error is None:
            seen = sum(1 for p in meta.partitions.values() if p.leader >= 0 and p.error is None and len(p.isrs) >= isr)
            if seen >= partitions:
                return
        time.sleep(0.05)
    raise LoadError(
        f"topic {topic}: {seen} of {partitions} partitions have a leader and {isr} in-sync replicas "
        f"after {timeout_s:.0f}s"
    )


def ensure_partitions(
    target: Target, base_name: str, partitions: int, timeout_s: float = 60, replication_factor: int = 1
) -> list[tuple[str, int]]:
    if target.kind == "mock":
        # The mock picks the replication factor itself: min(3, its broker count).
        return _mock_partitions(target.bootstrap, base_name, partitions, timeout_s)
    from confluent_kafka import KafkaError
    from confluent_kafka.admin import NewTopic

    admin = _admin(target.bootstrap)
    deadline = time.monotonic() + timeout_s
    while True:
        remaining = max(1.0, deadline - time.monotonic())
        futures = admin.create_topics(
            [NewTopic(base_name, partitions, replication_factor)],
            operation_timeout=remaining,
            request_timeout=remaining,
        )
        try:
            futures[base_name].result(timeout=remaining + 5)
            break
        except Exception as exc:  # noqa: BLE001 - KafkaException carries the broker's error
            code = exc.args[0].code() if exc.args and isinstance(exc.args[0], KafkaError) else None
            if code == KafkaError.TOPIC_ALREADY_EXISTS:
                break  # an earlier attempt that timed out on our side did create it
            # A cluster that just started may not have elected its controller yet.
            retriable = code in (KafkaError._TIMED_OUT, KafkaError.NOT_CONTROLLER, KafkaError._TRANSPORT)
            if not retriable or time.monotonic() + 0.5 >= deadline:
                raise LoadError(f"CreateTopics {base_name} ({partitions} partitions): {exc}") from exc
            time.sleep(0.5)
    _wait_leaders(target.bootstrap, base_name, partitions, timeout_s, isr=replication_factor)
    return [(base_name, p) for p in range(partitions)]


def _mock_partitions(bootstrap: str, base_name: str, partitions: int, timeout_s: float) -> list[tuple[str, int]]:
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "log_level": 3})
    deadline = time.monotonic() + timeout_s
    tps: list[tuple[str, int]] = []
    index = 0
    while len(tps) < partitions:
        if time.monotonic() > deadline:
            raise LoadError(f"mock: only {len(tps)} of {partitions} partitions auto-created in time")
        topic = f"{base_name}-{index}"
        meta = producer.list_topics(topic, timeout=10).topics.get(topic)
        if meta is None or meta.error is not None or not meta.partitions:
            time.sleep(0.05)
            continue
        tps += [(topic, p) for p in sorted(meta.partitions)]
        index += 1
    return tps[:partitions]


def delete_topics(target: Target, topics: set[str], timeout_s: float = 15.0) -> str | None:
    """Best effort and bounded in time; returns the failure (for a note), None when deleted or skipped."""
    if target.kind == "mock" or not topics:
        return None
    # Keep the client referenced until the futures resolve: a collected AdminClient fails them with _DESTROY.
    admin = _admin(target.bootstrap)
    try:
        futures = admin.delete_topics(sorted(topics), operation_timeout=timeout_s, request_timeout=timeout_s)
        deadline = time.monotonic() + timeout_s + 1
        for future in futures.values():
            future.result(timeout=max(0.1, deadline - time.monotonic()))
    except Exception as exc:  # noqa: BLE001 - cleanup never fails a measurement already made
        return f"DeleteTopics {sorted(topics)[:3]} failed: {type(exc).__name__}: {exc}"
    if not target.wait_removed_from_disk(topics, timeout_s):
        return f"deleted topics {sorted(topics)[:3]} were still on disk after {timeout_s:g}s"
    return None


class Profiler:
    """py-spy attached to `pid` while the block runs; writes a speedscope file at `path`."""

    def __init__(self, pid: int, path: Path, rate: int = 250) -> None:
        self.pid = pid
        self.path = path
        self.rate = rate
        self.error: str | None = None
        self._proc: subprocess.Popen[bytes] | None = None

    def __enter__(self) -> Profiler:
        py_spy = Path(sys.executable).with_name("py-spy")
        self._proc = subprocess.Popen(
            [
                str(py_spy),
                "record",
                "--pid",
                str(self.pid),
                "--rate",
                str(self.rate),
                "--nonblocking",
                "--format",
                "speedscope",
                "--output",
                str(self.path),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        time.sleep(0.3)  # attach before the load starts
        if self._proc.poll() is not None:
            self.error = (self._proc.stderr.read() if self._proc.stderr else b"").decode(errors="replace")[-300:]
        return self

    def __exit__(self, *exc: object) -> None:
        if self._proc is None or self._proc.poll() is not None:
            return
        self._proc.send_signal(signal.SIGINT)  # py-spy writes its output on Ctrl-C
        try:
            _, err = self._proc.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            _, err = self._proc.communicate()
        if not self.path.exists():
            self.error = err.decode(errors="replace")[-300:]

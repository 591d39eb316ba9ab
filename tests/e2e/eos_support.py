"""Exactly-once under failure: what the single-broker and cluster tests share (not a test module).

- `fill_input(bootstrap, topic, n, partitions)`: n unique inputs (``in-<partition>-<i>``) written
  round-robin by an idempotent producer; returns each partition's values in offset order.
- `Worker`: the consume-transform-produce process (`eos_worker.py`) started with the test's topics, group
  and transactional id; its stdout lines are collected by a thread (`wait_for`, `lines`) and, with its
  stderr (librdkafka's log), kept in the test's directory (`worker-<run>.out`, `.log`). `kill()` is kill -9;
  `finish(timeout)` waits for a clean exit and fails with the worker's last lines otherwise. A run that
  exits HUNG (a librdkafka call blocked far past its timeout, a known client bug: see eos_worker.py) is
  restarted like a killed one and counted in `hangs`.
- `kill_mid_transaction(worker, rng, ...)`: waits until the worker committed a random number of
  transactions and began the next one, then a random short delay: the moment a failure is injected.
- `read_committed_outputs(bootstrap, topic, partitions)`: waits until every partition's last stable offset
  reached its high watermark (no transaction left open, every marker written), then reads each partition
  to its end with a read_committed consumer.
- `assert_exactly_once(inputs, outputs)`: one output per input in each partition, in input order, with
  duplicates, gaps and strangers named when not.
"""

from __future__ import annotations

import os
import queue
import random
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

from confluent_kafka import Consumer, Producer, TopicPartition

WORKER = Path(__file__).with_name("eos_worker.py")
HUNG_EXIT = 3  # eos_worker.HUNG_EXIT
INPUT, OUTPUT = "eos-in", "eos-out"
GROUP, TXN_ID = "eos-group", "eos-worker"


def fill_input(bootstrap: str, topic: str, n: int, partitions: int,
               inputs: dict[int, list[bytes]] | None = None) -> dict[int, list[bytes]]:
    """Produce `n` input records round-robin over the partitions, after those of `inputs` when given (which
    grows), and return the values per partition."""
    inputs = inputs if inputs is not None else {p: [] for p in range(partitions)}
    start = sum(len(values) for values in inputs.values())
    producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True, "linger.ms": 5})
    for i in range(start, start + n):
        p = i % partitions
        value = f"in-{p}-{len(inputs[p])}".encode()
        inputs[p].append(value)
        producer.produce(topic, value, key=value, partition=p)
    assert producer.flush(60) == 0
    return inputs


class Worker:
    def __init__(self, bootstrap: str, expected: int, log_dir: Path, *, batch: int = 20,
                 debug: str = os.environ.get("EOS_WORKER_DEBUG", "")) -> None:
        self.argv = [sys.executable, str(WORKER), "--bootstrap", bootstrap, "--input", INPUT, "--output", OUTPUT,
                     "--group", GROUP, "--transactional-id", TXN_ID, "--expected", str(expected),
                     "--batch", str(batch), "--debug", debug]
        self.log_dir = log_dir
        self.runs = 0
        self.lines: list[str] = []
        self._lines: queue.Queue[str | None] = queue.Queue()
        self.proc: subprocess.Popen | None = None
        self.kills: list[bool] = []  # per injected failure: did it land inside a transaction
        self.hangs = 0  # runs that exited HUNG (a librdkafka hang, see eos_worker.HUNG_AFTER), restarted

    def start(self) -> Worker:
        self.runs += 1
        self.lines.clear()
        self._lines = queue.Queue()
        stderr = open(self.log_dir / f"worker-{self.runs}.log", "wb")
        self.proc = subprocess.Popen(self.argv, stdout=subprocess.PIPE, stderr=stderr, text=True)
        stderr.close()
        out = self.log_dir / f"worker-{self.runs}.out"
        threading.Thread(target=self._read, args=(self.proc, self._lines, out), daemon=True).start()
        return self

    @staticmethod
    def _read(proc: subprocess.Popen, lines: queue.Queue[str | None], out: Path) -> None:
        assert proc.stdout is not None
        with open(out, "w") as f:
            for line in proc.stdout:
                f.write(line)
                f.flush()
                lines.put(line.rstrip("\n"))
        lines.put(None)

    def wait_for(self, pred: Callable[[str], bool], timeout: float, what: str) -> str | None:
        """The first new line matching `pred`; None if the worker exited first."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                line = self._lines.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                break
            if line is None:
                if self._hung():
                    self.start()  # a client hang is one more crash of the worker: restart it, as for kill -9
                    deadline = time.monotonic() + timeout
                    continue
                self._lines.put(None)  # still exited for the next caller
                return None
            self.lines.append(line)
            if line.startswith("FATAL"):
                raise AssertionError(f"worker failed: {line}\n{self.tail()}")
            if pred(line):
                return line
        raise AssertionError(f"timed out after {timeout}s waiting for the worker: {what}\n{self.tail()}")

    def _hung(self) -> bool:
        assert self.proc is not None
        if self.proc.wait(30) != HUNG_EXIT:
            return False
        self.hangs += 1
        return True

    def in_transaction(self) -> bool:
        """Whether the worker's last line so far is BEGIN (lines already printed are taken in first)."""
        while True:
            try:
                line = self._lines.get_nowait()
            except queue.Empty:
                break
            if line is None:
                self._lines.put(None)
                break
            self.lines.append(line)
        return bool(self.lines) and self.lines[-1].startswith("BEGIN")

    def summary(self) -> str:
        return (f"{len(self.kills)} failures injected, {sum(self.kills)} inside a transaction; "
                f"{self.hangs} librdkafka hangs restarted")

    def tail(self, n: int = 30) -> str:
        return "\n".join(self.lines[-n:])

    def kill(self) -> None:
        assert self.proc is not None
        self.proc.kill()
        self.proc.wait()

    def finish(self, timeout: float) -> None:
        self.wait_for(lambda line: line.startswith("EXIT"), timeout, "a clean exit")
        assert self.proc is not None
        code = self.proc.wait(30)
        assert code == 0, f"worker exited {code}\n{self.tail()}"

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.kill()


def kill_mid_transaction(worker: Worker, rng: random.Random, *, most_transactions: int = 3,
                         most_delay: float = 0.15, timeout: float = 60) -> bool:
    """Wait until `worker` committed a random number (0..most_transactions) of further transactions and began
    another, then a random delay up to `most_delay` seconds. False if the worker finished meanwhile."""
    commits = rng.randint(0, most_transactions)
    delay = rng.uniform(0, most_delay)
    for _ in range(commits):
        if worker.wait_for(lambda line: line.startswith(("COMMITTED", "DONE")), timeout, "a commit") is None:
            return False
    if worker.wait_for(lambda line: line.startswith(("BEGIN", "DONE")), timeout, "a transaction") is None:
        return False
    if worker.lines[-1].startswith("DONE"):
        return False
    time.sleep(delay)
    worker.kills.append(worker.in_transaction())
    return True


def _ends(bootstrap: str, topic: str, partitions: int, isolation: str) -> list[int]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "eos-ends", "isolation.level": isolation})
    try:
        return [consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10, cached=False)[1]
                for p in range(partitions)]
    finally:
        consumer.close()


def read_committed_outputs(bootstrap: str, topic: str, partitions: int, timeout: float = 60
                           ) -> dict[int, list[bytes]]:
    deadline = time.monotonic() + timeout
    while True:
        try:
            stable = _ends(bootstrap, topic, partitions, "read_committed")
            if stable == _ends(bootstrap, topic, partitions, "read_uncommitted"):
                break
        except Exception:  # a partition whose leader is still being elected
            stable = []
        if time.monotonic() > deadline:
            raise AssertionError(f"{topic}: the last stable offsets never reached the high watermarks")
        time.sleep(0.2)
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "eos-check", "enable.auto.commit": False,
                         "isolation.level": "read_committed", "enable.partition.eof": True})
    out: dict[int, list[bytes]] = {p: [] for p in range(partitions)}
    at_end: set[int] = {p for p in range(partitions) if stable[p] == 0}
    try:
        consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
        while len(at_end) < partitions:
            if time.monotonic() > deadline:
                raise AssertionError(f"{topic}: partitions {set(range(partitions)) - at_end} not read to the end")
            for m in consumer.consume(1000, 0.5):
                if m.error() is None:
                    out[m.partition()].append(m.value())
                elif m.error().code() == -191:  # _PARTITION_EOF
                    at_end.add(m.partition())
    finally:
        consumer.close()
    return out


def assert_exactly_once(inputs: dict[int, list[bytes]], outputs: dict[int, list[bytes]]) -> None:
    problems = []
    for p, values in inputs.items():
        want = [b"out:" + v for v in values]
        got = outputs.get(p, [])
        if got == want:
            continue
        counts = Counter(got)
        duplicates = sorted(v for v, c in counts.items() if c > 1)
        missing = sorted(set(want) - set(got))
        strangers = sorted(set(got) - set(want))
        problems.append(f"partition {p}: {len(got)} outputs for {len(want)} inputs; {len(duplicates)} duplicated "
                        f"{duplicates[:5]}, {len(missing)} missing {missing[:5]}, strangers {strangers[:5]}"
                        + ("" if duplicates or missing or strangers else "; out of input order"))
    assert not problems, "\n".join(problems)

"""kcat adapter: drives the ``kcat`` binary (librdkafka's CLI) as a user would.

Produce: one kcat -P run per run of records sharing key, headers and partition, one file per
message (so values may be any bytes); records with an empty key or an empty/null value go as a
"key<TAB>value" line on stdin (kcat skips empty files), with -Z for a null value. kcat cannot set
per-message timestamps and does not print offsets, so ``reports_produce_offsets`` is False.
Consume: kcat -C (manual assignment, from a tracked position) or kcat -G (balanced group
consumer, which commits what it consumed when it exits). Output uses a length-prefixed format
(%K/%S) so binary keys and values survive. ListOffsets: kcat -Q. kcat has no admin commands.
Transactions: one kcat -P run with -X transactional.id per transaction (see KcatTransactionalProducer);
isolation.level goes to the consumer with -X.
"""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import tempfile
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import IO

from compat.clients.base import (
    ClientAdapter,
    ConsumerHandle,
    Offsets,
    PositionedConsumer,
    TransactionalProducerHandle,
)
from compat.model import ClusterView, Message, NotSupported, ProduceFailed, ProducerFenced, Record
from storage.values import TopicPartition

_MARK = b"@@KCAT@@"
_FORMAT = "@@KCAT@@ %t %p %o %T %K %S %h\\n%k%s\\n"
# kcat 1.7.1's stdin read size (fread of min(1024, message.max.bytes)).
_KCAT_READ_CHUNK = 1024
# librdkafka's delivery error strings -> Kafka's error names
_ERRORS = {"Message size too large": "MESSAGE_TOO_LARGE", "Unknown topic or partition": "UNKNOWN_TOPIC_OR_PARTITION",
           "Message timed out": "REQUEST_TIMED_OUT", "too large": "MESSAGE_TOO_LARGE"}

# librdkafka's text for the Metadata topic errors the scenarios look at.
_KCAT_TOPIC_ERRORS = {"Broker: Unknown topic or partition": 3, "Broker: Invalid topic": 17}



def _run(args: list[str], timeout_s: float, stdin: bytes | None = None) -> tuple[int, bytes, str]:
    """Run kcat; on timeout kill it and return what it printed so far (rc -9)."""
    proc = subprocess.Popen(["kcat", *args], stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        out, err = proc.communicate(stdin, timeout=timeout_s)
        return proc.returncode, out, err.decode(errors="replace")
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
        return -9, out, err.decode(errors="replace")


def parse_messages(out: bytes) -> list[Message]:
    """Parse kcat output written with _FORMAT."""
    msgs: list[Message] = []
    pos = 0
    while True:
        start = out.find(_MARK, pos)
        if start < 0:
            return msgs
        eol = out.find(b"\n", start)
        if eol < 0:
            return msgs
        fields = out[start + len(_MARK) + 1:eol].decode().split(" ", 6)
        if len(fields) < 6:
            return msgs
        topic, part, offset, ts, klen, vlen = fields[:6]
        hdrs = fields[6] if len(fields) > 6 else ""
        pos = eol + 1
        k, v = int(klen), int(vlen)
        key = None if k < 0 else out[pos:pos + k]
        pos += max(k, 0)
        value = None if v < 0 else out[pos:pos + v]
        pos += max(v, 0) + 1
        headers: list[tuple[str, bytes]] = []
        for h in filter(None, hdrs.split(",")):
            name, _, hv = h.partition("=")
            headers.append((name, hv.encode()))
        msgs.append(Message(topic, int(part), int(offset), key, value, tuple(headers), int(ts)))


def _isolation(level: str | None) -> list[str]:
    return [] if level is None else ["-X", f"isolation.level={level}"]


class KcatAssignedConsumer(PositionedConsumer):
    name = "kcat -C"

    def __init__(self, adapter: KcatAdapter, assign: Sequence[TopicPartition], reset: str,
                 isolation_level: str | None) -> None:
        self._a = adapter
        super().__init__(assign, None)  # None: where auto.offset.reset says
        self._reset = reset
        self._isolation = _isolation(isolation_level)

    def poll(self, max_records: int, timeout_s: float) -> list[Message]:
        got: list[Message] = []
        for tp, pos in self._positions.items():
            start = str(pos) if pos is not None else ("beginning" if self._reset == "earliest" else "end")
            _, out, _ = _run([*self._a.broker_args(), "-C", "-t", tp.topic, "-p", str(tp.partition), "-o", start,
                              "-e", "-c", str(max(1, max_records - len(got))), "-f", _FORMAT, "-q",
                              *self._isolation],
                             max(timeout_s, 5.0))
            msgs = parse_messages(out)
            if msgs:
                self._positions[tp] = msgs[-1].offset + 1
            got.extend(msgs)
            if len(got) >= max_records:
                break
        return got


class KcatGroupConsumer(ConsumerHandle):
    name = "kcat -G"

    def __init__(self, adapter: KcatAdapter, group_id: str, topics: Sequence[str], reset: str,
                 isolation_level: str | None) -> None:
        self._a = adapter
        self._group = group_id
        self._topics = list(topics)
        self._reset = reset
        self._isolation = _isolation(isolation_level)
        self._consumed: dict[TopicPartition, int] = {}

    def poll(self, max_records: int, timeout_s: float) -> list[Message]:
        # Each poll is one kcat -G run: join, consume to the end (-e), commit on exit.
        _, out, _ = _run([*self._a.broker_args(), "-G", self._group, "-X", f"auto.offset.reset={self._reset}",
                          "-e", "-c", str(max(1, max_records)), "-f", _FORMAT, "-q", *self._isolation,
                          *self._topics],
                         max(timeout_s, 10.0))
        msgs = parse_messages(out)
        for m in msgs:
            tp = TopicPartition(m.topic, m.partition)
            self._consumed[tp] = max(self._consumed.get(tp, 0), m.offset + 1)
        return msgs

    def commit(self, offsets: dict[TopicPartition, tuple[int, str]]) -> None:
        # kcat -G commits exactly what it consumed when it exits; any other commit is not expressible.
        for tp, (offset, metadata) in offsets.items():
            if metadata or self._consumed.get(tp) != offset:
                raise NotSupported("kcat commits only the consumed position, without metadata")


class KcatTransactionalProducer(TransactionalProducerHandle):
    """One kcat -P run per transaction, as kcat offers transactions: started with -X transactional.id, it inits
    the producer (InitProducerId, which fences an older instance) and begins the transaction before it reads any
    input, produces every stdin line as it reads it, commits at the end of its input, and aborts instead when it
    got SIGINT. So ``begin`` only marks the transaction open, the first ``send`` starts the run (its topic, and
    its partition when every record names the same one, fixed for the run), ``commit`` closes stdin and ``abort``
    sends SIGINT first. kcat reports no delivery while its input is open: ``send`` returns once kcat has the lines
    (offsets -1), and scenarios observe the log with another client. kcat cannot send offsets to a transaction."""

    def __init__(self, adapter: KcatAdapter, transactional_id: str, timeout_s: float) -> None:
        self._a = adapter
        self._id = transactional_id
        self._timeout = timeout_s
        self._open = False
        self._proc: subprocess.Popen[bytes] | None = None
        self._stderr: IO[bytes] | None = None
        self._target: tuple[str, int | None] | None = None
        self._written = 0

    def begin(self) -> None:
        if self._open:
            raise RuntimeError("kcat: a transaction is already open")
        self._open = True

    def send(self, topic: str, records: Sequence[Record]) -> list[tuple[int, int]]:
        if not self._open:
            raise RuntimeError("kcat: send outside a transaction")
        lines = []
        for r in records:
            if r.headers or r.timestamp_ms is not None:
                raise NotSupported("kcat sets headers and timestamps per run, not per transactional record")
            key, value = r.key or b"", r.value or b""
            if not value or b"\t" in key or any(c in key + value for c in (b"\n", b"\r")):
                raise NotSupported("kcat's stdin lines carry only non-empty single-line values")
            lines.append(key + b"\t" + value + b"\n")
        partitions = {r.partition for r in records}
        if len(partitions) != 1:
            raise NotSupported("one kcat run produces to one topic and partition (or all by its partitioner)")
        target = (topic, partitions.pop())
        if self._proc is None:
            self._start(target)
        elif target != self._target:
            raise NotSupported("one kcat run produces to one topic and partition")
        assert self._proc is not None and self._proc.stdin is not None  # started just above
        # kcat up to 1.7.1 reads stdin with fread() in 1 KiB chunks, so a line reaches the producer only once its
        # chunk is full (fixed after 1.7.1 by polling stdin): fill the chunk with empty lines, which kcat skips.
        data = b"".join(lines)
        data += b"\n" * (-(self._written + len(data)) % _KCAT_READ_CHUNK)
        self._written += len(data)
        self._proc.stdin.write(data)
        self._proc.stdin.flush()
        return [(r.partition if r.partition is not None else -1, -1) for r in records]

    def _start(self, target: tuple[str, int | None]) -> None:
        topic, partition = target
        args = ["kcat", *self._a.broker_args(), "-P", "-t", topic, "-K", "\t", "-X", f"transactional.id={self._id}",
                "-m", str(max(1, int(self._timeout)))]
        if partition is not None:
            args += ["-p", str(partition)]
        self._stderr = tempfile.TemporaryFile()
        self._written = 0
        self._proc = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=self._stderr)
        self._target = target

    def _finish(self, abort: bool) -> None:
        if not self._open:
            raise RuntimeError("kcat: no transaction open")
        self._open = False
        proc, stderr, self._proc, self._target = self._proc, self._stderr, None, None
        if proc is None:
            return  # nothing was sent: kcat never started, there is nothing to end
        assert proc.stdin is not None and stderr is not None  # set together in _start
        if abort:
            proc.send_signal(signal.SIGINT)
        proc.stdin.close()
        try:
            rc = proc.wait(self._timeout + 10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            raise TimeoutError(f"kcat did not end its transaction within {self._timeout + 10:.0f}s") from None
        stderr.seek(0)
        err = stderr.read().decode(errors="replace")
        stderr.close()
        lines = [line for line in err.splitlines() if "error" in line.lower() or "fatal" in line.lower()]
        if "fenced" in err.lower():
            raise ProducerFenced(f"kcat: {(lines or err.splitlines() or ['fenced'])[0].strip()}")
        done = "Aborting transaction" if abort else "Transaction successfully committed"
        if rc != 0 or lines or done not in err:
            raise RuntimeError(f"kcat {'abort' if abort else 'commit'} failed (exit {rc}): "
                               f"{(lines or err.strip().splitlines() or ['no output'])[0]}")

    def send_offsets(self, offsets: dict[TopicPartition, int], group_id: str,
                     consumer: ConsumerHandle | None = None) -> None:
        raise NotSupported("kcat cannot send offsets to a transaction (no send_offsets_to_transaction)")

    def commit(self) -> None:
        self._finish(abort=False)

    def abort(self) -> None:
        self._finish(abort=True)

    def close(self) -> None:
        if self._proc is not None:
            self._proc.kill()
            self._proc.wait()
            self._proc = None
        if self._stderr is not None:
            self._stderr.close()
            self._stderr = None


class KcatAdapter(ClientAdapter):
    name = "kcat"
    reports_produce_offsets = False
    distinguishes_empty_from_null = False

    @classmethod
    def unavailable_reason(cls) -> str | None:
        return None if shutil.which("kcat") else "kcat binary not on PATH (apt-get install kcat)"

    def broker_args(self) -> list[str]:
        """`-b` and, for a secured target, its settings as `-X` properties (librdkafka's names)."""
        args = ["-b", self.bootstrap]
        for key, value in (self.security.librdkafka() if self.security is not None else {}).items():
            args += ["-X", f"{key}={value}"]
        return args

    def cluster(self, topics: Sequence[str] | None = None) -> ClusterView:
        view = ClusterView(topic_errors={})
        for topic in (topics or [None]):
            args = [*self.broker_args(), "-L", "-J", "-X", "allow.auto.create.topics=false",
                    "-m", str(int(self.timeout_s))]
            if topic is not None:
                args += ["-t", topic]
            rc, out, err = _run(args, self.timeout_s + 5)
            if rc != 0:
                raise RuntimeError(f"kcat -L failed: {err.strip().splitlines()[-1:] or rc}")
            md = json.loads(out)
            view.controller_id = md.get("controllerid")
            for b in md["brokers"]:
                host, _, port = b["name"].rpartition(":")
                view.brokers[b["id"]] = (host, int(port))
            for t in md["topics"]:
                if t.get("error"):
                    # kcat prints librdkafka's text for the broker's code.
                    view.topic_errors[t["topic"]] = _KCAT_TOPIC_ERRORS.get(t["error"], -1)  # type: ignore[index]
                    continue
                view.topics[t["topic"]] = {p["partition"]: p["leader"] for p in t["partitions"]}
        return view

    def produce(self, topic: str, records: Sequence[Record], *, acks: int = -1, compression: str = "none",
                idempotent: bool = False, max_request_size: int | None = None,
                timeout_s: float | None = None) -> list[tuple[int, int]]:
        if any(r.timestamp_ms is not None for r in records):
            raise NotSupported("kcat cannot set per-message timestamps")
        timeout = timeout_s or self.timeout_s
        base = [*self.broker_args(), "-P", "-t", topic, "-X", f"acks={acks}", "-z", compression,
                "-X", f"message.timeout.ms={int(timeout * 1000)}"]
        if idempotent:
            base += ["-X", "enable.idempotence=true"]
        if max_request_size:
            base += ["-X", f"message.max.bytes={max_request_size}"]
        # Consecutive records of one partition with the same key and headers share a kcat run; runs
        # of different partitions may interleave, so each partition keeps its order. Records with an
        # empty or null value go one per run (stdin mode).
        groups: list[list[Record]] = []
        latest: dict[int | None, list[Record]] = {}
        for r in records:
            group = latest.get(r.partition)
            if (group is not None and self._file_mode(r) and self._file_mode(group[0])
                    and (group[0].key, group[0].headers) == (r.key, r.headers)):
                group.append(r)
                continue
            latest[r.partition] = [r]
            groups.append(latest[r.partition])
        with tempfile.TemporaryDirectory(prefix="kcat-") as tmp:
            for group in groups:
                first = group[0]
                args = list(base)
                if first.partition is not None:
                    args += ["-p", str(first.partition)]
                for name, value in first.headers:
                    args += ["-H", f"{name}={value.decode()}"]
                stdin: bytes | None = None
                if self._file_mode(first):
                    if first.key is not None:
                        args += ["-k", first.key.decode()]
                    for r in group:
                        f = Path(tmp) / uuid.uuid4().hex
                        f.write_bytes(r.value or b"")
                        args.append(str(f))
                else:
                    # kcat skips empty files and empty lines, so empty or null values go as one
                    # "key<TAB>value" line on stdin (-Z makes the empty value null).
                    if first.key is None or b"\t" in first.key or b"\n" in (first.key + (first.value or b"")):
                        raise NotSupported("kcat cannot produce an empty or null value without a key")
                    args += ["-K", "\t"] + (["-Z"] if first.value is None else [])
                    stdin = first.key + b"\t" + (first.value or b"") + b"\n"
                rc, _, err = _run(args, timeout + 10, stdin=stdin)
                failed = [line for line in err.splitlines() if "failed" in line.lower() or "error" in line.lower()]
                if rc != 0 or failed:
                    line = (failed or err.strip().splitlines() or [f"exit {rc}"])[0]
                    name = next((n for s, n in _ERRORS.items() if s.lower() in line.lower()), "UNKNOWN")
                    if rc == -9:
                        raise TimeoutError(f"kcat -P did not finish within {timeout + 10}s")
                    raise ProduceFailed(name, line)
        return [(r.partition if r.partition is not None else -1, -1) for r in records]

    @staticmethod
    def _file_mode(r: Record) -> bool:
        return bool(r.value) and r.key != b""

    def transactional_producer(self, transactional_id: str, *, timeout_s: float | None = None
                               ) -> TransactionalProducerHandle:
        return KcatTransactionalProducer(self, transactional_id, timeout_s or self.timeout_s)

    def consumer(self, *, group_id: str | None = None, subscribe: Sequence[str] = (),
                 assign: Sequence[TopicPartition] = (), group_instance_id: str | None = None,
                 auto_offset_reset: str = "earliest", allow_auto_create_topics: bool = False,
                 isolation_level: str | None = None, group_protocol: str = "classic") -> ConsumerHandle:
        if group_protocol != "classic":
            raise NotSupported("kcat's librdkafka predates the KIP-848 consumer protocol")
        if group_instance_id:
            raise NotSupported("kcat has no static membership option in its group consumer")
        if subscribe:
            if group_id is None:
                raise NotSupported("kcat subscribes only as a balanced group consumer (-G)")
            return KcatGroupConsumer(self, group_id, subscribe, auto_offset_reset, isolation_level)
        if group_id is not None:
            raise NotSupported("kcat cannot commit offsets for a manually assigned consumer")
        return KcatAssignedConsumer(self, assign, auto_offset_reset, isolation_level)

    def list_offsets(self, tps: Sequence[TopicPartition], spec: str | int) -> Offsets:
        ts = {"earliest": -2, "latest": -1}.get(spec, spec) if isinstance(spec, str) else spec
        args = [*self.broker_args(), "-Q"]
        for tp in tps:
            args += ["-t", f"{tp.topic}:{tp.partition}:{ts}"]
        rc, out, err = _run(args, self.timeout_s + 5)
        if rc != 0:
            raise RuntimeError(f"kcat -Q failed: {err.strip() or rc}")
        got: Offsets = {}
        for line in out.decode().splitlines():
            # "<topic> [<partition>] offset <offset>"
            parts = line.split()
            if len(parts) == 4 and parts[2] == "offset":
                got[TopicPartition(parts[0], int(parts[1].strip("[]")))] = max(int(parts[3]), -1)
        missing = [tp for tp in tps if tp not in got]
        if missing:
            raise RuntimeError(f"kcat -Q returned no offset for {missing}: {err.strip()}")
        return got

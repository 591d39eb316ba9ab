"""kcat adapter: drives the ``kcat`` binary (librdkafka's CLI) as a user would.

Produce: one kcat -P run per run of records sharing key, headers and partition, one file per
message (so values may be any bytes); records with an empty key or an empty/null value go as a
"key<TAB>value" line on stdin (kcat skips empty files), with -Z for a null value. kcat cannot set
per-message timestamps and does not print offsets, so ``reports_produce_offsets`` is False.
Consume: kcat -C (manual assignment, from a tracked position) or kcat -G (balanced group
consumer, which commits what it consumed when it exits). Output uses a length-prefixed format
(%K/%S) so binary keys and values survive. ListOffsets: kcat -Q. kcat has no admin commands.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
import uuid
from collections.abc import Sequence
from pathlib import Path

from compat.clients.base import ClientAdapter, ConsumerHandle, Offsets, PositionedConsumer
from compat.model import ClusterView, Message, NotSupported, ProduceFailed, Record
from storage.values import TopicPartition

_MARK = b"@@KCAT@@"
_FORMAT = "@@KCAT@@ %t %p %o %T %K %S %h\\n%k%s\\n"
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


class KcatAssignedConsumer(PositionedConsumer):
    name = "kcat -C"

    def __init__(self, adapter: KcatAdapter, assign: Sequence[TopicPartition], reset: str) -> None:
        self._a = adapter
        super().__init__(assign, None)  # None: where auto.offset.reset says
        self._reset = reset

    def poll(self, max_records: int, timeout_s: float) -> list[Message]:
        got: list[Message] = []
        for tp, pos in self._positions.items():
            start = str(pos) if pos is not None else ("beginning" if self._reset == "earliest" else "end")
            _, out, _ = _run(["-b", self._a.bootstrap, "-C", "-t", tp.topic, "-p", str(tp.partition), "-o", start,
                              "-e", "-c", str(max(1, max_records - len(got))), "-f", _FORMAT, "-q"],
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

    def __init__(self, adapter: KcatAdapter, group_id: str, topics: Sequence[str], reset: str) -> None:
        self._a = adapter
        self._group = group_id
        self._topics = list(topics)
        self._reset = reset
        self._consumed: dict[TopicPartition, int] = {}

    def poll(self, max_records: int, timeout_s: float) -> list[Message]:
        # Each poll is one kcat -G run: join, consume to the end (-e), commit on exit.
        _, out, _ = _run(["-b", self._a.bootstrap, "-G", self._group, "-X", f"auto.offset.reset={self._reset}",
                          "-e", "-c", str(max(1, max_records)), "-f", _FORMAT, "-q", *self._topics],
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


class KcatAdapter(ClientAdapter):
    name = "kcat"
    reports_produce_offsets = False
    distinguishes_empty_from_null = False

    @classmethod
    def unavailable_reason(cls) -> str | None:
        return None if shutil.which("kcat") else "kcat binary not on PATH (apt-get install kcat)"

    def cluster(self, topics: Sequence[str] | None = None) -> ClusterView:
        view = ClusterView(topic_errors={})
        for topic in (topics or [None]):
            args = ["-b", self.bootstrap, "-L", "-J", "-X", "allow.auto.create.topics=false",
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
        base = ["-b", self.bootstrap, "-P", "-t", topic, "-X", f"acks={acks}", "-z", compression,
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

    def consumer(self, *, group_id: str | None = None, subscribe: Sequence[str] = (),
                 assign: Sequence[TopicPartition] = (), group_instance_id: str | None = None,
                 auto_offset_reset: str = "earliest", allow_auto_create_topics: bool = False) -> ConsumerHandle:
        if group_instance_id:
            raise NotSupported("kcat has no static membership option in its group consumer")
        if subscribe:
            if group_id is None:
                raise NotSupported("kcat subscribes only as a balanced group consumer (-G)")
            return KcatGroupConsumer(self, group_id, subscribe, auto_offset_reset)
        if group_id is not None:
            raise NotSupported("kcat cannot commit offsets for a manually assigned consumer")
        return KcatAssignedConsumer(self, assign, auto_offset_reset)

    def list_offsets(self, tps: Sequence[TopicPartition], spec: str | int) -> Offsets:
        ts = {"earliest": -2, "latest": -1}.get(spec, spec) if isinstance(spec, str) else spec
        args = ["-b", self.bootstrap, "-Q"]
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

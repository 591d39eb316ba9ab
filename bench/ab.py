"""Interleaved A/B of our broker: two git revisions, or one revision with two sets of overrides.

    python -m bench.ab --base HEAD~3                      # HEAD~3 against the working tree
    python -m bench.ab --b-override socket.send.buffer.bytes=102400 --consume
    python -m bench.ab --base main --partitions 8 --reps 8 --count 300000
    python -m bench.ab --base 8c33c53 --rf3 --reps 6          # acks=all RF=3 ack latency, 3-broker clusters

Contract: starts one `python -m broker` per side (side A from `--base`, checked out with `git worktree` into
a temporary directory and byte-compiled; side B from this tree), each on a free loopback port with its own
log dir and the side's `--a-override`/`--b-override` properties. Then, for `--reps` rounds, alternating
which side goes first, it runs the same confluent-kafka produce load (`bench.loads`, 1 KiB values) against
each side and, with `--consume`, reads a filled topic back. It prints the medians and all samples of MB/s
and of the broker's CPU seconds per GB, and exits 0; a side that fails to start is an error (exit 1).

With `--rf3` each side is instead a 3-broker cluster on its own ZooKeeper (`python -m broker.local_cluster`, or
`broker.cluster` in trees from before the rooms), min.insync.replicas=2, and each round runs, on a fresh RF=3 topic
of one partition, an idempotent confluent-kafka producer (acks=all, 1 KiB records) at `--rate` msg/s
(`bench.loads` kind `ack_latency`, `--linger-ms`): it prints the medians and samples of the ack latency p50/p99
(produce() to delivery report), of the producer process's CPU (cores) and of the three brokers' CPU (cores).

Why: on this 2-core VM a single run moves by ±20% with the machine's memory state (see bench/machine.py), so
a code change is judged by running both versions in the same minutes, side by side, many times.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.runner import delete_topics, ensure_partitions, run_load
from bench.targets import AttachedTarget, OurBrokerCli, cpu_seconds_of, wait_topics_gone
from bench.wire import wait_for_api_versions

KIB = 1024
_REPO = Path(__file__).resolve().parent.parent


class _Side:
    """One broker under comparison: `python -m broker` run from `tree`."""

    def __init__(self, name: str, tree: Path, overrides: dict[str, str], work: Path) -> None:
        self.name = name
        self.broker = OurBrokerCli(work / f"{name}-data", {"log.segment.delete.delay.ms": "0", **overrides})
        self.broker.spawn(cwd=tree)
        self.target = AttachedTarget(name, "ours", self.broker.bootstrap, self.broker.pid)
        self.samples: dict[str, list[tuple[float, float]]] = {"produce": [], "consume": []}


class _ClusterSide:
    """One side of an `--rf3` run: ZooKeeper and three brokers of `tree`, started by the tree's own cluster
    module (a child process in its own session, so that stopping it reaches the brokers too)."""

    def __init__(self, name: str, tree: Path, overrides: dict[str, str], work: Path) -> None:
        self.name = name
        self.data_dir = work / f"{name}-cluster"
        module = "broker.local_cluster" if (tree / "broker" / "local_cluster.py").exists() else "broker.cluster"
        cmd = [sys.executable, "-m", module, "--brokers", "3", "--data-dir", str(self.data_dir)]
        for key, value in {"min.insync.replicas": "2", "log.segment.delete.delay.ms": "0", **overrides}.items():
            cmd += ["--override", f"{key}={value}"]
        self.log_path = work / f"{name}-cluster.out"
        self._log = self.log_path.open("wb")
        self.proc = subprocess.Popen(cmd, cwd=tree, stdout=self._log, stderr=subprocess.STDOUT,
                                     start_new_session=True)
        self.bootstrap = ""
        self.target: AttachedTarget | None = None
        self.samples: list[dict[str, float]] = []

    def wait_started(self, timeout_s: float = 120) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            text = self.log_path.read_text(errors="replace")
            for line in text.splitlines():
                if line.startswith("bootstrap.servers="):
                    self.bootstrap = line.split("=", 1)[1].strip()
                    self.target = AttachedTarget(self.name, "ours", self.bootstrap)
                    return
            if self.proc.poll() is not None:
                raise RuntimeError(f"{self.name}: the cluster exited: {text[-2000:]}")
            time.sleep(0.2)
        raise RuntimeError(f"{self.name}: no cluster after {timeout_s:.0f} s")

    def _children(self) -> dict[int, list[bytes]]:
        """The cluster process's children (brokers and ZooKeeper's JVM) and their command lines."""
        children = {}
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                stat = (entry / "stat").read_text()
                cmdline = (entry / "cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == self.proc.pid:
                children[int(entry.name)] = cmdline
        return children

    def broker_pids(self) -> list[int]:
        """The children that run `python -m broker` (ZooKeeper's JVM is left out)."""
        return [pid for pid, cmdline in self._children().items() if b"broker" in cmdline and b"-m" in cmdline]

    def wait_topic_gone(self, topic: str, timeout_s: float) -> bool:
        deadline = time.monotonic() + timeout_s
        while any(self.data_dir.glob(f"broker*/**/{topic}-*")):
            if time.monotonic() > deadline:
                return False
            time.sleep(0.1)
        return True

    def stop(self) -> None:
        # Named before the signal: a cluster stopped while it was still starting dies without stopping its
        # children, and ZooKeeper runs in a session of its own, out of reach of killpg.
        children = self._children() if self.proc.poll() is None else {}
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)  # controlled shutdown of the brokers, then ZooKeeper
            try:
                self.proc.wait(60)
            except subprocess.TimeoutExpired:
                pass
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)  # whatever of the session is still there
        except ProcessLookupError:
            pass
        for pid, cmdline in children.items():
            try:
                if Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0") == cmdline:  # not a reused pid
                    os.kill(pid, signal.SIGKILL)
            except (OSError, ProcessLookupError):
                pass  # gone already, as after a clean stop
        self._log.close()


def _rf3_round(side: _ClusterSide, rep: int, args: argparse.Namespace) -> dict[str, float]:
    assert side.target is not None
    topic = f"ab-rf3-{rep}"
    tps = ensure_partitions(side.target, topic, 1, 60, replication_factor=3)  # outside the measurement
    pids = side.broker_pids()
    before = [cpu_seconds_of(pid) or 0.0 for pid in pids]
    started = time.monotonic()
    result = run_load({"kind": "ack_latency", "bootstrap": side.bootstrap, "tp": tps[0], "rate": args.rate,
                       "count": args.count, "warmup": args.count // 10, "size": KIB,
                       "client_conf": {"linger.ms": args.linger_ms}}, 120)
    seconds = time.monotonic() - started
    after = [cpu_seconds_of(pid) or 0.0 for pid in pids]
    if not result.get("ok"):
        raise RuntimeError(f"{side.name}: {result.get('error')}")
    # Gone before the next round, as in the produce A/B: left behind, its pages are written back during the next.
    error = delete_topics(side.target, {topic}) or (
        None if side.wait_topic_gone(topic, 30) else f"{topic} still on disk after 30 s")
    if error:
        raise RuntimeError(f"{side.name}: {error}")
    return {"p50": result["p50_ms"], "p99": result["p99_ms"], "client CPU": result["client_cpu"],
            "brokers CPU": (sum(after) - sum(before)) / seconds, "msg/s": result["msg/s"]}


def _rf3(args: argparse.Namespace, tree_a: Path, overrides_a: dict[str, str], overrides_b: dict[str, str],
         work: Path) -> int:
    sides: list[_ClusterSide] = []
    try:
        for name, tree, overrides in (("A", tree_a, overrides_a), ("B", _REPO, overrides_b)):
            sides.append(_ClusterSide(name, tree, overrides, work))
        for side in sides:
            side.wait_started()
        for rep in range(args.reps):
            for side in sides if rep % 2 == 0 else sides[::-1]:
                side.samples.append(_rf3_round(side, rep, args))
                print(f"rep {rep} {side.name}: " + "  ".join(f"{k} {v:.3g}" for k, v in side.samples[-1].items()),
                      flush=True)
        units = {"p50": "ms", "p99": "ms", "client CPU": "cores", "brokers CPU": "cores"}
        for metric, unit in units.items():
            for side in sides:
                values = [round(s[metric], 2) for s in side.samples]
                print(f"{side.name} ack {metric:11s} median {statistics.median(values):7.2f} {unit:5s} {values}")
        print(json.dumps({"A": str(args.base or "working tree"), "B": "working tree", "mode": "rf3",
                          "rate": args.rate, "count": args.count, "linger_ms": args.linger_ms,
                          "a_overrides": args.a_override, "b_overrides": args.b_override}))
        return 0
    finally:
        for side in sides:
            side.stop()


def _overrides(pairs: list[str]) -> dict[str, str]:
    out = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep:
            raise SystemExit(f"override {pair!r} is not key=value")
        out[key] = value
    return out


def _measured(side: _Side, spec: dict[str, Any], data_bytes: float | None) -> tuple[float, float]:
    cpu_before = side.target.cpu_seconds()
    result = run_load({**spec, "bootstrap": side.broker.bootstrap}, 300)
    cpu_after = side.target.cpu_seconds()
    if not result.get("ok"):
        raise RuntimeError(f"{side.name}: {result.get('error')}")
    assert cpu_before is not None and cpu_after is not None  # our own child process
    moved = data_bytes if data_bytes is not None else result["MB/s"] * 1e6 * result["seconds"]
    return result["MB/s"], (cpu_after - cpu_before) / (moved / 1e9)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.ab", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--base", help="git revision for side A (default: the working tree, like side B)")
    parser.add_argument("--a-override", action="append", default=[], metavar="KEY=VALUE")
    parser.add_argument("--b-override", action="append", default=[], metavar="KEY=VALUE")
    parser.add_argument("--reps", type=int, default=6)
    parser.add_argument("--count", type=int, default=None,
                        help="messages per produce run (1 KiB each; default 200,000, with --rf3 30,000)")
    parser.add_argument("--partitions", type=int, default=1)
    parser.add_argument("--acks", default="1")
    parser.add_argument("--compression", default="none")
    parser.add_argument("--consume", action="store_true", help="also read a 512 MiB topic back each round")
    parser.add_argument("--rf3", action="store_true",
                        help="3-broker clusters per side: acks=all RF=3 ack latency and CPU at --rate msg/s")
    parser.add_argument("--rate", type=int, default=10_000, help="--rf3: messages per second")
    parser.add_argument("--linger-ms", type=int, default=1, help="--rf3: the producer's linger.ms")
    args = parser.parse_args(argv)
    if args.count is None:
        args.count = 30_000 if args.rf3 else 200_000

    overrides_a, overrides_b = _overrides(args.a_override), _overrides(args.b_override)  # before starting anything
    work = Path(tempfile.mkdtemp(prefix="bench-ab-"))
    tree_a = work / "base" if args.base else _REPO
    sides: list[_Side] = []
    try:
        if args.base:
            subprocess.run(["git", "-C", str(_REPO), "worktree", "add", "-q", "--detach", str(tree_a), args.base],
                           check=True)
            subprocess.run([sys.executable, "-m", "compileall", "-q", "-j", "0", "protocol", "storage", "broker"],
                           cwd=tree_a, check=True, stdout=subprocess.DEVNULL)
        if args.rf3:
            return _rf3(args, tree_a, overrides_a, overrides_b, work)
        for name, tree, overrides in (("A", tree_a, overrides_a), ("B", _REPO, overrides_b)):
            sides.append(_Side(name, tree, overrides, work))  # one at a time: a failure still stops the first
        for side in sides:
            wait_for_api_versions("127.0.0.1", side.broker.port, time.monotonic() + 30)
        filled_messages = 512 * 1024
        if args.consume:
            for side in sides:
                run_load({"kind": "produce", "bootstrap": side.broker.bootstrap, "tps": [["ab-filled", 0]],
                          "count": filled_messages, "size": KIB, "acks": "1"}, 300)
        for rep in range(args.reps):
            for side in sides if rep % 2 == 0 else sides[::-1]:
                topic = f"ab-{rep}"
                tps = ensure_partitions(side.target, topic, args.partitions)  # outside the measurement
                produce = {"kind": "produce", "tps": tps,
                           "count": args.count, "size": KIB, "acks": args.acks, "compression": args.compression}
                side.samples["produce"].append(_measured(side, produce, args.count * KIB))
                # Gone before the next run: left behind, the data piles up as dirty pages and the kernel's
                # writeback slows every later run (on this VM to 4 s of broker CPU per GB).
                error = delete_topics(side.target, {topic}) or (
                    None if wait_topics_gone(side.broker.log_dir, {topic}, 30) else f"{topic} still on disk after 30 s")
                if error:
                    raise RuntimeError(f"{side.name}: {error}")
                if args.consume:
                    consume = {"kind": "consume", "tps": [["ab-filled", 0]], "expected": filled_messages}
                    side.samples["consume"].append(_measured(side, consume, None))
        for kind in ("produce", "consume"):
            for side in sides:
                samples = side.samples[kind]
                if not samples:
                    continue
                rates = [round(s[0]) for s in samples]
                cpus = [round(s[1], 2) for s in samples]
                print(f"{side.name} {kind:8s} MB/s median {statistics.median(rates):6.0f} {rates}   "
                      f"broker CPU s/GB median {statistics.median(cpus):.2f} {cpus}")
        print(json.dumps({"A": str(args.base or "working tree"), "B": "working tree",
                          "a_overrides": args.a_override, "b_overrides": args.b_override}))
        return 0
    except Exception as exc:  # noqa: BLE001 - one line, not a traceback, for a failed side
        print(f"error: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    finally:
        for side in sides:
            side.broker.stop()
        if args.base:
            subprocess.run(["git", "-C", str(_REPO), "worktree", "remove", "--force", str(tree_a)],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())

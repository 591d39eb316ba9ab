"""Interleaved A/B of our broker: two git revisions, or one revision with two sets of overrides.

    python -m bench.ab --base HEAD~3                      # HEAD~3 against the working tree
    python -m bench.ab --b-override socket.send.buffer.bytes=102400 --consume
    python -m bench.ab --base main --partitions 8 --reps 8 --count 300000

Contract: starts one `python -m broker` per side (side A from `--base`, checked out with `git worktree` into
a temporary directory and byte-compiled; side B from this tree), each on a free loopback port with its own
log dir and the side's `--a-override`/`--b-override` properties. Then, for `--reps` rounds, alternating
which side goes first, it runs the same confluent-kafka produce load (`bench.loads`, 1 KiB values) against
each side and, with `--consume`, reads a filled topic back. It prints the medians and all samples of MB/s
and of the broker's CPU seconds per GB, and exits 0; a side that fails to start is an error (exit 1).

Why: on this 2-core VM a single run moves by ±20% with the machine's memory state (see bench/machine.py), so
a code change is judged by running both versions in the same minutes, side by side, many times.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.runner import delete_topics, ensure_partitions, run_load
from bench.targets import AttachedTarget, OurBrokerCli, wait_topics_gone
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
    parser.add_argument("--count", type=int, default=200_000, help="messages per produce run (1 KiB each)")
    parser.add_argument("--partitions", type=int, default=1)
    parser.add_argument("--acks", default="1")
    parser.add_argument("--compression", default="none")
    parser.add_argument("--consume", action="store_true", help="also read a 512 MiB topic back each round")
    args = parser.parse_args(argv)

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

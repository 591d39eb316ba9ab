"""`python -m bench [--quick] [--target ours,mock,kafka,kafka:VERSION,HOST:PORT] [--scenarios a,b] [--profile]`.

Contract: starts each target, runs every selected scenario with repetitions interleaved across
targets (ours, mock, ours, mock, ...) to cancel machine drift, prints the table of medians with
min–max and ours/peer ratios, and writes `<results-dir>/<timestamp>.json` (see bench.report).
A target that fails to start or a scenario that fails becomes an error row; the run itself
still completes and exits 0. Exit status 2 means bad arguments. The whole run is bounded by
--budget seconds (default 45 with --quick, 570 otherwise): scenarios past it are reported as
skipped. With --profile, scenarios on the produce and fetch hot paths get one extra, uncounted
run against our broker under py-spy, saved as speedscope files next to the JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shutil
import sys
import tempfile
import time
import traceback
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench.machine import page_cache_write
from bench.profile_summary import summarize
from bench.report import JSON_VERSION, Results, render_table
from bench.runner import Profiler
from bench.scenarios import Context, Scenario, build_scenarios
from bench.targets import Target, TargetError, parse_targets


def _log(start: float, message: str) -> None:
    print(f"[{time.monotonic() - start:6.1f}s] {message}", file=sys.stderr, flush=True)


def _select(scenarios: list[Scenario], spec: str | None) -> list[Scenario]:
    if not spec:
        return scenarios
    wanted = [w.strip().lower() for w in spec.split(",") if w.strip()]
    return [s for s in scenarios if any(w in s.id.lower() for w in wanted)]


def _short(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"[:1200]


def _host_info() -> dict[str, Any]:
    import confluent_kafka

    return {
        "cpus": os.cpu_count(),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "confluent_kafka": confluent_kafka.version()[0],
        "librdkafka": confluent_kafka.libversion()[0],
    }


def _page_cache_note(probe: dict[str, float], when: str) -> str:
    return (f"page cache {when}: writing a new file ran at {probe['new_file_MB/s']:,.0f} MB/s, rewriting it at "
            f"{probe['rewrite_MB/s']:,.0f} MB/s; a broker that stores its log cannot produce faster than the first "
            "(the mock keeps data in memory)")


def run(args: argparse.Namespace) -> dict[str, Any]:
    started = time.monotonic()
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    results_dir = Path(args.results_dir)
    results_dir.mkdir(parents=True, exist_ok=True)
    work_dir = Path(tempfile.mkdtemp(prefix="bench-work-"))
    budget = args.budget if args.budget is not None else (45.0 if args.quick else 570.0)
    ctx = Context(
        quick=args.quick,
        work_dir=work_dir,
        results_dir=results_dir,
        stamp=stamp,
        deadline=started + budget,
        profile=args.profile,
    )
    scenarios = _select(build_scenarios(args.quick), args.scenarios)
    try:
        targets = parse_targets(args.target, work_dir)
    except ValueError:
        shutil.rmtree(work_dir, ignore_errors=True)
        raise
    results = Results(scenarios, targets)
    host = _host_info()
    notes = [
        f"{host['cpus']} CPUs: brokers and client loads run in separate processes but share these cores",
        "all loads use confluent-kafka (librdkafka) clients, 1 KiB values; repetitions interleaved",
    ]
    probe_size = (64 if args.quick else 512) * 1024 * 1024
    host["page_cache_write"] = [page_cache_write(work_dir, probe_size)]
    notes.append(_page_cache_note(host["page_cache_write"][0], "at the start"))
    for note in notes:
        _log(started, note)
    profiles: list[dict[str, Any]] = []
    live: list[Target] = []
    start_errors: dict[str, str] = {}
    try:
        for target in targets:
            try:
                target.start()
                live.append(target)
                _log(started, f"target {target.name} up at {target.bootstrap} (pid {target.pid})")
            except (TargetError, OSError) as exc:
                _log(started, f"target {target.name} failed to start: {exc}")
                start_errors[target.name] = f"target did not start: {exc}"
        runs_left = sum(s.reps for s in scenarios) * len(targets)
        for scenario in scenarios:
            for rep in range(scenario.reps):
                for target in targets:
                    runs_left -= 1
                    remaining = ctx.remaining()
                    ctx.run_cap = max(remaining / (runs_left + 1), (0.1 if args.quick else 0.25) * remaining, 3.0)
                    reason = scenario.not_applicable(target)
                    if reason:
                        results.not_applicable(scenario, target, reason)
                        continue
                    own_process = scenario.fresh_broker and target.kind != "external"
                    if target.name in start_errors and not own_process:
                        if rep == 0:
                            results.error(scenario, target, start_errors[target.name])
                        continue
                    if remaining <= 0:
                        results.error(scenario, target, f"skipped rep {rep + 1}: time budget of {budget:g}s used up")
                        continue
                    try:
                        values, run_notes = scenario.run(target, ctx, rep)
                    except Exception as exc:  # noqa: BLE001 - any failure is a row, not a crash
                        if args.verbose:
                            traceback.print_exc()
                        results.error(scenario, target, _short(exc))
                        _log(
                            started,
                            f"{scenario.id} | {target.name} | rep {rep + 1}: ERROR {_short(exc)[:300]}",
                        )
                        continue
                    results.add(scenario, target, values, run_notes)
                    shown = ", ".join(f"{k}={v:.3g}" for k, v in values.items())
                    _log(started, f"{scenario.id} | {target.name} | rep {rep + 1}: {shown}")
            if args.profile and scenario.profiled:
                profiles += _profile(scenario, live, ctx, started)
            for target in live:
                try:
                    scenario.cleanup(target, ctx)
                except Exception as exc:  # noqa: BLE001
                    _log(started, f"cleanup of {scenario.id} on {target.name} failed: {_short(exc)}")
    finally:
        for target in targets:
            target.stop()
        try:
            host["page_cache_write"].append(page_cache_write(work_dir, probe_size))
            notes.append(_page_cache_note(host["page_cache_write"][-1], "at the end"))
        except OSError as exc:
            _log(started, f"page-cache probe at the end failed: {exc}")
        shutil.rmtree(work_dir, ignore_errors=True)
    rows = results.rows()
    report = {
        "version": JSON_VERSION,
        "started_at": stamp,
        "finished_at": datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ"),
        "seconds": time.monotonic() - started,
        "quick": args.quick,
        "host": host,
        "targets": [{"name": t.name, "kind": t.kind} for t in targets],
        "notes": notes,
        "rows": rows,
        "profiles": profiles,
        "errors": [r for r in rows if r["status"] == "error"],
    }
    path = results_dir / f"{stamp}.json"
    path.write_text(json.dumps(report, indent=1))
    report["path"] = str(path)
    return report


def _profile(scenario: Scenario, live: list[Target], ctx: Context, started: float) -> list[dict[str, Any]]:
    out = []
    for target in live:
        if target.kind != "ours" or target.pid is None or ctx.remaining() <= 0:
            continue
        slug = re.sub(r"[^a-zA-Z0-9]+", "-", scenario.id).strip("-").lower()
        path = ctx.results_dir / f"{ctx.stamp}-{slug}-{target.name}.speedscope.json"
        entry: dict[str, Any] = {"scenario": scenario.id, "target": target.name, "path": str(path)}
        profiler = Profiler(target.pid, path)
        try:
            with profiler:
                values, _ = scenario.run(target, ctx, -1)
            entry["values_under_profiler"] = values
        except Exception as exc:  # noqa: BLE001
            entry["error"] = _short(exc)
        if profiler.error:
            entry["error"] = f"py-spy: {profiler.error}"
        elif path.exists():
            try:
                entry["summary"] = summarize(path, 8)
            except ValueError as exc:
                entry["error"] = str(exc)
        _log(started, f"profile {scenario.id} | {target.name}: {entry.get('error') or path}")
        out.append(entry)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="small sizes, ≤ 60 s smoke run")
    parser.add_argument(
        "--target",
        "--targets",
        dest="target",
        default="ours,mock",
        help="comma-separated: ours, mock, kafka (Apache Kafka 4.4.0 started by the bench), kafka:VERSION, "
        "HOST:PORT (default ours,mock)",
    )
    parser.add_argument("--scenarios", help="comma-separated substrings of scenario ids to run (default all)")
    parser.add_argument("--profile", action="store_true", help="py-spy profiles of our broker's hot paths")
    parser.add_argument("--results-dir", default="bench-results")
    parser.add_argument("--budget", type=float, help="seconds for the whole run (default 45 quick, 570 full)")
    parser.add_argument("--list", action="store_true", help="list scenario ids and exit")
    parser.add_argument("-v", "--verbose", action="store_true", help="tracebacks for failing runs")
    args = parser.parse_args(argv)
    if args.list:
        for scenario in _select(build_scenarios(args.quick), args.scenarios):
            print(scenario.id)
        return 0
    try:
        report = run(args)
    except ValueError as exc:
        parser.error(str(exc))
    print(render_table(report["rows"]))
    print()
    for note in report["notes"]:
        print(f"note: {note}")
    for profile in report["profiles"]:
        print(f"profile: {profile['scenario']} -> {profile.get('error') or profile['path']}")
        for row in profile.get("summary", {}).get("self", [])[:5]:
            print(f"    {row['share']:6.1%} self  {row['frame']}")
    print(f"results: {report['path']} ({report['seconds']:.1f}s)")
    return 0

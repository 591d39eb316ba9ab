"""``python -m compat``: run the scenario matrix with every stock client found.

    python -m compat                          # our broker, started here (embedded default)
    python -m compat --cluster 3              # three of ours on a ZooKeeper started here
    python -m compat --bootstrap HOST:PORT    # any running broker, e.g. Apache Kafka
    python -m compat --target ours=127.0.0.1:9092 --target kafka=127.0.0.1:19092   # side by side

Prints the client x scenario table, writes the same as JSON and Markdown (``--out``), and exits
1 when any scenario failed.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import time
from pathlib import Path

from compat import report, runner
from compat.clients import ADAPTERS, configure
from compat.gaps import find_gap, load_gaps
from compat.model import Result, Verdict
from compat.runner import run_matrix
from compat.scenarios import SCENARIOS
from compat.targets import ClusterTarget, EmbeddedTarget, ExternalTarget, MockTarget


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m compat", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    where = p.add_mutually_exclusive_group()
    where.add_argument("--bootstrap", help="run against this running broker instead of starting ours")
    where.add_argument("--target", action="append", default=[], metavar="NAME=HOST:PORT",
                       help="a named running broker; repeat to compare brokers side by side")
    where.add_argument("--cluster", type=int, metavar="N", help="start N of our brokers on a local ZooKeeper")
    where.add_argument("--mock", action="store_true", help="librdkafka's mock cluster (harness development)")
    p.add_argument("--clients", default="",
                   help=f"comma list of {','.join(ADAPTERS)} (default: every client available here)")
    p.add_argument("--scenarios", default="", help="comma list of scenario ids (default: all); --list shows them")
    p.add_argument("--setup-client", choices=["confluent-kafka", "kafka-python"], default=None,
                   help="client that creates fixtures and observes results (default: kafka-python)")
    p.add_argument("--list", action="store_true", help="list scenarios and clients, then exit")
    p.add_argument("--java-classpath", default=os.environ.get("KAFKA_CLIENTS_CLASSPATH", ""),
                   help="classpath holding a kafka-clients jar (enables the java client)")
    p.add_argument("--spark-jars", default=os.environ.get("SPARK_KAFKA_JARS", ""),
                   help="comma/colon list of Spark Kafka connector jars (default: the connector matching the "
                        "installed pyspark, resolved from Maven Central)")
    p.add_argument("--timeout", type=float, default=15.0, help="per-operation timeout in seconds")
    p.add_argument("--limit", type=float, default=90.0, help="hard limit per scenario in seconds")
    p.add_argument("--out", default="compat-report", help="directory for matrix.json and matrix.md")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    configure(java_classpath=args.java_classpath, spark_jars=args.spark_jars)
    if args.mock and not args.setup_client:
        args.setup_client = "confluent-kafka"  # kafka-python cannot bootstrap from librdkafka's mock cluster
    if args.setup_client:
        runner.SETUP_PREFERENCE[:] = [args.setup_client]
    if args.list:
        for s in SCENARIOS.values():
            print(f"{s.id:28} {s.title}")
        print("clients:", ", ".join(f"{n}{'' if c.unavailable_reason() is None else ' (unavailable)'}"
                                    for n, c in ADAPTERS.items()))
        return 0
    clients = []
    not_run = {n: c.unavailable_reason() for n, c in ADAPTERS.items()}
    if not args.clients:
        args.clients = ",".join(n for n, reason in not_run.items() if reason is None)
        for n, reason in not_run.items():
            if reason is not None:
                print(f"# not running {n}: {reason}", file=sys.stderr)
    for name in filter(None, args.clients.split(",")):
        if name not in ADAPTERS:
            print(f"unknown client {name!r}; known: {', '.join(ADAPTERS)}", file=sys.stderr)
            return 2
        clients.append(ADAPTERS[name])
    scenario_ids = [s for s in args.scenarios.split(",") if s] or list(SCENARIOS)
    unknown = [s for s in scenario_ids if s not in SCENARIOS]
    if unknown:
        print(f"unknown scenarios {unknown}; --list shows them", file=sys.stderr)
        return 2

    targets: list[contextlib.AbstractContextManager[object]]
    if args.bootstrap:
        targets = [ExternalTarget(args.bootstrap)]
    elif args.target:
        targets = []
        for spec in args.target:
            name, _, bootstrap = spec.partition("=")
            if not bootstrap:
                print(f"--target wants NAME=HOST:PORT, got {spec!r}", file=sys.stderr)
                return 2
            targets.append(ExternalTarget(bootstrap, name=name))
    elif args.cluster:
        targets = [ClusterTarget(args.cluster)]
    elif args.mock:
        targets = [MockTarget()]
    else:
        targets = [EmbeddedTarget()]

    results: list[Result] = []
    started = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    names = []
    for t in targets:
        with t as target:
            names.append(f"{target.name} ({target.bootstrap})")  # type: ignore[attr-defined]
            print(f"# {target.name} at {target.bootstrap}", file=sys.stderr)  # type: ignore[attr-defined]
            results += run_matrix(target, clients, scenario_ids, timeout_s=args.timeout,  # type: ignore[arg-type]
                                  limit_s=args.limit, on_result=_progress)
    print(report.render_table(results))
    gaps = load_gaps()
    unlisted = [r for r in results if r.verdict is not Verdict.PASS and not r.environmental
                and find_gap(gaps, r.scenario, r.client) is None]
    if unlisted:
        print(f"{len(unlisted)} verdicts are neither PASS nor listed in compat/GAPS.md:")
        for r in unlisted:
            print(f"  {r.verdict.value.upper()} {r.target}/{r.client} {r.scenario}: {r.detail}")
    else:
        print("every verdict that is not PASS is listed in compat/GAPS.md (or needs a missing client/cluster)"
              if any(r.verdict is not Verdict.PASS for r in results) else "everything passed")
    meta: dict[str, object] = {"started": started, "targets": ", ".join(names)}
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "matrix.json").write_text(report.to_json(results, meta))
    (out / "matrix.md").write_text(report.to_markdown(results, meta))
    print(f"wrote {out / 'matrix.json'} and {out / 'matrix.md'}", file=sys.stderr)
    return report.exit_code(results)


def _progress(r: Result) -> None:
    print(f"  {r.verdict.value:4} {r.client:16} {r.scenario:26} {r.seconds:6.1f}s {r.detail}", file=sys.stderr)


if __name__ == "__main__":
    sys.exit(main())

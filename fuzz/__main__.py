"""`python -m fuzz [--corpus clients|inter-broker|all] [--seconds 60] [--seed N] [--connections 64] [--override k=v]`

Runs `fuzz.harness.run` for each corpus asked for and prints the table of issue 30 for each; exits 1 when an
invariant failed. The broker's log is kept (its path is printed) when a run fails.
"""

from __future__ import annotations

import argparse
import logging
import sys

from fuzz.corpus import CORPORA
from fuzz.harness import run


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m fuzz", description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", choices=[*CORPORA, "all"], default="all")
    parser.add_argument("--seconds", type=float, default=60.0, help="per corpus")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--connections", type=int, default=64)
    parser.add_argument("--max-rss-mb", type=float, default=1024.0)
    parser.add_argument("--override", action="append", default=[], metavar="KEY=VALUE",
                        help="a broker config, as `./dev broker --override`")
    args = parser.parse_args(argv)
    overrides = dict(o.split("=", 1) for o in args.override)
    logging.basicConfig(level=logging.WARNING)
    corpora = list(CORPORA) if args.corpus == "all" else [args.corpus]
    failed = False
    for corpus in corpora:
        report = run(corpus, args.seconds, args.seed, args.connections, args.max_rss_mb, overrides)
        print(report.table(), flush=True)
        if report.failures:
            failed = True
            print(f"  broker log: {report.log_path}", flush=True)  # type: ignore[attr-defined]
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

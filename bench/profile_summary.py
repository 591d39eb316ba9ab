"""Summarise a py-spy speedscope profile: `python -m bench.profile_summary FILE [--top N]`.

Contract: `summarize(path, top) -> dict` with "seconds" (total sampled time over all threads),
"self" and "inclusive": lists of {"frame": "name (file:line)", "share": fraction of sampled time},
most expensive first. "self" is where the time was spent, "inclusive" which call paths it came
through; together they say what to optimise next. The file is one we wrote, but it is still
parsed defensively: a malformed profile raises `ValueError`.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path
from typing import Any


def _label(frame: dict[str, Any], with_line: bool) -> str:
    file = str(frame.get("file", "")).rsplit("/", 1)[-1]
    line = f":{frame.get('line')}" if with_line and frame.get("line") is not None else ""
    return f"{frame.get('name', '?')} ({file}{line})"


def summarize(path: Path, top: int = 10) -> dict[str, Any]:
    try:
        data = json.loads(Path(path).read_text())
        frames = data["shared"]["frames"]
        profiles = data["profiles"]
    except (OSError, json.JSONDecodeError, KeyError, TypeError) as exc:
        raise ValueError(f"{path}: not a speedscope profile: {exc}") from exc
    own: Counter[str] = Counter()
    through: Counter[str] = Counter()
    total = 0.0
    for profile in profiles:
        samples = profile.get("samples", [])
        weights = profile.get("weights", [1.0] * len(samples))
        for stack, weight in zip(samples, weights, strict=False):
            total += weight
            if not stack:
                continue
            own[_label(frames[stack[-1]], True)] += weight
            for label in {_label(frames[i], False) for i in stack}:
                through[label] += weight
    if total <= 0:
        return {"seconds": 0.0, "self": [], "inclusive": []}

    def ranked(counter: Counter[str]) -> list[dict[str, Any]]:
        return [{"frame": label, "share": value / total} for label, value in counter.most_common(top)]

    return {"seconds": total, "self": ranked(own), "inclusive": ranked(through)}


def render(summary: dict[str, Any]) -> str:
    lines = [f"sampled {summary['seconds']:.2f}s", "self:"]
    lines += [f"  {row['share']:6.1%}  {row['frame']}" for row in summary["self"]]
    lines.append("inclusive:")
    lines += [f"  {row['share']:6.1%}  {row['frame']}" for row in summary["inclusive"]]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.profile_summary")
    parser.add_argument("files", nargs="+", type=Path)
    parser.add_argument("--top", type=int, default=12)
    args = parser.parse_args(argv)
    status = 0
    for path in args.files:
        print(f"== {path}")
        try:
            print(render(summarize(path, args.top)))
        except ValueError as exc:
            print(f"error: {exc}", file=sys.stderr)
            status = 1
    return status


if __name__ == "__main__":
    sys.exit(main())

"""Collects measurements and renders the table and the JSON file.

Contract: `Results.add(scenario, target, values, notes)`, `.error(scenario, target, message)`,
`.not_applicable(scenario, target, reason)`; `.rows()` returns one dict per
(scenario, metric, target) with keys: scenario, metric, unit, target, target_kind, samples,
median, min, max, ratio (ours/peer median, on peer rows), goal (text), status ("ok", "MISS",
"" when no goal, "error", "n/a"), notes, error. `render_table(rows)` is the text table;
`to_json(...)` the object written to bench-results/<timestamp>.json (keys: version, started_at,
finished_at, quick, host, targets, notes, rows, profiles, errors).
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field
from typing import Any

from bench.scenarios import Metric, Scenario
from bench.targets import Target

JSON_VERSION = 1


@dataclass
class _Cell:
    samples: dict[str, list[float]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    not_applicable: str | None = None


class Results:
    def __init__(self, scenarios: list[Scenario], targets: list[Target]) -> None:
        self.scenarios = scenarios
        self.targets = targets
        self._cells: dict[tuple[str, str], _Cell] = {}

    def _cell(self, scenario: Scenario, target: Target) -> _Cell:
        return self._cells.setdefault((scenario.id, target.name), _Cell())

    def add(self, scenario: Scenario, target: Target, values: dict[str, float], notes: list[str]) -> None:
        cell = self._cell(scenario, target)
        for name, value in values.items():
            cell.samples.setdefault(name, []).append(float(value))
        for note in notes:
            if note not in cell.notes:
                cell.notes.append(note)

    def error(self, scenario: Scenario, target: Target, message: str) -> None:
        self._cell(scenario, target).errors.append(message)

    def not_applicable(self, scenario: Scenario, target: Target, reason: str) -> None:
        self._cell(scenario, target).not_applicable = reason

    def rows(self) -> list[dict[str, Any]]:
        rows = []
        for scenario in self.scenarios:
            ours = next((t for t in self.targets if t.kind == "ours"), None)
            for metric in scenario.metrics:
                ours_median = None
                if ours is not None:
                    ours_samples = self._cell(scenario, ours).samples.get(metric.name)
                    ours_median = statistics.median(ours_samples) if ours_samples else None
                for target in self.targets:
                    rows.append(self._row(scenario, metric, target, ours_median))
        return rows

    def _row(self, scenario: Scenario, metric: Metric, target: Target, ours_median: float | None) -> dict[str, Any]:
        cell = self._cell(scenario, target)
        samples = cell.samples.get(metric.name, [])
        median = statistics.median(samples) if samples else None
        ratio = None
        if metric.compare and target.kind != "ours" and median and ours_median is not None:
            ratio = ours_median / median
        goal, status = _judge(metric, target, median, ratio)
        if cell.not_applicable:
            status = "n/a"
        elif not samples and not (metric.optional and not cell.errors):
            status = "error"
        error = None if metric.optional and not samples and not cell.errors else self._error_text(cell, samples)
        return {
            "scenario": scenario.id,
            "metric": metric.name,
            "unit": metric.unit,
            "higher_is_better": metric.higher_is_better,
            "target": target.name,
            "target_kind": target.kind,
            "samples": samples,
            "median": median,
            "min": min(samples) if samples else None,
            "max": max(samples) if samples else None,
            "ratio": ratio,
            "goal": goal,
            "status": status,
            "notes": cell.notes,
            "error": error,
        }

    @staticmethod
    def _error_text(cell: _Cell, samples: list[float]) -> str | None:
        if cell.errors:
            return "; ".join(cell.errors)
        if cell.not_applicable:
            return f"n/a: {cell.not_applicable}"
        if not samples:
            return "no measurement for this metric (see the notes)"
        return None


def _judge(metric: Metric, target: Target, median: float | None, ratio: float | None) -> tuple[str, str]:
    if target.kind == "ours" and metric.goal is not None:
        op = ">=" if metric.higher_is_better else "<="
        goal = f"{op} {metric.goal:g}"
        if median is None:
            return goal, ""
        met = median >= metric.goal if metric.higher_is_better else median <= metric.goal
        return goal, "ok" if met else "MISS"
    if target.kind == "mock" and metric.peer_ratio_goal is not None:
        goal = f"ours/mock >= {metric.peer_ratio_goal:g}"
        if ratio is None:
            return goal, ""
        return goal, "ok" if ratio >= metric.peer_ratio_goal else "MISS"
    return "", ""


def _fmt(value: float | None) -> str:
    if value is None:
        return "-"
    if abs(value) >= 100:
        return f"{value:,.0f}"
    if abs(value) >= 10:
        return f"{value:.1f}"
    return f"{value:.3g}"


def render_table(rows: list[dict[str, Any]]) -> str:
    """The table, then numbered footnotes for errors, n/a reasons and notes (once each)."""
    header = ["scenario", "metric", "target", "median", "min–max", "unit", "ours/peer", "goal", ""]
    lines = [header]
    footnotes: list[str] = []

    def ref(text: str) -> str:
        if text not in footnotes:
            footnotes.append(text)
        return f"[{footnotes.index(text) + 1}]"

    for row in rows:
        marks = ""
        if row["error"]:
            marks += ref(f"{row['target']}: {row['error'][:500]}")
        for note in row["notes"]:
            marks += ref(f"{row['target']}: {note}")
        if row["median"] is None:
            spread = ""
            median = ("n/a" if row["status"] == "n/a" else "ERROR") + marks
        else:
            spread = f"{_fmt(row['min'])}–{_fmt(row['max'])}"
            median = _fmt(row["median"]) + marks
        unit = row["unit"] + (" ↑" if row["higher_is_better"] else " ↓")
        ratio = f"{row['ratio']:.2f}x" if row["ratio"] is not None else ""
        lines.append(
            [
                row["scenario"],
                row["metric"],
                row["target"],
                median,
                spread,
                unit,
                ratio,
                row["goal"],
                row["status"],
            ]
        )
    widths = [max(len(line[i]) for line in lines) for i in range(len(header))]
    out = ["  ".join(line[i].ljust(widths[i]) for i in range(len(header))).rstrip() for line in lines]
    out.insert(1, "  ".join("-" * w for w in widths))
    out += [""] + [f"[{i + 1}] {text}" for i, text in enumerate(footnotes)]
    return "\n".join(out)

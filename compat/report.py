"""Report writers: a terminal table, JSON, and Markdown, all from the same list of Results.

The table has one row per scenario and one column per (target, client); cells are PASS, FAIL or
SKIP. Details (the first error line of each failure, the reason of each skip) follow the table,
so the grid stays readable. ``exit_code`` is 1 when anything failed, else 0.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from compat.model import Result, Verdict


def _columns(results: Sequence[Result]) -> list[tuple[str, str]]:
    cols: list[tuple[str, str]] = []
    for r in results:
        if (r.target, r.client) not in cols:
            cols.append((r.target, r.client))
    return cols


def _rows(results: Sequence[Result]) -> list[str]:
    rows: list[str] = []
    for r in results:
        if r.scenario not in rows:
            rows.append(r.scenario)
    return rows


def _label(target: str, client: str, multi_target: bool) -> str:
    return f"{target}/{client}" if multi_target else client


def grid(results: Sequence[Result]) -> tuple[list[str], list[list[str]]]:
    """Header and rows of the verdict grid (cell '' when a pair did not run)."""
    cols = _columns(results)
    multi = len({t for t, _ in cols}) > 1
    cells = {(r.target, r.client, r.scenario): r.verdict.value.upper() for r in results}
    header = ["scenario"] + [_label(t, c, multi) for t, c in cols]
    body = [[s] + [cells.get((t, c, s), "") for t, c in cols] for s in _rows(results)]
    return header, body


def summary(results: Sequence[Result]) -> dict[str, int]:
    return {v.value: sum(1 for r in results if r.verdict is v) for v in Verdict}


def details(results: Sequence[Result]) -> list[str]:
    multi = len({r.target for r in results}) > 1
    out = []
    for r in results:
        if r.verdict is not Verdict.PASS:
            out.append(f"{r.verdict.value.upper()} {_label(r.target, r.client, multi)} {r.scenario}: {r.detail}")
    return out


def render_table(results: Sequence[Result]) -> str:
    header, body = grid(results)
    widths = [max(len(row[i]) for row in [header, *body]) for i in range(len(header))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip()
             for row in [header, *body]]
    lines.insert(1, "  ".join("-" * w for w in widths))
    s = summary(results)
    lines.append("")
    lines.append(f"{s['pass']} passed, {s['fail']} failed, {s['skip']} skipped")
    lines.extend(details(results))
    return "\n".join(lines) + "\n"


def to_json(results: Sequence[Result], meta: dict[str, object] | None = None) -> str:
    return json.dumps({"meta": meta or {}, "summary": summary(results),
                       "results": [r.to_dict() for r in results]}, indent=2) + "\n"


def _md_escape(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def to_markdown(results: Sequence[Result], meta: dict[str, object] | None = None) -> str:
    header, body = grid(results)
    icon = {"PASS": "pass", "FAIL": "**FAIL**", "SKIP": "skip", "": ""}
    lines = ["# Compatibility matrix", ""]
    for k, v in (meta or {}).items():
        lines.append(f"- {k}: {v}")
    s = summary(results)
    lines += [f"- result: {s['pass']} passed, {s['fail']} failed, {s['skip']} skipped", ""]
    lines.append("| " + " | ".join(_md_escape(h) for h in header) + " |")
    lines.append("|" + "---|" * len(header))
    for row in body:
        lines.append("| " + " | ".join([_md_escape(row[0])] + [icon[c] for c in row[1:]]) + " |")
    notes = details(results)
    if notes:
        lines += ["", "## Failures and skips", ""] + [f"- {_md_escape(n)}" for n in notes]
    return "\n".join(lines) + "\n"


def exit_code(results: Sequence[Result]) -> int:
    return 1 if any(r.verdict is Verdict.FAIL for r in results) else 0

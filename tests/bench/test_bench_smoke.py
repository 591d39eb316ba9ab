"""`python -m bench --quick` end to end against our broker and the mock cluster.

Checks that the harness runs and reports (table on stdout, JSON with the expected keys, one row
per scenario x metric x target, measurements where the peer can be measured), not speed.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from bench.scenarios import build_scenarios

ROOT = Path(__file__).resolve().parents[2]
ROW_KEYS = {
    "scenario",
    "metric",
    "unit",
    "target",
    "target_kind",
    "samples",
    "median",
    "min",
    "max",
    "ratio",
    "goal",
    "status",
    "notes",
    "error",
}


def test_quick_run_reports_table_and_json(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "bench", "--quick", "--target", "ours,mock", "--results-dir", str(tmp_path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=110,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    files = list(tmp_path.glob("*.json"))
    assert len(files) == 1
    report = json.loads(files[0].read_text())
    assert {"version", "started_at", "quick", "host", "targets", "notes", "rows", "profiles", "errors"} <= set(report)
    # How long it took is reported, never asserted: a loaded machine is slow, not wrong.
    assert report["quick"] is True and report["seconds"] > 0
    assert [t["name"] for t in report["targets"]] == ["ours", "mock"]
    assert any("CPUs" in note for note in report["notes"])

    rows = report["rows"]
    assert all(ROW_KEYS <= set(row) for row in rows)
    expected = {(s.id, m.name, t) for s in build_scenarios(True) for m in s.metrics for t in ("ours", "mock")}
    assert {(r["scenario"], r["metric"], r["target"]) for r in rows} == expected

    by_key = {(r["scenario"], r["metric"], r["target"]): r for r in rows}
    # The mock can always be measured for produce and start-up; recovery there is n/a by design.
    mock_produce = by_key[("produce p=1 acks=1 none", "MB/s", "mock")]
    assert mock_produce["median"] > 0 and mock_produce["samples"]
    assert by_key[("start-up to first ApiVersions", "seconds", "mock")]["median"] > 0
    assert by_key[("recovery of 16 MiB unflushed after kill -9", "data served", "mock")]["status"] == "n/a"
    # Our broker's start-up is measured through its own command line, whatever else it supports yet.
    ours_startup = by_key[("start-up to first ApiVersions", "seconds", "ours")]
    assert ours_startup["median"] and ours_startup["median"] > 0, ours_startup["error"]
    for row in rows:
        assert row["median"] is not None or row["error"], row

    table = proc.stdout
    assert table.splitlines()[0].split()[:4] == ["scenario", "metric", "target", "median"]
    assert "ours/peer" in table and f"results: {files[0]}" in table
    assert "produce p=8 acks=all lz4" in table

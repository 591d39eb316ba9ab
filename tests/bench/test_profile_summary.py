"""bench.profile_summary on a real py-spy recording of a process whose hot function we know."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from bench.profile_summary import main, summarize
from bench.runner import Profiler

BUSY = """
import time

def bench_busy_loop(deadline):
    total = 0
    while time.monotonic() < deadline:
        total += sum(range(200))
    return total

bench_busy_loop(time.monotonic() + 4)
"""


def test_profiler_and_summary_find_the_hot_function(tmp_path: Path) -> None:
    proc = subprocess.Popen([sys.executable, "-c", BUSY])
    path = tmp_path / "busy.speedscope.json"
    try:
        with Profiler(proc.pid, path, rate=200) as profiler:
            time.sleep(1.0)
    finally:
        proc.kill()
        proc.wait()
    assert profiler.error is None
    summary = summarize(path, top=5)
    assert summary["seconds"] > 0.3
    assert summary["self"][0]["frame"].startswith("bench_busy_loop (<string>:")
    assert summary["self"][0]["share"] > 0.5
    assert any(row["frame"].startswith("bench_busy_loop") and row["share"] > 0.9 for row in summary["inclusive"])


def test_malformed_profile_is_a_value_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"profiles": []}')
    with pytest.raises(ValueError, match="not a speedscope profile"):
        summarize(bad)
    assert main([str(bad)]) == 1
    assert "not a speedscope profile" in capsys.readouterr().err

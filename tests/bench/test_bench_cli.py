"""`python -m bench` argument handling: scenario listing and selection, bad targets."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from bench.scenarios import build_scenarios

ROOT = Path(__file__).resolve().parents[2]


def _bench(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "bench", *args], cwd=ROOT, capture_output=True, text=True, timeout=60)


def test_list_prints_every_scenario_id() -> None:
    full = _bench("--list")
    assert full.returncode == 0
    assert full.stdout.splitlines() == [s.id for s in build_scenarios(False)]
    assert "consume 1 GiB from earliest" in full.stdout and "acks=all RF=3 (3 brokers)" in full.stdout
    quick = _bench("--quick", "--list", "--scenarios", "produce,start-up")
    assert quick.stdout.splitlines() == [
        "produce p=1 acks=1 none",
        "produce p=8 acks=all lz4",
        "start-up to first ApiVersions",
    ]


def test_unknown_target_is_a_usage_error(tmp_path: Path) -> None:
    proc = _bench("--quick", "--target", "ours,kafak", "--results-dir", str(tmp_path))
    assert proc.returncode == 2
    assert "unknown target 'kafak'" in proc.stderr
    assert not list(tmp_path.glob("*.json"))


def test_unreachable_external_target_becomes_error_rows(tmp_path: Path) -> None:
    from bench.wire import free_port

    port = free_port()
    proc = _bench(
        "--quick",
        "--target",
        f"127.0.0.1:{port}",
        "--scenarios",
        "start-up,produce p=1",
        "--results-dir",
        str(tmp_path),
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    lines = proc.stdout.splitlines()
    produce = next(line for line in lines if line.startswith("produce p=1 acks=1 none"))
    assert "ERROR[" in produce and "error" in produce.split()[-1]
    startup = next(line for line in lines if line.startswith("start-up to first ApiVersions"))
    assert "n/a[" in startup
    assert any("target did not start" in line for line in lines)

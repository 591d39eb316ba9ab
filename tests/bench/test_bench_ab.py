"""bench.ab: two brokers (a git revision and this tree) measured side by side, alternating."""

from __future__ import annotations

import re

import pytest

from bench import ab


def test_ab_runs_both_sides_and_reports_medians(capsys: pytest.CaptureFixture[str]) -> None:
    code = ab.main(["--base", "HEAD", "--reps", "2", "--count", "2000", "--partitions", "2",
                    "--b-override", "log.segment.bytes=1048576"])
    out = capsys.readouterr().out
    assert code == 0, out
    for side in ("A", "B"):
        line = next(line for line in out.splitlines() if line.startswith(f"{side} produce"))
        rates = re.search(r"MB/s median +\d+ \[(.*?)\]", line)
        assert rates is not None and len(rates.group(1).split(",")) == 2, line
    assert '"b_overrides": ["log.segment.bytes=1048576"]' in out


def test_ab_rejects_an_override_without_a_value_before_starting_a_broker() -> None:
    import psutil

    def brokers() -> set[int]:
        return {p.pid for p in psutil.process_iter(["cmdline"]) if "bench-ab-" in " ".join(p.info["cmdline"] or [])}

    before = brokers()
    with pytest.raises(SystemExit, match="not key=value"):
        ab.main(["--b-override", "log.segment.bytes"])
    assert brokers() == before

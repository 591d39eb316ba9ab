"""The harness itself: verdicts from the runner, the report writers, GAPS.md parsing, kcat's
output parser, and the command line (exit codes, files written)."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from compat import report
from compat.__main__ import main
from compat.clients.kafka_python import KafkaPythonAdapter
from compat.clients.kcat import parse_messages
from compat.context import Context
from compat.gaps import GapsFormatError, find_gap, parse_gaps
from compat.model import CheckFailed, NotSupported, Result, Verdict
from compat.runner import run_one
from compat.scenarios import SCENARIOS, Scenario
from compat.targets import EmbeddedTarget


@pytest.fixture
def temp_scenarios() -> Iterator[dict[str, Scenario]]:
    added: dict[str, Scenario] = {}
    yield added
    for sid in added:
        SCENARIOS.pop(sid, None)


def add(added: dict[str, Scenario], sid: str, fn) -> None:  # type: ignore[no-untyped-def]
    SCENARIOS[sid] = added[sid] = Scenario(sid, sid, fn)


def test_runner_verdicts(compat_target: EmbeddedTarget, temp_scenarios: dict[str, Scenario]) -> None:
    def passes(ctx: Context) -> None:
        assert ctx.client.cluster(None).brokers

    def fails(ctx: Context) -> None:
        raise CheckFailed("first line\nsecond line")

    def skips(ctx: Context) -> None:
        raise NotSupported("no such thing")

    def hangs(ctx: Context) -> None:
        time.sleep(5)

    for sid, fn in (("t_pass", passes), ("t_fail", fails), ("t_skip", skips), ("t_hang", hangs)):
        add(temp_scenarios, sid, fn)

    def one(sid: str) -> Result:
        return run_one(compat_target, KafkaPythonAdapter, sid, setup_cls=KafkaPythonAdapter, limit_s=2.0)

    assert one("t_pass").verdict is Verdict.PASS
    r = one("t_fail")
    assert (r.verdict, r.detail) == (Verdict.FAIL, "CheckFailed: first line")
    assert (one("t_skip").verdict, one("t_skip").detail) == (Verdict.SKIP, "no such thing")
    started = time.monotonic()
    r = one("t_hang")
    assert r.verdict is Verdict.FAIL and "timed out after 2s" in r.detail
    assert time.monotonic() - started < 4


def test_runner_prepares_a_client_outside_the_limit_and_fails_when_it_cannot(
        compat_target: EmbeddedTarget, temp_scenarios: dict[str, Scenario]) -> None:
    calls: list[str] = []

    def passes(ctx: Context) -> None:
        calls.append("scenario")

    add(temp_scenarios, "t_prepared", passes)

    class SlowToPrepare(KafkaPythonAdapter):
        @classmethod
        def prepare(cls) -> None:
            time.sleep(1.5)  # longer than the limit: the limit counts the scenario only
            calls.append("prepare")

    class CannotPrepare(KafkaPythonAdapter):
        @classmethod
        def prepare(cls) -> None:
            raise RuntimeError("Maven is not installed\nmore")

    r = run_one(compat_target, SlowToPrepare, "t_prepared", setup_cls=KafkaPythonAdapter, limit_s=1.0)
    assert r.verdict is Verdict.PASS and calls == ["prepare", "scenario"]
    r = run_one(compat_target, CannotPrepare, "t_prepared", setup_cls=KafkaPythonAdapter, limit_s=1.0)
    assert (r.verdict, r.environmental) == (Verdict.FAIL, False)
    assert r.detail == "kafka-python could not be set up: RuntimeError: Maven is not installed"


RESULTS = [
    Result("ours", "kafka-python", "metadata", Verdict.PASS, "", 0.1),
    Result("ours", "kcat", "metadata", Verdict.FAIL, "CheckFailed: boom | pipe", 0.2),
    Result("ours", "kcat", "seek", Verdict.SKIP, "kcat offers no seek", 0.0),
    Result("ours", "kafka-python", "seek", Verdict.PASS, "", 0.1),
]


def test_table_json_markdown() -> None:
    header, body = report.grid(RESULTS)
    assert header == ["scenario", "kafka-python", "kcat"]
    assert body == [["metadata", "PASS", "FAIL"], ["seek", "PASS", "SKIP"]]
    text = report.render_table(RESULTS)
    assert "2 passed, 1 failed, 1 skipped" in text
    assert "FAIL kcat metadata: CheckFailed: boom | pipe" in text
    data = json.loads(report.to_json(RESULTS, {"target": "x"}))
    assert data["summary"] == {"pass": 2, "fail": 1, "skip": 1}
    assert data["results"][1]["verdict"] == "fail" and data["meta"] == {"target": "x"}
    md = report.to_markdown(RESULTS)
    assert "| metadata | pass | **FAIL** |" in md
    assert "boom \\| pipe" in md  # a pipe in a detail must not break the table
    assert report.exit_code(RESULTS) == 1
    assert report.exit_code([r for r in RESULTS if r.verdict is not Verdict.FAIL]) == 0


def test_side_by_side_columns_name_targets() -> None:
    both = RESULTS[:1] + [Result("kafka", "kafka-python", "metadata", Verdict.PASS)]
    header, _ = report.grid(both)
    assert header == ["scenario", "ours/kafka-python", "kafka/kafka-python"]


def test_gaps_parsing() -> None:
    text = ("| scenario | client | kind | reason |\n|---|---|---|---|\n"
            "| seek | kcat | client | no seek |\n| metadata | * | broker | v99 missing |\n")
    gaps = parse_gaps(text)
    assert [(g.scenario, g.client, g.expected) for g in gaps] == [
        ("seek", "kcat", Verdict.SKIP), ("metadata", "*", Verdict.FAIL)]
    assert find_gap(gaps, "metadata", "aiokafka") is gaps[1]
    assert find_gap(gaps, "seek", "aiokafka") is None
    with pytest.raises(GapsFormatError):
        parse_gaps("| seek | kcat | maybe | ? |\n")


def test_kcat_output_parser_keeps_binary_and_nulls() -> None:
    out = (b"@@KCAT@@ t 0 5 1000 1 3 h1=x,h2=\nk\x00\nv\n"
           b"@@KCAT@@ t 1 6 1001 -1 -1 \n\n")
    a, b = parse_messages(out)
    assert (a.topic, a.partition, a.offset, a.key, a.value, a.headers) == (
        "t", 0, 5, b"k", b"\x00\nv", (("h1", b"x"), ("h2", b"")))
    assert (b.offset, b.key, b.value, b.headers) == (6, None, None, ())


def test_cli(compat_target: EmbeddedTarget, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--list"]) == 0
    assert "not_leader" in capsys.readouterr().out
    assert main(["--clients", "nope"]) == 2
    assert main(["--scenarios", "nope"]) == 2
    code = main(["--bootstrap", compat_target.bootstrap, "--clients", "kafka-python,kcat",
                 "--scenarios", "metadata,seek", "--out", str(tmp_path)])
    assert code == 0
    table = capsys.readouterr().out
    assert "metadata" in table and "4 passed, 0 failed, 0 skipped" in table
    data = json.loads((tmp_path / "matrix.json").read_text())
    assert {(r["client"], r["scenario"], r["verdict"]) for r in data["results"]} == {
        ("kafka-python", "metadata", "pass"), ("kafka-python", "seek", "pass"),
        ("kcat", "metadata", "pass"), ("kcat", "seek", "pass")}
    assert (tmp_path / "matrix.md").read_text().startswith("# Compatibility matrix")

"""bench.report: medians, ours/peer ratios, goal judgement, error and n/a rows, table footnotes."""

from __future__ import annotations

from bench.report import Results, render_table
from bench.scenarios import Metric, Scenario
from bench.targets import AttachedTarget


class _Scenario(Scenario):
    def __init__(self, scenario_id: str, metrics: list[Metric]) -> None:
        self.id = scenario_id
        self.metrics = metrics


OURS = AttachedTarget("ours", "ours", "127.0.0.1:1")
MOCK = AttachedTarget("mock", "mock", "127.0.0.1:2")


def _row(rows: list[dict], scenario: str, metric: str, target: str) -> dict:
    return next(r for r in rows if (r["scenario"], r["metric"], r["target"]) == (scenario, metric, target))


def test_median_ratio_and_goals() -> None:
    produce = _Scenario("produce", [Metric("MB/s", "MB/s", True, goal=400.0, peer_ratio_goal=1.0)])
    latency = _Scenario("latency", [Metric("p99", "ms", False, goal=5.0)])
    results = Results([produce, latency], [OURS, MOCK])
    for value in (300.0, 500.0, 450.0):
        results.add(produce, OURS, {"MB/s": value}, [])
    for value in (400.0, 350.0, 380.0):
        results.add(produce, MOCK, {"MB/s": value}, ["a note"])
    results.add(latency, OURS, {"p99": 7.5}, [])
    results.add(latency, MOCK, {"p99": 2.5}, [])
    rows = results.rows()

    ours = _row(rows, "produce", "MB/s", "ours")
    mock = _row(rows, "produce", "MB/s", "mock")
    assert (ours["median"], ours["min"], ours["max"]) == (450.0, 300.0, 500.0)
    assert ours["status"] == "ok" and ours["ratio"] is None
    assert mock["median"] == 380.0
    assert abs(mock["ratio"] - 450.0 / 380.0) < 1e-9
    assert mock["status"] == "ok" and mock["notes"] == ["a note"]

    lat_ours = _row(rows, "latency", "p99", "ours")
    lat_mock = _row(rows, "latency", "p99", "mock")
    assert lat_ours["status"] == "MISS" and lat_ours["goal"] == "<= 5"
    assert abs(lat_mock["ratio"] - 3.0) < 1e-9


def test_peer_ratio_goal_misses_when_ours_is_slower() -> None:
    produce = _Scenario("produce", [Metric("MB/s", "MB/s", True, goal=400.0, peer_ratio_goal=1.0)])
    results = Results([produce], [OURS, MOCK])
    results.add(produce, OURS, {"MB/s": 410.0}, [])
    results.add(produce, MOCK, {"MB/s": 500.0}, [])
    rows = results.rows()
    assert _row(rows, "produce", "MB/s", "ours")["status"] == "ok"
    assert _row(rows, "produce", "MB/s", "mock")["status"] == "MISS"


def test_errors_and_not_applicable_become_rows_and_footnotes() -> None:
    recovery = _Scenario("recovery", [Metric("data served", "s", False, goal=3.0)])
    results = Results([recovery], [OURS, MOCK])
    results.error(recovery, OURS, "LoadError: broker refused")
    results.not_applicable(recovery, MOCK, "mock keeps no log on disk")
    rows = results.rows()
    ours = _row(rows, "recovery", "data served", "ours")
    mock = _row(rows, "recovery", "data served", "mock")
    assert ours["status"] == "error" and ours["median"] is None and "broker refused" in ours["error"]
    assert mock["status"] == "n/a" and "no log on disk" in mock["error"]

    table = render_table(rows)
    lines = table.splitlines()
    assert lines[0].split()[:4] == ["scenario", "metric", "target", "median"]
    assert "ERROR[1]" in table and "n/a[2]" in table
    assert "[1] ours: LoadError: broker refused" in table
    assert "[2] mock: n/a: mock keeps no log on disk" in table


def test_context_metrics_get_no_ratio() -> None:
    consume = _Scenario("consume", [Metric("MB/s", "MB/s", True), Metric("client CPU", "cores", False, compare=False)])
    results = Results([consume], [OURS, MOCK])
    results.add(consume, OURS, {"MB/s": 200.0, "client CPU": 0.9}, [])
    results.add(consume, MOCK, {"MB/s": 100.0, "client CPU": 0.3}, [])
    rows = results.rows()
    assert _row(rows, "consume", "MB/s", "mock")["ratio"] == 2.0
    assert _row(rows, "consume", "client CPU", "mock")["ratio"] is None
    assert _row(rows, "consume", "client CPU", "mock")["median"] == 0.3


def test_an_optional_metric_without_samples_is_blank_not_an_error() -> None:
    metrics = [Metric("MB/s", "MB/s", True), Metric("broker CPU", "s/GB", False, compare=False, optional=True)]
    produce = _Scenario("produce", metrics)
    external = AttachedTarget("kafka", "external", "127.0.0.1:3")
    results = Results([produce], [OURS, external])
    results.add(produce, OURS, {"MB/s": 500.0, "broker CPU": 1.2}, [])
    results.add(produce, external, {"MB/s": 400.0}, [])
    rows = results.rows()
    assert _row(rows, "produce", "broker CPU", "ours")["median"] == 1.2
    blank = _row(rows, "produce", "broker CPU", "kafka")
    assert (blank["median"], blank["status"], blank["error"]) == (None, "", None)
    failed = Results([produce], [OURS])
    failed.error(produce, OURS, "broker crashed")
    assert _row(failed.rows(), "produce", "broker CPU", "ours")["status"] == "error"

"""The TLS/SASL bench scenario: its shape, one repetition through the three listeners of our broker and of a real
Kafka 4.4 node set up with the same PEM stores and JAAS line (the data really crosses each: every load reads back
what it wrote), and n/a for the mock, which has no TLS listeners."""

from __future__ import annotations

import time
from pathlib import Path

import psutil
import pytest

from bench.scenarios import Context, build_scenarios
from bench.security import LISTENERS, SecurityScenario
from bench.targets import AttachedTarget, KafkaTarget

METRICS = [f"{d} {lst}" for d in ("produce", "consume") for lst in LISTENERS] + [
    f"{d} {lst} / PLAINTEXT" for d in ("produce", "consume") for lst in LISTENERS[1:]]


@pytest.mark.parametrize("quick", [True, False])
def test_scenario_shape(quick: bool) -> None:
    [scenario] = [s for s in build_scenarios(quick) if isinstance(s, SecurityScenario)]
    assert [m.name for m in scenario.metrics] == METRICS
    assert all(m.compare for m in scenario.metrics)  # beside Kafka, each figure gets its ours/Kafka ratio
    assert "produce" not in scenario.id and "consume" not in scenario.id  # --scenarios produce stays produce
    assert (scenario.count, scenario.reps) == ((5_000, 1) if quick else (200_000, 3))
    assert scenario.not_applicable(AttachedTarget("mock", "mock", "127.0.0.1:1")) is not None


def test_one_repetition_through_each_listener(tmp_path: Path) -> None:
    scenario = SecurityScenario(2000, 1)
    ctx = Context(quick=True, work_dir=tmp_path, results_dir=tmp_path, stamp="test", deadline=time.monotonic() + 120)
    ours = AttachedTarget("ours", "ours", "unused:0")
    assert scenario.not_applicable(ours) is None
    try:
        values, notes = scenario.run(ours, ctx, 1)
    finally:
        scenario.cleanup(ours, ctx)
    assert set(values) == set(METRICS)
    assert all(values[name] > 0 for name in METRICS), values
    assert values["consume SSL / PLAINTEXT"] == pytest.approx(values["consume SSL"] / values["consume PLAINTEXT"])
    assert any("SASL_SSL with PLAIN" in note for note in notes)


def test_one_repetition_through_each_listener_of_kafka(tmp_path: Path) -> None:
    scenario = SecurityScenario(2000, 1)
    ctx = Context(quick=True, work_dir=tmp_path, results_dir=tmp_path, stamp="test", deadline=time.monotonic() + 240)
    ctx.run_cap = 180
    kafka = KafkaTarget(tmp_path)  # never started itself: the scenario starts a node of its version
    assert scenario.not_applicable(kafka) is None
    try:
        values, notes = scenario.run(kafka, ctx, 0)
        broker = ctx.state[(scenario.id, kafka.name)][0]
        assert "java" in psutil.Process(broker.pid).name()
    finally:
        scenario.cleanup(kafka, ctx)
    assert (scenario.id, kafka.name) not in ctx.state
    assert set(values) == set(METRICS)
    assert all(values[name] > 0 for name in METRICS), values
    assert not any("sendfile" in note for note in notes)  # that note is about ours

"""The controller bench scenario: one repetition against a combined KRaft node of ours and one against Kafka 4.4's,
each fresh, every topic created and led; n/a for the mock."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from bench.controller import ControllerScenario
from bench.scenarios import Context, build_scenarios
from bench.targets import AttachedTarget, KafkaTarget, MockTarget


def test_scenario_is_in_the_full_run_only() -> None:
    assert not any(isinstance(s, ControllerScenario) for s in build_scenarios(True))
    [full] = [s for s in build_scenarios(False) if isinstance(s, ControllerScenario)]
    assert (full.topics, full.partitions) == (1000, 8)
    assert full.not_applicable(MockTarget()) is not None


@pytest.mark.parametrize("kind", ["ours", "kafka"])
def test_one_repetition(tmp_path: Path, kind: str) -> None:
    scenario = ControllerScenario(30, 4, 1)
    ctx = Context(quick=True, work_dir=tmp_path, results_dir=tmp_path, stamp="t", deadline=time.monotonic() + 240)
    ctx.run_cap = 180
    target = KafkaTarget(tmp_path) if kind == "kafka" else AttachedTarget("ours", "ours", "unused:0")
    assert scenario.not_applicable(target) is None
    values, notes = scenario.run(target, ctx, 0)
    assert 0 < values["create"] <= values["all leaders in Metadata"], values
    assert ("Kafka's" if kind == "kafka" else "our") in notes[0]

"""The transactions bench scenario: its shape in both run sizes, the transactional load's commits landing as
markers in our broker's log, and one repetition against our broker and librdkafka's mock cluster."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from confluent_kafka import Consumer, TopicPartition

from bench.runner import ensure_partitions, run_load
from bench.scenarios import Context, build_scenarios
from bench.targets import MockTarget, OursTarget, Target
from bench.transactions import RATIO_GOAL, TransactionsScenario

METRICS = ["idempotent", "txn 100 ms", "txn 1,000 msgs", "txn 100 ms / idempotent", "txn 1,000 msgs / idempotent"]


@pytest.mark.parametrize("quick", [True, False])
def test_scenario_shape(quick: bool) -> None:
    found = [s for s in build_scenarios(quick) if isinstance(s, TransactionsScenario)]
    assert len(found) == 1
    scenario = found[0]
    assert scenario.id == "transactions vs idempotent p=1" and "produce" not in scenario.id
    assert [m.name for m in scenario.metrics] == METRICS
    ratios = [m for m in scenario.metrics if m.unit == "x"]
    assert all(m.goal == RATIO_GOAL and m.higher_is_better and not m.compare for m in ratios)
    assert (scenario.count, scenario.reps) == ((20_000, 1) if quick else (200_000, 3))


@pytest.fixture
def ours(tmp_path: Path) -> Target:
    target = OursTarget(tmp_path)
    target.start()
    yield target
    target.stop()


@pytest.fixture
def mock() -> Target:
    target = MockTarget()
    target.start()
    yield target
    target.stop()


def test_transactional_load_commits_every_1000_messages(ours: Target) -> None:
    (tp,) = ensure_partitions(ours, "txn-load", 1)
    result = run_load({"kind": "produce", "bootstrap": ours.bootstrap, "tps": [tp], "count": 2500, "size": 1024,
                       "commit_every_msgs": 1000}, 60)
    assert result["commits"] == 3  # 1,000 + 1,000 + 500
    consumer = Consumer({"bootstrap.servers": ours.bootstrap, "group.id": "txn-load-check",
                         "isolation.level": "read_committed", "enable.partition.eof": True})
    try:
        consumer.assign([TopicPartition(*tp, 0)])
        read, deadline = 0, time.monotonic() + 30
        while time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is not None and msg.error() is None:
                read += 1
            elif msg is not None and msg.error().name() == "_PARTITION_EOF" and read >= 2501:
                break
        _, end = consumer.get_watermark_offsets(TopicPartition(*tp), timeout=10)
    finally:
        consumer.close()
    assert read == 2501  # the warm-up message committed before the clock, then the 2,500
    assert end == 2501 + 4  # one COMMIT marker per transaction: the warm-up's and the three timed ones


@pytest.mark.parametrize("rep", [0, 1])
def test_one_repetition_against_ours_and_mock(ours: Target, mock: Target, tmp_path: Path, rep: int) -> None:
    scenario = TransactionsScenario(3000, 2)
    ctx = Context(quick=True, work_dir=tmp_path, results_dir=tmp_path, stamp="test",
                  deadline=time.monotonic() + 120)
    for target in (ours, mock):
        values, notes = scenario.run(target, ctx, rep)
        assert set(values) == set(METRICS), target.name
        assert all(values[name] > 0 for name in METRICS), values
        for load in ("txn 100 ms", "txn 1,000 msgs"):
            assert values[f"{load} / idempotent"] == pytest.approx(values[load] / values["idempotent"])
        assert ("first repetition: txn 100 ms" in " ".join(notes)) == (rep == 0)
        assert any("txn 1,000 msgs 3 commits" in note for note in notes) or rep == 1

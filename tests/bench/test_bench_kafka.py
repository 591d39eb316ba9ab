"""The `kafka` bench target: a real Apache Kafka KRaft node the harness starts, measured as ours is.

The jars come from realkafka's cache (resolved with Maven on first use); one start of Kafka 4.4.0 and one small
produce scenario against it, about 20 s on the 2-core machine.
"""

from __future__ import annotations

import time
from pathlib import Path

import psutil

from bench.report import Results
from bench.scenarios import Context, ProduceScenario
from bench.targets import DEFAULT_KAFKA_VERSION, ExternalTarget, KafkaTarget, MockTarget, OursTarget, parse_targets


def test_kafka_targets_are_parsed_apart_from_bootstrap_addresses(tmp_path: Path) -> None:
    targets = parse_targets("ours,kafka,kafka:3.7.2,mock,127.0.0.1:9092", tmp_path)
    assert [type(t) for t in targets] == [OursTarget, KafkaTarget, KafkaTarget, MockTarget, ExternalTarget]
    assert [t.name for t in targets[1:3]] == [f"kafka-{DEFAULT_KAFKA_VERSION}", "kafka-3.7.2"]
    assert {t.kind for t in targets[1:3]} == {"kafka"}


def test_kafka_target_starts_serves_a_produce_scenario_and_reports_its_cpu(tmp_path: Path) -> None:
    target = KafkaTarget(tmp_path, warmup_messages=1_000)
    scenario = ProduceScenario(1, "1", "none", 5_000, 1)
    ctx = Context(quick=True, work_dir=tmp_path, results_dir=tmp_path, stamp="t", deadline=time.monotonic() + 120)
    try:
        target.start()
        pid = target.pid
        assert pid is not None and "java" in psutil.Process(pid).name()
        values, notes = scenario.run(target, ctx, 0)
    finally:
        target.stop()
    assert not notes, notes  # the topic was deleted and gone from disk
    assert values["MB/s"] > 0
    # The JVM's own utime + stime over the load, per GB: Kafka spends some CPU on 5 MB, never none.
    assert values["broker CPU"] > 0
    assert target.pid is None and not psutil.pid_exists(pid)

    results = Results([scenario], [target])
    results.add(scenario, target, values, notes)
    row = next(r for r in results.rows() if r["metric"] == "broker CPU")
    assert (row["target_kind"], row["median"]) == ("kafka", values["broker CPU"])

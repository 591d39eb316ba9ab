"""The `kafka` bench target: a real Apache Kafka KRaft node the harness starts, measured as ours is.

The jars come from realkafka's cache (resolved with Maven on first use); one start of Kafka 4.4.0 and one small
produce scenario against it, about 20 s on the 2-core machine.
"""

from __future__ import annotations

import time
from pathlib import Path

import psutil

from bench.report import Results
from bench.runner import ensure_partitions, run_load
from bench.scenarios import Context, ProduceScenario
from bench.share_groups import KINDS, ShareGroupScenario
from bench.targets import (
    DEFAULT_KAFKA_VERSION,
    AttachedTarget,
    ExternalTarget,
    KafkaCluster,
    KafkaTarget,
    MockTarget,
    OursTarget,
    parse_targets,
)


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


def test_own_broker_scenarios_start_a_kafka_node_with_their_overrides(tmp_path: Path) -> None:
    """The share-group scenario (an own-broker scenario) against Kafka: a node of the target's version with the
    scenario's heartbeat overrides, share groups served (the share coordinator's topic sized for one node), both
    kinds of group read every record; the node is gone after cleanup."""
    scenario = ShareGroupScenario(2_000, 1)
    ctx = Context(quick=True, work_dir=tmp_path, results_dir=tmp_path, stamp="t", deadline=time.monotonic() + 240)
    ctx.run_cap = 120
    kafka = KafkaTarget(tmp_path)
    assert scenario.not_applicable(kafka) is None
    assert scenario.not_applicable(MockTarget()) is not None
    try:
        values, _ = scenario.run(kafka, ctx, 0)
        node = ctx.state[(scenario.id, kafka.name)]
        pid = node.pid
        assert node.node.properties["group.share.heartbeat.interval.ms"] == "1000"
    finally:
        scenario.cleanup(kafka, ctx)
    assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    assert all(values[f"{label}: throughput"] > 0 for label in KINDS), values


def test_kafka_cluster_serves_an_rf3_topic_and_stops(tmp_path: Path) -> None:
    """The RF=3 scenario's Kafka side: three KRaft brokers and a controller, an RF=3 topic with min.insync.replicas
    2 taking acks=all writes that read back whole."""
    cluster = KafkaCluster(DEFAULT_KAFKA_VERSION, tmp_path, 3, {"min.insync.replicas": "2"})
    try:
        cluster.start()
        attached = AttachedTarget("kafka", "kafka", cluster.bootstrap)
        tps = ensure_partitions(attached, "rf3", 1, 60, replication_factor=3)
        run_load({"kind": "produce", "bootstrap": cluster.bootstrap, "tps": tps, "count": 2_000, "size": 1024,
                  "acks": "all"}, 60)
        done = run_load({"kind": "consume", "bootstrap": cluster.bootstrap, "tps": tps, "expected": 2_000}, 60)
        pids = [b.pid for b in cluster.brokers] + [cluster.controller.pid]
    finally:
        cluster.stop()
    assert done["messages"] == 2_000
    assert len(cluster.bootstrap.split(",")) == 3 and all((d / "rf3-0").is_dir() for d in cluster.data_dirs)
    assert not any(psutil.pid_exists(p) and psutil.Process(p).status() != psutil.STATUS_ZOMBIE for p in pids)

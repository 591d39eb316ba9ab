"""Kafka's replication gauges on the Prometheus endpoint of a cluster's brokers: with a follower of an RF=2 topic
stopped, its leader reports one under-replicated partition (and the controller one ISR shrink), back to none once
the follower has returned and caught up; the active controller counts itself."""

from __future__ import annotations

import re
import urllib.request
from pathlib import Path

from broker.testing import BrokerProcess
from tests.cluster.support import Zk, create_topic, start_cluster, wait_until

TOPIC = "urp"


def endpoint(broker: BrokerProcess) -> str:
    """The broker's metrics URL, from the line its start logged (the port is picked when it binds)."""
    m = re.findall(r"metrics for Prometheus at (http://\S+)", broker.log_path.read_text(errors="replace"))
    assert m, broker.log_tail()
    return m[-1]


def gauge(broker: BrokerProcess, name: str) -> float:
    text = urllib.request.urlopen(endpoint(broker), timeout=10).read().decode()
    return float(next(line.rsplit(" ", 1)[1] for line in text.splitlines() if line.startswith(name + " ")))


def test_under_replicated_partitions_while_a_follower_is_stopped(tmp_path: Path) -> None:
    cluster = start_cluster(tmp_path, {"metrics.prometheus.listener": "http://127.0.0.1:0",
                                       "replica.lag.time.max.ms": "2000", "offsets.topic.replication.factor": "1"},
                            n=2)
    zk = Zk(cluster)
    try:
        create_topic(cluster.bootstrap, TOPIC, 1, 2, assignment=[[0, 1]])
        leader = cluster.brokers[0]
        wait_until(lambda: sorted(zk.partition_state(TOPIC, 0)["isr"]) == [0, 1], 30, "both replicas in sync")
        wait_until(lambda: gauge(leader, "kafka_server_replicamanager_underreplicatedpartitions") == 0, 30,
                   "no under-replicated partition")
        controllers = [gauge(b, "kafka_controller_kafkacontroller_activecontrollercount") for b in cluster.brokers]
        assert sorted(controllers) == [0, 1]
        cluster.brokers[1].stop()
        wait_until(lambda: gauge(leader, "kafka_server_replicamanager_underreplicatedpartitions") == 1, 30,
                   "one under-replicated partition on the leader")
        cluster.restart(1)
        wait_until(lambda: gauge(leader, "kafka_server_replicamanager_underreplicatedpartitions") == 0, 60,
                   "the partition fully replicated again")
        assert gauge(leader, "kafka_server_replicamanager_isrexpands_total") >= 1
    finally:
        zk.close()
        cluster.cleanup()

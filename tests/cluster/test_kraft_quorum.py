"""A KRaft cluster of ours with no Java and no ZooKeeper (issue 32): controllers of ours (`process.roles=controller`,
broker/quorum/) and three KRaft brokers of ours, each its own `python -m broker` process, driven by stock clients.

- With one voter and with three: the brokers register and are unfenced, a topic of replication factor 3 created
  through a broker gets a leader and three in-sync replicas, an idempotent acks=all producer's records are read
  back once each; DescribeQuorum (`kafka-metadata-quorum`'s request) names the leader, the voters and the brokers
  as observers.
- kill -9 of the active controller of three under that load: the other two elect a new active controller, a topic
  created afterwards works, nothing acknowledged is lost; the killed one restarts and follows again.
"""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from broker.testing import BrokerProcess
from tests.cluster.support import admin, create_topic, metadata, wait_until
from tests.interop.kraft_checks import Load, read_back_once
from tests.our_quorum import CombinedNodes, OurQuorum

BROKERS = (11, 12, 13)
PARTITIONS = 3


class Cluster:
    def __init__(self, quorum: OurQuorum, brokers: list[BrokerProcess]) -> None:
        self.quorum = quorum
        self.brokers = brokers

    @property
    def bootstrap(self) -> str:
        return ",".join(b.bootstrap for b in self.brokers)


@pytest.fixture(scope="module", params=[1, 3], ids=lambda n: f"{n}-voter")
def cluster(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    quorum = OurQuorum(tmp_path_factory.mktemp(f"quorum-{request.param}"), request.param)
    brokers: list[BrokerProcess] = []
    try:
        quorum.start()
        for node_id in BROKERS:
            brokers.append(quorum.our_broker(node_id))
        for broker in brokers:
            broker.start(90)
        yield Cluster(quorum, brokers)
    finally:
        for broker in brokers:
            broker.stop(30)
        quorum.close()


# A single voter has no successor: the kill tests run on the three-voter quorum only.
THREE_VOTERS = pytest.mark.parametrize("cluster", [3], indirect=True, ids=["3-voter"])


def _rf3_topic(cluster: Cluster) -> str:
    topic = f"rf3-{uuid.uuid4().hex[:6]}"
    create_topic(cluster.bootstrap, topic, PARTITIONS, 3)
    wait_until(lambda: all(p.leader in BROKERS and sorted(p.isrs) == list(BROKERS)
                           for p in metadata(cluster.bootstrap, topic).values()), 60,
               f"{topic}: every partition led, with three in-sync replicas")
    return topic


def test_brokers_of_ours_register_and_serve_an_rf3_topic(cluster: Cluster) -> None:
    topic = _rf3_topic(cluster)
    load = Load(cluster.bootstrap, topic).start()
    wait_until(lambda: len(load.acked) >= 3000, 120, "3,000 acknowledged records")
    load.stop()
    assert not load.errors, load.errors[:3]
    read_back_once(load, cluster.brokers[0], PARTITIONS)


def test_describe_quorum_names_the_leader_voters_and_observers(cluster: Cluster) -> None:
    leader = wait_until(cluster.quorum.active, 30, "an active controller")
    answer = cluster.quorum.describe(leader)
    assert answer.leader_id == leader and answer.high_watermark > 0
    assert sorted(v.replica_id for v in answer.current_voters) == sorted(cluster.quorum.ports)
    wait_until(lambda: sorted(o.replica_id for o in cluster.quorum.describe(leader).observers) == list(BROKERS), 30,
               "the three brokers listed as observers")
    for node_id in cluster.quorum.ports:
        if node_id != leader:
            other = cluster.quorum.describe(node_id)
            assert other.error_code != 0 and other.leader_id == leader  # NOT_LEADER_OR_FOLLOWER, naming the leader


@THREE_VOTERS
def test_kill_9_of_the_active_controller_loses_nothing(cluster: Cluster) -> None:
    topic = _rf3_topic(cluster)
    load = Load(cluster.bootstrap, topic).start()
    try:
        wait_until(lambda: len(load.acked) >= 1000, 120, "the load running")
        victim = wait_until(cluster.quorum.active, 30, "an active controller")
        cluster.quorum.controllers[victim].kill()
        successor = wait_until(lambda: (a := cluster.quorum.active()) not in (None, victim) and a, 60,
                               "a new active controller")
        assert successor != victim
        after = _rf3_topic(cluster)  # a metadata change through the new active controller
        acked = len(load.acked)
        wait_until(lambda: len(load.acked) > acked + 1000, 120, "writes acknowledged after the controller's death")
    finally:
        load.stop()
    assert not load.errors, load.errors[:3]
    read_back_once(load, cluster.brokers[1], PARTITIONS)
    after_load = Load(cluster.bootstrap, after).start()
    wait_until(lambda: len(after_load.acked) >= 500, 120, f"records acknowledged on {after}")
    after_load.stop()
    read_back_once(after_load, cluster.brokers[2], PARTITIONS)
    # The killed controller comes back as a follower of the new leader and catches up.
    cluster.quorum.controllers[victim].start(60)
    wait_until(lambda: cluster.quorum.describe(victim).leader_id == successor, 60, "the restarted one following")
    leader_view = cluster.quorum.describe(successor)
    wait_until(lambda: next(v.log_end_offset for v in cluster.quorum.describe(successor).current_voters
                            if v.replica_id == victim) >= leader_view.high_watermark, 60, "the restarted one caught up")


def test_an_unformatted_controller_refuses_to_start(tmp_path: Path) -> None:
    controller = BrokerProcess({"process.roles": "controller", "node.id": "1",
                                "controller.quorum.voters": "1@127.0.0.1:1", "controller.listener.names": "CONTROLLER",
                                "listeners": "CONTROLLER://127.0.0.1:0"}, data_dir=tmp_path / "c")
    with pytest.raises(RuntimeError, match="No `meta.properties` found"):
        controller.start(30)


@pytest.fixture(scope="module")
def combined(tmp_path_factory: pytest.TempPathFactory) -> Iterator[CombinedNodes]:
    nodes = CombinedNodes(tmp_path_factory.mktemp("combined"), 3)
    try:
        started = time.monotonic()
        nodes.start()
        wait_until(lambda: len(admin(nodes.bootstrap).list_topics(timeout=5).brokers) == 3, 90,
                   "three brokers registered and unfenced")
        print(f"three combined nodes up in {time.monotonic() - started:.1f} s")
        yield nodes
    finally:
        nodes.close()


def test_three_combined_nodes_serve_an_rf3_topic_and_survive_a_kill_9(combined: CombinedNodes) -> None:
    """process.roles=broker,controller on all three: no process but ours, an RF=3 topic, and kill -9 of the node
    whose controller is active under an acks=all load loses nothing acknowledged."""
    topic = f"combined-{uuid.uuid4().hex[:6]}"
    create_topic(combined.bootstrap, topic, PARTITIONS, 3)
    wait_until(lambda: all(p.leader in combined.nodes and len(p.isrs) == 3
                           for p in metadata(combined.bootstrap, topic).values()), 60, f"{topic} fully in sync")
    load = Load(combined.bootstrap, topic).start()
    try:
        wait_until(lambda: len(load.acked) >= 1000, 120, "the load running")
        victim = wait_until(combined.active, 30, "an active controller")
        combined.nodes[victim].kill()
        wait_until(lambda: (a := combined.active()) not in (None, victim) and a, 60, "a new active controller")
        acked = len(load.acked)
        wait_until(lambda: len(load.acked) > acked + 1000, 120, "writes acknowledged after the kill")
    finally:
        load.stop()
    assert not load.errors, load.errors[:3]
    survivor = next(p for i, p in combined.nodes.items() if i != victim)
    read_back_once(load, survivor, PARTITIONS)
    combined.nodes[victim].start(90)
    wait_until(lambda: all(len(p.isrs) == 3 for p in metadata(survivor.bootstrap, topic).values()), 120,
               f"node {victim} back in every ISR")


@THREE_VOTERS
def test_repeated_kill_9_of_the_active_controller(cluster: Cluster) -> None:
    """kill -9 of the active controller QUORUM_KILLS times in a row (5 by default; the issue's measurement is 50)
    under an acks=all RF=3 load, each killed one restarted before the next kill: every time a new active
    controller, every topic created during the kills exists afterwards, nothing acknowledged is lost. Prints how
    long each takeover took (seen from outside: from the kill to a DescribeQuorum naming the new leader)."""
    kills = int(os.environ.get("QUORUM_KILLS", "5"))
    topic = _rf3_topic(cluster)
    load = Load(cluster.bootstrap, topic).start()
    created, takeovers = [], []
    try:
        for _ in range(kills):
            acked = len(load.acked)
            wait_until(lambda n=acked: len(load.acked) >= n + 300, 120, "the load running")
            victim = wait_until(cluster.quorum.active, 60, "an active controller")
            cluster.quorum.controllers[victim].kill()
            killed_at = time.monotonic()
            wait_until(lambda v=victim: (a := cluster.quorum.active()) not in (None, v) and a, 60,
                       "a new active controller", interval=0.02)
            takeovers.append(round(time.monotonic() - killed_at, 2))
            name = f"during-{uuid.uuid4().hex[:6]}"
            create_topic(cluster.bootstrap, name, 1, 3)
            created.append(name)
            cluster.quorum.controllers[victim].start(60)
    finally:
        load.stop()
    print(f"{kills} kills of the active controller: takeover seconds {takeovers}, "
          f"{len(load.acked)} records acknowledged")
    assert not load.errors, load.errors[:3]
    read_back_once(load, cluster.brokers[0], PARTITIONS)
    listed = admin(cluster.bootstrap).list_topics(timeout=10).topics
    assert [t for t in created if t not in listed] == []


def test_a_restarted_quorum_keeps_its_metadata(cluster: Cluster) -> None:
    """Every controller stopped and started again (the whole quorum: the metadata log on disk is all there is):
    the topics are still there with their leaders, and a new one can be created."""
    before = _rf3_topic(cluster)
    for process in cluster.quorum.controllers.values():
        process.stop(30)
    for process in cluster.quorum.controllers.values():
        process.start(60)
    wait_until(cluster.quorum.active, 60, "an active controller after the restart")
    after = _rf3_topic(cluster)
    listed = admin(cluster.bootstrap).list_topics(timeout=10).topics
    assert before in listed and after in listed
    assert all(p.leader in BROKERS for p in metadata(cluster.bootstrap, before).values())


def test_local_cluster_runs_combined_kraft_nodes(tmp_path: Path) -> None:
    """`LocalCluster(kraft=True)` (`./dev cluster --kraft`): three combined nodes of ours, no ZooKeeper; an RF=3
    topic serves an idempotent acks=all producer, and a node restarted after kill -9 rejoins every ISR."""
    from broker.local_cluster import LocalCluster

    with LocalCluster(3, data_dir=tmp_path / "cluster", kraft=True) as local:
        assert local.zookeeper is None
        topic = f"local-{uuid.uuid4().hex[:6]}"
        create_topic(local.bootstrap, topic, PARTITIONS, 3)
        wait_until(lambda: all(len(p.isrs) == 3 for p in metadata(local.bootstrap, topic).values()), 60,
                   f"{topic} fully in sync")
        load = Load(local.bootstrap, topic).start()
        wait_until(lambda: len(load.acked) >= 1000, 120, "1,000 acknowledged records")
        local.brokers[2].kill()
        local.restart(2)
        load.stop()
        assert not load.errors, load.errors[:3]
        read_back_once(load, local.brokers[0], PARTITIONS)
        wait_until(lambda: all(len(p.isrs) == 3 for p in metadata(local.bootstrap, topic).values()), 120,
                   "node 2 back in every ISR")


def test_dev_cluster_starts_combined_kraft_nodes_by_default(tmp_path: Path) -> None:
    """`./dev cluster` (`python -m broker.local_cluster`) with no mode flag: three combined KRaft nodes of ours and no
    ZooKeeper (no `ZooKeeper:` line, no `zookeeper` directory); its bootstrap serves a topic of three replicas read
    back whole; SIGTERM stops every node and the command exits 0."""
    import signal
    import subprocess
    import sys

    proc = subprocess.Popen([sys.executable, "-m", "broker.local_cluster", "--brokers", "3", "--data-dir",
                             str(tmp_path / "cluster")], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    lines: list[str] = []
    try:
        assert proc.stdout is not None
        deadline = time.monotonic() + 120
        while not any(line.startswith("bootstrap.servers=") for line in lines) and time.monotonic() < deadline:
            line = proc.stdout.readline()
            if not line:
                break
            lines.append(line.rstrip("\n"))
        bootstrap = next(line for line in lines if line.startswith("bootstrap.servers=")).split("=", 1)[1]
        assert not any(line.startswith("ZooKeeper:") for line in lines) and "KRaft cluster" in "\n".join(lines)
        topic = f"dev-{uuid.uuid4().hex[:6]}"
        create_topic(bootstrap, topic, PARTITIONS, 3)
        wait_until(lambda: all(len(p.isrs) == 3 for p in metadata(bootstrap, topic).values()), 60,
                   f"{topic} fully in sync")
        load = Load(bootstrap, topic).start()
        wait_until(lambda: len(load.acked) >= 500, 60, "500 acknowledged records")
        load.stop()
        assert not load.errors, load.errors[:3]
        assert not (tmp_path / "cluster" / "zookeeper").exists()
    finally:
        proc.send_signal(signal.SIGTERM)
        code = proc.wait(90)
    assert code == 0, lines[-20:]

"""A KRaft cluster of ours with no Java: controllers of ours (`process.roles=controller`, broker/quorum/) and KRaft
brokers of ours, each `python -m broker` in its own process, formatted with `python -m broker format`. For the tests
of tests/cluster/test_kraft_quorum.py and tests/interop/test_kraft_our_controller.py."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

from broker.testing import BrokerProcess, free_port
from protocol import ApiKey, request_class
from protocol.errors import ErrorCode
from storage.checkpoints import random_kafka_uuid_str
from tests.cluster.support import raw_request

# Quick heartbeats and fetches; a generous Raft fetch timeout, so a busy 2-core machine does not start elections.
QUORUM_TIMINGS = {"controller.quorum.election.timeout.ms": "1000", "controller.quorum.fetch.timeout.ms": "4000",
                  "controller.quorum.request.timeout.ms": "4000"}
BROKER_FAST = {"broker.heartbeat.interval.ms": "500", "replica.fetch.wait.max.ms": "200",
               "offsets.topic.num.partitions": "4", "transaction.state.log.num.partitions": "4",
               "group.initial.rebalance.delay.ms": "0"}


def new_cluster_id() -> str:
    return random_kafka_uuid_str()


def format_dirs(process: BrokerProcess, cluster_id: str, *extra: str) -> None:
    args = [sys.executable, "-m", "broker", "format", "--cluster-id", cluster_id, *extra]
    for key, value in process.props.items():
        args += ["--override", f"{key}={value}"]
    subprocess.run(args, check=True, capture_output=True, timeout=60)


class _Voters:
    ports: dict[int, int]  # node id -> its controller listener's port
    controllers: dict[int, BrokerProcess]

    def describe(self, node_id: int) -> Any:
        """DescribeQuorum v1 sent straight to controller `node_id`: its partition's answer."""
        Req = request_class(ApiKey.DESCRIBE_QUORUM)
        request = Req[1](topics=[Req.TopicData(topic_name="__cluster_metadata", partitions=[
            Req.TopicData.PartitionData(partition_index=0)])])
        return raw_request(self.ports[node_id], request, timeout=5).topics[0].partitions[0]

    def active(self) -> int | None:
        """The controller that answers DescribeQuorum as the leader, among those running."""
        for node_id, process in self.controllers.items():
            if process.proc is None or process.proc.poll() is not None:
                continue
            try:
                p = self.describe(node_id)
            except OSError:
                continue
            if p.error_code == ErrorCode.NONE:
                return node_id
        return None

    def close(self) -> None:
        for process in self.controllers.values():
            try:
                process.stop(30)
            except Exception:
                process.kill()


class OurQuorum(_Voters):
    """`voters` controllers of ours (node ids 1..voters), formatted and started."""

    def __init__(self, directory: Path, voters: int, *, release_version: str | None = None,
                 features: dict[str, int] | None = None, overrides: dict[str, str] | None = None) -> None:
        self.directory = Path(directory)
        self.cluster_id = new_cluster_id()
        self.ports = {i: free_port() for i in range(1, voters + 1)}
        self.voters = ",".join(f"{i}@127.0.0.1:{port}" for i, port in self.ports.items())
        self.controllers: dict[int, BrokerProcess] = {}
        for node_id, port in self.ports.items():
            props = {"process.roles": "controller", "node.id": str(node_id), "controller.quorum.voters": self.voters,
                     "controller.listener.names": "CONTROLLER", "listeners": f"CONTROLLER://127.0.0.1:{port}",
                     **QUORUM_TIMINGS, **(overrides or {})}
            process = BrokerProcess(props, data_dir=self.directory / f"controller-{node_id}", port=port)
            extra = ["--release-version", release_version] if release_version else []
            for name, level in sorted((features or {}).items()):
                extra += ["--feature", f"{name}={level}"]
            format_dirs(process, self.cluster_id, *extra)
            self.controllers[node_id] = process

    def start(self) -> OurQuorum:
        for process in self.controllers.values():
            process.start(60)
        return self

    def our_broker(self, node_id: int, overrides: dict[str, str] | None = None) -> BrokerProcess:
        props = {"process.roles": "broker", "node.id": str(node_id), "controller.quorum.voters": self.voters,
                 "controller.listener.names": "CONTROLLER",
                 "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
                 "inter.broker.listener.name": "PLAINTEXT", **QUORUM_TIMINGS, **BROKER_FAST, **(overrides or {})}
        broker = BrokerProcess(props, data_dir=self.directory / f"broker-{node_id}")
        format_dirs(broker, self.cluster_id)
        return broker



class CombinedNodes(_Voters):
    """`n` combined nodes of ours (`process.roles=broker,controller`, node ids 1..n, all of them voters)."""

    def __init__(self, directory: Path, n: int, *, release_version: str | None = None) -> None:
        self.cluster_id = new_cluster_id()
        self.ports = {i: free_port() for i in range(1, n + 1)}
        self.voters = ",".join(f"{i}@127.0.0.1:{port}" for i, port in self.ports.items())
        self.nodes: dict[int, BrokerProcess] = {}
        self.controllers = self.nodes
        for node_id, controller_port in self.ports.items():
            port = free_port()
            props = {"process.roles": "broker,controller", "node.id": str(node_id),
                     "controller.quorum.voters": self.voters, "controller.listener.names": "CONTROLLER",
                     "listeners": f"PLAINTEXT://127.0.0.1:{port},CONTROLLER://127.0.0.1:{controller_port}",
                     "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
                     "inter.broker.listener.name": "PLAINTEXT", **QUORUM_TIMINGS, **BROKER_FAST}
            process = BrokerProcess(props, data_dir=directory / f"node-{node_id}", port=port)
            format_dirs(process, self.cluster_id, *(["--release-version", release_version] if release_version else []))
            self.nodes[node_id] = process

    @property
    def bootstrap(self) -> str:
        return ",".join(p.bootstrap for p in self.nodes.values())

    def start(self) -> CombinedNodes:
        for process in self.nodes.values():
            process.start(90)
        return self

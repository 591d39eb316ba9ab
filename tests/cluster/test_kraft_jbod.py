"""JBOD in KRaft (KIP-858) over real sockets: a broker of ours with two log dirs registers both directory ids,
tells the test controller where it put each replica (AssignReplicasToDirs), again after AlterReplicaLogDirs moved
one, and reports a failed log dir in its heartbeats (OfflineLogDirs), after which the controller takes the
replicas there out of ISRs and leadership (broker/quorum/jbod.py)."""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka.admin import AdminClient, NewTopic

from broker.config.kafka_config import KafkaConfig
from broker.kraft.format import format_dirs
from broker.testing import EmbeddedBroker
from protocol import ApiKey, request_class
from protocol.errors import ErrorCode
from storage import TopicPartition
from storage.checkpoints import read_properties, uuid_from_kafka_str
from tests.broker.wire import roundtrip
from tests.cluster.test_kraft_cluster import FAST, wait_for
from tests.kraft_controller import ControllerThread

pytestmark = pytest.mark.timeout(120)


@pytest.fixture
def jbod(tmp_path: Path) -> Iterator[tuple[ControllerThread, EmbeddedBroker, dict[Path, Any]]]:
    controller = ControllerThread(session_timeout_ms=3000).start()
    dirs = [tmp_path / "d1", tmp_path / "d2"]
    props = {"process.roles": "broker", "node.id": "1", "controller.quorum.voters": controller.voters,
             "controller.listener.names": "CONTROLLER", **FAST, "offsets.topic.replication.factor": "1",
             "log.dirs": ",".join(map(str, dirs)), "metadata.log.dir": str(tmp_path / "meta")}
    b = EmbeddedBroker(props, data_dir=tmp_path / "unused")
    format_dirs(KafkaConfig(b.props), controller.call(lambda c: c.cluster_id), out=open("/dev/null", "w"))  # noqa: SIM115
    ids = {d: uuid_from_kafka_str(read_properties(d / "meta.properties")["directory.id"]) for d in dirs}
    b.start()
    yield controller, b, ids
    b.stop()
    controller.stop()


def assigned(controller: ControllerThread, topic: str, p: int) -> Any:
    return controller.call(lambda c: c.image.topics.get_partition(topic, p))


def actual_dir(b: EmbeddedBroker, topic: str, p: int) -> Path | None:
    return b.call(lambda: b.server.log_manager.dir_of(TopicPartition(topic, p)))


def test_replica_directories_are_assigned_moved_and_failed(
        jbod: tuple[ControllerThread, EmbeddedBroker, dict[Path, Any]]) -> None:
    controller, b, ids = jbod
    reg = controller.call(lambda c: c.image.cluster.broker(1))
    assert sorted(reg.directories) == sorted(ids.values())
    admin = AdminClient({"bootstrap.servers": b.bootstrap})
    admin.create_topics([NewTopic("j", 4, 1)])["j"].result(20)
    # Two directories: the controller leaves the replicas UNASSIGNED; the broker picks and tells it.
    for p in range(4):
        wait_for(lambda p=p: actual_dir(b, "j", p) is not None and
                 assigned(controller, "j", p).directory(1) == ids[actual_dir(b, "j", p)], what=f"j-{p} assigned")
    assert {actual_dir(b, "j", p) for p in range(4)} == set(ids)  # spread over both
    assert controller.call(lambda c: any(k == ApiKey.ASSIGN_REPLICAS_TO_DIRS for k, _ in c.requests))

    # AlterReplicaLogDirs moves j-0 to the other directory: the destination is assigned at the controller before
    # the moved log takes over (while the controller refuses, the replica stays where it is, its copy caught up).
    src = actual_dir(b, "j", 0)
    dst = next(d for d in ids if d != src)
    controller.call(lambda c: setattr(c, "assignment_error", ErrorCode.NOT_CONTROLLER))
    Req = request_class(ApiKey.ALTER_REPLICA_LOG_DIRS)
    request = Req[2](dirs=[Req.AlterReplicaLogDir(path=str(dst.absolute()), topics=[
        Req.AlterReplicaLogDir.AlterReplicaLogDirTopic(name="j", partitions=[0])])])
    with socket.create_connection(("127.0.0.1", b.port), timeout=10) as s:
        resp = roundtrip(s, request, 1)
    assert resp.results[0].partitions[0].error_code == 0
    wait_for(lambda: b.call(lambda: b.server.log_dir_mover.future_log(TopicPartition("j", 0))) is not None,
             what="future log")
    time.sleep(1.5)
    assert actual_dir(b, "j", 0) == src and assigned(controller, "j", 0).directory(1) == ids[src]
    controller.call(lambda c: setattr(c, "assignment_error", None))
    wait_for(lambda: actual_dir(b, "j", 0) == dst and assigned(controller, "j", 0).directory(1) == ids[dst],
             what="j-0 moved and assigned")

    # A failed directory: the heartbeat says so; its replicas lose leadership, the others keep it.
    failed = dst
    b.call(lambda: b.server.controller.assignments.mark_offline(failed))
    wait_for(lambda: controller.call(lambda c: list(c.image.cluster.broker(1).directories)) == [ids[src]],
             what="registration without the failed directory")
    for p in range(4):
        leader = assigned(controller, "j", p).leader
        assert leader == (-1 if actual_dir(b, "j", p) == failed else 1), p
    heartbeats = controller.call(lambda c: [r for k, r in c.requests if k == ApiKey.BROKER_HEARTBEAT])
    assert heartbeats[-1].offline_log_dirs == [ids[failed]]

"""Partition reassignment through the admin API (KIP-455: AlterPartitionReassignments and
ListPartitionReassignments), as kafka-reassign-partitions --bootstrap-server and every admin client do it, on
3 brokers and a real ZooKeeper, with kafka-python's admin client:

- completion: a partition on [0, 1] with acknowledged data moves to [1, 2]; while it runs it is listed with
  its adding and removing replicas, afterwards not; every broker's Metadata says [1, 2], the data is intact;
- cancellation: a reassignment that cannot finish (its added broker is paused with SIGSTOP, still registered)
  is listed as Kafka lists it — replicas target-then-original, adding, removing — then cancelled: the
  assignment holds the original replicas again, nothing is listed, and the added broker, once resumed, deletes the
  replica it had been given;
- a broker that is not the controller answers NOT_CONTROLLER at the top level.
"""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

from confluent_kafka import Producer
from kafka import KafkaAdminClient
from kafka import TopicPartition as KTopicPartition
from kafka.errors import NoReassignmentInProgressError as NoReassignment

from protocol import ApiKey, request_class
from protocol.errors import ErrorCode
from tests.cluster.support import (
    Zk,
    consume_all,
    create_topic,
    metadata,
    raw_request,
    start_cluster,
    wait_isr,
    wait_until,
)

OVERRIDES = {
    # Long enough that a broker paused for the cancellation stays registered meanwhile.
    "zookeeper.session.timeout.ms": "20000",
    "replica.fetch.wait.max.ms": "100",
    "auto.leader.rebalance.enable": "false",
}


def produce(bootstrap: str, topic: str, n: int) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5})
    for i in range(n):
        producer.produce(topic, value=str(i).encode(), partition=0)
    assert producer.flush(30) == 0


def test_reassignment_through_the_admin_api(tmp_path: Path) -> None:
    cluster = start_cluster(tmp_path, OVERRIDES)
    zk = Zk(cluster)
    admin: KafkaAdminClient | None = None
    try:
        wait_until(lambda: zk.controller() is not None, 10, "a controller")
        controller = zk.controller()
        assert controller is not None
        first, second = (b for b in range(3) if b != controller)
        admin = KafkaAdminClient(bootstrap_servers=cluster.brokers[controller].bootstrap)

        # --- completion: [controller, first] -> [first, second]
        create_topic(cluster.bootstrap, "done", 1, 2, assignment=[[controller, first]])
        wait_isr(zk, "done", 1, {controller, first}, 20)
        produce(cluster.bootstrap, "done", 3000)
        tp = KTopicPartition("done", 0)
        assert admin.list_partition_reassignments() == {}
        assert admin.alter_partition_reassignments({tp: [first, second]}) == {tp: None}

        def finished() -> bool:
            md = metadata(cluster.bootstrap, "done")
            return list(md[0].replicas) == [first, second] and sorted(md[0].isrs) == sorted([first, second])
        wait_until(finished, 30, "the reassignment of done-0 to complete")
        assert admin.list_partition_reassignments() == {}
        znode = json.loads(zk.client.get("/brokers/topics/done")[0])
        assert znode["partitions"] == {"0": [first, second]} and not znode.get("adding_replicas")
        for b in cluster.brokers:
            wait_until(lambda b=b: list(metadata(b.bootstrap, "done")[0].replicas) == [first, second], 10,
                       f"Metadata of done-0 from {b.bootstrap}")
        values = [int(v) for _p, _o, _k, v in consume_all(cluster.bootstrap, "done", 1)]
        assert values == list(range(3000))

        # --- cancellation: [controller, first] -> [first, second] with `second` paused
        create_topic(cluster.bootstrap, "undone", 1, 2, assignment=[[controller, first]])
        wait_isr(zk, "undone", 1, {controller, first}, 20)
        produce(cluster.bootstrap, "undone", 100)
        tp = KTopicPartition("undone", 0)
        paused = cluster.brokers[second]
        os.kill(paused.pid, signal.SIGSTOP)
        try:
            assert admin.alter_partition_reassignments({tp: [first, second]}) == {tp: None}
            ongoing = {tp: {"replicas": [first, second, controller], "adding_replicas": [second],
                            "removing_replicas": [controller]}}
            assert admin.list_partition_reassignments() == ongoing
            assert admin.list_partition_reassignments({"undone": [0], "done": [0]}) == ongoing
            znode = json.loads(zk.client.get("/brokers/topics/undone")[0])
            assert znode["partitions"] == {"0": [first, second, controller]}
            assert znode["adding_replicas"] == {"0": [second]} and znode["removing_replicas"] == {"0": [controller]}

            assert admin.alter_partition_reassignments({tp: None}) == {tp: None}
            assert admin.list_partition_reassignments() == {}
            znode = json.loads(zk.client.get("/brokers/topics/undone")[0])
            # The original replicas, in the order they have in the union (Kafka cannot restore the original order
            # either: the target comes first in the union).
            assert znode["partitions"] == {"0": [first, controller]} and not znode.get("adding_replicas")
            # A second cancellation has nothing to cancel.
            assert admin.alter_partition_reassignments({tp: None}) == {tp: NoReassignment}
        finally:
            os.kill(paused.pid, signal.SIGCONT)
        logs = cluster.data_dir / f"broker{second}" / "logs"

        def deleted() -> bool:  # created by the queued LeaderAndIsr, then deleted by the StopReplica after it
            return not (logs / "undone-0").exists() and any(logs.glob("undone-0.*-delete"))
        wait_until(deleted, 20, f"broker {second} to delete its replica of undone-0")
        md = metadata(cluster.bootstrap, "undone")
        assert list(md[0].replicas) == [first, controller]

        # --- AlterReplicaLogDirs for a partition the cluster has but this broker does not host
        LogDirsReq = request_class(ApiKey.ALTER_REPLICA_LOG_DIRS)
        Dir = LogDirsReq.AlterReplicaLogDir
        path = str((cluster.data_dir / f"broker{second}" / "logs").absolute())
        resp = raw_request(cluster.brokers[second].port, LogDirsReq[2](dirs=[Dir(path=path, topics=[
            Dir.AlterReplicaLogDirTopic(name="undone", partitions=[0])])]))
        assert resp.results[0].partitions[0].error_code == ErrorCode.REPLICA_NOT_AVAILABLE

        # --- a broker that is not the controller
        Req = request_class(ApiKey.ALTER_PARTITION_REASSIGNMENTS)
        resp = raw_request(cluster.brokers[first].port, Req[0](timeout_ms=1000, topics=[]))
        assert (resp.error_code, resp.error_message) == (
            ErrorCode.NOT_CONTROLLER, "This is not the correct controller for this cluster.")
        ListReq = request_class(ApiKey.LIST_PARTITION_REASSIGNMENTS)
        resp = raw_request(cluster.brokers[first].port, ListReq[0](timeout_ms=1000, topics=None))
        assert resp.error_code == ErrorCode.NOT_CONTROLLER
    finally:
        if admin is not None:
            admin.close()
        zk.close()
        cluster.cleanup()

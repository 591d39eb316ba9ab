"""DeleteRecords waits for the followers (Kafka's DelayedDeleteRecords), on 3 brokers and a real ZooKeeper:
the answer's low watermark is the lowest log start offset of all live replicas, so an answer of NONE means
every replica has moved its log start offset. A follower paused with SIGSTOP (still registered) keeps the
low watermark behind: the request times out with REQUEST_TIMED_OUT; once it resumes, the next request
completes. kafka-python's admin client sees the same low watermarks. A follower whose copy is wiped restarts
at a log start offset inside a batch and catches up from that batch."""

from __future__ import annotations

import os
import shutil
import signal
from pathlib import Path

from confluent_kafka import Producer
from kafka import KafkaAdminClient
from kafka import TopicPartition as KTopicPartition

from protocol import ApiKey, request_class
from protocol.errors import ErrorCode
from tests.cluster.support import (
    Zk,
    batches,
    create_topic,
    raw_request,
    segment_bytes,
    start_cluster,
    wait_isr,
    wait_until,
)

OVERRIDES = {
    "zookeeper.session.timeout.ms": "20000",  # the paused follower stays registered (and counted as alive)
    "replica.fetch.wait.max.ms": "100",
    "auto.leader.rebalance.enable": "false",
    "log.segment.bytes": "16384",  # several segments, so the deletion removes whole files
}


def delete_records(port: int, topic: str, offset: int, timeout_ms: int) -> tuple[int, int]:
    Req = request_class(ApiKey.DELETE_RECORDS)
    Topic = Req.DeleteRecordsTopic
    request = Req[2](timeout_ms=timeout_ms, topics=[
        Topic(name=topic, partitions=[Topic.DeleteRecordsPartition(partition_index=0, offset=offset)])])
    [part] = raw_request(port, request, timeout=30).topics[0].partitions
    return part.error_code, part.low_watermark


def test_delete_records_waits_for_every_live_replica(tmp_path: Path) -> None:
    cluster = start_cluster(tmp_path, OVERRIDES)
    zk = Zk(cluster)
    try:
        wait_until(lambda: zk.controller() is not None, 10, "a controller")
        leader = zk.controller()
        assert leader is not None
        first, second = (b for b in range(3) if b != leader)
        create_topic(cluster.bootstrap, "trimmed", 1, 3, assignment=[[leader, first, second]])
        wait_isr(zk, "trimmed", 1, {leader, first, second}, 20)
        producer = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all", "linger.ms": 5,
                             "batch.size": 4096})
        failed: list[object] = []
        for i in range(400):
            producer.produce("trimmed", value=b"%04d" % i + b"x" * 100, partition=0,
                             on_delivery=lambda err, msg: failed.append(err) if err else None)
        assert producer.flush(30) == 0 and not failed, failed[:3]
        port = cluster.brokers[leader].port

        admin = KafkaAdminClient(bootstrap_servers=cluster.brokers[leader].bootstrap)
        try:
            result = admin.delete_records({KTopicPartition("trimmed", 0): 100}, timeout_ms=20000)
        finally:
            admin.close()
        assert result[KTopicPartition("trimmed", 0)]["low_watermark"] == 100

        paused = cluster.brokers[second]
        os.kill(paused.pid, signal.SIGSTOP)
        try:
            # The leader and the running follower move; the paused one cannot: the request waits, then times out.
            assert delete_records(port, "trimmed", 200, 1500) == (ErrorCode.REQUEST_TIMED_OUT, 100)
            assert delete_records(port, "trimmed", 150, 0) == (ErrorCode.REQUEST_TIMED_OUT, 100)
        finally:
            os.kill(paused.pid, signal.SIGCONT)
        assert delete_records(port, "trimmed", 300, 20000) == (ErrorCode.NONE, 300)
        assert delete_records(port, "trimmed", 300, 20000) == (ErrorCode.NONE, 300)  # nothing left to wait for

        # A follower that lost its copy restarts its log at the leader's log start offset. With that offset inside
        # a batch the leader sends the whole batch, which the follower takes, starting its log at the batch's
        # base offset as Kafka does (it used to refuse it on every fetch and never catch up).
        leader_dir = cluster.data_dir / f"broker{leader}" / "logs" / "trimmed-0"
        base, last = next((b, end) for _, _, b, end, _ in batches(segment_bytes(leader_dir)) if b > 300 and end > b)
        assert delete_records(port, "trimmed", base + 1, 20000) == (ErrorCode.NONE, base + 1)
        cluster.brokers[second].kill()
        follower_dir = cluster.data_dir / f"broker{second}" / "logs" / "trimmed-0"
        shutil.rmtree(follower_dir)
        cluster.restart(second)
        wait_until(lambda: follower_dir.exists() and batches(segment_bytes(follower_dir))[-1:] != []
                   and batches(segment_bytes(follower_dir))[-1][3] == 399, 30, "the wiped follower to catch up")
        assert batches(segment_bytes(follower_dir))[0][2:4] == (base, last)
        # A follower answers NOT_LEADER_OR_FOLLOWER; an offset past the high watermark OFFSET_OUT_OF_RANGE.
        assert delete_records(cluster.brokers[first].port, "trimmed", 350, 1000) == (
            ErrorCode.NOT_LEADER_OR_FOLLOWER, -1)
        assert delete_records(port, "trimmed", 401, 1000) == (ErrorCode.OFFSET_OUT_OF_RANGE, -1)
        assert delete_records(port, "absent", 0, 1000)[0] == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    finally:
        zk.close()
        cluster.cleanup()

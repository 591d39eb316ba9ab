"""AlterPartition (KIP-497) served by our controller, frames built with our codec on a plain socket and every
answer checked field by field against Kafka's rules; accepted ISRs land in ZooKeeper (Kafka's JSON, the znode
version as the partition epoch) and reach every broker's metadata.

The proposals are made in the name of the partition's real leader (its broker id and current broker epoch,
read from /brokers/ids). The leader itself proposes nothing meanwhile: its followers stay caught up, so it
never shrinks or expands the ISR it holds.
"""

from __future__ import annotations

import base64
import json
import uuid
from pathlib import Path
from typing import Any

from protocol import ApiKey, request_class
from protocol.errors import ErrorCode
from tests.cluster.support import Zk, create_topic, metadata, raw_request, start_cluster, wait_isr, wait_until

TOPIC = "alterp"
OVERRIDES = {"zookeeper.session.timeout.ms": "6000", "inter.broker.protocol.version": "3.7"}
Req = request_class(ApiKey.ALTER_PARTITION)
T = Req.TopicData
P = T.PartitionData


def _request(v: int, broker_id: int, broker_epoch: int, topic: str | uuid.UUID, partition: int, leader_epoch: int,
             isr: list[int], partition_epoch: int, recovery: int = 0) -> Any:
    if v >= 3:
        part = P(partition_index=partition, leader_epoch=leader_epoch, leader_recovery_state=recovery,
                 new_isr_with_epochs=[P.BrokerState(broker_id=b, broker_epoch=-1) for b in isr],
                 partition_epoch=partition_epoch)
    else:
        part = P(partition_index=partition, leader_epoch=leader_epoch, new_isr=isr, leader_recovery_state=recovery,
                 partition_epoch=partition_epoch)
    t = T(topic_id=topic, partitions=[part]) if v >= 2 else T(topic_name=topic, partitions=[part])
    return Req[v](broker_id=broker_id, broker_epoch=broker_epoch, topics=[t])


def test_alter_partition_rules(tmp_path: Path) -> None:
    cluster = start_cluster(tmp_path, OVERRIDES)
    zk = Zk(cluster)
    try:
        wait_until(lambda: zk.controller() is not None and len(zk.live_brokers()) == 3, 15, "a controller")
        controller = zk.controller()
        leader, follower, third = [b for b in range(3) if b != controller] + [controller]
        create_topic(cluster.bootstrap, TOPIC, 1, 3, assignment=[[leader, follower, third]])
        wait_isr(zk, TOPIC, 1, {0, 1, 2}, 20)
        path = f"/brokers/topics/{TOPIC}/partitions/0/state"
        state = zk.partition_state(TOPIC, 0)
        assert state["leader"] == leader
        epoch, isr = state["leader_epoch"], state["isr"]
        version = zk.client.exists(path).version
        topic_id = uuid.UUID(bytes=base64.urlsafe_b64decode(
            json.loads(zk.client.get(f"/brokers/topics/{TOPIC}")[0])["topic_id"] + "=="))
        broker_epoch = {b: zk.client.exists(f"/brokers/ids/{b}").czxid for b in range(3)}
        port = cluster.brokers[controller].port

        def send(v: int, *args: Any, to: int = port, **kw: Any) -> Any:
            return raw_request(to, _request(v, *args, **kw))

        def error_of(resp: Any) -> int:
            assert resp.error_code == 0, resp
            (t,) = resp.topics
            (p,) = t.partitions
            return p.error_code

        # Whole-request errors.
        resp = send(1, leader, broker_epoch[leader], TOPIC, 0, epoch, isr, version, to=cluster.brokers[leader].port)
        assert (resp.error_code, resp.topics) == (ErrorCode.NOT_CONTROLLER, [])
        for who, be in ((leader, broker_epoch[leader] - 1), (leader, broker_epoch[leader] + 1), (17, 5)):
            resp = send(1, who, be, TOPIC, 0, epoch, isr, version)
            assert (resp.error_code, resp.topics) == (ErrorCode.STALE_BROKER_EPOCH, []), (who, be)

        # Per-partition errors, in Kafka's order of checks.
        lead = (leader, broker_epoch[leader])
        assert error_of(send(1, *lead, TOPIC, 0, epoch + 1, isr, version)) == ErrorCode.NOT_CONTROLLER
        assert error_of(send(1, *lead, TOPIC, 0, epoch, isr, version + 1)) == ErrorCode.NOT_CONTROLLER
        assert error_of(send(1, *lead, TOPIC, 0, epoch - 1, isr, version)) == ErrorCode.FENCED_LEADER_EPOCH
        assert error_of(send(1, follower, broker_epoch[follower], TOPIC, 0, epoch, isr, version)) == \
            ErrorCode.INVALID_REQUEST
        assert error_of(send(1, *lead, TOPIC, 5, epoch, isr, version)) == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        assert error_of(send(1, *lead, "nosuchtopic", 0, epoch, isr, version)) == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        assert error_of(send(2, *lead, uuid.uuid4(), 0, epoch, isr, version)) == ErrorCode.UNKNOWN_TOPIC_ID
        assert error_of(send(2, *lead, topic_id, 0, epoch, [leader, 99], version)) == ErrorCode.INELIGIBLE_REPLICA
        assert error_of(send(1, *lead, TOPIC, 0, epoch, [leader, 99], version)) == ErrorCode.OPERATION_NOT_ATTEMPTED
        assert error_of(send(1, *lead, TOPIC, 0, epoch, [leader, follower], version, recovery=1)) == \
            ErrorCode.INVALID_REQUEST  # RECOVERING with more than the leader in the ISR
        assert error_of(send(1, *lead, TOPIC, 0, epoch, [leader], version, recovery=1)) == \
            ErrorCode.INVALID_REQUEST  # RECOVERED -> RECOVERING
        assert zk.client.exists(path).version == version  # nothing written so far

        # Accepted: the shrunk ISR is written (partition epoch + 1) and answered in full.
        resp = send(2, *lead, topic_id, 0, epoch, [leader, follower], version)
        assert resp.error_code == 0 and resp.topics[0].topic_id == topic_id
        p = resp.topics[0].partitions[0]
        assert (p.partition_index, p.error_code, p.leader_id, p.leader_epoch, p.isr, p.leader_recovery_state,
                p.partition_epoch) == (0, 0, leader, epoch, [leader, follower], 0, version + 1)
        state = zk.partition_state(TOPIC, 0)
        assert (state["leader"], state["leader_epoch"], state["isr"], zk.client.exists(path).version) == \
            (leader, epoch, [leader, follower], version + 1)
        assert state["controller_epoch"] == zk.controller_epoch()
        for b in range(3):  # UpdateMetadata took the new ISR to every broker
            wait_until(lambda b=b: sorted(metadata(cluster.brokers[b].bootstrap, TOPIC)[0].isrs) ==
                       sorted([leader, follower]), 10, f"broker {b}'s metadata")

        # The same state again with the old partition epoch: answered with the current one (idempotent);
        # a different ISR with that old epoch: INVALID_UPDATE_VERSION.
        again = send(1, *lead, TOPIC, 0, epoch, [leader, follower], version)
        assert again.topics[0].topic_name == TOPIC
        assert (again.topics[0].partitions[0].error_code, again.topics[0].partitions[0].partition_epoch) == \
            (0, version + 1)
        assert error_of(send(1, *lead, TOPIC, 0, epoch, [leader], version)) == ErrorCode.INVALID_UPDATE_VERSION

        # v3 (ISR with broker epochs): the full ISR back.
        resp = send(3, *lead, topic_id, 0, epoch, [leader, follower, third], version + 1)
        p = resp.topics[0].partitions[0]
        assert (p.error_code, p.isr, p.partition_epoch) == (0, [leader, follower, third], version + 2)
        assert zk.partition_state(TOPIC, 0)["isr"] == [leader, follower, third]
    finally:
        zk.close()
        cluster.cleanup()

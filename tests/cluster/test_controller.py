"""Controller failover and fencing: kill -9 the controller broker; another broker wins /controller within
the ZooKeeper session timeout and the controller epoch goes up by one. A LeaderAndIsr carrying the old
controller epoch — built with `broker.controller.requests.build_leader_and_isr` and sent over a plain socket
to a broker — is refused with STALE_CONTROLLER_EPOCH and changes nothing: the broker it tried to promote
still answers NOT_LEADER_OR_FOLLOWER, the real leader still takes acks=all writes, ZooKeeper is untouched.
Producer ids are cluster-wide: every broker hands out distinct ones, before and after the failover.
"""

from __future__ import annotations

import base64
import json
import time
import uuid
from pathlib import Path

from confluent_kafka import Producer

from broker.cluster.partition import PartitionState
from broker.controller.requests import build_leader_and_isr
from broker.metadata.metadata_cache import BrokerEndpoint
from protocol.errors import ErrorCode
from storage import TopicPartition
from tests.cluster.support import (
    Zk,
    admin,
    consume_all,
    create_topic,
    init_producer_id,
    list_offsets_error,
    raw_request,
    start_cluster,
    wait_until,
)

TOPIC = "fenced"
SESSION_TIMEOUT_MS = 3000
OVERRIDES = {"zookeeper.session.timeout.ms": str(SESSION_TIMEOUT_MS), "replica.fetch.wait.max.ms": "100"}


def controller_seen_by(port: int) -> int:
    client = admin(f"127.0.0.1:{port}")
    return int(client.list_topics(timeout=10).controller_id)


def test_controller_failover_and_stale_epoch_fencing(tmp_path: Path) -> None:
    cluster = start_cluster(tmp_path, OVERRIDES)
    zk = Zk(cluster)
    try:
        wait_until(lambda: zk.controller() is not None, 10, "a controller")
        old_controller = zk.controller()
        assert old_controller is not None
        old_epoch = zk.controller_epoch()
        others = [b for b in range(3) if b != old_controller]
        # The topic is led by a broker that survives; the other survivor is the follower we try to promote.
        leader, follower = others
        create_topic(cluster.bootstrap, TOPIC, 1, 3, {"min.insync.replicas": "2"},
                     assignment=[[leader, follower, old_controller]])
        wait_until(lambda: sorted(zk.partition_state(TOPIC, 0)["isr"]) == [0, 1, 2], 20, "full ISR")

        pids = [init_producer_id(cluster.ports[b]) for b in (0, 1, 2, 0, 1, 2)]
        assert len(set(pids)) == len(pids), pids

        t0 = time.monotonic()
        cluster.brokers[old_controller].kill()
        wait_until(lambda: zk.controller() not in (None, old_controller), SESSION_TIMEOUT_MS / 1000 + 5,
                   "a new controller")
        took = time.monotonic() - t0
        new_controller = zk.controller()
        assert new_controller in others
        assert took <= SESSION_TIMEOUT_MS / 1000 + 2, f"controller moved after {took:.1f}s"
        assert zk.controller_epoch() == old_epoch + 1
        # The dead broker leaves the ISR; the leader stays (it is alive).
        wait_until(lambda: sorted(zk.partition_state(TOPIC, 0)["isr"]) == sorted(others), 10, "ISR without it")
        state_before = zk.partition_state(TOPIC, 0)
        assert state_before["leader"] == leader
        # Every survivor has heard from the new controller (UpdateMetadata follows its LeaderAndIsr).
        for b in others:
            wait_until(lambda b=b: controller_seen_by(cluster.ports[b]) == new_controller, 10,
                       f"broker {b} to know controller {new_controller}")

        # A LeaderAndIsr from the dead controller's epoch making `follower` the leader at a newer epoch.
        topic_json = json.loads(zk.client.get(f"/brokers/topics/{TOPIC}")[0])
        topic_id = uuid.UUID(bytes=base64.urlsafe_b64decode(topic_json["topic_id"] + "=="))
        stale = PartitionState(leader=follower, leader_epoch=state_before["leader_epoch"] + 5, isr=[follower],
                               replicas=[leader, follower, old_controller], partition_epoch=99,
                               controller_epoch=old_epoch)
        endpoints = [BrokerEndpoint(b, "127.0.0.1", cluster.ports[b]) for b in range(3)]
        for version in (7, 4):  # by topic id and by topic name
            request = build_leader_and_isr(version, old_controller, old_epoch, {TopicPartition(TOPIC, 0): stale},
                                           {TOPIC: topic_id}, endpoints)
            response = raw_request(cluster.ports[follower], request)
            assert response.error_code == ErrorCode.STALE_CONTROLLER_EPOCH, (version, response)
            if version >= 5:
                errors = [e.error_code for t in response.topics for e in t.partition_errors]
            else:
                errors = [e.error_code for e in response.partition_errors]
            assert errors == [ErrorCode.STALE_CONTROLLER_EPOCH], (version, response)

        # Nothing changed: the follower is still a follower, the leader still leads and replicates.
        assert list_offsets_error(cluster.ports[follower], TOPIC, 0) == ErrorCode.NOT_LEADER_OR_FOLLOWER
        assert list_offsets_error(cluster.ports[leader], TOPIC, 0) == ErrorCode.NONE
        assert zk.partition_state(TOPIC, 0) == state_before
        acked: list[int] = []
        producer = Producer({"bootstrap.servers": f"127.0.0.1:{cluster.ports[leader]}", "acks": "all",
                             "enable.idempotence": True, "message.timeout.ms": 20000})
        for i in range(500):
            producer.produce(TOPIC, value=str(i).encode(), partition=0,
                             on_delivery=lambda err, msg: acked.append(int(msg.value())) if err is None else None)
        assert producer.flush(30) == 0
        assert sorted(acked) == list(range(500))
        values = [int(v) for _, _, _, v in consume_all(cluster.bootstrap, TOPIC, 1)]  # type: ignore[arg-type]
        assert values == list(range(500))

        # The killed broker comes back under the new controller and rejoins the ISR.
        cluster.restart(old_controller)
        wait_until(lambda: sorted(zk.partition_state(TOPIC, 0)["isr"]) == [0, 1, 2], 20, "full ISR again")
        assert zk.controller() == new_controller
        pids += [init_producer_id(cluster.ports[b]) for b in (0, 1, 2)]
        assert len(set(pids)) == len(pids), pids
    finally:
        zk.close()
        cluster.cleanup()

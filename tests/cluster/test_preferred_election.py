"""Preferred replica election on request: with auto.leader.rebalance.enable=false a leader that failed over
stays moved after its preferred replica (the first of the assignment) comes back; writing
/admin/preferred_replica_election — what Kafka's ZooKeeper-mode tool writes — makes the controller move
leadership back (new leader epoch, same ISR) and delete the request. Writes go on across the move.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

from confluent_kafka import Producer

from tests.cluster.support import Zk, consume_all, create_topic, start_cluster, wait_until

TOPIC = "preferred"
OVERRIDES = {
    "zookeeper.session.timeout.ms": "3000",
    "replica.fetch.wait.max.ms": "100",
    "auto.leader.rebalance.enable": "false",
}


def test_preferred_replica_election_request(tmp_path: Path) -> None:
    cluster = start_cluster(tmp_path, OVERRIDES)
    zk = Zk(cluster)
    try:
        wait_until(lambda: zk.controller() is not None, 10, "a controller")
        controller = zk.controller()
        preferred, second = (b for b in range(3) if b != controller)
        create_topic(cluster.bootstrap, TOPIC, 1, 3, {"min.insync.replicas": "2"},
                     assignment=[[preferred, second, controller]])
        wait_until(lambda: sorted(zk.partition_state(TOPIC, 0)["isr"]) == [0, 1, 2], 20, "full ISR")

        producer = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all", "enable.idempotence": True,
                             "message.timeout.ms": 30000})
        sent = 0

        def produce(n: int) -> None:
            nonlocal sent
            for _ in range(n):
                producer.produce(TOPIC, value=str(sent).encode(), partition=0)
                sent += 1
            assert producer.flush(30) == 0

        produce(500)
        cluster.brokers[preferred].kill()
        wait_until(lambda: zk.partition_state(TOPIC, 0)["leader"] == second, 15, "failover to the second replica")
        produce(500)
        cluster.restart(preferred)
        wait_until(lambda: sorted(zk.partition_state(TOPIC, 0)["isr"]) == [0, 1, 2], 20, "full ISR again")
        time.sleep(1.5)
        assert zk.partition_state(TOPIC, 0)["leader"] == second  # no automatic rebalance
        epoch = zk.partition_state(TOPIC, 0)["leader_epoch"]

        request = {"version": 1, "partitions": [{"topic": TOPIC, "partition": 0}]}
        zk.client.create("/admin/preferred_replica_election", json.dumps(request).encode(), makepath=True)
        wait_until(lambda: zk.partition_state(TOPIC, 0)["leader"] == preferred, 15, "the preferred leader back")
        state = zk.partition_state(TOPIC, 0)
        assert state["leader_epoch"] == epoch + 1 and sorted(state["isr"]) == [0, 1, 2]
        wait_until(lambda: not zk.client.exists("/admin/preferred_replica_election"), 10, "the request deleted")

        produce(500)
        values = [int(v) for _, _, _, v in consume_all(cluster.bootstrap, TOPIC, 1)]  # type: ignore[arg-type]
        assert values == list(range(1500))
    finally:
        zk.close()
        cluster.cleanup()

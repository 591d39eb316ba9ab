"""Unclean leader election: off by default — a partition whose only in-sync replica died stays offline even
when a stale replica is alive — and, once `unclean.leader.election.enable=true` is set on the topic, the
controller at once makes the stale replica leader (losing what only the dead one had, as Kafka does) with a
new leader epoch; when the old leader returns it truncates to the new leader's log by leader epoch.
"""

from __future__ import annotations

import time
from pathlib import Path

from confluent_kafka import Producer
from confluent_kafka.admin import AlterConfigOpType, ConfigEntry, ConfigResource

from tests.cluster.support import Zk, admin, consume_all, create_topic, start_cluster, wait_until

TOPIC = "unclean"
OVERRIDES = {"zookeeper.session.timeout.ms": "3000", "replica.fetch.wait.max.ms": "100"}


def produce(port: int, values: list[bytes]) -> list[int]:
    offsets: list[int] = []
    producer = Producer({"bootstrap.servers": f"127.0.0.1:{port}", "acks": "all", "enable.idempotence": True,
                         "message.timeout.ms": 20000})
    for v in values:
        producer.produce(TOPIC, value=v, partition=0,
                         on_delivery=lambda err, m: offsets.append(m.offset()) if err is None else None)
    assert producer.flush(30) == 0
    return offsets


def test_unclean_election_only_when_enabled(tmp_path: Path) -> None:
    cluster = start_cluster(tmp_path, OVERRIDES)
    zk = Zk(cluster)
    try:
        wait_until(lambda: zk.controller() is not None, 10, "a controller")
        controller = zk.controller()
        first, stale = (b for b in range(3) if b != controller)
        create_topic(cluster.bootstrap, TOPIC, 1, 2, {"min.insync.replicas": "1"}, assignment=[[first, stale]])
        wait_until(lambda: sorted(zk.partition_state(TOPIC, 0)["isr"]) == sorted([first, stale]), 20, "ISR")
        assert produce(cluster.ports[first], [b"both-%d" % i for i in range(100)]) == list(range(100))

        cluster.brokers[stale].kill()
        wait_until(lambda: zk.partition_state(TOPIC, 0)["isr"] == [first], 15, "the stale replica out of the ISR")
        assert produce(cluster.ports[first], [b"only-first-%d" % i for i in range(200)]) == list(range(100, 300))
        cluster.brokers[first].kill()
        wait_until(lambda: zk.partition_state(TOPIC, 0)["leader"] == -1, 15, "the partition to go offline")
        offline_epoch = zk.partition_state(TOPIC, 0)["leader_epoch"]

        cluster.restart(stale)
        time.sleep(2)  # the controller has seen it join; unclean election is off: still offline
        st = zk.partition_state(TOPIC, 0)
        assert st["leader"] == -1 and st["isr"] == [first], st

        client = admin(cluster.bootstrap)
        resource = ConfigResource("topic", TOPIC, incremental_configs=[
            ConfigEntry("unclean.leader.election.enable", "true",
                        incremental_operation=AlterConfigOpType.SET)])
        client.incremental_alter_configs([resource])[resource].result(20)
        wait_until(lambda: zk.partition_state(TOPIC, 0)["leader"] == stale, 15, "the unclean election")
        st = zk.partition_state(TOPIC, 0)
        assert st["isr"] == [stale] and st["leader_epoch"] > offline_epoch, st
        assert produce(cluster.ports[stale], [b"after-%d" % i for i in range(50)]) == list(range(100, 150))

        wait_until(lambda: first not in zk.live_brokers(), 15, "the old registration to expire")
        cluster.restart(first)
        wait_until(lambda: sorted(zk.partition_state(TOPIC, 0)["isr"]) == sorted([first, stale]), 20,
                   "the old leader back in the ISR")
        log_text = cluster.brokers[first].log_path.read_text(errors="replace")
        assert "truncating from log end offset 300 to 100" in log_text, cluster.brokers[first].log_tail(40)
        values = [v for _, _, _, v in consume_all(cluster.bootstrap, TOPIC, 1)]
        assert values == [b"both-%d" % i for i in range(100)] + [b"after-%d" % i for i in range(50)]
    finally:
        zk.close()
        cluster.cleanup()

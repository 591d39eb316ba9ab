"""Partition reassignment (Kafka's ZooKeeper-mode kafka-reassign-partitions): 3 brokers on a real ZooKeeper,
a topic with 2 partitions on brokers [0, 1] (partition 0 led by 0, partition 1 by 1), an idempotent acks=all
producer writing throughout. The test writes /admin/reassign_partitions with kazoo, as Kafka's tool does, to
move both partitions to [1, 2]: broker 2 is added, broker 0 removed, partition 0's leader has to move.

Afterwards: the request znode is gone, the topic znode says [1, 2] with no adding/removing replicas,
ZooKeeper and every broker's Metadata say replicas and ISR [1, 2], broker 0 deleted its partition
directories, every acknowledged message is consumed exactly once and in order, and broker 2's `.log` bytes
equal broker 1's up to the high watermark.
"""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

from confluent_kafka import Producer

from tests.cluster.support import (
    Zk,
    consume_all,
    create_topic,
    metadata,
    prefix_up_to,
    segment_bytes,
    start_cluster,
    wait_isr,
    wait_until,
)

TOPIC = "moving"
PARTITIONS = 2
TARGET = [1, 2]
OVERRIDES = {
    "zookeeper.session.timeout.ms": "3000",
    "replica.fetch.wait.max.ms": "100",
    "auto.leader.rebalance.enable": "false",
}
REQUEST = "/admin/reassign_partitions"


def key(partition: int, seq: int) -> bytes:
    return f"{partition}:{seq:07d}".encode()


def test_reassign_both_partitions_to_new_brokers(tmp_path: Path) -> None:
    cluster = start_cluster(tmp_path, OVERRIDES)
    zk = Zk(cluster)
    try:
        create_topic(cluster.bootstrap, TOPIC, PARTITIONS, 2, {"min.insync.replicas": "2"},
                     assignment=[[0, 1], [1, 0]])
        wait_isr(zk, TOPIC, PARTITIONS, {0, 1}, 20)
        assert zk.partition_state(TOPIC, 0)["leader"] == 0
        epochs_before = {p: zk.partition_state(TOPIC, p)["leader_epoch"] for p in range(PARTITIONS)}

        acked: dict[int, list[int]] = {p: [] for p in range(PARTITIONS)}
        failed: list[str] = []
        sent = dict.fromkeys(range(PARTITIONS), 0)

        def on_delivery(err: object, msg: object) -> None:
            if err is not None:
                failed.append(str(err))
            else:
                p, s = msg.key().split(b":")  # type: ignore[attr-defined]
                acked[int(p)].append(int(s))

        producer = Producer({"bootstrap.servers": cluster.bootstrap, "enable.idempotence": True, "acks": "all",
                             "linger.ms": 5, "message.timeout.ms": 60000, "retry.backoff.ms": 100})

        def produce(n: int) -> None:
            for _ in range(n):
                p = (sent[0] + sent[1]) % PARTITIONS
                producer.produce(TOPIC, key=key(p, sent[p]), value=b"v" * 100, partition=p,
                                 on_delivery=on_delivery)
                sent[p] += 1
            producer.poll(0)

        produce(5000)
        assert producer.flush(30) == 0

        stop = threading.Event()
        errors: list[BaseException] = []

        def keep_producing() -> None:
            try:
                deadline = time.monotonic() + 30
                while not stop.is_set() and time.monotonic() < deadline:
                    produce(100)  # about 5,000 messages a second
                    time.sleep(0.02)
            except BaseException as e:
                errors.append(e)

        thread = threading.Thread(target=keep_producing, daemon=True)
        thread.start()
        time.sleep(0.5)

        # What kafka-reassign-partitions --zookeeper --execute writes.
        request = {"version": 1, "partitions": [{"topic": TOPIC, "partition": p, "replicas": TARGET}
                                                for p in range(PARTITIONS)]}
        zk.client.create(REQUEST, json.dumps(request).encode(), makepath=True)
        wait_until(lambda: not zk.client.exists(REQUEST), 30, "the reassignment request to be deleted")
        time.sleep(1.0)  # writes go on against the new replicas
        stop.set()
        thread.join(10)
        assert not errors, errors
        assert producer.flush(60) == 0
        assert not failed, failed[:5]
        assert all(len(acked[p]) == sent[p] for p in range(PARTITIONS)), (sent, {p: len(a) for p, a in acked.items()})

        # ZooKeeper: assignment [1, 2] without adding/removing sets, ISR [1, 2], leaders from the target.
        topic_znode = json.loads(zk.client.get(f"/brokers/topics/{TOPIC}")[0])
        assert topic_znode["partitions"] == {str(p): TARGET for p in range(PARTITIONS)}, topic_znode
        assert topic_znode.get("adding_replicas", {}) == {} and topic_znode.get("removing_replicas", {}) == {}
        for p in range(PARTITIONS):
            st = zk.partition_state(TOPIC, p)
            assert sorted(st["isr"]) == TARGET and st["leader"] in TARGET, (p, st)
            assert st["leader_epoch"] >= epochs_before[p] + 2, (p, st, epochs_before)  # start and finish bumps
        assert zk.partition_state(TOPIC, 0)["leader"] != 0

        # Every broker's Metadata agrees.
        for b in cluster.brokers:
            def moved(bootstrap: str = b.bootstrap) -> bool:
                md = metadata(bootstrap, TOPIC)
                return len(md) == PARTITIONS and all(
                    list(pm.replicas) == TARGET and sorted(pm.isrs) == TARGET and pm.leader in TARGET
                    for pm in md.values())
            wait_until(moved, 10, f"Metadata replicas and ISR {TARGET} from {b.bootstrap}")

        # Broker 0 deleted its replicas (possibly renamed to *-delete first, then removed).
        def partition_dirs(broker: int) -> set[str]:
            logs = cluster.data_dir / f"broker{broker}" / "logs"
            return {d.name for d in logs.iterdir() if d.is_dir() and d.name.startswith(f"{TOPIC}-")}

        live_dirs = {f"{TOPIC}-{p}" for p in range(PARTITIONS)}
        wait_until(lambda: not partition_dirs(0) & live_dirs, 10, "broker 0's partition directories to be deleted")
        assert all(d.endswith("-delete") for d in partition_dirs(0)), partition_dirs(0)
        assert all(partition_dirs(i) >= live_dirs for i in TARGET)

        # Every acknowledged message exactly once, in order, per partition.
        records = consume_all(cluster.bootstrap, TOPIC, PARTITIONS)
        consumed: dict[int, list[int]] = {p: [] for p in range(PARTITIONS)}
        for partition, _offset, k, _v in records:
            assert k is not None
            p, s = (int(x) for x in k.split(b":"))
            assert p == partition
            consumed[p].append(s)
        for p in range(PARTITIONS):
            assert consumed[p] == list(range(sent[p])), f"partition {p}: gaps, duplicates or reordering"
            assert sorted(acked[p]) == consumed[p]

        # Broker 2 (added) holds the same bytes as broker 1 up to the high watermark.
        def same_bytes(p: int) -> bool:
            data = [segment_bytes(cluster.data_dir / f"broker{i}" / "logs" / f"{TOPIC}-{p}") for i in TARGET]
            prefixes = [prefix_up_to(d, sent[p]) for d in data]
            return len(prefixes[0]) > 0 and prefixes[0] == prefixes[1]
        for p in range(PARTITIONS):
            wait_until(lambda p=p: same_bytes(p), 10, f"partition {p}: broker 2's bytes equal broker 1's")
    finally:
        zk.close()
        cluster.cleanup()


def test_controller_failover_mid_reassignment_resumes(tmp_path: Path) -> None:
    """The reassignment stalls (the added broker is down), the controller — also the replica being removed —
    dies; the next controller resumes from the request and the topic's adding/removing sets and finishes
    once the added broker is back and in sync."""
    cluster = start_cluster(tmp_path, OVERRIDES)
    zk = Zk(cluster)
    try:
        wait_until(lambda: zk.controller() is not None, 10, "a controller")
        controller = zk.controller()
        assert controller is not None
        stays, added = (b for b in range(3) if b != controller)
        topic = "resumed"
        create_topic(cluster.bootstrap, topic, 1, 2, assignment=[[controller, stays]])
        wait_isr(zk, topic, 1, {controller, stays}, 20)
        producer = Producer({"bootstrap.servers": cluster.bootstrap, "enable.idempotence": True, "acks": "all",
                             "message.timeout.ms": 60000})
        for i in range(2000):
            producer.produce(topic, value=str(i).encode(), partition=0)
        assert producer.flush(30) == 0

        cluster.brokers[added].kill()
        wait_until(lambda: added not in zk.live_brokers(), 15, f"broker {added} to leave")
        request = {"version": 1, "partitions": [{"topic": topic, "partition": 0, "replicas": [stays, added]}]}
        zk.client.create(REQUEST, json.dumps(request).encode(), makepath=True)

        def topic_znode() -> dict:
            return json.loads(zk.client.get(f"/brokers/topics/{topic}")[0])

        wait_until(lambda: topic_znode()["adding_replicas"] == {"0": [added]}, 10, "phase one on the topic znode")
        znode = topic_znode()
        assert znode["removing_replicas"] == {"0": [controller]}
        assert znode["partitions"] == {"0": [stays, added, controller]}
        time.sleep(0.5)
        assert zk.client.exists(REQUEST)  # stalled: the added replica cannot catch up

        cluster.brokers[controller].kill()
        wait_until(lambda: zk.controller() == stays, 15, f"broker {stays} to take over as controller")
        wait_until(lambda: zk.partition_state(topic, 0)["leader"] == stays, 15, "the surviving replica to lead")
        for i in range(2000, 3000):
            producer.produce(topic, value=str(i).encode(), partition=0)
        assert producer.flush(30) == 0
        cluster.restart(added)

        wait_until(lambda: not zk.client.exists(REQUEST), 30, "the reassignment to finish under the new controller")
        znode = topic_znode()
        assert znode["partitions"] == {"0": [stays, added]}
        assert znode.get("adding_replicas", {}) == {} and znode.get("removing_replicas", {}) == {}
        st = zk.partition_state(topic, 0)
        assert sorted(st["isr"]) == sorted([stays, added]) and st["leader"] == stays, st
        values = [int(v) for _, _, _, v in consume_all(cluster.bootstrap, topic, 1)]  # type: ignore[arg-type]
        assert values == list(range(3000))
    finally:
        zk.close()
        cluster.cleanup()

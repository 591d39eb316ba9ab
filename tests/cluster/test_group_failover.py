"""`__consumer_offsets` is replicated and the group coordinator fails over with its partition's leader: a
group commits offsets, the coordinator broker is killed -9, and a new member of the same group — served by
the broker that now leads that offsets partition — resumes exactly at the committed offsets.
"""

from __future__ import annotations

from pathlib import Path

from confluent_kafka import Consumer, Producer
from kafka.admin import KafkaAdminClient

from tests.cluster.support import Zk, create_topic, group_coordinator, start_cluster, wait_isr, wait_until

TOPIC = "orders"
GROUP = "billing"
PARTITIONS = 3
OVERRIDES = {"zookeeper.session.timeout.ms": "3000", "replica.fetch.wait.max.ms": "100"}


def consumer() -> dict[str, object]:
    return {"group.id": GROUP, "enable.auto.commit": False, "auto.offset.reset": "earliest",
            "session.timeout.ms": 6000, "fetch.wait.max.ms": 100}


def committed(bootstrap: str) -> dict[int, int]:
    # kafka-python's admin client, not librdkafka's: librdkafka aborts the whole process when
    # ListConsumerGroupOffsets meets NOT_COORDINATOR during a coordinator move (librdkafka#5040).
    client = KafkaAdminClient(bootstrap_servers=bootstrap.split(","), request_timeout_ms=10000)
    try:
        offsets = client.list_group_offsets(GROUP)[GROUP]
    finally:
        client.close()
    found = {tp.partition: om.offset for tp, om in offsets.items() if tp.topic == TOPIC}
    return {p: max(found.get(p, 0), 0) for p in range(PARTITIONS)}


def test_committed_offsets_survive_the_coordinators_death(tmp_path: Path) -> None:
    cluster = start_cluster(tmp_path, OVERRIDES)
    zk = Zk(cluster)
    try:
        create_topic(cluster.bootstrap, TOPIC, PARTITIONS, 3, {"min.insync.replicas": "2"})
        wait_isr(zk, TOPIC, PARTITIONS, {0, 1, 2}, 20)
        producer = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all", "enable.idempotence": True})
        for i in range(3000):
            producer.produce(TOPIC, value=str(i).encode(), partition=i % PARTITIONS)
        assert producer.flush(30) == 0

        first = Consumer({"bootstrap.servers": cluster.bootstrap, **consumer()})
        first.subscribe([TOPIC])
        seen: list[int] = []
        while len(seen) < 1500:
            for m in first.consume(500, 1.0):
                if m.error() is None:
                    seen.append(int(m.value()))
        first.commit(asynchronous=False)
        positions = {tp.partition: max(tp.offset, 0) for tp in first.position(first.assignment())}
        first.close()
        assert committed(cluster.bootstrap) == positions
        assert sum(positions.values()) == len(seen)

        # FindCoordinator as raw requests, not librdkafka's admin client, which can abort the whole process when
        # its coordinator lookup is pending as the cluster changes (librdkafka#4605: `eonce->refcnt > 0`).
        [old] = wait_until(lambda: [c] if (c := group_coordinator(cluster.ports[0], GROUP)) != -1 else None, 20,
                           "coordinator")
        # The offsets partition is replicated to all three brokers before we kill its leader.
        wait_isr(zk, "__consumer_offsets", 4, {0, 1, 2}, 20)
        cluster.brokers[old].kill()
        survivors = ",".join(f"127.0.0.1:{cluster.ports[b]}" for b in range(3) if b != old)
        survivor = cluster.ports[next(b for b in range(3) if b != old)]
        wait_until(lambda: group_coordinator(survivor, GROUP) not in (-1, old), 20, "a new group coordinator")
        # The new coordinator answers once it has loaded the group from its replica of the offsets partition.
        wait_until(lambda: committed(survivors) == positions, 20, "the committed offsets from the new coordinator")

        second = Consumer({"bootstrap.servers": survivors, **consumer()})
        second.subscribe([TOPIC])
        rest: list[int] = []
        try:
            wait_until(lambda: rest.extend(int(m.value()) for m in second.consume(500, 0.5) if m.error() is None)
                       or len(rest) >= 1500, 30, "the rest of the messages")
        finally:
            second.close()
        assert sorted(seen + rest) == list(range(3000)), "lost or duplicated across the coordinator failover"
    finally:
        zk.close()
        cluster.cleanup()

"""A KIP-848 consumer group fails over with its `__consumer_offsets` partition: a confluent-kafka consumer with
`group.protocol=consumer` consumes and commits, the coordinator broker is killed -9, and the broker that now
leads that offsets partition loads the group (Kafka's ConsumerGroup* records) with the same member and epoch:
the consumer carries on, nothing lost or consumed twice.
"""

from __future__ import annotations

import time
from pathlib import Path

from confluent_kafka import Consumer, Producer

from tests.cluster.support import (
    Zk,
    admin,
    consumer_group_members,
    create_topic,
    group_coordinator,
    start_cluster,
    wait_isr,
    wait_until,
)

TOPIC = GROUP = "kip848-failover"
PARTITIONS = 3
OVERRIDES = {"zookeeper.session.timeout.ms": "3000", "replica.fetch.wait.max.ms": "100",
             "group.consumer.heartbeat.interval.ms": "500", "group.consumer.min.heartbeat.interval.ms": "500"}


def test_a_consumer_group_survives_its_coordinators_death(tmp_path: Path) -> None:
    cluster = start_cluster(tmp_path, OVERRIDES)
    zk = Zk(cluster)
    try:
        create_topic(cluster.bootstrap, TOPIC, PARTITIONS, 3, {"min.insync.replicas": "2"})
        wait_isr(zk, TOPIC, PARTITIONS, {0, 1, 2}, 20)
        producer = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all"})

        def produce(start: int, n: int) -> None:
            for i in range(start, start + n):
                producer.produce(TOPIC, value=str(i).encode(), partition=i % PARTITIONS)
            assert producer.flush(30) == 0

        produce(0, 300)
        consumer = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": GROUP, "group.protocol": "consumer",
                             "enable.auto.commit": False, "auto.offset.reset": "earliest", "fetch.wait.max.ms": 100})
        consumer.subscribe([TOPIC])
        seen: list[int] = []

        def consume_until(n: int, timeout: float) -> None:
            deadline = time.monotonic() + timeout
            while len(seen) < n and time.monotonic() < deadline:
                msgs = [m for m in consumer.consume(500, 0.3) if m.error() is None]
                seen.extend(int(m.value()) for m in msgs)
                if msgs:
                    try:
                        consumer.commit(asynchronous=False)
                    except Exception:  # noqa: BLE001 - the coordinator is moving: the next commit covers it
                        pass
            assert len(seen) >= n, f"consumed {len(seen)} of {n}"

        try:
            consume_until(300, 30)
            # librdkafka's admin client describes the group while the cluster is whole; after the kill the
            # test asks with raw requests, because librdkafka can abort the whole process when a coordinator
            # lookup is pending as the cluster changes (librdkafka#4605: `eonce->refcnt > 0`).
            client = admin(cluster.bootstrap)  # held: a dropped AdminClient never completes its futures
            before = client.describe_consumer_groups([GROUP], request_timeout=10)[GROUP].result(15)
            old = int(before.coordinator.id)
            [member] = [m.member_id for m in before.members]
            wait_isr(zk, "__consumer_offsets", 4, {0, 1, 2}, 20)
            cluster.brokers[old].kill()
            survivor = cluster.ports[next(b for b in range(3) if b != old)]

            def moved() -> list[int] | None:
                now = group_coordinator(survivor, GROUP)
                return [now] if now not in (-1, old) else None

            [new] = wait_until(moved, 30, "a new group coordinator")
            # The new coordinator answers once it has loaded the group from its replica of the offsets partition.
            members = wait_until(lambda: consumer_group_members(cluster.ports[new], GROUP), 30, "the group loaded")
            assert members == [member], "the member had to rejoin"
            produce(300, 300)
            consume_until(600, 60)
            assert sorted(seen) == list(range(600)), "lost or duplicated across the coordinator failover"
        finally:
            consumer.close()
    finally:
        zk.close()
        cluster.cleanup()

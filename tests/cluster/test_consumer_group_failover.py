"""A KIP-848 consumer group fails over with its `__consumer_offsets` partition: a confluent-kafka consumer with
`group.protocol=consumer` consumes and commits, the coordinator broker is killed -9, and the broker that now
leads that offsets partition loads the group (Kafka's ConsumerGroup* records) with the same member and epoch:
the consumer carries on, nothing lost or consumed twice.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer, Producer

from tests.cluster.support import Zk, admin, create_topic, start_cluster, wait_isr, wait_until

TOPIC = GROUP = "kip848-failover"
PARTITIONS = 3
OVERRIDES = {"zookeeper.session.timeout.ms": "3000", "replica.fetch.wait.max.ms": "100",
             "group.consumer.heartbeat.interval.ms": "500", "group.consumer.min.heartbeat.interval.ms": "500"}


def describe(client: Any) -> Any:
    return client.describe_consumer_groups([GROUP], request_timeout=10)[GROUP].result(15)


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
            # One admin client per bootstrap list, alive to the end of the test: librdkafka 2.16 can abort the
            # whole process (rd_kafka_enq_once_del_source_return: `eonce->refcnt > 0`) when an AdminClient is
            # dropped while its group-coordinator lookup is still pending, as one made per call was after the kill.
            clients = [admin(cluster.bootstrap)]
            before = describe(clients[0])
            old = int(before.coordinator.id)
            member = before.members[0].member_id
            wait_isr(zk, "__consumer_offsets", 4, {0, 1, 2}, 20)
            cluster.brokers[old].kill()
            survivors = ",".join(f"127.0.0.1:{cluster.ports[b]}" for b in range(3) if b != old)
            clients.append(admin(survivors))
            wait_until(lambda: int(describe(clients[1]).coordinator.id) != old, 30, "a new group coordinator")
            after = describe(clients[1])
            assert [m.member_id for m in after.members] == [member], "the member had to rejoin"
            produce(300, 300)
            consume_until(600, 60)
            assert sorted(seen) == list(range(600)), "lost or duplicated across the coordinator failover"
        finally:
            consumer.close()
    finally:
        zk.close()
        cluster.cleanup()

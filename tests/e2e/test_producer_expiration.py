"""producer.id.expiration.ms with stock clients over real sockets (Kafka's PeriodicProducerExpirationCheck).

A confluent-kafka idempotent producer and a transactional one with its transaction left open write to one
partition; producer.id.expiration.ms is then lowered dynamically (as Kafka allows). kafka-python's admin
client (DescribeProducers) shows the idle idempotent producer gone while the one with the open transaction
stays; the expired producer's next write is taken (Kafka 3.7 keeps no state for it, so its sequence starts
it afresh) and it is listed again; once the transaction commits, that producer expires as well.
"""

from __future__ import annotations

from typing import Any

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, NewTopic
from kafka import KafkaAdminClient
from kafka import TopicPartition as KPTopicPartition

from tests.e2e.support import wait_until

TOPIC = "expiring"
EXPIRATION_MS = 2000


def active_producers(admin: KafkaAdminClient) -> dict[int, Any]:
    states = admin.describe_producers([KPTopicPartition(TOPIC, 0)])
    return {p.producer_id: p for p in states[KPTopicPartition(TOPIC, 0)].active_producers}


def deliver(producer: Producer, value: bytes) -> None:
    errors: list[Any] = []
    producer.produce(TOPIC, value, partition=0, on_delivery=lambda err, msg: errors.append(err))
    assert producer.flush(30) == 0
    assert errors == [None]


def test_an_idle_producer_id_expires_while_an_open_transaction_keeps_its_producer(broker_factory: Any) -> None:
    # The check runs often; the expiration itself stays at Kafka's default (a day) until lowered below.
    broker = broker_factory({"producer.id.expiration.check.interval.ms": "100",
                             "transaction.state.log.num.partitions": "3"})
    confluent_admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    for f in confluent_admin.create_topics([NewTopic(TOPIC, 1, 1)]).values():
        f.result(30)

    transactional = Producer({"bootstrap.servers": broker.bootstrap, "transactional.id": "expiry-txn"})
    transactional.init_transactions(30)
    transactional.begin_transaction()
    deliver(transactional, b"in-the-open-transaction")
    idempotent = Producer({"bootstrap.servers": broker.bootstrap, "enable.idempotence": True})
    for i in range(3):
        deliver(idempotent, f"idempotent-{i}".encode())

    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap, request_timeout_ms=10000)
    try:
        producers = active_producers(admin)
        assert len(producers) == 2
        txn_pid = next(pid for pid, p in producers.items() if p.current_transaction_start_offset >= 0)
        idempotent_pid = next(pid for pid in producers if pid != txn_pid)
        assert producers[idempotent_pid].last_sequence == 2

        resource = ConfigResource("broker", str(broker.server.broker_id), incremental_configs=[
            ConfigEntry("producer.id.expiration.ms", str(EXPIRATION_MS),
                        incremental_operation=AlterConfigOpType.SET)])
        confluent_admin.incremental_alter_configs([resource])[resource].result(20)

        wait_until(lambda: idempotent_pid not in active_producers(admin), 30, "the idle producer id to expire")
        # The transactional producer wrote before the idempotent one, so it is idle longer: only its open
        # transaction keeps it.
        kept = active_producers(admin)
        assert list(kept) == [txn_pid]
        assert kept[txn_pid].current_transaction_start_offset == 0

        # The expired producer carries on with sequence 3: taken, and known again from that batch.
        deliver(idempotent, b"after-expiry")
        again = active_producers(admin)
        assert again[idempotent_pid].last_sequence == 3

        transactional.commit_transaction(30)
        wait_until(lambda: txn_pid not in active_producers(admin), 30, "the committed producer to expire")
    finally:
        admin.close()
        idempotent.flush(5)

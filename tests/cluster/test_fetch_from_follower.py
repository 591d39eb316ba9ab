"""Fetch from the closest replica (KIP-392) on 3 in-process brokers (racks r0, r1, r2, Kafka's
RackAwareReplicaSelector) sharing a real ZooKeeper:

- Metadata and DescribeCluster report each broker's rack;
- through our codec: a Fetch v11 to the leader with rack r2 answers preferred_read_replica 2 and no records; with
  no rack the leader serves; the follower serves a v11 consumer fetch up to its high watermark, but answers a
  v10 fetch (no client metadata) with NOT_LEADER_OR_FOLLOWER;
- confluent-kafka's consumer with client.rack=r2 reads everything, and broker 2's fetch counters show it served
  the consumer as a follower; once broker 2 is gone (out of the ISR), the consumer falls back to the leader and
  reads what is written afterwards.
"""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka import TopicPartition as CTopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from kafka import KafkaAdminClient

from broker.metadata.zookeeper_server import start_zookeeper
from broker.testing import EmbeddedBroker
from protocol import ApiKey, request_class
from protocol.errors import ErrorCode
from records.batch import batch_headers
from storage import TopicPartition
from tests.broker.wire import roundtrip
from tests.e2e.support import wait_until

TOPIC = "near"
TP = TopicPartition(TOPIC, 0)


@pytest.fixture
def racked_cluster(tmp_path: Path) -> Iterator[list[EmbeddedBroker]]:
    zk = start_zookeeper(tmp_path / "zookeeper")
    brokers: list[EmbeddedBroker] = []
    try:
        for i in range(3):
            brokers.append(EmbeddedBroker({
                "broker.id": str(i), "broker.rack": f"r{i}", "zookeeper.connect": zk.connect_string,
                "replica.selector.class": "org.apache.kafka.common.replica.RackAwareReplicaSelector",
                "offsets.topic.replication.factor": "1", "replica.fetch.wait.max.ms": "100",
                "zookeeper.session.timeout.ms": "6000", "auto.leader.rebalance.enable": "false",
            }, data_dir=tmp_path / f"broker{i}").start())
        yield brokers
    finally:
        for b in reversed(brokers):
            b.stop()
        zk.stop()


def fetch(broker: EmbeddedBroker, version: int, rack: str, offset: int = 0) -> Any:
    Req = request_class(ApiKey.FETCH)
    Topic = Req.FetchTopic
    request = Req[version](replica_id=-1, max_wait_ms=0, min_bytes=1, max_bytes=1 << 20, isolation_level=0,
                           session_id=0, session_epoch=-1, rack_id=rack, forgotten_topics_data=[], topics=[
                               Topic(topic=TOPIC, partitions=[Topic.FetchPartition(
                                   partition=0, current_leader_epoch=-1, fetch_offset=offset, log_start_offset=-1,
                                   partition_max_bytes=1 << 20)])])
    with socket.create_connection(("127.0.0.1", broker.port), timeout=10) as s:
        resp = roundtrip(s, request, 1)
    return resp.responses[0].partitions[0]


def record_count(part: Any) -> int:
    return sum(h.next_offset - h.base_offset for _, h in batch_headers(bytes(part.records or b"")))


def test_consumer_reads_from_its_racks_follower(racked_cluster: list[EmbeddedBroker]) -> None:
    leader, near_follower = racked_cluster[0], racked_cluster[2]
    bootstrap = ",".join(b.bootstrap for b in racked_cluster)
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(TOPIC, num_partitions=1, replica_assignment=[[0, 1, 2]])])[TOPIC].result(30)

    kp_admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        cluster = kp_admin.describe_cluster()
    finally:
        kp_admin.close()
    assert {b["broker_id"]: b["rack"] for b in cluster["brokers"]} == {0: "r0", 1: "r1", 2: "r2"}
    metadata = admin.list_topics(TOPIC, timeout=10)
    assert sorted(metadata.brokers) == [0, 1, 2]

    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all"})
    for i in range(100):
        producer.produce(TOPIC, value=b"%d" % i, partition=0)
    assert producer.flush(30) == 0
    wait_until(lambda: near_follower.server.replica_manager.get_partition(TP).high_watermark == 100, 20,
               "the follower in r2 to learn the high watermark")

    # Through the codec.
    redirected = fetch(leader, 11, "r2")
    assert (redirected.error_code, redirected.preferred_read_replica, record_count(redirected)) == (0, 2, 0)
    assert redirected.high_watermark == 100
    served = fetch(leader, 11, "")
    assert (served.preferred_read_replica, record_count(served)) == (-1, 100)
    assert fetch(leader, 11, "r0").preferred_read_replica == -1  # the leader is in that rack
    from_follower = fetch(near_follower, 11, "r2")
    assert (from_follower.error_code, from_follower.high_watermark, record_count(from_follower)) == (0, 100, 100)
    assert fetch(near_follower, 10, "").error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER

    # A stock consumer in rack r2.
    before = near_follower.server.replica_manager.follower_consumer_fetches[TP]
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "near", "client.rack": "r2",
                         "enable.auto.commit": False, "fetch.wait.max.ms": 100})
    consumer.assign([CTopicPartition(TOPIC, 0, 0)])
    values: list[int] = []
    try:
        def read_up_to(n: int) -> bool:
            for m in consumer.consume(100, 0.5):
                if m.error() is None:
                    values.append(int(m.value()))
            return len(values) >= n
        wait_until(lambda: read_up_to(100), 30, "the consumer to read 100 records")
        assert values == list(range(100))
        assert near_follower.server.replica_manager.follower_consumer_fetches[TP] > before

        # The follower goes away (and out of the ISR): the consumer falls back to the leader.
        near_follower.stop()
        wait_until(lambda: 2 not in leader.server.replica_manager.get_partition(TP).isr, 30,
                   "broker 2 to leave the ISR")
        for i in range(100, 150):
            producer.produce(TOPIC, value=b"%d" % i, partition=0)
        assert producer.flush(30) == 0
        wait_until(lambda: read_up_to(150), 60, "the consumer to read the records written afterwards")
        assert values == list(range(150))
    finally:
        consumer.close()

"""The local_cluster fixture: real broker processes on a real ZooKeeper record Kafka's layout."""

from __future__ import annotations

import json
import logging

from confluent_kafka.admin import AdminClient, NewTopic
from kazoo.client import KazooClient

from tests.zookeeper import cluster_metadata, wait_for_partition_state


def test_two_broker_cluster_registers_elects_and_records_partition_state(local_cluster):
    logging.getLogger("kazoo").setLevel(logging.ERROR)
    cluster = local_cluster(2)
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    admin.create_topics([NewTopic("fixture-topic", 2, 2)])["fixture-topic"].result(30)
    with cluster_metadata(cluster) as store:
        brokers = store.live_brokers()
        assert sorted(brokers) == [0, 1]
        assert sorted(b.endpoint()[1] for b in brokers.values()) == sorted(cluster.ports)
        assert store.current_controller() in (0, 1)
        assert store.controller_epoch()[0] >= 1
        topic = store.topics()["fixture-topic"]
        assert sorted(topic.assignment) == [0, 1] and all(len(r) == 2 for r in topic.assignment.values())
        for partition in (0, 1):
            state = wait_for_partition_state(store, "fixture-topic", partition, lambda s: len(s.isr) == 2)
            assert state.leader in topic.assignment[partition]
    client = KazooClient(hosts=cluster.zookeeper.connect_string)
    client.start(timeout=10)
    try:
        raw = json.loads(client.get("/brokers/topics/fixture-topic")[0])
        assert raw["version"] == 3 and len(raw["topic_id"]) == 22
        assert json.loads(client.get("/brokers/ids/0")[0])["version"] == 5
    finally:
        client.stop()
        client.close()

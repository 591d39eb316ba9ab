"""A two-broker cluster on a real ZooKeeper with the ACL authorizer on and no super users, as a Kafka operator
sets one up: the cluster's ACLs written into ZooKeeper before the brokers start (what `kafka-acls.sh
--authorizer-properties zookeeper.connect=...` does), in Kafka's format. Replication and the controller's
requests (CLUSTER_ACTION) pass; a client's rights come from ACLs created on one broker and heard by the other.
Every connection here is PLAINTEXT, so brokers and clients alike are User:ANONYMOUS.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaError, Producer
from confluent_kafka.admin import (
    AclBinding,
    AclOperation,
    AclPermissionType,
    AdminClient,
    NewTopic,
    ResourcePatternType,
    ResourceType,
)
from kazoo.client import KazooClient

from broker.security import acl
from broker.testing import EmbeddedBroker
from tests.e2e.support import wait_until
from tests.zookeeper import start_zookeeper

TIMEOUT = 30
CLUSTER_ACLS = (b'{"version":1,"acls":[' + b",".join(
    b'{"principal":"User:ANONYMOUS","permissionType":"Allow","operation":"%s","host":"*"}' % op
    for op in (b"ClusterAction", b"Create", b"Alter", b"Describe")) + b"]}")


@pytest.fixture
def secured_cluster(tmp_path: Path) -> Iterator[list[EmbeddedBroker]]:
    zk = start_zookeeper(tmp_path / "zookeeper")
    client = KazooClient(hosts=zk.connect_string, timeout=10)
    client.start()
    client.create("/kafka-acl/Cluster/kafka-cluster", CLUSTER_ACLS, makepath=True)
    client.stop()
    brokers: list[EmbeddedBroker] = []
    try:
        for i in range(2):
            brokers.append(EmbeddedBroker({
                "broker.id": str(i), "zookeeper.connect": zk.connect_string, "offsets.topic.replication.factor": "2",
                "zookeeper.session.timeout.ms": "6000", "replica.fetch.wait.max.ms": "100",
                "authorizer.class.name": "kafka.security.authorizer.AclAuthorizer"},
                data_dir=tmp_path / f"broker{i}").start())
        yield brokers
    finally:
        for b in reversed(brokers):
            b.stop()
        zk.stop()


def deliver(bootstrap: str, topic: str, value: bytes) -> Any:
    errors: list[Any] = []
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "message.timeout.ms": 20000})
    producer.produce(topic, value, on_delivery=lambda err, msg: errors.append(err))
    producer.flush(TIMEOUT)
    assert len(errors) == 1
    return None if errors[0] is None else errors[0].code()


def test_replication_passes_and_client_acls_decide(secured_cluster: list[EmbeddedBroker]) -> None:
    b0, b1 = secured_cluster
    admin = AdminClient({"bootstrap.servers": b0.bootstrap})
    for f in admin.create_topics([NewTopic(t, 1, 2) for t in ("replicated", "closed")]).values():
        f.result(TIMEOUT)
    grants = [AclBinding(ResourceType.TOPIC, "replicated", ResourcePatternType.LITERAL, "User:ANONYMOUS", "*", op,
                         AclPermissionType.ALLOW) for op in (AclOperation.WRITE, AclOperation.READ)]
    grants.append(AclBinding(ResourceType.GROUP, "*", ResourcePatternType.LITERAL, "User:ANONYMOUS", "*",
                             AclOperation.READ, AclPermissionType.ALLOW))
    for f in admin.create_acls(grants).values():
        assert f.result(TIMEOUT) is None
    # Broker 1 hears of the ACLs created on broker 0: one change notification per resource, so each in its time.
    wait_until(lambda: b1.server.authorizer.authorize("User:ANONYMOUS", "127.0.0.1", acl.AclOperation.WRITE,
                                                      acl.ResourceType.TOPIC, "replicated")
               and b1.server.authorizer.authorize("User:ANONYMOUS", "127.0.0.1", acl.AclOperation.READ,
                                                  acl.ResourceType.GROUP, "acl-cluster"), 15,
               "broker 1 to load the new ACLs")

    # acks=all completes only once the follower (CLUSTER_ACTION) has fetched the record.
    assert deliver(b1.bootstrap, "replicated", b"v") is None
    assert deliver(b1.bootstrap, "closed", b"v") == KafkaError.TOPIC_AUTHORIZATION_FAILED

    consumer = Consumer({"bootstrap.servers": b1.bootstrap, "group.id": "acl-cluster", "auto.offset.reset": "earliest"})
    try:
        consumer.subscribe(["replicated"])
        got = None
        for _ in range(60):
            msg = consumer.poll(0.5)
            if msg is not None:
                got = msg
                break
        assert got is not None and got.error() is None and got.value() == b"v"
    finally:
        consumer.close()

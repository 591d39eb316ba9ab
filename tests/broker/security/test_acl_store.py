"""ACLs in the metadata store: Kafka's ZooKeeper layout byte for byte, every broker of a cluster reloading on
change (ours and what Kafka's tools write), and the local single-node store keeping them across a restart.

The expected bytes are written here from Kafka's format (ZkData's ZkAclStore/ZkAclChangeStore and AclEntry):
compact JSON, keys in the order Kafka's Jackson writes them, PascalCase names in the ACL node, the enum's
upper-case name in change notifications.
"""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kazoo.client import KazooClient

from broker.security.acl import AclOperation, PatternType, PermissionType, ResourceType
from broker.testing import EmbeddedBroker
from protocol import ApiKey, request_class
from protocol.errors import ErrorCode
from tests.broker.wire import roundtrip
from tests.e2e.support import wait_until
from tests.zookeeper import start_zookeeper

AUTHORIZER = {"authorizer.class.name": "kafka.security.authorizer.AclAuthorizer", "super.users": "User:ANONYMOUS"}
CREATE, DESCRIBE, DELETE = (request_class(k) for k in (ApiKey.CREATE_ACLS, ApiKey.DESCRIBE_ACLS, ApiKey.DELETE_ACLS))


def call(broker: EmbeddedBroker, request: Any) -> Any:
    with socket.create_connection(("127.0.0.1", broker.port), timeout=10) as s:
        return roundtrip(s, request, 3)


def create(broker: EmbeddedBroker, rtype: int, name: str, pattern: int, principal: str, op: int,
           permission: int, host: str = "*") -> None:
    resp = call(broker, CREATE[3](creations=[CREATE.AclCreation(
        resource_type=rtype, resource_name=name, resource_pattern_type=pattern, principal=principal, host=host,
        operation=op, permission_type=permission)]))
    assert [r.error_code for r in resp.results] == [ErrorCode.NONE], resp


def described(broker: EmbeddedBroker) -> set[tuple[int, str, int, str, str, int, int]]:
    resp = call(broker, DESCRIBE[3](resource_type_filter=ResourceType.ANY, resource_name_filter=None,
                                    pattern_type_filter=PatternType.ANY, principal_filter=None, host_filter=None,
                                    operation=AclOperation.ANY, permission_type=PermissionType.ANY))
    assert resp.error_code == ErrorCode.NONE, resp
    return {(r.resource_type, r.resource_name, r.pattern_type, a.principal, a.host, a.operation, a.permission_type)
            for r in resp.resources for a in r.acls}


@pytest.fixture
def zk_cluster(tmp_path: Path) -> Iterator[tuple[list[EmbeddedBroker], KazooClient]]:
    zk = start_zookeeper(tmp_path / "zookeeper")
    brokers: list[EmbeddedBroker] = []
    client = KazooClient(hosts=zk.connect_string, timeout=10)
    try:
        for i in range(2):
            brokers.append(EmbeddedBroker({
                "broker.id": str(i), "zookeeper.connect": zk.connect_string, "offsets.topic.replication.factor": "1",
                "zookeeper.session.timeout.ms": "6000", **AUTHORIZER}, data_dir=tmp_path / f"broker{i}").start())
        client.start()
        yield brokers, client
    finally:
        client.stop()
        for b in reversed(brokers):
            b.stop()
        zk.stop()


def test_zookeeper_layout_is_kafkas_and_every_broker_reloads(zk_cluster: Any) -> None:
    (b0, b1), zk = zk_cluster
    # The folders Kafka's authorizer creates at start-up.
    assert sorted(zk.get_children("/kafka-acl")) == sorted(
        ["Topic", "Group", "Cluster", "TransactionalId", "DelegationToken", "User"])
    assert zk.exists("/kafka-acl-extended/prefixed/Topic") and zk.exists("/kafka-acl-changes")
    assert zk.exists("/kafka-acl-extended-changes")

    create(b0, ResourceType.TOPIC, "orders", PatternType.LITERAL, "User:alice", AclOperation.READ,
           PermissionType.ALLOW)
    create(b0, ResourceType.TOPIC, "logs-", PatternType.PREFIXED, "User:bob", AclOperation.WRITE,
           PermissionType.DENY, host="10.0.0.1")
    create(b0, ResourceType.TRANSACTIONAL_ID, "tx", PatternType.LITERAL, "User:alice",
           AclOperation.DESCRIBE_CONFIGS, PermissionType.ALLOW)

    assert zk.get("/kafka-acl/Topic/orders")[0] == (
        b'{"version":1,"acls":[{"principal":"User:alice","permissionType":"Allow","operation":"Read","host":"*"}]}')
    assert zk.get("/kafka-acl-extended/prefixed/Topic/logs-")[0] == (
        b'{"version":1,"acls":[{"principal":"User:bob","permissionType":"Deny","operation":"Write",'
        b'"host":"10.0.0.1"}]}')
    assert zk.get("/kafka-acl/TransactionalId/tx")[0] == (
        b'{"version":1,"acls":[{"principal":"User:alice","permissionType":"Allow","operation":"DescribeConfigs",'
        b'"host":"*"}]}')
    literal_changes = sorted(zk.get_children("/kafka-acl-changes"))
    assert literal_changes == ["acl_changes_0000000000", "acl_changes_0000000001"]
    assert [zk.get(f"/kafka-acl-changes/{c}")[0] for c in literal_changes] == [b"TOPIC:orders",
                                                                                  b"TRANSACTIONAL_ID:tx"]
    [extended] = zk.get_children("/kafka-acl-extended-changes")
    assert extended == "acl_changes_0000000000"
    assert zk.get(f"/kafka-acl-extended-changes/{extended}")[0] == (
        b'{"version":1,"resourceType":"TOPIC","name":"logs-","patternType":"PREFIXED"}')

    # Broker 1 hears of every change through the notifications.
    wait_until(lambda: described(b1) == described(b0), 15, "broker 1 to load the ACLs broker 0 created")
    assert len(described(b1)) == 3

    # What Kafka's kafka-acls.sh (--authorizer-properties zookeeper.connect=...) writes: the node (Kafka's own
    # documentation spacing), then the notification. Both brokers take it.
    zk.create("/kafka-acl/Group/billing", b'{"version": 1, "acls": [{"host":"*","permissionType":"Allow",'
              b'"operation":"Read","principal":"User:carol"}]}')
    zk.create("/kafka-acl-changes/acl_changes_", b"GROUP:billing", sequence=True)
    carol = (ResourceType.GROUP, "billing", PatternType.LITERAL, "User:carol", "*", AclOperation.READ,
             PermissionType.ALLOW)
    for broker in (b0, b1):
        wait_until(lambda broker=broker: carol in described(broker), 15, "the tool's ACL on every broker")

    # Deleting the last ACL of a resource removes its node; the other broker forgets it too.
    def topic_filter(name: str, pattern: int) -> Any:
        return DELETE.DeleteAclsFilter(resource_type_filter=ResourceType.TOPIC, resource_name_filter=name,
                                       pattern_type_filter=pattern, principal_filter=None, host_filter=None,
                                       operation=AclOperation.ANY, permission_type=PermissionType.ANY)

    # MATCH finds the prefixed pattern a name falls under; LITERAL only the exact one.
    resp = call(b1, DELETE[3](filters=[topic_filter("logs-app", PatternType.MATCH),
                                       topic_filter("orders", PatternType.LITERAL)]))
    assert [[(m.resource_name, m.pattern_type, m.principal) for m in r.matching_acls] for r in resp.filter_results] \
        == [[("logs-", PatternType.PREFIXED, "User:bob")], [("orders", PatternType.LITERAL, "User:alice")]]
    assert zk.exists("/kafka-acl/Topic/orders") is None
    assert zk.exists("/kafka-acl-extended/prefixed/Topic/logs-") is None
    wait_until(lambda: described(b0) == described(b1) and len(described(b0)) == 2, 15, "broker 0 to forget them")


def test_the_local_store_keeps_acls_across_a_restart(tmp_path: Path) -> None:
    broker = EmbeddedBroker(AUTHORIZER, data_dir=tmp_path / "single").start()
    try:
        create(broker, ResourceType.GROUP, "g-", PatternType.PREFIXED, "User:dave", AclOperation.DELETE,
               PermissionType.ALLOW)
        before = described(broker)
    finally:
        broker.stop()
    broker = EmbeddedBroker(AUTHORIZER, data_dir=tmp_path / "single", port=broker.port).start()
    try:
        assert described(broker) == before == {(ResourceType.GROUP, "g-", PatternType.PREFIXED, "User:dave", "*",
                                                AclOperation.DELETE, PermissionType.ALLOW)}
    finally:
        broker.stop()

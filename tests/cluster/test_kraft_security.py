"""Dynamic broker configs, client quotas, SCRAM credentials and ACLs on our KRaft brokers (issue 20), over real
sockets: set through one broker, which sends the request on to the test controller
(broker/quorum/security.py), they come back through the metadata log and take effect on another broker
(broker/kraft/security_sync.py)."""

from __future__ import annotations

import socket
from collections.abc import Callable
from typing import Any

import pytest
from confluent_kafka import KafkaException, Producer
from confluent_kafka.admin import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    AdminClient,
    ConfigResource,
    ResourcePatternType,
    ResourceType,
)

from broker.testing import EmbeddedBroker, free_port
from protocol import ApiKey, request_class
from tests.broker.wire import roundtrip
from tests.cluster.test_kraft_cluster import controller, kraft_broker, wait_for  # noqa: F401  (fixtures)
from tests.kraft_controller import ControllerThread
from tests.security.support import add_scram_user

pytestmark = pytest.mark.timeout(120)


def secured(port: int) -> dict[str, str]:
    return {"listeners": f"PLAINTEXT://127.0.0.1:{free_port()},SASL_PLAINTEXT://127.0.0.1:{port}",
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT,CONTROLLER:PLAINTEXT",
            "inter.broker.listener.name": "PLAINTEXT", "sasl.enabled.mechanisms": "SCRAM-SHA-256,SCRAM-SHA-512",
            "authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
            "allow.everyone.if.no.acl.found": "true", "connection.failed.authentication.delay.ms": "0"}


def start_two(start: Callable[..., EmbeddedBroker]) -> tuple[list[EmbeddedBroker], list[int]]:
    sasl_ports = [free_port(), free_port()]
    brokers = [start(i, **secured(sasl_ports[i - 1])) for i in (1, 2)]
    return brokers, sasl_ports


def plaintext(b: EmbeddedBroker) -> str:
    return b.props["listeners"].split(",")[0].removeprefix("PLAINTEXT://")


def scram_login_works(port: int, user: str, password: str, mechanism: str = "SCRAM-SHA-512") -> bool:
    producer = Producer({"bootstrap.servers": f"127.0.0.1:{port}", "security.protocol": "SASL_PLAINTEXT",
                         "sasl.mechanism": mechanism, "sasl.username": user, "sasl.password": password})
    try:
        producer.list_topics(timeout=3)
        return True
    except KafkaException:
        return False


def test_a_scram_user_set_through_one_broker_logs_in_on_another(
        controller: ControllerThread, kraft_broker: Callable[..., EmbeddedBroker]) -> None:  # noqa: F811
    (b1, b2), (_, port2) = start_two(kraft_broker)
    add_scram_user(plaintext(b1), "alice", "wonderland")
    # The controller wrote the credential records; broker 2 reads them from the metadata log.
    mechanisms = controller.call(lambda c: sorted(m for m, u in c.image.scram if u == "alice"))
    assert mechanisms == [1, 2]
    wait_for(lambda: scram_login_works(port2, "alice", "wonderland"), what="SCRAM login on broker 2")
    assert scram_login_works(port2, "alice", "wonderland", "SCRAM-SHA-256")
    assert not scram_login_works(port2, "alice", "looking-glass")
    # Deleting it through broker 2 ends logins on broker 1 too.
    from confluent_kafka.admin import ScramMechanism, UserScramCredentialDeletion
    admin = AdminClient({"bootstrap.servers": plaintext(b2)})
    for f in admin.alter_user_scram_credentials([UserScramCredentialDeletion("alice", ScramMechanism.SCRAM_SHA_512),
                                                 UserScramCredentialDeletion("alice", ScramMechanism.SCRAM_SHA_256)]
                                                ).values():
        f.result(20)
    port1 = int(b1.props["listeners"].split(":")[-1])
    wait_for(lambda: not scram_login_works(port1, "alice", "wonderland"), what="credential gone on broker 1")


def alter_quotas(addr: str, entity: list[tuple[str, str | None]], **quotas: float | None) -> Any:
    Req = request_class(ApiKey.ALTER_CLIENT_QUOTAS)
    E = Req.EntryData
    ops = [E.OpData(key=k, value=v or 0.0, remove=v is None) for k, v in quotas.items()]
    host, port = addr.split(":")
    with socket.create_connection((host, int(port)), timeout=10) as s:
        return roundtrip(s, Req[1](entries=[E(entity=[E.EntityData(entity_type=t, entity_name=n) for t, n in entity],
                                              ops=ops)], validate_only=False), 1)


def describe_quotas(addr: str) -> dict[tuple[tuple[str, str | None], ...], dict[str, float]]:
    Req = request_class(ApiKey.DESCRIBE_CLIENT_QUOTAS)
    host, port = addr.split(":")
    with socket.create_connection((host, int(port)), timeout=10) as s:
        resp = roundtrip(s, Req[1](components=[], strict=False), 1)
    assert resp.error_code == 0, resp
    return {tuple((e.entity_type, e.entity_name) for e in entry.entity): {v.key: v.value for v in entry.values}
            for entry in resp.entries}


def test_client_quotas_set_through_one_broker_apply_on_another(
        controller: ControllerThread, kraft_broker: Callable[..., EmbeddedBroker]) -> None:  # noqa: F811
    (b1, b2), _ = start_two(kraft_broker)
    resp = alter_quotas(plaintext(b1), [("client-id", "slow-writer")], producer_byte_rate=1024)
    assert [e.error_code for e in resp.entries] == [0]
    resp = alter_quotas(plaintext(b1), [("user", None), ("client-id", "slow-reader")], consumer_byte_rate=2048,
                        request_percentage=50)
    assert [e.error_code for e in resp.entries] == [0]
    # The controller's own checks come back through our broker.
    resp = alter_quotas(plaintext(b1), [("client-id", "x")], not_a_quota=1)
    assert [(e.error_code, e.error_message) for e in resp.entries] == [(42, "Invalid configuration key not_a_quota")]
    wait_for(lambda: b2.call(lambda: dict(b2.server.quotas.quotas)) == {
        (None, "slow-writer"): {"producer_byte_rate": 1024.0},
        ("<default>", "slow-reader"): {"consumer_byte_rate": 2048.0, "request_percentage": 50.0}},
        what="broker 2's quota manager")
    assert b2.call(lambda: b2.server.quotas.quota_for("producer_byte_rate", "ANONYMOUS", "slow-writer"))[0] == 1024
    assert describe_quotas(plaintext(b2)) == {
        (("client-id", "slow-writer"),): {"producer_byte_rate": 1024.0},
        (("user", None), ("client-id", "slow-reader")): {"consumer_byte_rate": 2048.0, "request_percentage": 50.0}}
    # Removed through broker 2: gone on broker 1.
    alter_quotas(plaintext(b2), [("client-id", "slow-writer")], producer_byte_rate=None)
    wait_for(lambda: (None, "slow-writer") not in b1.call(lambda: dict(b1.server.quotas.quotas)),
             what="quota removed on broker 1")


def test_acls_created_through_one_broker_are_enforced_on_another(
        controller: ControllerThread, kraft_broker: Callable[..., EmbeddedBroker]) -> None:  # noqa: F811
    (b1, b2), _ = start_two(kraft_broker)
    admin1 = AdminClient({"bootstrap.servers": plaintext(b1)})
    from confluent_kafka.admin import NewTopic
    admin1.create_topics([NewTopic("secret", 1, 1), NewTopic("open", 1, 1)])["secret"].result(20)
    deny = AclBinding(ResourceType.TOPIC, "secret", ResourcePatternType.LITERAL, "User:ANONYMOUS", "*",
                      AclOperation.DESCRIBE, AclPermissionType.DENY)
    for f in admin1.create_acls([deny]).values():
        f.result(20)
    assert controller.call(lambda c: [a.resource_name for a in c.image.acls.values()]) == ["secret"]
    admin2 = AdminClient({"bootstrap.servers": plaintext(b2)})

    def secret_visible(admin: AdminClient) -> bool:
        md = admin.list_topics("secret", timeout=10)
        return md.topics["secret"].error is None

    wait_for(lambda: not secret_visible(admin2), what="the DENY enforced on broker 2")
    assert admin2.list_topics("open", timeout=10).topics["open"].error is None
    listed = admin2.describe_acls(AclBindingFilter(ResourceType.ANY, None, ResourcePatternType.ANY, None, None,
                                                   AclOperation.ANY, AclPermissionType.ANY)).result(20)
    assert listed == [deny]
    # Invalid ACLs are refused by the controller, through our broker.
    bad = AclBinding(ResourceType.BROKER, "not-the-cluster", ResourcePatternType.LITERAL, "User:x", "*",
                     AclOperation.ALTER, AclPermissionType.ALLOW)
    with pytest.raises(KafkaException, match="CLUSTER resource"):
        admin1.create_acls([bad])[bad].result(20)
    # Deleted through broker 2: broker 1 lets the topic be seen again.
    deleted = admin2.delete_acls([AclBindingFilter(ResourceType.TOPIC, "secret", ResourcePatternType.ANY, None,
                                                   None, AclOperation.ANY, AclPermissionType.ANY)])
    assert [list(f.result(20)) for f in deleted.values()] == [[deny]]
    wait_for(lambda: secret_visible(admin1), what="the DENY gone on broker 1")
    assert controller.call(lambda c: dict(c.image.acls)) == {}


def test_dynamic_broker_configs_set_through_one_broker(
        controller: ControllerThread, kraft_broker: Callable[..., EmbeddedBroker]) -> None:  # noqa: F811
    b1, b2 = kraft_broker(1), kraft_broker(2)
    admin = AdminClient({"bootstrap.servers": b1.bootstrap})

    def alter(name: str, key: str, value: str | None) -> None:
        # Our codec: librdkafka refuses the cluster default's empty broker name.
        Req = request_class(ApiKey.INCREMENTAL_ALTER_CONFIGS)
        R = Req.AlterConfigsResource
        with socket.create_connection(("127.0.0.1", b1.port), timeout=10) as s:
            resp = roundtrip(s, Req[1](resources=[R(resource_type=4, resource_name=name, configs=[
                R.AlterableConfig(name=key, config_operation=0 if value is not None else 1, value=value)])],
                validate_only=False), 1)
        assert [(r.error_code, r.error_message) for r in resp.responses] == [(0, None)], resp

    # The cluster default, through broker 1: the controller writes a ConfigRecord of BROKER "" and both apply it.
    alter("", "message.max.bytes", "2000000")
    assert controller.call(lambda c: dict(c.image.configs.config(4, ""))) == {"message.max.bytes": "2000000"}
    for b in (b1, b2):
        wait_for(lambda b=b: b.call(lambda: b.server.config["message.max.bytes"]) == 2000000,
                 what="cluster default applied")
    # Broker 1's own config: only broker 1 applies it.
    alter("1", "log.cleaner.threads", "2")
    wait_for(lambda: b1.call(lambda: b1.server.config["log.cleaner.threads"]) == 2, what="broker 1's config")
    assert b2.call(lambda: b2.server.config["log.cleaner.threads"]) == 1
    described = admin.describe_configs([ConfigResource(ResourceType.BROKER, "1")])
    entries = next(iter(described.values())).result(20)
    assert entries["log.cleaner.threads"].value == "2" and entries["message.max.bytes"].value == "2000000"
    # Broker 2's config set through broker 1 (sent on to the controller, as Kafka's KRaft broker does).
    alter("2", "log.cleaner.threads", "3")
    wait_for(lambda: b2.call(lambda: b2.server.config["log.cleaner.threads"]) == 3, what="broker 2's config")
    assert b1.call(lambda: b1.server.config["log.cleaner.threads"]) == 2
    # Deleting the default: back to the static value on broker 2.
    alter("", "message.max.bytes", None)
    wait_for(lambda: b2.call(lambda: b2.server.config["message.max.bytes"]) != 2000000, what="default removed")

"""Envelopes (KIP-590) over real sockets: admin requests a client sends our KRaft broker reach the test controller
wrapped in an EnvelopeRequest with the client's principal and address, and the controller authorizes them with
that principal (broker/quorum/envelope.py), as Kafka's ForwardingManager and ControllerApis do."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import KafkaException, Producer
from confluent_kafka.admin import (
    AclBinding,
    AclOperation,
    AclPermissionType,
    AdminClient,
    NewTopic,
    ResourcePatternType,
    ResourceType,
)

from broker.config.kafka_config import KafkaConfig
from broker.kraft.format import format_dirs
from broker.testing import EmbeddedBroker, free_port
from protocol import ApiKey, request_class
from tests.broker.wire import roundtrip
from tests.cluster.test_kraft_cluster import FAST, wait_for
from tests.cluster.test_kraft_security import plaintext, scram_login_works, secured
from tests.kraft_controller import ControllerThread
from tests.security.support import add_scram_user

pytestmark = pytest.mark.timeout(120)


@pytest.fixture
def setup(tmp_path: Path) -> Iterator[tuple[ControllerThread, EmbeddedBroker, int]]:
    controller = ControllerThread(admin_principals={"User:alice"}).start()
    sasl_port = free_port()
    props = {"process.roles": "broker", "node.id": "1", "controller.quorum.voters": controller.voters,
             "controller.listener.names": "CONTROLLER", **FAST, "offsets.topic.replication.factor": "1",
             **secured(sasl_port)}
    b = EmbeddedBroker(props, data_dir=tmp_path / "b")
    format_dirs(KafkaConfig(b.props), controller.call(lambda c: c.cluster_id), out=open("/dev/null", "w"))  # noqa: SIM115
    b.start()
    yield controller, b, sasl_port
    b.stop()
    controller.stop()


def forwarded(controller: ControllerThread, api_key: int) -> list[tuple[int, str, str, str | None]]:
    return controller.call(lambda c: [f for f in c.forwarded if f[0] == api_key])


def test_admin_requests_go_in_envelopes_with_the_clients_principal(
        setup: tuple[ControllerThread, EmbeddedBroker, int]) -> None:
    controller, b, sasl_port = setup
    # AlterUserScramCredentials from an anonymous PLAINTEXT client: the controller sees User:ANONYMOUS.
    add_scram_user(plaintext(b), "alice", "wonderland")
    assert [(p, a) for _, p, a, _ in forwarded(controller, ApiKey.ALTER_USER_SCRAM_CREDENTIALS)] == [
        ("User:ANONYMOUS", "127.0.0.1")]
    wait_for(lambda: scram_login_works(sasl_port, "alice", "wonderland"), what="SCRAM login")

    alice = AdminClient({"bootstrap.servers": f"127.0.0.1:{sasl_port}", "security.protocol": "SASL_PLAINTEXT",
                         "sasl.mechanism": "SCRAM-SHA-512", "sasl.username": "alice",
                         "sasl.password": "wonderland", "client.id": "alice-admin"})
    alice.create_topics([NewTopic("mine", 1, 1)])["mine"].result(20)
    assert forwarded(controller, ApiKey.CREATE_TOPICS)[-1] == (ApiKey.CREATE_TOPICS, "User:alice", "127.0.0.1",
                                                               "alice-admin")
    assert controller.call(lambda c: c.image.topics.by_name.get("mine")) is not None

    # The controller refuses what an anonymous client may not do, with the errors Kafka's ControllerApis answers.
    anonymous = AdminClient({"bootstrap.servers": plaintext(b)})
    with pytest.raises(KafkaException) as e:
        anonymous.create_topics([NewTopic("theirs", 1, 1)])["theirs"].result(20)
    assert e.value.args[0].name() == "TOPIC_AUTHORIZATION_FAILED"
    assert controller.call(lambda c: c.image.topics.by_name.get("theirs")) is None
    with pytest.raises(KafkaException) as e:
        anonymous.delete_topics(["mine"])["mine"].result(20)
    assert e.value.args[0].name() == "TOPIC_AUTHORIZATION_FAILED"
    # Refused by the controller (the broker's own ACLs allow everyone here), the request having reached it.
    assert [p for _, p, _, _ in forwarded(controller, ApiKey.DELETE_TOPICS)] == ["User:ANONYMOUS"]
    acl = AclBinding(ResourceType.TOPIC, "mine", ResourcePatternType.LITERAL, "User:bob", "*", AclOperation.READ,
                     AclPermissionType.ALLOW)
    with pytest.raises(KafkaException) as e:
        anonymous.create_acls([acl])[acl].result(20)
    assert e.value.args[0].name() == "CLUSTER_AUTHORIZATION_FAILED"
    alice.create_acls([acl])[acl].result(20)
    assert [p for _, p, _, _ in forwarded(controller, ApiKey.CREATE_ACLS)] == ["User:ANONYMOUS", "User:alice"]
    assert controller.call(lambda c: len(c.image.acls)) == 1
    # Auto-creation for a client's Metadata request goes as that client too (Kafka's AutoTopicCreationManager).
    Req = request_class(ApiKey.METADATA)
    host, port = plaintext(b).split(":")
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        roundtrip(sock, Req[9](topics=[Req.MetadataRequestTopic(name="auto-anon")], allow_auto_topic_creation=True,
                               include_cluster_authorized_operations=False,
                               include_topic_authorized_operations=False), 1)
    wait_for(lambda: any(f[1] == "User:ANONYMOUS" for f in forwarded(controller, ApiKey.CREATE_TOPICS)[2:]),
             what="auto-creation forwarded")
    producer = Producer({"bootstrap.servers": f"127.0.0.1:{sasl_port}", "security.protocol": "SASL_PLAINTEXT",
                         "sasl.mechanism": "SCRAM-SHA-512", "sasl.username": "alice",
                         "sasl.password": "wonderland"})
    producer.produce("auto-alice", b"x")
    assert producer.flush(20) == 0
    assert controller.call(lambda c: sorted(n for n in c.image.topics.by_name if n.startswith("auto"))) == [
        "auto-alice"]
    # The broker's own requests to the controller (registration, heartbeats) never come in an Envelope.
    assert not forwarded(controller, ApiKey.BROKER_HEARTBEAT)

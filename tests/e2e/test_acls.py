"""ACLs with stock clients over real sockets (every connection here is PLAINTEXT, so its principal is
User:ANONYMOUS, Kafka's default).

- confluent-kafka's and kafka-python's admin clients create, describe (with filters: principal, pattern type,
  MATCH) and delete ACLs on a broker where User:ANONYMOUS is a super user.
- On a broker without super users and `allow.everyone.if.no.acl.found=false`, ACLs granted to User:ANONYMOUS
  decide: Metadata hides the topics it may not DESCRIBE; a producer without WRITE and a consumer without READ
  on its group get TOPIC_AUTHORIZATION_FAILED / GROUP_AUTHORIZATION_FAILED as each client reports them, and
  succeed once the ACL exists; a DENY beats the prefixed ALLOW that covers it.
"""

from __future__ import annotations

import time
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicCollection
from confluent_kafka.admin import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    AdminClient,
    NewTopic,
    ResourcePatternType,
    ResourceType,
)
from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer
from kafka import errors as kafka_errors
from kafka.admin import (
    ACL,
    ACLFilter,
    ACLOperation,
    ACLPermissionType,
    ACLResourcePatternType,
    ResourcePattern,
    ResourcePatternFilter,
)
from kafka.admin import ResourceType as KpResourceType

from broker.security.acl import AccessControlEntry as Ace
from broker.security.acl import AclBinding as Binding
from broker.security.acl import AclOperation as Op
from broker.security.acl import PatternType, PermissionType
from broker.security.acl import ResourcePattern as Pattern
from broker.security.acl import ResourceType as RT

AUTHORIZER = "kafka.security.authorizer.AclAuthorizer"
ANON = "User:ANONYMOUS"
TIMEOUT = 15


def everything() -> AclBindingFilter:
    return AclBindingFilter(ResourceType.ANY, None, ResourcePatternType.ANY, None, None, AclOperation.ANY,
                            AclPermissionType.ANY)


def test_confluent_admin_round_trip(broker_factory: Any) -> None:
    broker = broker_factory({"authorizer.class.name": AUTHORIZER, "super.users": ANON})
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    acls = [
        AclBinding(ResourceType.TOPIC, "orders", ResourcePatternType.LITERAL, "User:alice", "*", AclOperation.READ,
                   AclPermissionType.ALLOW),
        AclBinding(ResourceType.TOPIC, "logs-", ResourcePatternType.PREFIXED, "User:bob", "*", AclOperation.WRITE,
                   AclPermissionType.ALLOW),
        AclBinding(ResourceType.TOPIC, "logs-secret", ResourcePatternType.LITERAL, "User:bob", "10.0.0.1",
                   AclOperation.WRITE, AclPermissionType.DENY),
        AclBinding(ResourceType.GROUP, "*", ResourcePatternType.LITERAL, "User:alice", "*", AclOperation.READ,
                   AclPermissionType.ALLOW),
    ]
    for f in admin.create_acls(acls, request_timeout=TIMEOUT).values():
        assert f.result(TIMEOUT) is None
    assert sorted(map(str, admin.describe_acls(everything()).result(TIMEOUT))) == sorted(map(str, acls))

    bob = AclBindingFilter(ResourceType.ANY, None, ResourcePatternType.ANY, "User:bob", None, AclOperation.ANY,
                           AclPermissionType.ANY)
    assert sorted(map(str, admin.describe_acls(bob).result(TIMEOUT))) == sorted(map(str, acls[1:3]))
    prefixed = AclBindingFilter(ResourceType.TOPIC, None, ResourcePatternType.PREFIXED, None, None,
                                AclOperation.ANY, AclPermissionType.ANY)
    assert admin.describe_acls(prefixed).result(TIMEOUT) == [acls[1]]
    # MATCH: every pattern that applies to topic "logs-secret": the prefix and the literal.
    match = AclBindingFilter(ResourceType.TOPIC, "logs-secret", ResourcePatternType.MATCH, None, None,
                             AclOperation.ANY, AclPermissionType.ANY)
    assert sorted(map(str, admin.describe_acls(match).result(TIMEOUT))) == sorted(map(str, acls[1:3]))

    deny_only = AclBindingFilter(ResourceType.ANY, None, ResourcePatternType.ANY, None, None, AclOperation.ANY,
                                 AclPermissionType.DENY)
    [deleted] = admin.delete_acls([deny_only], request_timeout=TIMEOUT).values()
    assert deleted.result(TIMEOUT) == [acls[2]]
    [deleted] = admin.delete_acls([everything()], request_timeout=TIMEOUT).values()
    assert sorted(map(str, deleted.result(TIMEOUT))) == sorted(map(str, [acls[0], acls[1], acls[3]]))
    assert admin.describe_acls(everything()).result(TIMEOUT) == []


def test_admin_clients_without_an_authorizer_are_told_security_is_disabled(broker: Any) -> None:
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    acl = AclBinding(ResourceType.TOPIC, "t", ResourcePatternType.LITERAL, "User:alice", "*", AclOperation.READ,
                     AclPermissionType.ALLOW)
    [created] = admin.create_acls([acl], request_timeout=TIMEOUT).values()
    with pytest.raises(KafkaException) as raised:
        created.result(TIMEOUT)
    assert raised.value.args[0].code() == KafkaError.SECURITY_DISABLED
    kp = KafkaAdminClient(bootstrap_servers=broker.bootstrap, request_timeout_ms=10000)
    try:
        with pytest.raises(kafka_errors.SecurityDisabledError):
            kp.describe_acls(ACLFilter(None, None, ACLOperation.ANY, ACLPermissionType.ANY, ResourcePatternFilter(
                KpResourceType.ANY, None, ACLResourcePatternType.ANY)))
    finally:
        kp.close()


def test_kafka_python_admin_round_trip(broker_factory: Any) -> None:
    broker = broker_factory({"authorizer.class.name": AUTHORIZER, "super.users": ANON})
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap, request_timeout_ms=10000)
    try:
        acl = ACL("User:carol", "*", ACLOperation.DESCRIBE, ACLPermissionType.ALLOW,
                  ResourcePattern(KpResourceType.TRANSACTIONAL_ID, "tx-", ACLResourcePatternType.PREFIXED))
        deny = ACL("User:carol", "*", ACLOperation.ALL, ACLPermissionType.DENY,
                   ResourcePattern(KpResourceType.TOPIC, "*", ACLResourcePatternType.LITERAL))
        result = admin.create_acls([acl, deny])
        assert len(result["succeeded"]) == 2 and result["failed"] == []
        any_filter = ACLFilter(None, None, ACLOperation.ANY, ACLPermissionType.ANY,
                               ResourcePatternFilter(KpResourceType.ANY, None, ACLResourcePatternType.ANY))
        found, error = admin.describe_acls(any_filter)
        assert error is kafka_errors.NoError
        assert sorted((a.resource_pattern.resource_type, a.resource_pattern.resource_name,
                       a.resource_pattern.pattern_type, a.operation, a.permission_type) for a in found) == [
            (KpResourceType.TOPIC, "*", ACLResourcePatternType.LITERAL, ACLOperation.ALL, ACLPermissionType.DENY),
            (KpResourceType.TRANSACTIONAL_ID, "tx-", ACLResourcePatternType.PREFIXED, ACLOperation.DESCRIBE,
             ACLPermissionType.ALLOW)]
        [(_, deleted, error)] = admin.delete_acls([any_filter])
        assert error is kafka_errors.NoError and len(deleted) == 2
        assert admin.describe_acls(any_filter)[0] == []
    finally:
        admin.close()


def grant(broker: Any, rtype: RT, name: str, op: Op, permission: PermissionType = PermissionType.ALLOW,
          pattern: PatternType = PatternType.LITERAL) -> None:
    """An ACL for User:ANONYMOUS, written through the broker's authorizer (the principal itself may not yet)."""
    [error] = broker.call(broker.server.authorizer.create_acls,
                          [Binding(Pattern(rtype, name, pattern), Ace(ANON, "*", op, permission))])
    assert error is None


def produce_error(bootstrap: str, topic: str) -> int | None:
    """The error confluent-kafka's producer reports for one message (None: delivered)."""
    errors: list[Any] = []
    producer = Producer({"bootstrap.servers": bootstrap, "message.timeout.ms": 10000})
    producer.produce(topic, b"v", on_delivery=lambda err, msg: errors.append(err))
    producer.flush(TIMEOUT)
    assert len(errors) == 1
    return None if errors[0] is None else errors[0].code()


@pytest.fixture
def secured(broker_factory: Any) -> Any:
    """A broker where only ACLs decide; User:ANONYMOUS may create topics and manage ACLs (CLUSTER)."""
    broker = broker_factory({"authorizer.class.name": AUTHORIZER, "auto.create.topics.enable": "false",
                             "offsets.topic.replication.factor": "1"})
    for op in (Op.CREATE, Op.ALTER, Op.DESCRIBE):
        grant(broker, RT.CLUSTER, "kafka-cluster", op)
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    for f in admin.create_topics([NewTopic(t, 1, 1) for t in ("acl-open", "acl-closed", "hidden")]).values():
        f.result(TIMEOUT)
    return broker


def test_metadata_hides_topics_the_principal_may_not_describe(secured: Any) -> None:
    admin = AdminClient({"bootstrap.servers": secured.bootstrap})
    assert not {"acl-open", "acl-closed", "hidden"} & set(admin.list_topics(timeout=TIMEOUT).topics)
    grant(secured, RT.TOPIC, "acl-", Op.READ, pattern=PatternType.PREFIXED)  # READ implies DESCRIBE
    listed = set(admin.list_topics(timeout=TIMEOUT).topics)
    assert {"acl-open", "acl-closed"} <= listed and "hidden" not in listed
    # Named, it is refused without saying whether it exists.
    [named] = admin.list_topics(topic="hidden", timeout=TIMEOUT).topics.values()
    assert named.error.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED


def test_produce_needs_write_and_a_deny_beats_the_prefixed_allow(secured: Any) -> None:
    grant(secured, RT.TOPIC, "acl-", Op.DESCRIBE, pattern=PatternType.PREFIXED)
    assert produce_error(secured.bootstrap, "acl-open") == KafkaError.TOPIC_AUTHORIZATION_FAILED
    grant(secured, RT.TOPIC, "acl-", Op.WRITE, pattern=PatternType.PREFIXED)
    assert produce_error(secured.bootstrap, "acl-open") is None
    grant(secured, RT.TOPIC, "acl-closed", Op.WRITE, PermissionType.DENY)
    assert produce_error(secured.bootstrap, "acl-closed") == KafkaError.TOPIC_AUTHORIZATION_FAILED
    assert produce_error(secured.bootstrap, "acl-open") is None


def test_kafka_python_producer_and_consumer_are_refused_then_allowed(secured: Any) -> None:
    producer = KafkaProducer(bootstrap_servers=secured.bootstrap, max_block_ms=5000)
    try:
        with pytest.raises(kafka_errors.TopicAuthorizationFailedError):
            producer.send("acl-open", b"v").get(TIMEOUT)
    finally:
        producer.close()
    # kafka-python's producer is idempotent: with no WRITE on any topic (and no IDEMPOTENT_WRITE) its
    # InitProducerId was refused too, which is fatal to that producer, as against Kafka; a new one succeeds.
    grant(secured, RT.TOPIC, "acl-open", Op.WRITE)
    producer = KafkaProducer(bootstrap_servers=secured.bootstrap, max_block_ms=5000)
    try:
        producer.send("acl-open", b"v1").get(TIMEOUT)
    finally:
        producer.close()
    grant(secured, RT.TOPIC, "acl-open", Op.READ)
    consumer = KafkaConsumer("acl-open", bootstrap_servers=secured.bootstrap, group_id="acl-group",
                             auto_offset_reset="earliest", consumer_timeout_ms=10000)
    try:
        with pytest.raises(kafka_errors.GroupAuthorizationFailedError):
            consumer.poll(timeout_ms=5000)
    finally:
        consumer.close()
    grant(secured, RT.GROUP, "acl-group", Op.READ)
    consumer = KafkaConsumer("acl-open", bootstrap_servers=secured.bootstrap, group_id="acl-group",
                             auto_offset_reset="earliest", consumer_timeout_ms=10000)
    try:
        assert [m.value for m in consumer] == [b"v1"]
    finally:
        consumer.close()


def first_message(bootstrap: str, group: str, topic: str) -> Any:
    """The first message (or error) a confluent-kafka consumer in `group` polls from `topic`, or None."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "auto.offset.reset": "earliest"})
    try:
        consumer.subscribe([topic])
        deadline = time.monotonic() + TIMEOUT
        while time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is not None:
                return msg
        return None
    finally:
        consumer.close()


def test_confluent_consumer_reports_group_authorization_failed(secured: Any) -> None:
    grant(secured, RT.TOPIC, "acl-open", Op.ALL)
    assert produce_error(secured.bootstrap, "acl-open") is None
    refused = first_message(secured.bootstrap, "confluent-acl", "acl-open")
    assert refused is not None and refused.error().code() == KafkaError.GROUP_AUTHORIZATION_FAILED
    grant(secured, RT.GROUP, "confluent-", Op.READ, pattern=PatternType.PREFIXED)
    consumed = first_message(secured.bootstrap, "confluent-acl", "acl-open")
    assert consumed is not None and consumed.error() is None and consumed.value() == b"v"


def test_authorized_operations_are_the_principals(secured: Any) -> None:
    admin = AdminClient({"bootstrap.servers": secured.bootstrap})
    cluster = admin.describe_cluster(include_authorized_operations=True).result(TIMEOUT)
    assert set(cluster.authorized_operations) == {AclOperation.CREATE, AclOperation.ALTER, AclOperation.DESCRIBE}
    grant(secured, RT.TOPIC, "acl-open", Op.WRITE)
    [topic] = admin.describe_topics(TopicCollection(["acl-open"]), include_authorized_operations=True).values()
    assert set(topic.result(TIMEOUT).authorized_operations) == {AclOperation.WRITE, AclOperation.DESCRIBE}

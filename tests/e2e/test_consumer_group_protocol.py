"""KIP-848 consumer groups with stock confluent-kafka 2.16 consumers (`group.protocol=consumer`) over real
sockets: the broker assigns (uniform, and range when the members ask for it), members split a 6-partition
topic with no partition owned twice at any poll, a leaving member's partitions go to the others, and
committed offsets survive a consumer restart.

The broker's heartbeat interval is lowered (`group.consumer.heartbeat.interval.ms`, with its minimum) so a
rebalance takes a fraction of a second instead of Kafka's 5 s heartbeats.
"""

from __future__ import annotations

import time
import uuid
from collections import Counter
from collections.abc import Callable
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    AdminClient,
    NewPartitions,
    NewTopic,
    ResourcePatternType,
    ResourceType,
)

PARTITIONS = 6
FAST_HEARTBEATS = {"group.consumer.heartbeat.interval.ms": "300", "group.consumer.min.heartbeat.interval.ms": "300"}


def create_topic(bootstrap: str, topic: str, partitions: int = PARTITIONS) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_topics([NewTopic(topic, partitions, 1)], operation_timeout=10).values():
        future.result(15)


def produce(bootstrap: str, topic: str, values: list[tuple[int, bytes]]) -> None:
    producer = Producer({"bootstrap.servers": bootstrap})
    for partition, value in values:
        producer.produce(topic, value, partition=partition)
    assert producer.flush(15) == 0


def new_consumer(bootstrap: str, group: str, topic: str, **extra: Any) -> Consumer:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "group.protocol": "consumer",
                         "auto.offset.reset": "earliest", "enable.auto.commit": False, "fetch.wait.max.ms": 100,
                         **extra})
    consumer.subscribe([topic])
    return consumer


def commit(consumer: Consumer, msg: Any) -> None:
    """A synchronous commit, retried on STALE_MEMBER_EPOCH: the broker moved the member to a new epoch
    whose heartbeat answer the client had not applied yet (Kafka answers the same; its Java consumer retries
    with the new epoch too)."""
    for _ in range(50):
        try:
            consumer.commit(message=msg, asynchronous=False)
            return
        except KafkaException as e:
            if e.args[0].code() != KafkaError.STALE_MEMBER_EPOCH:
                raise
            time.sleep(0.02)
    raise AssertionError("the commit stayed stale")


class Members:
    """Consumers polled round-robin in this thread; every poll checks no partition is owned twice."""

    def __init__(self) -> None:
        self.consumers: dict[str, Consumer] = {}
        self.consumed: Counter[tuple[int, bytes]] = Counter()

    def poll_once(self) -> None:
        for consumer in self.consumers.values():
            for msg in consumer.consume(num_messages=100, timeout=0.05):
                if msg.error() is not None:
                    assert msg.error().code() == KafkaError._PARTITION_EOF, msg.error()
                    continue
                self.consumed[(msg.partition(), msg.value())] += 1
                commit(consumer, msg)
        owned = [p for partitions in self.assignments().values() for p in partitions]
        assert len(owned) == len(set(owned)), f"a partition owned twice: {self.assignments()}"

    def assignments(self) -> dict[str, set[int]]:
        return {name: {tp.partition for tp in c.assignment()} for name, c in self.consumers.items()}

    def run_until(self, condition: Callable[[], bool], timeout: float, what: str) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self.poll_once()
            if condition():
                return
        raise AssertionError(f"timed out after {timeout}s waiting for {what}: {self.assignments()}")

    def split_evenly(self) -> bool:
        parts = list(self.assignments().values())
        return (set().union(*parts) == set(range(PARTITIONS)) and sum(map(len, parts)) == PARTITIONS
                and all(len(p) == PARTITIONS // len(parts) for p in parts))

    def close_all(self) -> None:
        for consumer in self.consumers.values():
            consumer.close()
        self.consumers.clear()


def test_one_consumer_gets_every_partition_and_consumes(broker_factory: Any) -> None:
    broker = broker_factory(FAST_HEARTBEATS)
    create_topic(broker.bootstrap, "kip848-one")
    produce(broker.bootstrap, "kip848-one", [(2, b"hello")])
    members = Members()
    members.consumers["a"] = new_consumer(broker.bootstrap, "kip848-one", "kip848-one")
    try:
        members.run_until(lambda: members.consumed[(2, b"hello")] == 1, 20, "the record")
        assert members.assignments() == {"a": set(range(PARTITIONS))}
        group = broker.server.group_coordinator.coordinator.group("kip848-one").consumer
        assert (group.state.value, group.group_epoch, group.assignment_epoch) == ("Stable", 1, 1)
    finally:
        members.close_all()


@pytest.mark.parametrize("assignor", ["uniform", "range"])
def test_members_split_the_partitions_and_take_over_a_leaver(broker_factory: Any, assignor: str) -> None:
    broker = broker_factory(FAST_HEARTBEATS)
    topic = group = f"kip848-split-{assignor}"
    create_topic(broker.bootstrap, topic)
    produce(broker.bootstrap, topic, [(p, f"before-{p}".encode()) for p in range(PARTITIONS)])
    members = Members()
    remote = {"group.remote.assignor": assignor}
    try:
        for name in ("a", "b"):
            members.consumers[name] = new_consumer(broker.bootstrap, group, topic, **remote)
        members.run_until(members.split_evenly, 30, "two members with 3 partitions each")
        members.consumers["c"] = new_consumer(broker.bootstrap, group, topic, **remote)
        members.run_until(members.split_evenly, 30, "three members with 2 partitions each")
        members.run_until(lambda: len(members.consumed) == PARTITIONS, 20, "the records produced before")

        members.consumers.pop("b").close()
        members.run_until(members.split_evenly, 30, "the two left with 3 partitions each")
        produce(broker.bootstrap, topic, [(p, f"after-{p}".encode()) for p in range(PARTITIONS)])
        members.run_until(lambda: len(members.consumed) == 2 * PARTITIONS, 20, "the records produced after")
        assert set(members.consumed.values()) == {1}, "a record consumed twice with synchronous commits"
        described = broker.server.group_coordinator.coordinator.group(group).consumer
        assert described.preferred_server_assignor() == assignor
    finally:
        members.close_all()


def test_committed_offsets_survive_a_consumer_restart(broker_factory: Any) -> None:
    broker = broker_factory(FAST_HEARTBEATS)
    topic = group = "kip848-restart"
    create_topic(broker.bootstrap, topic)
    produce(broker.bootstrap, topic, [(p, f"first-{p}".encode()) for p in range(PARTITIONS)])
    members = Members()
    members.consumers["a"] = new_consumer(broker.bootstrap, group, topic)
    try:
        members.run_until(lambda: len(members.consumed) == PARTITIONS, 20, "the first records")
        members.close_all()
        produce(broker.bootstrap, topic, [(p, f"second-{p}".encode()) for p in range(PARTITIONS)])
        members.consumers["a2"] = new_consumer(broker.bootstrap, group, topic)
        members.run_until(lambda: len(members.consumed) == 2 * PARTITIONS, 20, "the second records")
        assert set(members.consumed.values()) == {1}, "a committed record consumed again after the restart"
        committed = members.consumers["a2"].committed([TopicPartition(topic, p) for p in range(PARTITIONS)], 10)
        assert [tp.offset for tp in committed] == [2] * PARTITIONS
    finally:
        members.close_all()


def test_listed_and_described_by_the_admin_client(broker_factory: Any) -> None:
    """ListGroups shows the consumer group with its type and state; DescribeGroups (v0-5), as Kafka, does not
    describe it (Dead, no members) -- librdkafka's describe_consumer_groups uses ConsumerGroupDescribe."""
    broker = broker_factory(FAST_HEARTBEATS)
    topic = group = f"kip848-admin-{uuid.uuid4().hex[:6]}"
    create_topic(broker.bootstrap, topic)
    members = Members()
    members.consumers["a"] = new_consumer(broker.bootstrap, group, topic, **{"client.id": "admin-seen"})
    try:
        members.run_until(lambda: members.assignments()["a"] == set(range(PARTITIONS)), 20, "the assignment")
        admin = AdminClient({"bootstrap.servers": broker.bootstrap})
        listed = admin.list_consumer_groups().result(10)
        mine = [g for g in listed.valid if g.group_id == group]
        assert len(mine) == 1 and str(mine[0].state).endswith("STABLE")
        assert str(getattr(mine[0], "type", "CONSUMER")).endswith("CONSUMER")
        described = admin.describe_consumer_groups([group]).get(group).result(10)
        assert [m.client_id for m in described.members] == ["admin-seen"]
        assignment = {tp.partition for tp in described.members[0].assignment.topic_partitions}
        assert assignment == set(range(PARTITIONS))
    finally:
        members.close_all()


def test_new_partitions_and_a_regex_matched_topic_are_assigned(broker_factory: Any) -> None:
    """The target assignment follows the subscribed topics: partitions added by CreatePartitions, and a topic
    created after a regex subscription (ConsumerGroupHeartbeat v1's SubscribedTopicRegex) that matches it."""
    broker = broker_factory(FAST_HEARTBEATS)
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    create_topic(broker.bootstrap, "kip848-grow", 2)
    members = Members()
    members.consumers["a"] = new_consumer(broker.bootstrap, "kip848-grow", "kip848-grow")
    regex = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "kip848-regex", "group.protocol": "consumer",
                      "auto.offset.reset": "earliest", "topic.metadata.refresh.interval.ms": 500})
    regex.subscribe(["^kip848-rx-.*"])
    try:
        members.run_until(lambda: members.assignments()["a"] == {0, 1}, 20, "the first two partitions")
        for future in admin.create_partitions([NewPartitions("kip848-grow", 4)]).values():
            future.result(15)
        members.run_until(lambda: members.assignments()["a"] == {0, 1, 2, 3}, 20, "the new partitions")

        create_topic(broker.bootstrap, "kip848-rx-late", 3)
        produce(broker.bootstrap, "kip848-rx-late", [(1, b"late")])
        deadline = time.monotonic() + 20
        got = None
        while got is None and time.monotonic() < deadline:
            msg = regex.poll(0.2)
            if msg is not None and msg.error() is None:
                got = msg
        assert got is not None and got.value() == b"late"
        assert {(tp.topic, tp.partition) for tp in regex.assignment()} == {("kip848-rx-late", p) for p in range(3)}
    finally:
        members.close_all()
        regex.close()


def test_the_group_survives_a_broker_restart(broker_factory: Any, tmp_path: Any) -> None:
    """The group is stored in __consumer_offsets (Kafka's ConsumerGroup* records): after a restart the
    coordinator loads it with its epochs and assignment, and the running consumer carries on in it."""
    broker = broker_factory(FAST_HEARTBEATS, data_dir=tmp_path / "restarted")
    topic = group = "kip848-restarted"
    create_topic(broker.bootstrap, topic)
    produce(broker.bootstrap, topic, [(p, f"first-{p}".encode()) for p in range(PARTITIONS)])
    members = Members()
    members.consumers["a"] = new_consumer(broker.bootstrap, group, topic)
    try:
        members.run_until(lambda: len(members.consumed) == PARTITIONS, 20, "the first records")
        before = broker.server.group_coordinator.coordinator.group(group).consumer
        epochs = (before.group_epoch, before.assignment_epoch, {m.member_id: m.member_epoch
                                                                for m in before.members.values()})
        port = broker.port
        broker.stop()
        broker = broker_factory(FAST_HEARTBEATS, data_dir=tmp_path / "restarted", port=port)
        coordinator = broker.server.group_coordinator.coordinator
        deadline = time.monotonic() + 20
        while (coordinator.group(group) is None or coordinator.group(group).consumer is None) \
                and time.monotonic() < deadline:
            time.sleep(0.1)
        loaded = coordinator.group(group).consumer
        assert (loaded.group_epoch, loaded.assignment_epoch,
                {m.member_id: m.member_epoch for m in loaded.members.values()}) == epochs
        produce(broker.bootstrap, topic, [(p, f"second-{p}".encode()) for p in range(PARTITIONS)])
        members.run_until(lambda: len(members.consumed) == 2 * PARTITIONS, 30, "the records after the restart")
        assert set(members.consumed.values()) == {1}
        assert loaded.group_epoch == epochs[0], "the member had to rejoin"
    finally:
        members.close_all()


def test_rebalances_while_producing_lose_and_repeat_nothing(broker_factory: Any) -> None:
    """Three consumers of a 12-partition topic while a producer keeps writing; one leaves and another joins:
    no partition owned twice at any poll, every record consumed exactly once (synchronous commits)."""
    broker = broker_factory(FAST_HEARTBEATS)
    topic = group = "kip848-busy"
    create_topic(broker.bootstrap, topic, 12)
    members = Members()
    producer = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 5})
    sent: list[bytes] = []
    producing = [True]

    def produce_some(n: int = 24) -> None:
        for _ in range(n if producing[0] else 0):
            value = f"r{len(sent)}".encode()
            producer.produce(topic, value, partition=len(sent) % 12)
            sent.append(value)
        producer.poll(0)

    def polled_with_production() -> None:
        produce_some()
        Members.poll_once(members)

    members.poll_once = polled_with_production  # type: ignore[method-assign]
    try:
        for name in ("a", "b", "c"):
            members.consumers[name] = new_consumer(broker.bootstrap, group, topic)
        twelve = {p for p in range(12)}

        def split(n: int) -> bool:
            parts = list(members.assignments().values())
            return (len(parts) == n and set().union(*parts) == twelve and sum(map(len, parts)) == 12
                    and all(len(p) == 12 // n for p in parts))

        members.run_until(lambda: split(3), 30, "three members with 4 partitions each")
        members.consumers.pop("b").close()
        members.run_until(lambda: split(2), 30, "two members with 6 partitions each")
        members.consumers["d"] = new_consumer(broker.bootstrap, group, topic)
        members.run_until(lambda: split(3), 30, "three members again")
        producing[0] = False
        assert producer.flush(15) == 0
        members.run_until(lambda: {v for _, v in members.consumed} == set(sent), 30, "every record")
        assert set(members.consumed.values()) == {1}, "a record consumed twice"
    finally:
        members.close_all()


def test_a_static_member_restarting_keeps_its_partitions(broker_factory: Any) -> None:
    """A consumer with group.instance.id leaves temporarily when closed (epoch -2); its successor with the same
    instance id, within the session timeout, gets the same partitions and no other member moves."""
    broker = broker_factory(FAST_HEARTBEATS)
    topic = group = "kip848-static"
    create_topic(broker.bootstrap, topic)
    members = Members()
    try:
        for name in ("a", "b"):
            members.consumers[name] = new_consumer(broker.bootstrap, group, topic, **{"group.instance.id": name})
        members.run_until(members.split_evenly, 30, "two members with 3 partitions each")
        before = members.assignments()
        members.consumers.pop("a").close()
        epoch = broker.server.group_coordinator.coordinator.group(group).consumer.group_epoch
        members.consumers["a"] = new_consumer(broker.bootstrap, group, topic, **{"group.instance.id": "a"})
        members.run_until(lambda: members.assignments() == before, 30, "the same assignment again")
        assert broker.server.group_coordinator.coordinator.group(group).consumer.group_epoch == epoch
    finally:
        members.close_all()


def test_transactional_offsets_of_a_consumer_protocol_member(broker_factory: Any) -> None:
    """Consume-transform-produce with a consumer-protocol member: send_offsets_to_transaction carries its
    member id and epoch (TxnOffsetCommit v3), and the offsets are committed with the transaction."""
    broker = broker_factory(FAST_HEARTBEATS)
    create_topic(broker.bootstrap, "kip848-eos-in", 1)
    create_topic(broker.bootstrap, "kip848-eos-out", 1)
    produce(broker.bootstrap, "kip848-eos-in", [(0, b"x"), (0, b"y")])
    consumer = new_consumer(broker.bootstrap, "kip848-eos", "kip848-eos-in", **{"isolation.level": "read_committed"})
    producer = Producer({"bootstrap.servers": broker.bootstrap, "transactional.id": "kip848-eos"})
    producer.init_transactions(15)
    try:
        got: list[Any] = []
        deadline = time.monotonic() + 20
        while len(got) < 2 and time.monotonic() < deadline:
            got += [m for m in consumer.consume(10, 0.2) if m.error() is None]
        assert [m.value() for m in got] == [b"x", b"y"]
        producer.begin_transaction()
        for m in got:
            producer.produce("kip848-eos-out", m.value().upper())
        producer.send_offsets_to_transaction([TopicPartition("kip848-eos-in", 0, got[-1].offset() + 1)],
                                             consumer.consumer_group_metadata(), 15)
        producer.commit_transaction(15)
        committed = consumer.committed([TopicPartition("kip848-eos-in", 0)], 10)
        assert committed[0].offset == 2
    finally:
        consumer.close()


def test_described_by_the_admin_client_only_while_its_topic_may_be_described(broker_factory: Any) -> None:
    """With an authorizer (everyone allowed where no ACL), a DENY of DESCRIBE on the group's topic hides the group
    from confluent-kafka's describe_consumer_groups (TOPIC_AUTHORIZATION_FAILED, as Kafka 4.0); removing the ACL
    answers the same group in full again."""
    broker = broker_factory({**FAST_HEARTBEATS, "authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
                             "allow.everyone.if.no.acl.found": "true"})
    topic = group = f"kip848-authz-{uuid.uuid4().hex[:6]}"
    create_topic(broker.bootstrap, topic)
    members = Members()
    members.consumers["a"] = new_consumer(broker.bootstrap, group, topic, **{"client.id": "authz-seen"})
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    acl = (ResourceType.TOPIC, topic, ResourcePatternType.LITERAL, "User:*", "*", AclOperation.DESCRIBE,
           AclPermissionType.DENY)
    deny, undeny = AclBinding(*acl), AclBindingFilter(*acl)

    def described() -> Any:
        return admin.describe_consumer_groups([group]).get(group).result(10)

    try:
        members.run_until(lambda: members.assignments()["a"] == set(range(PARTITIONS)), 20, "the assignment")
        assert [m.client_id for m in described().members] == ["authz-seen"]
        admin.create_acls([deny]).get(deny).result(10)
        with pytest.raises(KafkaException) as refused:
            described()
        assert refused.value.args[0].code() == KafkaError.TOPIC_AUTHORIZATION_FAILED, refused.value
        assert len(admin.delete_acls([undeny]).get(undeny).result(10)) == 1
        again = described()
        assert [m.client_id for m in again.members] == ["authz-seen"]
        assert {tp.partition for tp in again.members[0].assignment.topic_partitions} == set(range(PARTITIONS))
    finally:
        members.close_all()

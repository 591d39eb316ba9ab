"""The admin APIs through confluent-kafka's AdminClient (librdkafka), as a Kafka operator uses them.

Create topics (validate_only leaves no topic), describe / alter / incremental-alter topic configs, create
partitions, delete records (the low watermark moves and a consumer from earliest starts there), list
offsets (earliest, latest, by timestamp, max timestamp), describe cluster, list / describe / delete
consumer groups, delete topics (and recreate one: it starts empty).
"""

from __future__ import annotations

import time
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ConfigSource,
    NewPartitions,
    NewTopic,
    OffsetSpec,
    ResourceType,
)

from tests.e2e.support import wait_until

TIMEOUT = 15


def admin_for(broker: Any) -> AdminClient:
    return AdminClient({"bootstrap.servers": broker.bootstrap})


def wait_all(futures: dict[Any, Any]) -> dict[Any, Any]:
    return {k: f.result(TIMEOUT) for k, f in futures.items()}


def topic_partitions(admin: AdminClient, topic: str) -> int | None:
    # All topics, not list_topics(topic=...): a Metadata request naming the topic would auto-create it.
    md = admin.list_topics(timeout=TIMEOUT)
    t = md.topics.get(topic)
    if t is None or t.error is not None:
        return None
    return len(t.partitions)


def topic_config(admin: AdminClient, topic: str) -> dict[str, Any]:
    [entries] = wait_all(admin.describe_configs([ConfigResource(ResourceType.TOPIC, topic)])).values()
    return entries


def produce_timestamped(broker: Any, topic: str, partitions: int, n: int, base_ts: int) -> None:
    producer = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 1})
    for p in range(partitions):
        for i in range(n):
            producer.produce(topic, key=f"{p}-{i}".encode(), value=f"v{i}".encode(), partition=p,
                             timestamp=base_ts + i * 1000)
    assert producer.flush(TIMEOUT) == 0


def test_create_topics_validate_only_then_for_real_then_delete(broker: Any) -> None:
    admin = admin_for(broker)
    wait_all(admin.create_topics([NewTopic("adm-a", 3, 1, config={"retention.ms": "3600000"})],
                                 validate_only=True, operation_timeout=10))
    assert topic_partitions(admin, "adm-a") is None, "validate_only must not create the topic"

    wait_all(admin.create_topics([NewTopic("adm-a", 3, 1, config={"retention.ms": "3600000"})],
                                 operation_timeout=10))
    assert topic_partitions(admin, "adm-a") == 3
    assert topic_config(admin, "adm-a")["retention.ms"].value == "3600000"

    with pytest.raises(KafkaException) as exists:
        wait_all(admin.create_topics([NewTopic("adm-a", 1, 1)], operation_timeout=10))
    assert exists.value.args[0].code() == KafkaError.TOPIC_ALREADY_EXISTS
    with pytest.raises(KafkaException) as bad:
        wait_all(admin.create_topics([NewTopic("adm-bad", 1, 3)], operation_timeout=10))
    assert bad.value.args[0].code() == KafkaError.INVALID_REPLICATION_FACTOR

    wait_all(admin.delete_topics(["adm-a"], operation_timeout=10))
    wait_until(lambda: topic_partitions(admin, "adm-a") is None, 10, "the deleted topic to disappear")
    with pytest.raises(KafkaException) as gone:
        wait_all(admin.delete_topics(["adm-a"], operation_timeout=10))
    assert gone.value.args[0].code() == KafkaError.UNKNOWN_TOPIC_OR_PART


def test_describe_alter_and_incremental_alter_topic_configs(broker: Any) -> None:
    admin = admin_for(broker)
    wait_all(admin.create_topics([NewTopic("adm-cfg", 1, 1)], operation_timeout=10))
    entries = topic_config(admin, "adm-cfg")
    assert entries["cleanup.policy"].value == "delete"
    assert entries["cleanup.policy"].is_default
    assert entries["retention.ms"].value == "604800000"

    # AlterConfigs replaces the topic's whole override set.
    wait_all(admin.alter_configs([ConfigResource(ResourceType.TOPIC, "adm-cfg",
                                                 set_config={"retention.ms": "120000",
                                                             "segment.bytes": "1048576"})]))
    entries = topic_config(admin, "adm-cfg")
    assert (entries["retention.ms"].value, entries["segment.bytes"].value) == ("120000", "1048576")
    assert not entries["retention.ms"].is_default
    assert entries["retention.ms"].source == ConfigSource.DYNAMIC_TOPIC_CONFIG.value

    # IncrementalAlterConfigs changes only what it names.
    wait_all(admin.incremental_alter_configs([ConfigResource(
        ResourceType.TOPIC, "adm-cfg", incremental_configs=[
            ConfigEntry("cleanup.policy", "compact", incremental_operation=AlterConfigOpType.SET),
            ConfigEntry("segment.bytes", None, incremental_operation=AlterConfigOpType.DELETE)])]))
    entries = topic_config(admin, "adm-cfg")
    assert entries["cleanup.policy"].value == "compact"
    assert entries["retention.ms"].value == "120000"
    assert entries["segment.bytes"].value == "1073741824"
    assert entries["segment.bytes"].is_default

    with pytest.raises(KafkaException) as bad:
        wait_all(admin.incremental_alter_configs([ConfigResource(
            ResourceType.TOPIC, "adm-cfg", incremental_configs=[
                ConfigEntry("no.such.config", "1", incremental_operation=AlterConfigOpType.SET)])]))
    assert bad.value.args[0].code() == KafkaError.INVALID_CONFIG


def test_max_timestamp_names_the_record_not_its_batchs_last_offset(broker: Any) -> None:
    # confluent-kafka-python's integration test_list_offsets: three records in one batch stamped +100, +400,
    # +200; Kafka 4.4 answers MAX_TIMESTAMP with offset 1, the record carrying it (ours answered 2 before).
    admin = admin_for(broker)
    topic = "adm-max-ts"
    wait_all(admin.create_topics([NewTopic(topic, 1, 1)], operation_timeout=10))
    producer = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 100})
    base_ts = 1_000_000_000
    for delta in (100, 400, 200):
        producer.produce(topic, b"m", timestamp=base_ts + delta)
    assert producer.flush(15) == 0
    [info] = wait_all(admin.list_offsets({TopicPartition(topic, 0): OffsetSpec.max_timestamp()})).values()
    assert (info.offset, info.timestamp) == (1, base_ts + 400)


def test_create_partitions(broker: Any) -> None:
    admin = admin_for(broker)
    wait_all(admin.create_topics([NewTopic("adm-grow", 2, 1)], operation_timeout=10))
    wait_all(admin.create_partitions([NewPartitions("adm-grow", 5)], operation_timeout=10))
    wait_until(lambda: topic_partitions(admin, "adm-grow") == 5, 10, "five partitions")
    produce_timestamped(broker, "adm-grow", 5, 2, int(time.time() * 1000))
    with pytest.raises(KafkaException) as shrink:
        wait_all(admin.create_partitions([NewPartitions("adm-grow", 3)], operation_timeout=10))
    assert shrink.value.args[0].code() == KafkaError.INVALID_PARTITIONS


def test_list_offsets_and_delete_records(broker: Any) -> None:
    admin = admin_for(broker)
    topic = "adm-offsets"
    wait_all(admin.create_topics([NewTopic(topic, 2, 1)], operation_timeout=10))
    base_ts = int(time.time() * 1000) - 60_000
    produce_timestamped(broker, topic, 2, 10, base_ts)
    tp0, tp1 = TopicPartition(topic, 0), TopicPartition(topic, 1)

    def list_offsets(spec: Any) -> dict[int, tuple[int, int]]:
        res = wait_all(admin.list_offsets({tp0: spec, tp1: spec}))
        return {tp.partition: (info.offset, info.timestamp) for tp, info in res.items()}

    assert {p: o for p, (o, _) in list_offsets(OffsetSpec.earliest()).items()} == {0: 0, 1: 0}
    assert {p: o for p, (o, _) in list_offsets(OffsetSpec.latest()).items()} == {0: 10, 1: 10}
    # The first offset whose timestamp is >= the asked one.
    by_ts = list_offsets(OffsetSpec.for_timestamp(base_ts + 4500))
    assert by_ts == {0: (5, base_ts + 5000), 1: (5, base_ts + 5000)}
    assert {p: o for p, (o, _) in list_offsets(OffsetSpec.for_timestamp(base_ts + 99_000)).items()} == \
        {0: -1, 1: -1}
    assert list_offsets(OffsetSpec.max_timestamp()) == {0: (9, base_ts + 9000), 1: (9, base_ts + 9000)}

    deleted = wait_all(admin.delete_records([TopicPartition(topic, 0, 4)]))
    assert [d.low_watermark for d in deleted.values()] == [4]
    assert {p: o for p, (o, _) in list_offsets(OffsetSpec.earliest()).items()} == {0: 4, 1: 0}
    with pytest.raises(KafkaException) as beyond:
        wait_all(admin.delete_records([TopicPartition(topic, 1, 11)]))
    assert beyond.value.args[0].code() == KafkaError.OFFSET_OUT_OF_RANGE

    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "adm-offsets",
                         "auto.offset.reset": "earliest", "enable.auto.commit": False})
    try:
        consumer.assign([TopicPartition(topic, 0)])
        seen: list[int] = []
        deadline = time.monotonic() + TIMEOUT
        while len(seen) < 6 and time.monotonic() < deadline:
            seen += [m.offset() for m in consumer.consume(100, 0.5) if m.error() is None]
        assert seen == list(range(4, 10))
        assert consumer.get_watermark_offsets(tp0, timeout=TIMEOUT) == (4, 10)
    finally:
        consumer.close()


def test_describe_cluster(broker: Any) -> None:
    admin = admin_for(broker)
    cluster = admin.describe_cluster(request_timeout=TIMEOUT).result(TIMEOUT)
    broker_id = broker.server.broker_id
    assert [(n.id, n.host, n.port) for n in cluster.nodes] == [(broker_id, "127.0.0.1", broker.port)]
    assert cluster.controller.id == broker_id
    assert cluster.cluster_id
    assert admin.list_topics(timeout=TIMEOUT).cluster_id == cluster.cluster_id


def test_list_describe_and_delete_groups(broker: Any) -> None:
    admin = admin_for(broker)
    wait_all(admin.create_topics([NewTopic("adm-grp", 2, 1)], operation_timeout=10))
    produce_timestamped(broker, "adm-grp", 2, 5, int(time.time() * 1000))
    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "adm-group",
                         "client.id": "adm-member",
                         "auto.offset.reset": "earliest", "enable.auto.commit": False})
    try:
        consumer.subscribe(["adm-grp"])
        got = 0
        deadline = time.monotonic() + TIMEOUT
        while got < 10 and time.monotonic() < deadline:
            got += sum(1 for m in consumer.consume(100, 0.3) if m.error() is None)
        assert got == 10
        consumer.commit(asynchronous=False)

        listed = admin.list_consumer_groups(request_timeout=TIMEOUT).result(TIMEOUT)
        assert "adm-group" in {g.group_id for g in listed.valid}
        [desc] = wait_all(admin.describe_consumer_groups(["adm-group"], request_timeout=TIMEOUT)).values()
        assert desc.group_id == "adm-group"
        assert desc.state.name == "STABLE"
        assert not desc.is_simple_consumer_group
        [member] = desc.members
        assert member.client_id == "adm-member"
        assert {(tp.topic, tp.partition) for tp in member.assignment.topic_partitions} == \
            {("adm-grp", 0), ("adm-grp", 1)}
        assert desc.coordinator.id == broker.server.broker_id

        with pytest.raises(KafkaException) as busy:
            wait_all(admin.delete_consumer_groups(["adm-group"], request_timeout=TIMEOUT))
        assert busy.value.args[0].code() == KafkaError.NON_EMPTY_GROUP
    finally:
        consumer.close()

    [desc] = wait_all(admin.describe_consumer_groups(["adm-group"], request_timeout=TIMEOUT)).values()
    assert desc.state.name == "EMPTY"
    wait_all(admin.delete_consumer_groups(["adm-group"], request_timeout=TIMEOUT))
    listed = admin.list_consumer_groups(request_timeout=TIMEOUT).result(TIMEOUT)
    assert "adm-group" not in {g.group_id for g in listed.valid}


def test_delete_and_recreate_topic_starts_empty(broker: Any) -> None:
    admin = admin_for(broker)
    wait_all(admin.create_topics([NewTopic("recycled", 1, 1)], operation_timeout=10))
    produce_timestamped(broker, "recycled", 1, 50, int(time.time() * 1000))
    wait_all(admin.delete_topics(["recycled"], operation_timeout=10))
    wait_until(lambda: topic_partitions(admin, "recycled") is None, 10, "the topic to disappear")
    # Its data goes from the disk too, once log.segment.delete.delay.ms (1 s in tests) has passed.
    wait_until(lambda: not list(broker.data_dir.glob("recycled-*")), 10, "the deleted topic's directory to go")

    def recreate() -> bool:
        try:
            wait_all(admin.create_topics([NewTopic("recycled", 2, 1)], operation_timeout=10))
            return True
        except KafkaException as e:  # deletion may still be finishing, as in Kafka
            assert e.args[0].code() == KafkaError.TOPIC_ALREADY_EXISTS, e
            return False

    wait_until(recreate, 15, "the topic to be created again", interval=0.3)
    assert topic_partitions(admin, "recycled") == 2
    produce_timestamped(broker, "recycled", 2, 3, int(time.time() * 1000))
    tps = [TopicPartition("recycled", p) for p in range(2)]
    res = wait_all(admin.list_offsets({tp: OffsetSpec.latest() for tp in tps}))
    assert {tp.partition: info.offset for tp, info in res.items()} == {0: 3, 1: 3}
    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "recycled",
                         "auto.offset.reset": "earliest", "enable.auto.commit": False})
    try:
        consumer.assign([TopicPartition("recycled", p, 0) for p in range(2)])
        got: list[tuple[int, int, bytes]] = []
        deadline = time.monotonic() + TIMEOUT
        while len(got) < 6 and time.monotonic() < deadline:
            got += [(m.partition(), m.offset(), m.value()) for m in consumer.consume(100, 0.3)
                    if m.error() is None]
        assert sorted(got) == [(p, i, b"v%d" % i) for p in range(2) for i in range(3)]
    finally:
        consumer.close()

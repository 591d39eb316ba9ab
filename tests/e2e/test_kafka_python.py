"""kafka-python against the broker: KafkaAdminClient creates the topic, KafkaProducer sends 2,000 messages per
codec (10,000 over the five codecs) with keys, headers and null values to explicit partitions, a KafkaConsumer
in a group reads them back exactly and in order per partition, and its committed offsets equal the log ends.
KafkaAdminClient walks through cluster, topics, configs, partitions, groups, delete records and delete topics.
"""

from __future__ import annotations

import time
from typing import Any

import pytest
from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import ConfigResource, ConfigResourceType, NewPartitions, NewTopic

from tests.e2e.support import CODECS, Msg, assert_same_per_partition, make_messages, stored_codecs

PARTITIONS = 4
PER_CODEC = 2000


@pytest.mark.parametrize("codec", CODECS)
def test_round_trip_with_group(broker: Any, codec: str) -> None:
    topic = f"kp-{codec}"
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap, request_timeout_ms=10000)
    try:
        admin.create_topics([NewTopic(topic, PARTITIONS, 1)])
    finally:
        admin.close()

    sent = make_messages(PER_CODEC, PARTITIONS, f"kp-{codec}")
    # kafka-python sends a batch uncompressed when compressing does not shrink it (a batch of one short record,
    # cut by linger.ms when the machine is busy). A long linger makes batches close on size or at flush() only,
    # so every batch holds enough records to compress, and the stored-codec check below stays exact.
    producer = KafkaProducer(bootstrap_servers=broker.bootstrap, acks="all",
                             compression_type=None if codec == "none" else codec,
                             linger_ms=1000, batch_size=32768)
    try:
        futures = [producer.send(topic, key=m.key, value=m.value, headers=list(m.headers),
                                 partition=m.partition) for m in sent]
        producer.flush(30)
        metadata = [f.get(timeout=10) for f in futures]
    finally:
        producer.close(10)
    # Offsets the broker assigned must be dense per partition, in send order.
    next_offset = [0] * PARTITIONS
    for m, md in zip(sent, metadata, strict=True):
        assert (md.partition, md.offset) == (m.partition, next_offset[m.partition])
        next_offset[m.partition] += 1

    assert stored_codecs(broker.data_dir, topic) == {codec}

    consumer = KafkaConsumer(topic, bootstrap_servers=broker.bootstrap, group_id=f"g-{topic}",
                             auto_offset_reset="earliest", enable_auto_commit=False,
                             fetch_max_wait_ms=100)
    received: list[Msg] = []
    try:
        deadline = time.monotonic() + 30
        while len(received) < len(sent) and time.monotonic() < deadline:
            for tp, records in consumer.poll(timeout_ms=500).items():
                for r in records:
                    received.append(Msg(tp.partition, r.key, r.value, tuple(r.headers)))
        consumer.commit()
        assert_same_per_partition(sent, received)
        tps = [TopicPartition(topic, p) for p in range(PARTITIONS)]
        assert consumer.end_offsets(tps) == {tp: next_offset[tp.partition] for tp in tps}
        assert {tp: consumer.committed(tp) for tp in tps} == {tp: next_offset[tp.partition] for tp in tps}
    finally:
        consumer.close()


def test_admin_client_walkthrough(broker: Any) -> None:
    """KafkaAdminClient end to end: cluster, topics, configs, partitions, groups, records, deletion."""
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap, request_timeout_ms=10000)
    try:
        broker_id = broker.server.broker_id
        cluster = admin.describe_cluster()
        assert cluster["controller_id"] == broker_id
        assert [(b["broker_id"], b["host"], b["port"]) for b in cluster["brokers"]] == \
            [(broker_id, "127.0.0.1", broker.port)]

        admin.create_topics([NewTopic("kp-admin", 2, 1)])
        assert "kp-admin" in admin.list_topics()
        [described] = admin.describe_topics(["kp-admin"])
        assert described["error_code"] == 0
        assert [(p["partition_index"], p["leader_id"], p["isr_nodes"]) for p in described["partitions"]] == \
            [(0, broker_id, [broker_id]), (1, broker_id, [broker_id])]

        resource = ConfigResource(ConfigResourceType.TOPIC, "kp-admin", {"retention.ms": "90000"})
        assert admin.alter_configs([resource]) == {"topic": {"kp-admin": "OK"}}
        modified = admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, "kp-admin")])
        entry = modified["topic"]["kp-admin"]["retention.ms"]
        assert (entry["value"], entry["config_source"]) == ("90000", "DYNAMIC_TOPIC_CONFIG")

        result = admin.create_partitions({"kp-admin": NewPartitions(3)})
        assert [r.error_code for r in result.results] == [0]

        producer = KafkaProducer(bootstrap_servers=broker.bootstrap, acks="all")
        try:
            for i in range(30):
                producer.send("kp-admin", value=b"%d" % i, partition=i % 3)
            producer.flush(10)
        finally:
            producer.close(5)

        consumer = KafkaConsumer("kp-admin", bootstrap_servers=broker.bootstrap, group_id="kp-admin-group",
                                 auto_offset_reset="earliest", enable_auto_commit=False,
                                 fetch_max_wait_ms=100)
        try:
            got = 0
            deadline = time.monotonic() + 20
            while got < 30 and time.monotonic() < deadline:
                got += sum(len(v) for v in consumer.poll(timeout_ms=500).values())
            assert got == 30
            consumer.commit()
            groups = {g["group_id"]: g for g in admin.list_groups()}
            assert groups["kp-admin-group"]["group_state"] == "Stable"
            desc = admin.describe_groups(["kp-admin-group"])["kp-admin-group"]
            [member] = desc["members"]
            assigned = member["member_assignment"]["assigned_partitions"]
            assert assigned == [{"topic": "kp-admin", "partitions": [0, 1, 2]}]
            offsets = admin.list_group_offsets("kp-admin-group")["kp-admin-group"]
            assert {tp.partition: om.offset for tp, om in offsets.items()} == {0: 10, 1: 10, 2: 10}
        finally:
            consumer.close()
        assert admin.delete_groups(["kp-admin-group"]) == {"kp-admin-group": "OK"}
        assert "kp-admin-group" not in {g["group_id"] for g in admin.list_groups()}

        deleted = admin.delete_records({TopicPartition("kp-admin", 1): 7})
        assert deleted[TopicPartition("kp-admin", 1)]["low_watermark"] == 7

        admin.delete_topics(["kp-admin"])
        deadline = time.monotonic() + 10
        while "kp-admin" in admin.list_topics() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert "kp-admin" not in admin.list_topics()
    finally:
        admin.close()

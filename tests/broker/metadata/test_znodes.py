"""The znode JSON we write is the JSON Kafka 3.x writes (ZkData.scala), and we read what Kafka writes."""

from __future__ import annotations

import json
import uuid

import pytest

from broker.metadata import znodes
from broker.metadata.types import LeaderAndIsr, MetadataCorruptError
from storage.values import TopicPartition


def test_topic_id_is_kafka_base64_uuid():
    topic_id = uuid.UUID("a1b2c3d4-e5f6-4718-8a9b-0c1d2e3f4a5b")
    text = znodes.topic_id_to_string(topic_id)
    assert len(text) == 22 and "=" not in text
    assert text == "obLD1OX2RxiKmwwdLj9KWw"
    assert znodes.topic_id_from_string(text) == topic_id
    for bad in ("", "short", "!" * 22, 5):
        with pytest.raises(MetadataCorruptError):
            znodes.topic_id_from_string(bad)  # type: ignore[arg-type]


def test_broker_registration_v5_shape():
    data = znodes.encode_broker(["PLAINTEXT://127.0.0.1:9092", "SSL://h:9093"], "r1", timestamp_ms="123")
    assert json.loads(data) == {
        "features": {},
        "listener_security_protocol_map": {"PLAINTEXT": "PLAINTEXT", "SSL": "SSL"},
        "endpoints": ["PLAINTEXT://127.0.0.1:9092", "SSL://h:9093"],
        "jmx_port": -1,
        "port": 9092,
        "host": "127.0.0.1",
        "version": 5,
        "timestamp": "123",
        "rack": "r1",
    }
    assert b" " not in data  # Jackson's compact form
    info = znodes.decode_broker(1, data)
    assert info.endpoints == ("PLAINTEXT://127.0.0.1:9092", "SSL://h:9093")
    assert info.rack == "r1" and info.timestamp_ms == 123
    assert info.endpoint("SSL") == ("h", 9093)


def test_broker_registration_without_plaintext_has_null_host():
    data = json.loads(znodes.encode_broker(["INTERNAL://h:1"], None, {"INTERNAL": "SSL"}))
    assert data["host"] is None and data["port"] == -1 and "rack" not in data


def test_reads_a_registration_written_by_kafka():
    kafka_written = (
        b'{"listener_security_protocol_map":{"PLAINTEXT":"PLAINTEXT"},"endpoints":["PLAINTEXT://kafka-1:9092"],'
        b'"jmx_port":-1,"features":{},"host":"kafka-1","timestamp":"1700000000000","port":9092,"version":5}'
    )
    info = znodes.decode_broker(7, kafka_written)
    assert info.broker_id == 7 and info.endpoint() == ("kafka-1", 9092) and info.version == 5


def test_topic_assignment_v3_shape():
    topic_id = uuid.uuid4()
    data = znodes.encode_topic(topic_id, {1: [2, 3], 0: [1, 2]}, adding_replicas={0: [3]}, removing_replicas={})
    assert json.loads(data) == {
        "partitions": {"0": [1, 2], "1": [2, 3]},
        "adding_replicas": {"0": [3]},
        "removing_replicas": {},
        "version": 3,
        "topic_id": znodes.topic_id_to_string(topic_id),
    }
    info = znodes.decode_topic("t", data, 4)
    assert info.topic_id == topic_id and info.assignment == {0: (1, 2), 1: (2, 3)}
    assert info.adding_replicas == {0: (3,)} and info.zk_version == 4


def test_reads_old_topic_assignment_without_topic_id():
    info = znodes.decode_topic("t", b'{"version":1,"partitions":{"0":[1]}}')
    assert info.topic_id is None and info.assignment == {0: (1,)} and info.removing_replicas == {}


def test_partition_state_shape_and_recovery_state_only_when_recovering():
    state = LeaderAndIsr(leader=2, leader_epoch=5, isr=(2, 3), controller_epoch=4)
    assert json.loads(znodes.encode_partition_state(state)) == {
        "controller_epoch": 4,
        "leader": 2,
        "version": 1,
        "leader_epoch": 5,
        "isr": [2, 3],
    }
    recovering = LeaderAndIsr(2, 5, (2,), 4, leader_recovery_state=1)
    assert json.loads(znodes.encode_partition_state(recovering))["leader_recovery_state"] == 1
    decoded = znodes.decode_partition_state("t", 0, znodes.encode_partition_state(state), 9)
    assert decoded == LeaderAndIsr(2, 5, (2, 3), 4, partition_epoch=9)


def test_controller_cluster_id_epoch_config_and_notifications_shapes():
    assert json.loads(znodes.encode_controller(3, "99")) == {
        "version": 2,
        "brokerid": 3,
        "timestamp": "99",
        "kraftControllerEpoch": -1,
    }
    assert znodes.decode_controller(b'{"version":1,"brokerid":2,"timestamp":"1"}') == 2
    assert znodes.encode_controller_epoch(12) == b"12"
    assert znodes.decode_controller_epoch(b"12") == 12
    assert json.loads(znodes.encode_cluster_id("abc")) == {"version": "1", "id": "abc"}
    assert json.loads(znodes.encode_topic_config({"retention.ms": "1"})) == {
        "version": 1,
        "config": {"retention.ms": "1"},
    }
    assert json.loads(znodes.encode_config_change("topics/t")) == {"version": 2, "entity_path": "topics/t"}
    isr = znodes.encode_partition_list([TopicPartition("t", 1)])
    assert json.loads(isr) == {"version": 1, "partitions": [{"topic": "t", "partition": 1}]}
    assert znodes.decode_partition_list(isr, "x") == [TopicPartition("t", 1)]
    reassign = {TopicPartition("t", 0): (1, 2)}
    assert znodes.decode_reassignment(znodes.encode_reassignment(reassign)) == reassign


@pytest.mark.parametrize(
    "data",
    [
        None,
        b"",
        b"not json",
        b"\xff\xfe",
        b"[]",
        b'{"leader":"x","leader_epoch":0,"isr":[1],"controller_epoch":1}',
        b'{"leader":1,"leader_epoch":0,"isr":"1","controller_epoch":1}',
        b'{"leader":1,"leader_epoch":0,"isr":[true],"controller_epoch":1}',
        b'{"leader":1,"leader_epoch":0,"controller_epoch":1}',
        b'{"leader":1,"leader_epoch":0,"isr":[1],"controller_epoch":1,"leader_recovery_state":7}',
        b" " * (znodes.MAX_ZNODE_BYTES + 1),
    ],
)
def test_corrupt_partition_state_raises_typed_error(data):
    with pytest.raises(MetadataCorruptError):
        znodes.decode_partition_state("t", 0, data, 0)


@pytest.mark.parametrize(
    "data",
    [b'{"version":5,"endpoints":"x","jmx_port":-1}', b'{"version":5,"endpoints":["nourl"]}', b'{"version":0}'],
)
def test_corrupt_broker_registration_raises_typed_error(data):
    with pytest.raises(MetadataCorruptError):
        znodes.decode_broker(1, data)

"""OffsetCommit for partitions the cluster does not have: UNKNOWN_TOPIC_OR_PARTITION per partition in every
version, the known ones committed beside them (Kafka 3.7's handleOffsetCommitRequest; librdkafka's
0030_offset_commit expects it). Over a real socket with our codec, and with confluent-kafka's consumer."""

from __future__ import annotations

import socket
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException
from confluent_kafka import TopicPartition as CTopicPartition
from kafka import KafkaAdminClient
from kafka.admin import NewTopic

from protocol import ApiKey, request_class
from protocol.errors import ErrorCode
from tests.broker.wire import roundtrip
from tests.e2e.support import wait_until


@pytest.mark.parametrize("version", range(10))
def test_offset_commit_answers_unknown_topic_or_partition(broker: Any, version: int) -> None:
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    try:
        admin.create_topics([NewTopic("known", 1, 1)])
    finally:
        admin.close()
    Req = request_class(ApiKey.OFFSET_COMMIT)
    Topic = Req.OffsetCommitRequestTopic
    Part = Topic.OffsetCommitRequestPartition
    request = Req[version](group_id="g", generation_id_or_member_epoch=-1, member_id="", topics=[
        Topic(name="known", partitions=[Part(partition_index=0, committed_offset=3),
                                        Part(partition_index=4, committed_offset=3)]),
        Topic(name="missing", partitions=[Part(partition_index=0, committed_offset=3)])])
    find = request_class(ApiKey.FIND_COORDINATOR)[0](key="g")
    codes: dict[tuple[str, int], int] = {}

    def committed() -> bool:  # the first FindCoordinator creates __consumer_offsets; it loads, then commits
        with socket.create_connection(("127.0.0.1", broker.port), timeout=10) as s:
            roundtrip(s, find, 1)
            resp = roundtrip(s, request, 2)
        codes.update({(t.name, p.partition_index): p.error_code for t in resp.topics for p in t.partitions})
        return codes[("known", 0)] not in (ErrorCode.NOT_COORDINATOR, ErrorCode.COORDINATOR_NOT_AVAILABLE,
                                           ErrorCode.COORDINATOR_LOAD_IN_PROGRESS)
    wait_until(committed, 20, "the group coordinator to answer")
    assert codes == {("known", 0): ErrorCode.NONE, ("known", 4): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                     ("missing", 0): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}


def test_confluent_consumer_commit_to_a_missing_topic_fails(broker: Any) -> None:
    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "committer",
                         "enable.auto.commit": False})
    try:
        with pytest.raises(KafkaException) as raised:
            consumer.commit(offsets=[CTopicPartition("never-created", 0, 5)], asynchronous=False)
        assert raised.value.args[0].code() == KafkaError.UNKNOWN_TOPIC_OR_PART
    finally:
        consumer.close()

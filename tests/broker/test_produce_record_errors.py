"""A keyless record to a compacted topic: the batch is rejected with INVALID_RECORD, Kafka's message and
KIP-467's per-record errors, over a real socket (our codec, Produce v8-v9) and as confluent-kafka's producer
sees it (librdkafka 0011_produce_batch after cleanup.policy=compact)."""

from __future__ import annotations

import socket
import time
from typing import Any

import pytest
from confluent_kafka import KafkaError, Producer
from kafka import KafkaAdminClient
from kafka.admin import NewTopic

from protocol import ApiKey, request_class
from protocol.errors import ErrorCode
from protocol.records import build_batch
from tests.broker.wire import roundtrip

MESSAGE = "Compacted topic cannot accept message without key in topic partition compacted-0."
SUMMARY = ("One or more records have been rejected due to 2 record errors in total, and only showing the first "
           f"three errors at most: [RecordError(batchIndex=1, message='{MESSAGE}'), "
           f"RecordError(batchIndex=3, message='{MESSAGE}')]")


@pytest.fixture
def compacted(broker: Any) -> Any:
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    try:
        admin.create_topics([NewTopic("compacted", 1, 1, topic_configs={"cleanup.policy": "compact"})])
    finally:
        admin.close()
    return broker


@pytest.mark.parametrize("version", [3, 8, 9])
def test_keyless_records_answer_record_errors(compacted: Any, version: int) -> None:
    now = int(time.time() * 1000)
    records = build_batch([(b"k0", b"v", [], now), (None, b"v", [], now), (b"k2", b"v", [], now),
                           (None, b"v", [], now)])
    Req = request_class(ApiKey.PRODUCE)
    Topic = Req.TopicProduceData
    request = Req[version](transactional_id=None, acks=1, timeout_ms=5000, topic_data=[
        Topic(name="compacted", partition_data=[Topic.PartitionProduceData(index=0, records=records)])])
    with socket.create_connection(("127.0.0.1", compacted.port), timeout=10) as s:
        resp = roundtrip(s, request, 1)
    [part] = resp.responses[0].partition_responses
    assert (part.error_code, part.base_offset) == (ErrorCode.INVALID_RECORD, -1)
    if version >= 8:
        assert part.error_message == SUMMARY
        assert [(e.batch_index, e.batch_index_error_message) for e in part.record_errors] == [
            (1, MESSAGE), (3, MESSAGE)]
        assert part.log_start_offset == 0


def test_confluent_producer_sees_invalid_record(compacted: Any) -> None:
    errors: list[KafkaError] = []
    producer = Producer({"bootstrap.servers": compacted.bootstrap, "linger.ms": 0})
    producer.produce("compacted", value=b"no key", partition=0,
                     on_delivery=lambda err, msg: errors.append(err))
    producer.flush(30)
    assert len(errors) == 1 and errors[0] is not None
    assert errors[0].code() == KafkaError.INVALID_RECORD

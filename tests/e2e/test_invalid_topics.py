"""Invalid and internal topic names from stock clients over real sockets (issue 18, item 1).

Kafka answers each with INVALID_TOPIC_EXCEPTION (17) for that topic and keeps the connection: Metadata
naming an invalid topic, CreateTopics of an illegal name (with Kafka's message, beside a valid topic in
the same request that is created), and a produce to the internal `__consumer_offsets` (Kafka 3.7.1's
ReplicaManager.appendToLocalLog: "Cannot append to internal topic"). These requests used to raise
AttributeError in the handlers and drop the connection. "The connection stays up" is checked on the
broker (clients reconnect silently): it closed no connection (each close it makes is logged) and logged
no error, and the client's next request is answered.

kafka-python refuses invalid names itself in KafkaConsumer/KafkaProducer (ValueError before any request)
and never produces to an internal topic (its partitioner assigns none), so with it only the admin client
puts these names on the wire; confluent-kafka sends them from every client.
"""

from __future__ import annotations

import logging
import socket
import struct
import time
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaError, Producer
from confluent_kafka.admin import AdminClient
from confluent_kafka.admin import NewTopic as CkNewTopic
from kafka import KafkaAdminClient
from kafka.admin import NewTopic
from kafka.errors import InvalidTopicError

from protocol import ApiKey, ErrorCode, decode_response, encode_request, request_class
from protocol.records import build_batch

BAD = "bad topic!"
ILLEGAL = ("Topic name \"bad name!\" is illegal, it contains a character other than ASCII alphanumerics, "
           "'.', '_' and '-'")


def closed_or_failed(caplog: pytest.LogCaptureFixture) -> list[str]:
    """The broker's log lines for a connection it closed or a request that failed."""
    return [r.getMessage() for r in caplog.records if r.name.startswith("broker") and (
        r.levelno >= logging.ERROR or (r.levelno >= logging.WARNING and "closing" in r.getMessage()))]


def test_confluent_list_topics_of_an_invalid_name(broker: Any, caplog: pytest.LogCaptureFixture) -> None:
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    assert len(admin.list_topics(timeout=10).brokers) == 1
    for _ in range(2):  # the second call is answered too: the connection is still there
        md = admin.list_topics(topic=BAD, timeout=10)
        assert md.topics[BAD].error is not None
        assert md.topics[BAD].error.code() == KafkaError.TOPIC_EXCEPTION == ErrorCode.INVALID_TOPIC_EXCEPTION
        assert md.topics[BAD].partitions == {}
    assert len(admin.list_topics(timeout=10).brokers) == 1
    assert closed_or_failed(caplog) == []


def test_kafka_python_admin_metadata_of_an_invalid_name(broker: Any, caplog: pytest.LogCaptureFixture) -> None:
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    try:
        admin.create_topics([NewTopic("fine", 1, 1)])
        [bad] = admin.describe_topics([BAD])
        assert (bad["name"], bad["error_code"], bad["partitions"]) == (BAD, ErrorCode.INVALID_TOPIC_EXCEPTION, [])
        [fine] = admin.describe_topics(["fine"])
        assert (fine["error_code"], len(fine["partitions"])) == (0, 1)
    finally:
        admin.close()
    assert closed_or_failed(caplog) == []


def test_confluent_create_topics_answers_per_topic(broker: Any, caplog: pytest.LogCaptureFixture) -> None:
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.list_topics(timeout=10)
    futures = admin.create_topics([CkNewTopic("bad name!", 1, 1), CkNewTopic("good-name", 1, 1)],
                                  operation_timeout=10)
    with pytest.raises(Exception) as caught:
        futures["bad name!"].result(15)
    error = caught.value.args[0]
    assert (error.code(), error.str()) == (KafkaError.TOPIC_EXCEPTION, ILLEGAL)
    futures["good-name"].result(15)
    assert "good-name" in admin.list_topics(timeout=10).topics
    assert closed_or_failed(caplog) == []


def test_kafka_python_create_topics_of_an_illegal_name(broker: Any, caplog: pytest.LogCaptureFixture) -> None:
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    try:
        admin.list_topics()
        with pytest.raises(InvalidTopicError, match="is illegal"):
            admin.create_topics([NewTopic("bad name!", 1, 1)])
        admin.create_topics([NewTopic("after-the-bad-one", 1, 1)])
        assert "after-the-bad-one" in admin.list_topics()
    finally:
        admin.close()
    assert closed_or_failed(caplog) == []


def ensure_offsets_topic(broker: Any) -> None:
    """__consumer_offsets exists once a group has looked for its coordinator."""
    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "makes-offsets-topic"})
    try:
        consumer.subscribe(["anything"])
        deadline = time.monotonic() + 20
        while "__consumer_offsets" not in broker.server.metadata_cache.topics:
            assert time.monotonic() < deadline, "__consumer_offsets was never created"
            consumer.poll(0.2)
    finally:
        consumer.close()


def test_producing_to_an_internal_topic(broker: Any, caplog: pytest.LogCaptureFixture) -> None:
    ensure_offsets_topic(broker)
    producer = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 0})
    errors: list[Any] = []
    for _ in range(2):
        producer.produce("__consumer_offsets", b"value", partition=0, on_delivery=lambda err, _: errors.append(err))
        assert producer.flush(15) == 0
    assert [e.code() for e in errors] == [KafkaError.TOPIC_EXCEPTION] * 2
    # A valid produce afterwards on the same producer.
    delivered: list[Any] = []
    producer.produce("ordinary", b"value", on_delivery=lambda err, msg: delivered.append(err))
    assert producer.flush(15) == 0 and delivered == [None]

    # The same on a raw socket, where the answer can be read field by field.
    with socket.create_connection(("127.0.0.1", broker.port), timeout=10) as s:
        Produce = request_class(ApiKey.PRODUCE)
        data = Produce.TopicProduceData
        request = Produce[9](transactional_id=None, acks=-1, timeout_ms=5000, topic_data=[data(
            name="__consumer_offsets", partition_data=[data.PartitionProduceData(
                index=0, records=build_batch([(b"k", b"v", [], int(time.time() * 1000))]))])])
        request.with_header(correlation_id=1, client_id="raw")
        frame = encode_request(request)
        s.sendall(struct.pack(">i", len(frame)) + frame)
        size = struct.unpack(">i", s.recv(4, socket.MSG_WAITALL))[0]
        response = decode_response(s.recv(size, socket.MSG_WAITALL), ApiKey.PRODUCE, 9)
        [topic] = response.responses
        [partition] = topic.partition_responses
        assert (partition.error_code, partition.base_offset) == (ErrorCode.INVALID_TOPIC_EXCEPTION, -1)
    assert closed_or_failed(caplog) == []

"""DescribeConfigs, AlterConfigs and IncrementalAlterConfigs through the real codec on one connection: every
error code each handler's contract lists, with Kafka's messages, and the connection stays up throughout."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from typing import Any

import pytest

from protocol import ApiKey, request_class
from protocol.errors import ErrorCode
from tests.broker.wire import roundtrip

TOPIC, BROKER = 2, 4
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3

DescribeReq = request_class(ApiKey.DESCRIBE_CONFIGS)[4]
AlterReq = request_class(ApiKey.ALTER_CONFIGS)[2]
IncReq = request_class(ApiKey.INCREMENTAL_ALTER_CONFIGS)[1]
CreateReq = request_class(ApiKey.CREATE_TOPICS)[7]


@pytest.fixture
def conn(broker: Any) -> Iterator[Any]:
    sock = socket.create_connection(("127.0.0.1", broker.port), timeout=10)
    counter = iter(range(1, 10_000))

    def call(request: Any) -> Any:
        return roundtrip(sock, request, next(counter))

    topic = CreateReq.CreatableTopic(name="cfg", num_partitions=1, replication_factor=1, assignments=[], configs=[])
    [created] = call(CreateReq(topics=[topic], timeout_ms=10000, validate_only=False)).topics
    assert created.error_code == 0
    yield call
    sock.close()


def describe(call: Any, resource_type: int, name: str, keys: list[str] | None = None) -> Any:
    [result] = call(DescribeReq(resources=[DescribeReq.DescribeConfigsResource(
        resource_type=resource_type, resource_name=name, configuration_keys=keys)],
        include_synonyms=True, include_documentation=True)).results
    return result


def incremental(call: Any, resources: list[tuple[int, str, list[tuple[str, str | None, int]]]]) -> list[tuple]:
    request = IncReq(validate_only=False, resources=[
        IncReq.AlterConfigsResource(resource_type=t, resource_name=n, configs=[
            IncReq.AlterConfigsResource.AlterableConfig(name=k, value=v, config_operation=op) for k, v, op in ops])
        for t, n, ops in resources])
    return [(r.error_code, r.error_message) for r in call(request).responses]


def alter(call: Any, resource_type: int, name: str, configs: dict[str, str | None]) -> tuple:
    request = AlterReq(validate_only=False, resources=[AlterReq.AlterConfigsResource(
        resource_type=resource_type, resource_name=name,
        configs=[AlterReq.AlterConfigsResource.AlterableConfig(name=k, value=v) for k, v in configs.items()])])
    [r] = call(request).responses
    return r.error_code, r.error_message


def test_describe_configs_error_paths(conn: Any) -> None:
    ok = describe(conn, TOPIC, "cfg", ["retention.ms"])
    assert ok.error_code == ErrorCode.NONE
    [entry] = ok.configs
    assert (entry.config_type, entry.config_source, entry.documentation) == (5, 5, "Delete segments older than "
                                                                            "this; -1 keeps them.")
    bad = describe(conn, TOPIC, "bad topic!")
    assert (bad.error_code, bad.error_message) == (
        ErrorCode.INVALID_TOPIC_EXCEPTION, "Topic name \"bad topic!\" is illegal, it contains a character other than "
                                           "ASCII alphanumerics, '.', '_' and '-'")
    missing = describe(conn, TOPIC, "nope")
    assert (missing.error_code, missing.error_message) == (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, None)
    other = describe(conn, BROKER, "5")
    assert (other.error_code, other.error_message) == (
        ErrorCode.INVALID_REQUEST, "Unexpected broker id, expected 0 or empty string, but received 5")
    word = describe(conn, BROKER, "zero")
    assert (word.error_code, word.error_message) == (ErrorCode.INVALID_REQUEST,
                                                     "Broker id must be an integer, but it is: zero")
    logger = describe(conn, 8, "0")
    assert logger.error_code == ErrorCode.INVALID_REQUEST
    assert describe(conn, BROKER, "").configs == []  # no cluster-wide dynamic defaults yet


def test_incremental_alter_configs_error_paths(conn: Any) -> None:
    assert incremental(conn, [(TOPIC, "cfg", [("cleanup.policy", "", SET)])]) == [(ErrorCode.NONE, None)]
    assert incremental(conn, [(TOPIC, "cfg", [("a", "1", SET)]), (TOPIC, "cfg", [("b", "1", SET)])]) == \
        [(ErrorCode.INVALID_REQUEST, "Each resource must appear at most once.")] * 2
    assert incremental(conn, [(TOPIC, "cfg", [("retention.ms", "1", SET), ("retention.ms", "2", SET)])]) == \
        [(ErrorCode.INVALID_REQUEST, "Error due to duplicate config keys")]
    assert incremental(conn, [(TOPIC, "cfg", [("retention.ms", None, SET)])]) == \
        [(ErrorCode.INVALID_REQUEST, "Null value not supported for : retention.ms")]
    assert incremental(conn, [(TOPIC, "", [("retention.ms", "1", SET)])]) == \
        [(ErrorCode.INVALID_REQUEST, "Default topic resources are not allowed.")]
    assert incremental(conn, [(TOPIC, "nope", [("retention.ms", "1", SET)])]) == \
        [(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "The topic 'nope' does not exist.")]
    assert incremental(conn, [(TOPIC, "cfg", [("retention.ms", "x", SET)])]) == \
        [(ErrorCode.INVALID_CONFIG, "Invalid config value for resource ConfigResource(type=TOPIC, name='cfg'): "
                                    "Invalid value x for configuration retention.ms: Not a number of type LONG")]
    assert incremental(conn, [(TOPIC, "cfg", [("no.such", "1", SET)])]) == \
        [(ErrorCode.INVALID_CONFIG, "Unknown topic config name: no.such")]
    assert incremental(conn, [(TOPIC, "cfg", [("retention.ms", "1", APPEND)])]) == \
        [(ErrorCode.INVALID_CONFIG, "Config value append is not allowed for config key: retention.ms")]
    assert incremental(conn, [(TOPIC, "cfg", [("no.such", "1", SUBTRACT)])]) == [(ErrorCode.UNKNOWN_SERVER_ERROR, None)]
    assert incremental(conn, [(TOPIC, "cfg", [("retention.ms", "1", 9)])]) == \
        [(ErrorCode.INVALID_REQUEST, "Unknown operations type 9")]
    assert incremental(conn, [(BROKER, "7", [("log.retention.ms", "1", SET)])]) == \
        [(ErrorCode.INVALID_REQUEST, "Unexpected broker id, expected 0, but received 7")]
    assert incremental(conn, [(BROKER, "", [("log.dirs", "/x", SET)])]) == \
        [(ErrorCode.INVALID_REQUEST, "Cannot update these configs dynamically: Set(log.dirs)")]
    assert incremental(conn, [(BROKER, "0", [("listener.name.plaintext.ssl.key.password", "x", SET)])]) == \
        [(ErrorCode.INVALID_CONFIG, "Invalid config value for resource ConfigResource(type=BROKER, name='0'): "
                                    "Password encoder secret not configured")]
    assert incremental(conn, [(16, "subscription", [("interval.ms", "1", SET)])]) == \
        [(ErrorCode.INVALID_REQUEST, "Invalid value 1 for interval.ms, interval must be between 100 and 3600000 "
                                     "(1 hour)")]
    assert incremental(conn, [(BROKER, "", [("log.cleanup.policy", "compact", APPEND)])]) == [(ErrorCode.NONE, None)]
    [entry] = describe(conn, BROKER, "", ["log.cleanup.policy"]).configs
    assert (entry.value, entry.config_source) == ("delete,compact", 3)


def test_alter_configs_error_paths(conn: Any) -> None:
    assert alter(conn, TOPIC, "cfg", {"retention.ms": "60000"}) == (ErrorCode.NONE, None)
    assert alter(conn, TOPIC, "cfg", {"retention.ms": None}) == \
        (ErrorCode.INVALID_REQUEST, "Null value not supported for : retention.ms")
    assert alter(conn, TOPIC, "nope", {"retention.ms": "1"}) == \
        (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "The topic 'nope' does not exist.")
    assert alter(conn, TOPIC, "cfg", {"min.compaction.lag.ms": "5", "max.compaction.lag.ms": "4"}) == \
        (ErrorCode.INVALID_CONFIG,
         "conflict topic config setting min.compaction.lag.ms (5) > max.compaction.lag.ms (4)")
    assert alter(conn, BROKER, "0", {"log.retention.ms": "0"}) == \
        (ErrorCode.INVALID_REQUEST, "requirement failed: log.retention.ms must be unlimited (-1) or, greater than or "
                                    "equal to 1")
    assert alter(conn, BROKER, "0", {"message.max.bytes": "2000000"}) == (ErrorCode.NONE, None)
    [entry] = describe(conn, BROKER, "0", ["message.max.bytes"]).configs
    assert (entry.value, entry.config_source) == ("2000000", 2)
    assert alter(conn, 8, "0", {"root": "DEBUG"}) == (ErrorCode.INVALID_REQUEST, "Unknown resource type 8")

"""Dynamic broker configs: Kafka's validation rules and messages, the incremental operations, and the
metadata-store layout (/config/brokers/<entity> plus a change notification), on the local engine."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from types import SimpleNamespace

import pytest

from broker.config.alter import (
    APPEND,
    DELETE,
    SET,
    SUBTRACT,
    AdminError,
    apply_operations,
    broker_list_default,
    topic_list_default,
)
from broker.config.dynamic import check_persistable, from_persistent, loggable, validate
from broker.config.dynamic_store import DEFAULT_ENTITY, BrokerConfigStore
from broker.config.kafka_config import KafkaConfig
from broker.config.types import ConfigError
from broker.metadata.store import LocalMetadataStore
from protocol.errors import ErrorCode


@pytest.mark.parametrize("props, per_broker, message", [
    ({"num.partitions": "3"}, False, "Cannot update these configs dynamically: Set(num.partitions)"),
    ({"log.retention.hours": "1"}, True, "Cannot update these configs dynamically: Set(log.retention.hours)"),
    ({"ssl.keystore.location": "/k"}, True, "These security configs can be dynamically updated only per-listener "
                                            "using the listener prefix: Set(ssl.keystore.location)"),
    ({"listener.name.plaintext.ssl.keystore.location": "/k"}, False,
     "Cannot update these configs at default cluster level, broker id must be specified: "
     "Set(listener.name.plaintext.ssl.keystore.location)"),
    ({"log.retention.ms": "soon"}, False, "Invalid value soon for configuration log.retention.ms: "
                                          "Not a number of type LONG"),
    ({"message.max.bytes": "-1"}, False, "Invalid value -1 for configuration message.max.bytes: "
                                         "Value must be at least 0"),
    ({"log.retention.ms": "0"}, False,
     "requirement failed: log.retention.ms must be unlimited (-1) or, greater than or equal to 1"),
    ({"num.io.threads": "17"}, False, "Invalid dynamic configuration"),  # more than double the current 8
    ({"log.cleaner.threads": "3"}, False, "Invalid dynamic configuration"),  # more than double the current 1
    ({"log.cleaner.threads": "0"}, False, "/ by zero"),  # Kafka's division by the thread count fails first
])
def test_invalid_dynamic_configs_fail_with_kafkas_message(props: dict, per_broker: bool, message: str) -> None:
    with pytest.raises(ConfigError) as e:
        validate(KafkaConfig(), props, per_broker)
    assert str(e.value) == message


def test_valid_dynamic_configs_and_custom_keys_pass() -> None:
    config = KafkaConfig()
    validate(config, {"log.retention.ms": "1000", "message.max.bytes": "2000000", "log.cleaner.threads": "2",
                      "min.insync.replicas": "2", "unclean.leader.election.enable": "true",
                      "log.segment.bytes": "1048576", "my.custom.key": "anything"}, per_broker=False)
    validate(config, {"listener.name.plaintext.ssl.keystore.location": "/k", "num.io.threads": "16"}, True)


def test_passwords_cannot_be_stored_without_an_encoder_secret() -> None:
    with pytest.raises(ConfigError, match="Password encoder secret not configured"):
        check_persistable({"listener.name.plaintext.ssl.key.password": "x"}, per_broker=True)
    check_persistable({"log.retention.ms": "5"}, per_broker=False)


def test_stored_configs_that_cannot_apply_are_dropped() -> None:
    stored = {"log.retention.ms": "oops", "num.partitions": "4", "log.cleanup.policy": "compact",
              "listeners": "PLAINTEXT://:1"}
    assert from_persistent(stored, per_broker=False, what="the cluster default") == {"log.cleanup.policy": "compact"}


def op(name: str, value: str | None, operation: int) -> SimpleNamespace:
    return SimpleNamespace(name=name, value=value, config_operation=operation)


def test_incremental_operations_as_kafka() -> None:
    current = {"retention.ms": "1000", "follower.replication.throttled.replicas": "0:1"}
    result = apply_operations([op("segment.ms", "5", SET), op("retention.ms", None, DELETE),
                               op("cleanup.policy", "compact", APPEND),
                               op("follower.replication.throttled.replicas", "0:1,1:2", APPEND)],
                              current, topic_list_default)
    # APPEND starts from Kafka's topic default ("delete"), not from the broker's log.cleanup.policy.
    assert result == {"segment.ms": "5", "cleanup.policy": "delete,compact",
                      "follower.replication.throttled.replicas": "0:1,1:2"}
    assert apply_operations([op("cleanup.policy", "delete", SUBTRACT)], {}, topic_list_default) == \
        {"cleanup.policy": ""}
    assert apply_operations([op("cleanup.policy", "", SET)], {}, topic_list_default) == {"cleanup.policy": ""}
    with pytest.raises(AdminError) as e:
        apply_operations([op("retention.ms", "5", APPEND)], {}, topic_list_default)
    assert e.value.result == (ErrorCode.INVALID_CONFIG,
                              "Config value append is not allowed for config key: retention.ms")
    with pytest.raises(AdminError) as e:
        apply_operations([op("no.such.key", "5", SUBTRACT)], {}, broker_list_default)
    assert e.value.result == (ErrorCode.UNKNOWN_SERVER_ERROR, None)


def test_store_layout_is_kafkas_and_changes_are_announced(tmp_path: Path) -> None:
    store = LocalMetadataStore(tmp_path)
    seen: list[str] = []
    arrived = threading.Event()

    def deliver(fn: object) -> None:
        fn()  # type: ignore[operator]
        arrived.set()

    configs = BrokerConfigStore(store, deliver)
    try:
        configs.watch(seen.append)
        configs.write(DEFAULT_ENTITY, {"log.retention.ms": "1000"})
        assert arrived.wait(5)
        assert seen == [DEFAULT_ENTITY]
        assert configs.read(DEFAULT_ENTITY) == {"log.retention.ms": "1000"}
        tree = store._tree
        data, _ = tree.get("/config/brokers/<default>")
        assert json.loads(data) == {"version": 1, "config": {"log.retention.ms": "1000"}}
        changes = sorted(tree.children("/config/changes"))
        note, _ = tree.get(f"/config/changes/{changes[-1]}")
        assert json.loads(note) == {"version": 2, "entity_path": "brokers/<default>"}
        assert configs.read("7") == {}
    finally:
        configs.close()
        store.close()


def test_a_logged_dynamic_config_never_shows_a_sensitive_value() -> None:
    shown = loggable({"log.cleaner.threads": "2", "custom.token": "t0ken-hush",
                      "listener.name.ssl.ssl.key.password": "k3y-hush"})
    assert shown == {"log.cleaner.threads": "2", "custom.token": "(redacted)",
                     "listener.name.ssl.ssl.key.password": "(redacted)"}

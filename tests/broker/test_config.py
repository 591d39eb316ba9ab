"""KafkaConfig: Kafka's namespace, types and defaults; warnings for keys without effect and for unknown keys;
bad values fail naming key and value; static < cluster default < per-broker precedence; the IBP value."""

from __future__ import annotations

from pathlib import Path

import pytest

from broker.common.metadata_version import LATEST_PRODUCTION, MetadataVersion, request_versions
from broker.config.kafka_config import ConfigError, KafkaConfig, parse_properties
from broker.config.keys import BROKER_KEYS, TOPIC_KEYS, UpdateMode, broker_synonyms
from broker.config.support import IMPLEMENTED
from broker.config.types import ConfigType, java_double, parse_value, to_string
from protocol import ApiKey

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def test_defaults_are_kafkas() -> None:
    c = KafkaConfig()
    assert c["num.partitions"] == 1
    assert c["message.max.bytes"] == 1048588
    assert c["socket.request.max.bytes"] == 104857600
    assert c["log.cleanup.policy"] == ["delete"]
    assert c["log.cleaner.io.max.bytes.per.second"] == 1.7976931348623157e308
    assert c["inter.broker.protocol.version"] == "3.7-IV4"
    assert c.log_retention_ms == 168 * 3600_000
    assert c.log_flush_interval_ms == 2**63 - 1  # log.flush.scheduler.interval.ms stands in, as in Kafka
    assert c.broker_id == 0
    # Kafka 4.x: a classic group is upgraded online when a consumer-protocol member joins (a second, 3.9-era
    # definition of the key further down the table once made it "disabled").
    assert c["group.consumer.migration.policy"] == "bidirectional"


def test_every_key_is_defined_once() -> None:
    import ast
    import collections

    import broker.config.keys as keys

    tree = ast.parse(Path(keys.__file__).read_text())
    names = collections.Counter(node.args[0].value for node in ast.walk(tree) if isinstance(node, ast.Call)
                                and getattr(node.func, "id", None) == "_k" and node.args
                                and isinstance(node.args[0], ast.Constant))
    assert [name for name, n in names.items() if n > 1] == []


def test_every_documented_kafka_key_is_known_with_kafkas_type() -> None:
    documented = parse_properties((FIXTURES / "kafka-3.7-broker-keys.properties").read_text())
    assert len(documented) > 280
    assert [k for k in documented if k not in BROKER_KEYS] == []
    assert BROKER_KEYS["log.dirs"].type == ConfigType.STRING  # Kafka parses the CSV itself
    assert BROKER_KEYS["offsets.topic.replication.factor"].type == ConfigType.SHORT
    assert BROKER_KEYS["ssl.keystore.password"].type == ConfigType.PASSWORD
    assert BROKER_KEYS["principal.builder.class"].type == ConfigType.CLASS
    c = KafkaConfig(documented | {"zookeeper.connect": ""})
    assert c.unknown_keys() == []


@pytest.mark.parametrize("key, mode", [
    ("log.retention.ms", UpdateMode.CLUSTER_WIDE), ("log.retention.hours", UpdateMode.READ_ONLY),
    ("message.max.bytes", UpdateMode.CLUSTER_WIDE), ("log.cleaner.threads", UpdateMode.CLUSTER_WIDE),
    ("num.partitions", UpdateMode.READ_ONLY), ("min.insync.replicas", UpdateMode.CLUSTER_WIDE),
    ("listeners", UpdateMode.PER_BROKER), ("ssl.keystore.location", UpdateMode.PER_BROKER),
    ("num.network.threads", UpdateMode.CLUSTER_WIDE), ("max.connections", UpdateMode.CLUSTER_WIDE),
    ("broker.id", UpdateMode.READ_ONLY), ("unclean.leader.election.enable", UpdateMode.CLUSTER_WIDE),
    # Kafka 4.4 (kafka-python's test_describe_configs_broker_resource_returns_configs): not dynamic any more.
    ("advertised.listeners", UpdateMode.READ_ONLY),
])
def test_update_modes_are_kafkas(key: str, mode: UpdateMode) -> None:
    assert BROKER_KEYS[key].mode == mode


def test_topic_keys_and_their_broker_synonyms() -> None:
    assert [s for s, _ in TOPIC_KEYS["retention.ms"].synonyms] == \
        ["log.retention.ms", "log.retention.minutes", "log.retention.hours"]
    assert TOPIC_KEYS["flush.ms"].broker_synonym == "log.flush.interval.ms"
    assert broker_synonyms("log.retention.hours") == \
        ["log.retention.ms", "log.retention.minutes", "log.retention.hours"]
    assert broker_synonyms("log.flush.scheduler.interval.ms") == ["log.flush.scheduler.interval.ms"]
    assert broker_synonyms("listener.name.internal.ssl.keystore.location") == \
        ["listener.name.internal.ssl.keystore.location", "ssl.keystore.location"]


def test_properties_file_and_overrides(tmp_path: Path) -> None:
    f = tmp_path / "server.properties"
    f.write_text("# comment\nnode.id=3\nlisteners = PLAINTEXT://127.0.0.1:1234\n"
                 "log.dirs=/a,/b\nnum.partitions: 4\nlog.retention.ms=\\\n  1000\n")
    c = KafkaConfig.load(f, ["num.partitions=6", "auto.create.topics.enable=false"])
    assert c.broker_id == 3 and c["broker.id"] == 3  # node.id fills broker.id, as in Kafka
    assert c.listeners[0].port == 1234
    assert [str(d) for d in c.log_dirs] == ["/a", "/b"]
    assert c["num.partitions"] == 6
    assert c["auto.create.topics.enable"] is False
    assert c.log_retention_ms == 1000
    assert not c.is_default("num.partitions") and c.is_default("message.max.bytes")


@pytest.mark.parametrize("override, line", [
    ("num.partitions=zero", "Invalid value zero for configuration num.partitions: Not a number of type INT"),
    ("num.partitions=0", "Invalid value 0 for configuration num.partitions: Value must be at least 1"),
    ("auto.create.topics.enable=yes",
     "Invalid value yes for configuration auto.create.topics.enable: Expected value to be either true or false"),
    ("log.message.timestamp.type=Whenever", "Invalid value Whenever for configuration log.message.timestamp.type: "
                                            "String must be one of: CreateTime, LogAppendTime"),
    ("log.cleanup.policy=delete,shred",
     "Invalid value shred for configuration log.cleanup.policy: String must be one of: compact, delete"),
    ("inter.broker.protocol.version=3.77",
     "Invalid value 3.77 for configuration inter.broker.protocol.version: Version 3.77 is not a valid version"),
    ("message.max.bytes=3000000000", "Invalid value 3000000000 for configuration message.max.bytes: "
                                     "Not a number of type INT"),
    ("log.retention.hours=0",
     "requirement failed: log.retention.ms must be unlimited (-1) or, greater than or equal to 1"),
    ("replica.fetch.wait.max.ms=40000", "requirement failed: replica.socket.timeout.ms should always be at least "
                                        "replica.fetch.wait.max.ms to prevent unnecessary socket timeouts"),
    ("listeners=localhost:9092", "listeners: 'localhost:9092' is not of the form NAME://host:port"),
])
def test_bad_values_stop_with_one_line_naming_key_and_value(override: str, line: str) -> None:
    with pytest.raises(ConfigError) as e:
        KafkaConfig.load(None, [override])
    assert str(e.value) == line


def test_node_id_and_broker_id_must_agree() -> None:
    with pytest.raises(ConfigError, match="You must set `node.id` to the same value as `broker.id`"):
        KafkaConfig({"node.id": "1", "broker.id": "2"})


def test_unknown_keys_are_warned_about_with_a_suggestion() -> None:
    c = KafkaConfig.load(None, ["log.retension.ms=5", "colour=blue"])
    assert c.unknown_keys() == ["colour", "log.retension.ms"]
    [line] = c.startup_warnings()
    assert line == ("These configurations were supplied but are not Kafka broker configurations, so they are "
                    "ignored: 'colour', 'log.retension.ms' (did you mean 'log.retention.ms'?)")


def test_keys_without_effect_get_one_line_with_the_reason() -> None:
    c = KafkaConfig.load(FIXTURES / "kafka-3.7-server.properties", ["zookeeper.connect="])
    [line] = c.startup_warnings()
    assert line.startswith("These Kafka configurations have no effect on this broker: ")
    for key in ("num.network.threads", "num.io.threads", "num.recovery.threads.per.data.dir",
                "zookeeper.connection.timeout.ms"):
        assert key in line
    for key in ("broker.id", "log.dirs", "socket.send.buffer.bytes", "log.retention.hours", "num.partitions",
                "transaction.state.log.replication.factor", "transaction.state.log.min.isr"):
        assert key in IMPLEMENTED and key not in line
    assert "inter.broker.protocol.version" in IMPLEMENTED and "inter.broker.protocol.version" not in line
    assert KafkaConfig().startup_warnings() == []


def test_dynamic_layers_take_precedence_and_hide_synonyms() -> None:
    c = KafkaConfig({"log.retention.hours": "24", "message.max.bytes": "2000"})
    assert c.log_retention_ms == 24 * 3600_000
    changed = c.set_dynamic(dynamic_default={"log.retention.ms": "60000", "message.max.bytes": "3000"})
    assert {"log.retention.ms", "message.max.bytes"} <= changed
    assert c.log_retention_ms == 60000  # the dynamic ms hides the static hours
    assert c["message.max.bytes"] == 3000
    c.set_dynamic(dynamic_broker={"message.max.bytes": "4000"})
    assert c["message.max.bytes"] == 4000  # per-broker beats the cluster default
    assert c.topic_defaults()["max.message.bytes"] == 4000 and c.topic_defaults()["retention.ms"] == 60000
    assert c.set_dynamic(dynamic_broker={}) == {"message.max.bytes"}
    assert c["message.max.bytes"] == 3000
    c.set_dynamic(dynamic_default={})
    assert c.log_retention_ms == 24 * 3600_000 and c["message.max.bytes"] == 2000
    with pytest.raises(ConfigError, match="log.retention.ms"):
        c.set_dynamic(dynamic_default={"log.retention.ms": "0"})
    assert c.log_retention_ms == 24 * 3600_000  # a rejected layer changes nothing


def test_inter_broker_protocol_version_is_an_ordered_value() -> None:
    assert KafkaConfig().inter_broker_protocol_version == LATEST_PRODUCTION
    ibp = KafkaConfig({"inter.broker.protocol.version": "3.7"}).inter_broker_protocol_version
    assert str(ibp) == "3.7-IV4" and ibp.release == "3.7"
    assert str(MetadataVersion.parse("3.7.1")) == "3.7-IV4"
    assert str(MetadataVersion.parse("0.10.2.1")) == "0.10.2-IV0"
    assert str(MetadataVersion.parse("0.8.2")) == "0.8.2"
    assert MetadataVersion.parse("2.7-IV1") < MetadataVersion.parse("2.7-IV2") < MetadataVersion.parse("3.0")
    old = KafkaConfig({"inter.broker.protocol.version": "2.6"}).inter_broker_protocol_version
    assert not old.is_alter_partition_supported and ibp.is_alter_partition_supported
    assert ibp.is_allocate_producer_ids_supported and ibp.is_at_least("3.7-IV0")
    for bad in ("3", "3.7-IV9", "banana", "4.0"):
        with pytest.raises(ValueError, match=f"Version {bad} is not a valid version"):
            MetadataVersion.parse(bad)


def test_value_parsing_and_text_as_java() -> None:
    assert parse_value("x", ConfigType.LIST, " a , b ") == ["a", "b"]
    assert parse_value("x", ConfigType.LIST, "") == []
    assert parse_value("x", ConfigType.BOOLEAN, "TRUE") is True
    assert parse_value("x", ConfigType.LONG, "+5") == 5
    with pytest.raises(ConfigError):
        parse_value("x", ConfigType.INT, "1_000")
    assert to_string(["compact", "delete"], ConfigType.LIST) == "compact,delete"
    assert [java_double(d) for d in (0.5, 1.0, 1e-4, 1.5e7, 1.7976931348623157e308)] == \
        ["0.5", "1.0", "1.0E-4", "1.5E7", "1.7976931348623157E308"]


def test_java_properties_continuations() -> None:
    assert parse_properties("a=1\nb = x \\\n    y\n! bang comment\nc:3\n") == {"a": "1", "b": "x y", "c": "3"}


def test_example_server_properties_loads() -> None:
    c = KafkaConfig.load(Path(__file__).resolve().parents[2] / "config" / "server.properties")
    assert c.listeners[0].port == 9092
    assert c.startup_warnings() == []


def test_inter_broker_request_versions_follow_kafkas_tables() -> None:
    """The versions a Kafka broker of each inter.broker.protocol.version sends (its controller's requests, its
    replica fetcher's), which ours send too."""
    from broker.common.metadata_version import request_versions
    from protocol import ApiKey

    def at(ibp: str) -> tuple[int, ...]:
        v = request_versions(MetadataVersion.parse(ibp))
        return tuple(v[k] for k in (ApiKey.LEADER_AND_ISR, ApiKey.UPDATE_METADATA, ApiKey.STOP_REPLICA,
                                    ApiKey.FETCH, ApiKey.OFFSET_FOR_LEADER_EPOCH, ApiKey.LIST_OFFSETS,
                                    ApiKey.CONTROLLED_SHUTDOWN))

    assert at("3.9") == (7, 8, 4, 17, 4, 9, 3)
    assert at("3.7") == (7, 8, 4, 16, 4, 8, 3)
    assert at("3.7-IV3") == (7, 8, 4, 15, 4, 8, 3)
    assert at("3.3") == (6, 7, 3, 13, 4, 7, 3)
    assert at("2.8") == (5, 7, 3, 12, 4, 6, 3)  # topic ids in LeaderAndIsr/UpdateMetadata, not yet in Fetch
    assert at("2.6") == (4, 6, 3, 11, 3, 5, 3)
    assert at("2.2") == (2, 5, 1, 10, 2, 5, 2)
    assert at("0.8.0") == (0, 0, 0, 0, 0, 0, 0)


def test_kraft_feature_levels_name_metadata_versions() -> None:
    """A KRaft cluster's metadata.version level is its inter-broker version (1 = 3.0-IV1, 7 = 3.3-IV3,
    19 = 3.7-IV4, 21 = 3.9-IV0, 25 = 4.0-IV3, 27 = 4.1-IV1, 33 = 4.4-IV2), which sets the replica fetcher's
    request versions as Kafka's MetadataVersion does (fetchRequestVersion, listOffsetRequestVersion); a level
    above the newest known keeps the newest's. Kafka 4.x's versions are never an inter.broker.protocol.version."""
    levels = (1, 7, 19, 21, 25, 27, 29, 33, 40)
    versions = [MetadataVersion.from_feature_level(level) for level in levels]
    assert [str(v) for v in versions] == [
        "3.0-IV1", "3.3-IV3", "3.7-IV4", "3.9-IV0", "4.0-IV3", "4.1-IV1", "4.2-IV1", "4.4-IV2", "4.4-IV2"]
    assert [v.feature_level for v in versions] == [1, 7, 19, 21, 25, 27, 29, 33, 33]
    fetch = [request_versions(v)[ApiKey.FETCH] for v in versions]
    list_offsets = [request_versions(v)[ApiKey.LIST_OFFSETS] for v in versions]
    assert fetch == [12, 13, 16, 17, 17, 18, 18, 18, 18]
    assert list_offsets == [7, 7, 8, 9, 10, 10, 11, 11, 11]
    assert MetadataVersion.parse("4.1", kraft=True) == versions[5]
    with pytest.raises(ValueError):
        MetadataVersion.parse("4.1")  # not an inter.broker.protocol.version
    with pytest.raises(ValueError):
        MetadataVersion.from_feature_level(0)

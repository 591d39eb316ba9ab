"""What DescribeConfigs reports, entry by entry, as Kafka 3.7's ConfigHelper computes it: types, sources,
synonyms (and Kafka's rule that a topic key's broker synonyms start at the primary broker key), sensitivity."""

from __future__ import annotations

from broker.config.describe import describe_broker, describe_topic
from broker.config.kafka_config import KafkaConfig
from broker.config.types import ConfigSource, ConfigType

DEFAULT, STATIC, DYN_DEFAULT, DYN_BROKER, TOPIC = (
    ConfigSource.DEFAULT_CONFIG, ConfigSource.STATIC_BROKER_CONFIG, ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG,
    ConfigSource.DYNAMIC_BROKER_CONFIG, ConfigSource.TOPIC_CONFIG)


def by_name(entries: list) -> dict:
    return {e.name: e for e in entries}


def synonyms(entry: object) -> list[tuple[str, str | None, ConfigSource]]:
    return [(s.name, s.value, s.source) for s in entry.synonyms]  # type: ignore[attr-defined]


def test_topic_entries_have_kafkas_types_sources_and_synonyms() -> None:
    config = KafkaConfig({"broker.id": "0", "log.retention.hours": "168", "log.segment.bytes": "1073741824"})
    entries = by_name(describe_topic(config, {"cleanup.policy": "compact, delete"}))
    assert len(entries) == 31  # Kafka 3.7's topic keys
    retention = entries["retention.ms"]
    assert (retention.value, retention.type, retention.source) == ("604800000", ConfigType.LONG, DEFAULT)
    # log.retention.ms is not set anywhere, so Kafka lists no broker synonyms (they start at the primary key).
    assert synonyms(retention) == []
    segment = entries["segment.bytes"]
    assert (segment.type, segment.source) == (ConfigType.INT, STATIC)
    assert synonyms(segment) == [("log.segment.bytes", "1073741824", STATIC), ("log.segment.bytes", "1073741824",
                                                                               DEFAULT)]
    policy = entries["cleanup.policy"]
    assert (policy.value, policy.type, policy.source) == ("compact,delete", ConfigType.LIST, TOPIC)
    assert synonyms(policy) == [("cleanup.policy", "compact,delete", TOPIC), ("log.cleanup.policy", "delete", DEFAULT)]
    assert entries["min.cleanable.dirty.ratio"].type == ConfigType.DOUBLE
    assert entries["preallocate"].value == "false" and entries["preallocate"].type == ConfigType.BOOLEAN
    assert entries["leader.replication.throttled.replicas"].value == ""
    assert entries["message.format.version"].value == "3.0-IV1"
    assert not any(e.read_only or e.sensitive for e in entries.values())


def test_topic_retention_follows_a_dynamic_cluster_default() -> None:
    config = KafkaConfig({"log.retention.hours": "168"})
    config.set_dynamic(dynamic_default={"log.retention.ms": "1000"})
    retention = by_name(describe_topic(config, {}))["retention.ms"]
    assert (retention.value, retention.source) == ("1000", DYN_DEFAULT)
    assert synonyms(retention) == [("log.retention.ms", "1000", DYN_DEFAULT), ("log.retention.hours", "168", STATIC),
                                   ("log.retention.hours", "168", DEFAULT)]


def test_broker_entries_left_at_default_are_default_config() -> None:
    config = KafkaConfig({"broker.id": "0", "num.partitions": "3", "ssl.key.password": "hush"})
    entries = by_name(describe_broker(config))
    assert (entries["message.max.bytes"].source, entries["message.max.bytes"].type) == (DEFAULT, ConfigType.INT)
    assert synonyms(entries["message.max.bytes"]) == [("message.max.bytes", "1048588", DEFAULT)]
    assert entries["num.partitions"].source == STATIC
    assert synonyms(entries["num.partitions"]) == [("num.partitions", "3", STATIC), ("num.partitions", "1", DEFAULT)]
    assert entries["num.partitions"].read_only and not entries["log.retention.ms"].read_only
    assert entries["node.id"].source == STATIC  # broker.id fills node.id, as in Kafka
    password = entries["ssl.key.password"]
    assert (password.value, password.sensitive, password.type) == (None, True, ConfigType.PASSWORD)
    assert synonyms(password) == [("ssl.key.password", None, STATIC)]
    assert entries["log.cleaner.io.max.bytes.per.second"].value == "1.7976931348623157E308"
    assert "log.segment.min.bytes" not in entries and "metadata.log.segment.min.bytes" not in entries  # internal


def test_broker_synonyms_and_the_cluster_default_resource() -> None:
    config = KafkaConfig({"broker.id": "0", "log.retention.hours": "168", "custom.thing": "x"})
    config.set_dynamic(dynamic_default={"log.retention.ms": "5000", "log.cleaner.threads": "2"},
                       dynamic_broker={"log.cleaner.threads": "3"})
    entries = by_name(describe_broker(config))
    assert synonyms(entries["log.retention.ms"]) == [
        ("log.retention.ms", "5000", DYN_DEFAULT), ("log.retention.hours", "168", STATIC),
        ("log.retention.hours", "168", DEFAULT)]
    assert synonyms(entries["log.cleaner.threads"]) == [
        ("log.cleaner.threads", "3", DYN_BROKER), ("log.cleaner.threads", "2", DYN_DEFAULT),
        ("log.cleaner.threads", "1", DEFAULT)]
    assert entries["log.cleaner.threads"].value == "3"
    unknown = entries["custom.thing"]
    assert (unknown.type, unknown.sensitive, unknown.value) == (ConfigType.UNKNOWN, True, None)
    cluster = by_name(describe_broker(config, per_broker=False))
    assert sorted(cluster) == ["log.cleaner.threads", "log.retention.ms"]
    assert synonyms(cluster["log.cleaner.threads"]) == [("log.cleaner.threads", "2", DYN_DEFAULT)]
    assert cluster["log.cleaner.threads"].value == "2"


def test_secrets_in_every_form_are_answered_without_their_value() -> None:
    # As Kafka: PASSWORD keys, their per-listener forms and any key whose type it cannot tell (a SASL JAAS
    # config with its mechanism prefix) are sensitive: value and synonym values null.
    secrets = {
        "ssl.keystore.password": "ks-hush", "ssl.truststore.password": "ts-hush",
        "ssl.keystore.key": "-----BEGIN PRIVATE KEY-----x", "ssl.truststore.certificates": "pem",
        "sasl.jaas.config": 'PlainLoginModule required user_a="a-hush";',
        "listener.name.sasl_ssl.plain.sasl.jaas.config": 'PlainLoginModule required user_b="b-hush";',
        "listener.name.sasl_ssl.scram-sha-256.sasl.jaas.config": 'ScramLoginModule required password="c-hush";',
        "listener.name.ssl.ssl.key.password": "d-hush",
    }
    entries = by_name(describe_broker(KafkaConfig({"broker.id": "0", **secrets})))
    for name in secrets:
        entry = entries[name]
        assert entry.sensitive and entry.value is None, name
        assert all(s.value is None for s in entry.synonyms), name
    assert "hush" not in repr(list(entries.values()))

"""KafkaConfig: Kafka's names, types and defaults; bad keys and values fail naming the key."""

from __future__ import annotations

from pathlib import Path

import pytest

from broker.config import ConfigError, KafkaConfig, parse_properties


def test_defaults_are_kafkas() -> None:
    c = KafkaConfig()
    assert c["num.partitions"] == 1
    assert c["message.max.bytes"] == 1048588
    assert c["socket.request.max.bytes"] == 104857600
    assert c["log.cleanup.policy"] == ["delete"]
    assert c.log_retention_ms == 168 * 3600_000
    assert c.broker_id == 0


def test_properties_file_and_overrides(tmp_path: Path) -> None:
    f = tmp_path / "server.properties"
    f.write_text("# comment\nnode.id=3\nlisteners = PLAINTEXT://127.0.0.1:1234\n"
                 "log.dirs=/a,/b\nnum.partitions: 4\nlog.retention.ms=\\\n  1000\n")
    c = KafkaConfig.load(f, ["num.partitions=6", "auto.create.topics.enable=false"])
    assert c.broker_id == 3
    assert c.listeners[0].port == 1234
    assert [str(d) for d in c.log_dirs] == ["/a", "/b"]
    assert c["num.partitions"] == 6
    assert c["auto.create.topics.enable"] is False
    assert c.log_retention_ms == 1000
    assert not c.is_default("num.partitions") and c.is_default("message.max.bytes")


@pytest.mark.parametrize("override, named", [
    ("no.such.key=1", "no.such.key"),
    ("num.partitions=zero", "num.partitions"),
    ("num.partitions=0", "num.partitions"),
    ("auto.create.topics.enable=yes", "auto.create.topics.enable"),
    ("listeners=localhost:9092", "listeners"),
    ("log.message.timestamp.type=Whenever", "log.message.timestamp.type"),
])
def test_bad_keys_and_values_name_the_key(override: str, named: str) -> None:
    with pytest.raises(ConfigError, match=named.replace(".", r"\.")):
        KafkaConfig.load(None, [override])


def test_node_id_and_broker_id_must_agree() -> None:
    with pytest.raises(ConfigError, match="node.id"):
        KafkaConfig({"node.id": "1", "broker.id": "2"})


def test_java_properties_continuations() -> None:
    assert parse_properties("a=1\nb = x \\\n    y\n! bang comment\nc:3\n") == {"a": "1", "b": "x y", "c": "3"}


def test_example_server_properties_loads() -> None:
    c = KafkaConfig.load(Path(__file__).resolve().parents[2] / "config" / "server.properties")
    assert c.listeners[0].port == 9092

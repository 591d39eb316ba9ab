"""Kafka's configuration, end to end: Kafka's own server.properties (and a file with every documented broker
key) starts our broker with the expected warnings; a typo gets a suggestion; a bad value stops start-up with
one line; confluent-kafka's and kafka-python's describe_configs see Kafka's types, sources and synonyms;
incremental_alter_configs takes an empty list; a dynamic log.retention.ms reaches a topic without an override
at once and survives a restart."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ConfigSource,
    NewTopic,
)
from kafka.admin import ConfigResource as KpConfigResource
from kafka.admin import ConfigResourceType, KafkaAdminClient

from broker.testing import BrokerProcess
from protocol import ApiKey, request_class
from tests.cluster.support import raw_request
from tests.e2e.support import wait_until
from tests.zookeeper import zookeeper  # noqa: F401 - the fixture

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
ROOT = Path(__file__).resolve().parents[2]


def admin_for(bootstrap: str) -> AdminClient:
    return AdminClient({"bootstrap.servers": bootstrap})


def wait_all(futures: dict) -> None:
    for f in futures.values():
        f.result(20)


def describe(admin: AdminClient, kind: str, name: str) -> dict[str, Any]:
    resource = ConfigResource(kind, name)
    return admin.describe_configs([resource], request_timeout=20)[resource].result(20)


def set_cluster_default(port: int, key: str, value: str) -> tuple[int, str | None]:
    """IncrementalAlterConfigs SET on the cluster-wide default broker resource (""), which Kafka's Java admin
    (kafka-configs.sh --entity-default) reaches and the Python clients cannot name: sent with our codec."""
    Req = request_class(ApiKey.INCREMENTAL_ALTER_CONFIGS)[1]
    resource = Req.AlterConfigsResource(resource_type=4, resource_name="", configs=[
        Req.AlterConfigsResource.AlterableConfig(name=key, config_operation=0, value=value)])
    [answer] = raw_request(port, Req(resources=[resource], validate_only=False)).responses
    return answer.error_code, answer.error_message


def cluster_default(port: int) -> dict[str, tuple[str | None, int]]:
    Req = request_class(ApiKey.DESCRIBE_CONFIGS)[4]
    request = Req(resources=[Req.DescribeConfigsResource(resource_type=4, resource_name="", configuration_keys=None)],
                  include_synonyms=True, include_documentation=False)
    [result] = raw_request(port, request).results
    return {c.name: (c.value, c.config_source) for c in result.configs}


def log_text(b: BrokerProcess) -> str:
    return b.log_path.read_text(errors="replace")


def test_kafkas_server_properties_starts_our_broker_with_one_warning(tmp_path: Path, zookeeper: Any) -> None:  # noqa: F811
    b = BrokerProcess({"zookeeper.connect": zookeeper.connect_string}, data_dir=tmp_path / "b",
                      config_file=FIXTURES / "kafka-3.7-server.properties").start()
    try:
        warnings = [line for line in log_text(b).splitlines() if " WARNING " in line and "configurations" in line]
        assert len(warnings) == 1, warnings
        line = warnings[0]
        assert "These Kafka configurations have no effect on this broker: " in line
        for key in ("num.network.threads", "num.io.threads", "num.recovery.threads.per.data.dir",
                    "zookeeper.connection.timeout.ms"):
            assert key in line
        for key in ("log.retention.hours", "transaction.state.log.replication.factor", "transaction.state.log.min.isr"):
            assert key not in line  # honoured
        assert "not Kafka broker configurations" not in line
        topics = admin_for(b.bootstrap).list_topics(timeout=10).topics
        assert isinstance(topics, dict)
    finally:
        b.stop()


def test_every_documented_broker_key_starts_the_broker(tmp_path: Path) -> None:
    b = BrokerProcess({"zookeeper.connect": ""}, data_dir=tmp_path / "b",
                      config_file=FIXTURES / "kafka-3.7-broker-keys.properties").start()
    try:
        text = log_text(b)
        assert "not Kafka broker configurations" not in text
        assert "These Kafka configurations have no effect on this broker: " in text
        admin = admin_for(b.bootstrap)
        wait_all(admin.create_topics([NewTopic("all-keys", 1, 1)], operation_timeout=10))
        entries = describe(admin, "broker", "0")
        assert entries["num.network.threads"].source == ConfigSource.STATIC_BROKER_CONFIG.value
    finally:
        b.stop()


def test_a_typo_gets_a_suggestion_and_the_broker_starts(tmp_path: Path) -> None:
    b = BrokerProcess({"log.retension.ms": "1000"}, data_dir=tmp_path / "b").start()
    try:
        assert ("These configurations were supplied but are not Kafka broker configurations, so they are ignored: "
                "'log.retension.ms' (did you mean 'log.retention.ms'?)") in log_text(b)
    finally:
        b.stop()


def test_a_bad_value_stops_start_up_with_one_line(tmp_path: Path) -> None:
    run = subprocess.run([sys.executable, "-m", "broker", "--override", f"log.dirs={tmp_path}",
                          "--override", "num.partitions=zero"], capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert run.returncode == 1
    assert run.stderr.strip().splitlines() == [
        "configuration error: Invalid value zero for configuration num.partitions: Not a number of type INT"]


def test_describe_configs_with_confluent_kafka(broker_factory: Any) -> None:
    b = broker_factory({"log.retention.hours": "168", "num.partitions": "2"})
    admin = admin_for(b.bootstrap)
    wait_all(admin.create_topics([NewTopic("cfg-c", 1, 1, config={"cleanup.policy": "compact"})],
                                 operation_timeout=10))
    topic = describe(admin, "topic", "cfg-c")
    policy = topic["cleanup.policy"]
    assert (policy.value, policy.source) == ("compact", ConfigSource.DYNAMIC_TOPIC_CONFIG.value)
    assert not policy.is_default and not policy.is_read_only
    assert set(policy.synonyms) == {"cleanup.policy", "log.cleanup.policy"}
    segment = topic["segment.bytes"]
    assert (segment.value, segment.source, segment.is_default) == ("1073741824", ConfigSource.DEFAULT_CONFIG.value,
                                                                   True)
    assert topic["retention.ms"].value == "604800000"

    broker = describe(admin, "broker", "0")
    assert broker["message.max.bytes"].source == ConfigSource.DEFAULT_CONFIG.value  # left at its default
    assert broker["num.partitions"].source == ConfigSource.STATIC_BROKER_CONFIG.value
    assert broker["num.partitions"].is_read_only and not broker["log.retention.ms"].is_read_only
    hours = broker["log.retention.hours"]
    assert (hours.value, hours.source) == ("168", ConfigSource.STATIC_BROKER_CONFIG.value)
    assert broker["ssl.key.password"].is_sensitive and broker["ssl.key.password"].value is None


def test_describe_and_alter_broker_configs_with_kafka_python(broker_factory: Any) -> None:
    b = broker_factory({"log.retention.hours": "168"})
    confluent = admin_for(b.bootstrap)
    wait_all(confluent.create_topics([NewTopic("cfg-kp", 1, 1, config={"retention.ms": "3600000"})],
                                     operation_timeout=10))
    admin = KafkaAdminClient(bootstrap_servers=b.bootstrap, client_id="cfg-test")
    try:
        topic = admin.describe_configs([KpConfigResource(ConfigResourceType.TOPIC, "cfg-kp")],
                                       include_synonyms=True, config_filter="all")["topic"]["cfg-kp"]
        retention = topic["retention.ms"]
        assert (retention["value"], retention["config_type"], retention["config_source"]) == \
            ("3600000", "LONG", "DYNAMIC_TOPIC_CONFIG")
        # Kafka lists the broker side from log.retention.ms on, which is not set: only the override.
        assert [(s["name"], s["source"]) for s in retention["synonyms"]] == [("retention.ms", "DYNAMIC_TOPIC_CONFIG")]
        segment = topic["segment.bytes"]
        assert (segment["config_type"], segment["config_source"]) == ("INT", "DEFAULT_CONFIG")
        assert [(s["name"], s["source"]) for s in segment["synonyms"]] == [("log.segment.bytes", "DEFAULT_CONFIG")]
        assert topic["cleanup.policy"]["config_type"] == "LIST"
        assert topic["min.cleanable.dirty.ratio"]["config_type"] == "DOUBLE"

        # A per-broker dynamic config, then the broker's own view of it.
        result = admin.alter_configs([KpConfigResource(ConfigResourceType.BROKER, "0",
                                                       configs={"message.max.bytes": "2000000"})])
        assert str(result["broker"]["0"]).endswith("NoError") or "Error" not in repr(result["broker"]["0"])
        brokers = admin.describe_configs([KpConfigResource(ConfigResourceType.BROKER, "0")],
                                         include_synonyms=True, config_filter="all")["broker"]["0"]
        mmb = brokers["message.max.bytes"]
        assert (mmb["value"], mmb["config_source"], mmb["config_type"]) == ("2000000", "DYNAMIC_BROKER_CONFIG", "INT")
        assert [(s["name"], s["value"], s["source"]) for s in mmb["synonyms"]] == \
            [("message.max.bytes", "2000000", "DYNAMIC_BROKER_CONFIG"),
             ("message.max.bytes", "1048588", "DEFAULT_CONFIG")]
        hours = brokers["log.retention.hours"]
        assert [(s["name"], s["source"]) for s in hours["synonyms"]] == \
            [("log.retention.hours", "STATIC_BROKER_CONFIG"), ("log.retention.hours", "DEFAULT_CONFIG")]
        assert brokers["log.retention.check.interval.ms"]["config_source"] == "DEFAULT_CONFIG"
        # Kafka 4.4: advertised.listeners is read-only (kafka-python's own broker-resource test), listeners not.
        assert (brokers["advertised.listeners"]["read_only"], brokers["listeners"]["read_only"]) == (True, False)
        max_message = admin.describe_configs([KpConfigResource(ConfigResourceType.TOPIC, "cfg-kp")],
                                             config_filter="all")["topic"]["cfg-kp"]["max.message.bytes"]
        assert (max_message["value"], max_message["config_source"]) == ("2000000", "DYNAMIC_BROKER_CONFIG")
    finally:
        admin.close()

    # A read-only key is refused as Kafka refuses it.
    resource = ConfigResource("broker", "0", incremental_configs=[
        ConfigEntry("num.partitions", "3", incremental_operation=AlterConfigOpType.SET)])
    future = confluent.incremental_alter_configs([resource])[resource]
    try:
        future.result(20)
        raise AssertionError("num.partitions is not dynamic")
    except Exception as e:
        err = e.args[0]
        assert err.name() == "INVALID_REQUEST"
        assert err.str() == "Cannot update these configs dynamically: Set(num.partitions)"


def test_incremental_alter_configs_takes_an_empty_list(broker: Any) -> None:
    admin = admin_for(broker.bootstrap)
    wait_all(admin.create_topics([NewTopic("cfg-empty", 1, 1)], operation_timeout=10))
    resource = ConfigResource("topic", "cfg-empty", incremental_configs=[
        ConfigEntry("cleanup.policy", "", incremental_operation=AlterConfigOpType.SET)])
    admin.incremental_alter_configs([resource])[resource].result(20)
    policy = describe(admin, "topic", "cfg-empty")["cleanup.policy"]
    assert (policy.value, policy.source) == ("", ConfigSource.DYNAMIC_TOPIC_CONFIG.value)
    append = ConfigResource("topic", "cfg-empty", incremental_configs=[
        ConfigEntry("cleanup.policy", "compact", incremental_operation=AlterConfigOpType.APPEND)])
    admin.incremental_alter_configs([append])[append].result(20)
    assert describe(admin, "topic", "cfg-empty")["cleanup.policy"].value == "compact"


def produce_old(bootstrap: str, topic: str, n: int, age_ms: int) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0, "batch.size": 400, "acks": "all"})
    ts = int(time.time() * 1000) - age_ms
    for i in range(n):
        producer.produce(topic, key=b"k%d" % i, value=b"v" * 60, timestamp=ts)
        producer.poll(0)
    assert producer.flush(20) == 0


def low_watermark(bootstrap: str, topic: str) -> int:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "cfg-watermarks"})
    try:
        low, _ = consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)
        return int(low)
    finally:
        consumer.close()


def test_dynamic_retention_applies_without_restart_and_survives_one(tmp_path: Path) -> None:
    overrides = {"log.segment.bytes": "1024", "log.retention.check.interval.ms": "200"}
    b = BrokerProcess(overrides, data_dir=tmp_path / "b").start()
    topic, kept = "cfg-retention", "cfg-retention-override"
    try:
        admin = admin_for(b.bootstrap)
        wait_all(admin.create_topics([NewTopic(topic, 1, 1), NewTopic(kept, 1, 1, config={"retention.ms": "86400000"})],
                                     operation_timeout=10))
        for t in (topic, kept):
            produce_old(b.bootstrap, t, 60, age_ms=2 * 3600_000)
        time.sleep(0.5)  # several retention checks at the 7-day default delete nothing
        assert low_watermark(b.bootstrap, topic) == 0

        assert set_cluster_default(b.port, "log.retention.ms", "3600000") == (0, None)
        retention = describe(admin, "topic", topic)["retention.ms"]
        assert (retention.value, retention.source) == ("3600000", ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG.value)
        wait_until(lambda: low_watermark(b.bootstrap, topic) > 0, 15, "segments older than the new retention to go")
        b.stop()

        b.start()
        admin = admin_for(b.bootstrap)
        retention = describe(admin, "topic", topic)["retention.ms"]
        assert (retention.value, retention.source) == ("3600000", ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG.value)
        assert cluster_default(b.port) == {"log.retention.ms": ("3600000", 3)}
        before = low_watermark(b.bootstrap, topic)
        produce_old(b.bootstrap, topic, 60, age_ms=2 * 3600_000)
        wait_until(lambda: low_watermark(b.bootstrap, topic) > before, 15, "retention after the restart")
        assert low_watermark(b.bootstrap, kept) == 0  # its own retention.ms (a day) still wins after the restart
    finally:
        b.stop()

"""Kafka's metrics and pushed client metrics on a broker's Prometheus endpoint, with stock clients: kcat produces,
confluent-kafka consumes and pushes its own metrics (KIP-714), `client-metrics` subscriptions are created,
described, listed, kept across a restart and deleted through the config APIs."""

from __future__ import annotations

import re
import socket
import subprocess
import time
import urllib.request
from pathlib import Path
from typing import Any

from broker.testing import EmbeddedBroker
from fuzz.record import kcat_path
from protocol import ApiKey, request_class
from protocol.errors import ErrorCode
from tests.broker.wire import roundtrip
from tests.e2e.support import wait_until

IAC = request_class(ApiKey.INCREMENTAL_ALTER_CONFIGS)
DESCRIBE = request_class(ApiKey.DESCRIBE_CONFIGS)
LIST = request_class(ApiKey.LIST_CLIENT_METRICS_RESOURCES)
SET, DELETE, CLIENT_METRICS = 0, 1, 16


def scrape(broker: EmbeddedBroker) -> dict[str, float]:
    """`name{labels}` -> value of every sample the endpoint serves."""
    text = urllib.request.urlopen(f"http://127.0.0.1:{broker.server.metrics_endpoint.port}/metrics", timeout=10) \
        .read().decode()
    return {line.rsplit(" ", 1)[0]: float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
            if line and not line.startswith("#")}


def call(broker: EmbeddedBroker, request: Any) -> Any:
    with socket.create_connection(("127.0.0.1", broker.port), timeout=30) as s:
        return roundtrip(s, request, 3)


def alter(broker: EmbeddedBroker, name: str, **ops: tuple[int, str | None]) -> Any:
    R = IAC.AlterConfigsResource
    configs = [R.AlterableConfig(name=k.replace("_", "."), config_operation=op, value=v) for k, (op, v) in ops.items()]
    resp = call(broker, IAC[1](resources=[R(resource_type=CLIENT_METRICS, resource_name=name, configs=configs)],
                               validate_only=False))
    return resp.responses[0]


def subscriptions(broker: EmbeddedBroker) -> list[str]:
    return [r.resource_name for r in call(broker, LIST[0]()).config_resources]


def test_kafkas_broker_metrics_count_what_kcat_produced_and_a_consumer_read(tmp_path: Path) -> None:
    from confluent_kafka import Consumer

    with EmbeddedBroker({"metrics.prometheus.listener": "http://127.0.0.1:0"}, data_dir=tmp_path) as broker:
        lines = b"".join(b"record-%04d\n" % i for i in range(1000))
        subprocess.run([kcat_path(), "-b", broker.bootstrap, "-t", "m", "-P"], input=lines, check=True, timeout=60)
        consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "g", "auto.offset.reset": "earliest"})
        consumer.subscribe(["m"])
        read = 0
        deadline = time.monotonic() + 30
        while read < 1000 and time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            read += msg is not None and msg.error() is None
        consumer.close()
        assert read == 1000
        m = scrape(broker)
        on_disk = sum(f.stat().st_size for f in (tmp_path / "m-0").glob("*.log"))
        assert m['kafka_server_brokertopicmetrics_messagesin_total{topic="m"}'] == 1000
        assert m['kafka_server_brokertopicmetrics_bytesin_total{topic="m"}'] == on_disk
        assert m['kafka_log_log_size{partition="0",topic="m"}'] == on_disk
        assert m['kafka_server_brokertopicmetrics_bytesout_total{topic="m"}'] >= on_disk
        assert m["kafka_server_brokertopicmetrics_messagesin_total"] >= 1000  # all topics (__consumer_offsets too)
        assert m["kafka_server_replicamanager_underreplicatedpartitions"] == 0
        assert m["kafka_controller_kafkacontroller_activecontrollercount"] == 1
        produce = [k for k in m if k.startswith('kafka_network_requestmetrics_requests_total{request="Produce"')]
        assert produce and sum(m[k] for k in produce) >= 1
        for part in ("requestqueuetimems", "localtimems", "remotetimems", "throttletimems", "responsequeuetimems",
                     "responsesendtimems", "totaltimems"):
            assert m[f'kafka_network_requestmetrics_{part}_count{{request="FetchConsumer"}}'] >= 1
            assert f'kafka_network_requestmetrics_{part}{{quantile="0.99",request="Produce"}}' in m


def test_client_metrics_subscriptions_and_what_a_librdkafka_client_pushes(tmp_path: Path) -> None:
    from confluent_kafka import Producer

    props = {"metrics.prometheus.listener": "http://127.0.0.1:0"}
    with EmbeddedBroker(props, data_dir=tmp_path) as broker:
        assert alter(broker, "producers", metrics=(SET, "org.apache.kafka.producer."), interval_ms=(SET, "500"),
                     match=(SET, "client_id=tele.*")).error_code == ErrorCode.NONE
        bad = alter(broker, "bad", interval_ms=(SET, "50"))
        assert (bad.error_code, bad.error_message) == (
            ErrorCode.INVALID_REQUEST, "Invalid value 50 for interval.ms, interval must be between 100 and 3600000 "
                                       "(1 hour)")
        result = call(broker, DESCRIBE[4](resources=[DESCRIBE.DescribeConfigsResource(
            resource_type=CLIENT_METRICS, resource_name="producers", configuration_keys=None)],
            include_synonyms=False, include_documentation=False)).results[0]
        assert {(c.name, c.value, c.config_source) for c in result.configs} == {
            ("metrics", "org.apache.kafka.producer.", 7), ("interval.ms", "500", 7), ("match", "client_id=tele.*", 7)}
        assert subscriptions(broker) == ["producers"]

        producer = Producer({"bootstrap.servers": broker.bootstrap, "client.id": "tele-1", "enable.metrics.push": True})
        producer.produce("pushed", b"x")
        producer.flush(10)
        pushed = re.compile(r'org_apache_kafka_producer_\w+\{.*client_id="tele-1".*client_software_name='
                            r'"confluent-kafka-python"')

        def seen() -> bool:
            producer.poll(0.1)
            return any(pushed.match(k) for k in scrape(broker))

        wait_until(seen, 20, "the producer's pushed metrics on the endpoint")
        producer.flush(5)
        assert scrape(broker)["kafka_server_client_metrics_instance_count"] >= 1

    with EmbeddedBroker(props, data_dir=tmp_path) as broker:  # stored in the local metadata file
        assert subscriptions(broker) == ["producers"]
        assert alter(broker, "producers", metrics=(DELETE, None), interval_ms=(DELETE, None),
                     match=(DELETE, None)).error_code == ErrorCode.NONE
        assert subscriptions(broker) == []


DASHBOARD = Path(__file__).resolve().parents[3] / "docs" / "grafana" / "kafka-wire-broker.json"


def test_the_grafana_dashboard_asks_only_for_metrics_the_broker_serves(tmp_path: Path) -> None:
    import json

    exprs = [t["expr"] for p in json.loads(DASHBOARD.read_text())["panels"] for t in p["targets"]]
    wanted = {name for e in exprs for name in re.findall(r"\b(kafka_[a-z0-9_]+)\s*\{", e)}
    assert len(wanted) > 20
    with EmbeddedBroker({"metrics.prometheus.listener": "http://127.0.0.1:0"}, data_dir=tmp_path) as broker:
        subprocess.run([kcat_path(), "-b", broker.bootstrap, "-t", "d", "-P"], input=b"a\nb\n", check=True, timeout=60)
        subprocess.run([kcat_path(), "-b", broker.bootstrap, "-t", "d", "-C", "-e", "-q"], check=True, timeout=60,
                       capture_output=True)
        served = {key.split("{", 1)[0] for key in scrape(broker)}
    assert sorted(wanted - served) == []

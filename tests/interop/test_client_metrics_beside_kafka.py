"""KIP-714 on our KRaft broker in a Kafka 4.4 cluster: a `client-metrics` subscription set with Kafka's
kafka-client-metrics.sh goes to the real controller as ConfigRecords and comes back through the metadata log; a
librdkafka producer that matches it pushes its metrics, which our Prometheus endpoint serves; deleting it empties
the list."""

from __future__ import annotations

import time
import urllib.request

from broker.testing import free_port
from realkafka import KRAFT_KAFKA_LATEST, tools
from tests.interop.support import Nodes


def test_a_subscription_through_kafkas_controller_and_what_a_client_pushes(nodes: Nodes) -> None:
    from confluent_kafka import Producer

    quorum = nodes.kraft_quorum(KRAFT_KAFKA_LATEST)
    metrics_port = free_port()
    broker = nodes.our_kraft_broker(quorum, 2, overrides={"metrics.prometheus.listener":
                                                          f"http://127.0.0.1:{metrics_port}"})

    def run(*args: str) -> str:
        return tools.run(KRAFT_KAFKA_LATEST, "kafka-client-metrics", ["--bootstrap-server", broker.bootstrap,
                                                                     *args]).stdout

    assert "Altered client metrics config for all." in run("--alter", "--name", "all", "--metrics", "*",
                                                           "--interval", "1000")
    assert run("--list").split() == ["all"]
    producer = Producer({"bootstrap.servers": broker.bootstrap, "client.id": "kip714", "enable.metrics.push": True})
    producer.produce("pushed", b"x")
    producer.flush(30)
    deadline, text = time.monotonic() + 20, ""
    while time.monotonic() < deadline and 'client_id="kip714"' not in text:
        producer.poll(0.2)
        text = urllib.request.urlopen(f"http://127.0.0.1:{metrics_port}/metrics", timeout=10).read().decode()
    assert 'org_apache_kafka_producer_record_queue_time_avg{client_id="kip714"' in text
    assert "Deleted client metrics config for all." in run("--delete", "--name", "all")
    assert run("--list").split() == []

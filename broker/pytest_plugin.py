"""Kafka brokers as pytest fixtures, for any project that installs this package (a `pytest11` entry point).

    def test_round_trip(kafka_broker):
        producer = Producer({"bootstrap.servers": kafka_broker.bootstrap})
        ...

Contract:
- `kafka_broker` (per test): one broker started in this process (a thread with its own event loop, well under a
  second), on a free 127.0.0.1 port, its data in the test's temporary directory; `.bootstrap` is the
  `host:port` to give a client, `.port`, `.data_dir` and `.props` (the properties it runs with) the rest. Stopped
  (cleanly, as on SIGTERM) when the test ends, whatever the test did.
- Configs: Kafka's broker properties, from the `kafka_broker_config` fixture (override it in a conftest.py or a
  module to set them for many tests) and then from `@pytest.mark.kafka_config({"num.partitions": "3"})` on a test
  (or a class or module), which wins.
- `kafka_cluster` (per module: a cluster takes seconds to start): ZooKeeper and three broker processes on
  loopback (`broker.local_cluster.LocalCluster`: `.bootstrap`, `.brokers[i]` with `.stop()`, `.kill()`, and
  `.restart(i)`), configured by the module-scoped `kafka_cluster_config` fixture. It needs Java and
  ZooKeeper's jars (Debian: `apt-get install zookeeper default-jre-headless`); without them the test errors with
  one line naming what is missing.
- Importing this module (pytest does it at start-up wherever the package is installed) loads nothing of the
  broker; the fixtures import it when first used.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "kafka_config(props): Kafka broker properties for the kafka_broker fixture")


@pytest.fixture
def kafka_broker_config() -> dict[str, str]:
    """Broker properties every `kafka_broker` of its scope starts with (override to set them)."""
    return {}


@pytest.fixture
def kafka_broker(request: pytest.FixtureRequest, kafka_broker_config: dict[str, str],
                 tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    from broker.testing import EmbeddedBroker

    props = dict(kafka_broker_config)
    for marker in reversed(list(request.node.iter_markers("kafka_config"))):  # the closest marker wins
        props.update({str(k): str(v) for k, v in (marker.args[0] if marker.args else marker.kwargs).items()})
    broker = EmbeddedBroker(props, data_dir=tmp_path_factory.mktemp("kafka-broker"))
    broker.start()
    try:
        yield broker
    finally:
        broker.stop()


@pytest.fixture(scope="module")
def kafka_cluster_config() -> dict[str, str]:
    """Broker properties of every broker of a module's `kafka_cluster` (override to set them)."""
    return {}


@pytest.fixture(scope="module")
def kafka_cluster(kafka_cluster_config: dict[str, str], tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    from broker.local_cluster import LocalCluster
    from broker.metadata.zookeeper_server import ZooKeeperStartError

    cluster = LocalCluster(3, dict(kafka_cluster_config), data_dir=tmp_path_factory.mktemp("kafka-cluster"))
    try:
        cluster.start()
    except (ZooKeeperStartError, FileNotFoundError) as e:
        pytest.fail(f"kafka_cluster: cannot start ZooKeeper: {e}", pytrace=False)
    try:
        yield cluster
    finally:
        cluster.stop()

"""One broker for the whole error-path package (and a 3-broker cluster only if a test asks for it)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from broker.local_cluster import LocalCluster
from broker.testing import EmbeddedBroker

from .support import Brokers


@pytest.fixture(scope="package")
def brokers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Brokers]:
    base: Path = tmp_path_factory.mktemp("error-paths")
    single = EmbeddedBroker(data_dir=base / "single").start()
    started: list[LocalCluster] = []

    def start_cluster() -> LocalCluster:
        # broker 1 leads partitions broker 0 only knows of; broker 2 is killed for the replication codes
        cluster = LocalCluster(3, {"auto.create.topics.enable": "false", "offsets.topic.replication.factor": "1",
                                   "replica.lag.time.max.ms": "3000"}, data_dir=base / "cluster").start()
        started.append(cluster)
        return cluster
    brokers = Brokers(single, start_cluster)
    yield brokers
    brokers.stop_others()
    for cluster in started:
        cluster.stop()
    single.stop()

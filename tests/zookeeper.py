"""Test helpers: a real ZooKeeper server on loopback, and pytest fixtures built on it.

`start_zookeeper(tmp_path) -> ZooKeeperServer` starts Debian's ZooKeeper 3.8 on a free
127.0.0.1 port with a 200 ms tick (sessions can expire in 0.4..4 s) and returns once it answers
`ruok`; `.connect_string`, `.stop()`, `.kill()`, context manager. The process management lives in
broker/metadata/zookeeper_server.py so the local-cluster CLI starts ZooKeeper the same way.

Fixtures (import them into a conftest.py: `from tests.zookeeper import zookeeper, local_cluster`):
- `zookeeper`: a fresh server per test.
- `zookeeper_module`: one server per test module; tests isolate themselves with a chroot
  (`chroot_connect(server)` gives "127.0.0.1:PORT/<unique>").
- `local_cluster`: a factory `local_cluster(n_brokers=3, overrides=None) -> broker.local_cluster.LocalCluster`
  (ZooKeeper + N broker processes on loopback, data under tmp_path); every cluster it made is
  stopped at teardown, ZooKeeper last.

`cluster_metadata(cluster)` opens a ZkMetadataStore on a cluster's ZooKeeper for assertions
(leader, leader_epoch, ISR as the controller recorded them); close it (context manager).
`wait_for_partition_state(store, topic, partition, predicate, timeout)` polls the state znode.
"""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from broker.metadata import LeaderAndIsr
from broker.metadata.store import ZkMetadataStore
from broker.metadata.zookeeper_server import ZooKeeperServer, four_letter_word
from broker.metadata.zookeeper_server import start_zookeeper as _start_zookeeper

if TYPE_CHECKING:
    from broker.local_cluster import LocalCluster

__all__ = [
    "ZooKeeperServer",
    "chroot_connect",
    "cluster_metadata",
    "local_cluster",
    "wait_for_partition_state",
    "four_letter_word",
    "start_zookeeper",
    "zookeeper",
    "zookeeper_module",
]


def start_zookeeper(tmp_path: str | os.PathLike[str], tick_time_ms: int = 200) -> ZooKeeperServer:
    """Start a ZooKeeper server with its data under `tmp_path`/zookeeper."""
    return _start_zookeeper(Path(tmp_path) / "zookeeper", tick_time_ms=tick_time_ms)


def chroot_connect(server: ZooKeeperServer) -> str:
    """A connect string with a fresh chroot, so tests sharing one server do not see each other."""
    return f"{server.connect_string}/t{uuid.uuid4().hex[:12]}"


@pytest.fixture
def zookeeper(tmp_path: Path) -> Iterator[ZooKeeperServer]:
    server = start_zookeeper(tmp_path)
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="module")
def zookeeper_module(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ZooKeeperServer]:
    server = start_zookeeper(tmp_path_factory.mktemp("zk"))
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def local_cluster(tmp_path: Path) -> Iterator[Callable[..., LocalCluster]]:
    # Imported lazily: the ZooKeeper helpers above must not depend on the broker being importable.
    from broker.local_cluster import LocalCluster

    clusters: list[LocalCluster] = []

    def make(n_brokers: int = 3, overrides: dict[str, str] | None = None) -> LocalCluster:
        cluster = LocalCluster(n_brokers, overrides, data_dir=tmp_path / f"cluster{len(clusters)}")
        clusters.append(cluster)
        return cluster.start()

    try:
        yield make
    finally:
        for cluster in reversed(clusters):
            cluster.stop()


def cluster_metadata(cluster: Any, session_timeout_ms: int = 4000) -> ZkMetadataStore:
    """A metadata store on the cluster's ZooKeeper (read-only use in tests: it registers nothing)."""
    if cluster.zookeeper is None:
        raise RuntimeError("cluster is not running")
    return ZkMetadataStore(cluster.zookeeper.connect_string, session_timeout_ms=session_timeout_ms)


def wait_for_partition_state(
    store: ZkMetadataStore,
    topic: str,
    partition: int,
    predicate: Callable[[LeaderAndIsr], bool],
    timeout: float = 30.0,
) -> LeaderAndIsr:
    """Poll /brokers/topics/<topic>/partitions/<p>/state until `predicate(state)`; AssertionError on timeout."""
    deadline = time.monotonic() + timeout
    last: LeaderAndIsr | None = None
    while time.monotonic() < deadline:
        current = store.partition_state(topic, partition)
        if current is not None:
            last = current[0]
            if predicate(last):
                return last
        time.sleep(0.05)
    raise AssertionError(f"{topic}-{partition} state never matched within {timeout}s; last: {last}")

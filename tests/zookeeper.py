"""Test helpers: a real ZooKeeper server on loopback, and pytest fixtures built on it.

`start_zookeeper(tmp_path) -> ZooKeeperServer` starts Debian's ZooKeeper 3.8 on a free
127.0.0.1 port with a 200 ms tick (sessions can expire in 0.4..4 s) and returns once it answers
`ruok`; `.connect_string`, `.stop()`, `.kill()`, context manager. The process management lives in
broker/metadata/zookeeper_server.py so the local-cluster CLI starts ZooKeeper the same way.

Fixtures (import them into a conftest.py: `from tests.zookeeper import zookeeper, zookeeper_module`):
- `zookeeper`: a fresh server per test.
- `zookeeper_module`: one server per test module; tests isolate themselves with a chroot
  (`chroot_connect(server)` gives "127.0.0.1:PORT/<unique>").
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from broker.metadata.zookeeper_server import ZooKeeperServer, four_letter_word
from broker.metadata.zookeeper_server import start_zookeeper as _start_zookeeper

__all__ = [
    "ZooKeeperServer",
    "chroot_connect",
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

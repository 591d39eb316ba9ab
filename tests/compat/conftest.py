"""Brokers for the compat matrix: one of ours per test session (a `python -m broker` subprocess,
started by compat.targets exactly as `python -m compat` starts it), plus variants with other
broker settings started on demand."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from compat.targets import ClusterTarget, EmbeddedTarget


@pytest.fixture(scope="session")
def compat_target() -> Iterator[EmbeddedTarget]:
    with EmbeddedTarget() as target:
        yield target


@pytest.fixture(scope="module")
def no_auto_create_target() -> Iterator[EmbeddedTarget]:
    with EmbeddedTarget({"auto.create.topics.enable": "false"}, name="ours-no-auto-create") as target:
        yield target


@pytest.fixture(scope="module")
def cluster_target() -> Iterator[ClusterTarget]:
    """Three of our brokers on a ZooKeeper started here (java + the Debian ZooKeeper jars)."""
    import shutil
    if shutil.which("java") is None:
        pytest.skip("no java on PATH for ZooKeeper")
    with ClusterTarget(3) as target:
        yield target

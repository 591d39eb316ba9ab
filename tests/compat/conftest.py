"""Brokers for the compat matrix: one of ours per test session (a `python -m broker` subprocess,
started by compat.targets exactly as `python -m compat` starts it), plus variants with other
broker settings started on demand."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from compat.clients.java import set_classpath
from compat.targets import ClusterTarget, EmbeddedTarget, ExternalTarget

# The java clients run from kafka-clients jars resolved from Maven Central (realkafka.jars); KAFKA_CLIENTS_CLASSPATH
# replaces the newest release's, as `python -m compat --java-classpath` does.
set_classpath(os.environ.get("KAFKA_CLIENTS_CLASSPATH", ""))


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


@pytest.fixture(scope="session")
def docker_compose_file() -> str:
    """pytest-docker: the Apache Kafka service for the side-by-side run."""
    from pathlib import Path
    return str(Path(__file__).with_name("docker-compose.yml"))


@pytest.fixture(scope="session")
def apache_kafka(request: pytest.FixtureRequest) -> ExternalTarget:
    """Apache Kafka in a container (pytest-docker), or a skip when no Docker engine answers."""
    import os
    import socket

    from compat.targets import docker_unavailable_reason, free_port
    reason = docker_unavailable_reason()
    if reason is not None:
        pytest.skip(reason)
    port = free_port()
    os.environ["COMPAT_KAFKA_PORT"] = str(port)
    services = request.getfixturevalue("docker_services")

    def answers() -> bool:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                pass
            return ExternalTarget(f"127.0.0.1:{port}").cluster_size == 1
        except Exception:  # noqa: BLE001 - not up yet
            return False

    services.wait_until_responsive(timeout=120.0, pause=1.0, check=answers)
    return ExternalTarget(f"127.0.0.1:{port}", name="apache-kafka", cluster_size=1)

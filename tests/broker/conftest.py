"""Broker unit tests: the logs a test opened through `replication` are closed when it ends."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from .replication import close_all


@pytest.fixture(autouse=True)
def _close_logs() -> Iterator[None]:
    yield
    close_all()

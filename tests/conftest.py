"""Shared fixtures: brokers on free 127.0.0.1 ports with data in the test's temporary directory.

- `broker`: an in-process broker (a thread with its own event loop), started in well under a second.
- `broker_factory(overrides, data_dir=..., process=False)`: more brokers, with Kafka property overrides;
  `process=True` runs `python -m broker` in a subprocess (for SIGTERM / kill -9 tests).
Every broker a fixture starts is stopped when the test ends.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from broker.testing import BrokerProcess, EmbeddedBroker


@pytest.fixture
def broker_factory(tmp_path: Path) -> Iterator[Callable[..., Any]]:
    started: list[Any] = []
    counter = [0]

    def start(overrides: dict[str, str] | None = None, *, data_dir: Path | None = None,
              process: bool = False, port: int | None = None) -> Any:
        counter[0] += 1
        if data_dir is None:
            data_dir = tmp_path / f"broker{counter[0]}"
        cls = BrokerProcess if process else EmbeddedBroker
        b = cls(overrides, data_dir=data_dir, port=port)
        b.start()
        started.append(b)
        return b

    yield start
    for b in reversed(started):
        try:
            b.stop()
        except Exception:
            pass


@pytest.fixture
def broker(broker_factory: Callable[..., Any]) -> EmbeddedBroker:
    return broker_factory()


def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """pytest-xdist's scheduling (`./dev test` runs two workers): whole modules go to one worker, so a
    module-scoped cluster or real Kafka starts once, and two groups of modules stay together: the error-path
    modules of tests/broker/apis (they share one session's brokers and the order of what they do to them) and
    tests/spark (one SparkSession, a JVM of up to 1 GB)."""
    from xdist.scheduler import LoadScopeScheduling

    class ModuleScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            path = nodeid.split("::", 1)[0]
            return next((group for group in ("tests/broker/apis/", "tests/spark/") if path.startswith(group)), path)

    return ModuleScheduling(config, log)

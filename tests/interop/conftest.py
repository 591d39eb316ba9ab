"""Fixtures for the interop tests: real Apache Kafka from Maven Central beside our broker.

- `nodes`: a `tests.interop.support.Nodes` for one test; `module_nodes` one shared by a module (a cluster
  started once for several tests). Every node is stopped at teardown.
- When a test fails, the tail of every running node's log (Kafka's server.log, our broker.log) is printed with
  its directory, which pytest keeps under its basetemp.
The jars are resolved on first use (`python -m realkafka fetch` resolves them ahead).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.interop.support import Nodes

_ACTIVE: list[Nodes] = []


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: Any, call: Any) -> Iterator[None]:
    outcome = yield
    report = outcome.get_result()  # type: ignore[attr-defined]
    setattr(item, f"rep_{report.when}", report)


@pytest.fixture(autouse=True)
def _report_on_failure(request: pytest.FixtureRequest) -> Iterator[None]:
    yield
    report = getattr(request.node, "rep_call", None)
    if report is not None and report.failed:
        for nodes in _ACTIVE:
            print(nodes.report())


def open_nodes(directory: Path) -> Iterator[Nodes]:
    """Nodes under `directory`, reported on failure and closed when the generator closes (for fixtures)."""
    nodes = Nodes(directory)
    _ACTIVE.append(nodes)
    try:
        yield nodes
    finally:
        _ACTIVE.remove(nodes)
        nodes.close()


@pytest.fixture
def nodes(tmp_path: Path) -> Iterator[Nodes]:
    yield from open_nodes(tmp_path)


@pytest.fixture(scope="module")
def module_nodes(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Nodes]:
    yield from open_nodes(tmp_path_factory.mktemp("interop"))

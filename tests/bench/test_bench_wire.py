"""bench.wire against a real broker (librdkafka's mock cluster in its own process) and a closed port."""

from __future__ import annotations

import time

import pytest

from bench.targets import MockTarget
from bench.wire import ProbeError, api_versions_probe, free_port, wait_for_api_versions


@pytest.fixture(scope="module")
def mock_target():
    target = MockTarget()
    target.start()
    yield target
    target.stop()


def test_probe_lists_produce_fetch_and_api_versions(mock_target: MockTarget) -> None:
    host, _, port = mock_target.bootstrap.rpartition(":")
    apis = {key: (low, high) for key, low, high in api_versions_probe(host, int(port))}
    assert {0, 1, 3, 18} <= set(apis)
    assert apis[18][1] >= 0 and apis[0][1] >= apis[0][0]


def test_wait_for_api_versions_returns_first_answer_time(mock_target: MockTarget) -> None:
    host, _, port = mock_target.bootstrap.rpartition(":")
    before = time.monotonic()
    answered = wait_for_api_versions(host, int(port), before + 5)
    assert before <= answered <= time.monotonic()


def test_closed_port_raises_probe_error_by_deadline() -> None:
    port = free_port()
    with pytest.raises(ProbeError):
        api_versions_probe("127.0.0.1", port, timeout_s=0.2)
    started = time.monotonic()
    with pytest.raises(ProbeError, match="before the deadline"):
        wait_for_api_versions("127.0.0.1", port, started + 0.3)
    assert time.monotonic() - started < 2

"""A handler that raises costs one request, never the broker (issue 30).

As Kafka's KafkaApis: the request is answered UNKNOWN_SERVER_ERROR when its response has a top-level error code
(sync and async handlers alike), else its connection is closed; one log line names the client, the API and the
exception, with no traceback; the same connection (when answered) and every other one go on being served.
"""

from __future__ import annotations

import logging
import socket
from typing import Any

import pytest

from broker import apis
from protocol import ApiKey, request_class
from protocol.errors import ErrorCode

from .wire import recv, send


def _boom(*_: Any) -> Any:
    raise KeyError("boom")


async def _async_boom(*_: Any) -> Any:
    raise KeyError("async boom")


def _api_versions(sock: socket.socket, correlation_id: int) -> Any:
    send(sock, request_class(ApiKey.API_VERSIONS)[3](client_software_name="t", client_software_version="1"),
         correlation_id)
    return recv(sock, ApiKey.API_VERSIONS, 3)


@pytest.mark.parametrize("handler", [_boom, _async_boom], ids=["sync", "async"])
def test_a_failing_handler_answers_unknown_server_error_and_the_connection_goes_on(
        broker: Any, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, handler: Any) -> None:
    monkeypatch.setattr(apis.describe_cluster, "handle", handler)
    caplog.set_level(logging.INFO, logger="broker.server")
    with socket.create_connection(("127.0.0.1", broker.port), timeout=10) as sock:
        send(sock, request_class(ApiKey.DESCRIBE_CLUSTER)[1](include_cluster_authorized_operations=False), 5)
        response = recv(sock, ApiKey.DESCRIBE_CLUSTER, 1)
        assert (response.header.correlation_id, response.error_code) == (5, ErrorCode.UNKNOWN_SERVER_ERROR)
        assert response.error_message is None  # as Kafka: an unknown error's text stays in the broker's log
        assert _api_versions(sock, 6).error_code == 0
    [line] = [r for r in caplog.records if "DESCRIBE_CLUSTER v1" in r.getMessage()]
    assert "client_id 'raw'" in line.getMessage() and "boom" in line.getMessage()
    assert line.levelno == logging.ERROR and line.exc_info is None


def test_a_failing_handler_without_a_top_level_error_code_closes_only_its_connection(
        broker: Any, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    monkeypatch.setattr(apis.metadata, "handle", _boom)
    with socket.create_connection(("127.0.0.1", broker.port), timeout=10) as bad, \
            socket.create_connection(("127.0.0.1", broker.port), timeout=10) as good:
        Meta = request_class(ApiKey.METADATA)
        send(bad, Meta[12](topics=[], allow_auto_topic_creation=False, include_topic_authorized_operations=False), 1)
        assert bad.recv(1) == b""
        assert _api_versions(good, 2).error_code == 0
    assert not [r for r in caplog.records if r.exc_info]

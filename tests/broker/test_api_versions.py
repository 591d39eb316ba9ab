"""The one table of what the broker serves, and how it answers a request outside it.

The handler modules under `broker/apis/` are that table: every one is registered, registration refuses a
second module for an API key and a range the codec cannot decode and encode, and ApiVersions answers
exactly the registered ranges, each inside the codec's (`protocol.SUPPORTED_VERSIONS`). A request for
an API key or version no handler serves is handled as Kafka's SocketServer and KafkaApis do: ApiVersions
gets UNSUPPORTED_VERSION with ApiVersions' own range in the v0 layout and the connection stays up; anything
else closes the connection. Either way the broker logs one line naming the client address, the API and
the version.
"""

from __future__ import annotations

import importlib
import logging
import pkgutil
import socket
import struct
from types import ModuleType, SimpleNamespace
from typing import Any

import pytest

import broker.apis
from broker import apis
from broker.apis import HandlerRegistrationError, register
from broker.kraft import zk_apis
from protocol import SUPPORTED_VERSIONS, ApiKey, ErrorCode, encode_request, request_class, response_class
from protocol.api_keys import api_name

from .wire import recv, roundtrip


def handler_modules_on_disk() -> list[ModuleType]:
    found = []
    for info in pkgutil.iter_modules(broker.apis.__path__):
        module = importlib.import_module(f"broker.apis.{info.name}")
        if hasattr(module, "API_KEY"):
            found.append(module)
    return found


def test_every_handler_module_is_registered() -> None:
    on_disk = handler_modules_on_disk()
    assert len(on_disk) > 20
    registered = set(map(id, apis.HANDLERS.values()))
    missing = [m.__name__ for m in on_disk if id(m) not in registered]
    assert missing == [], f"handler modules not in broker.apis.HANDLER_MODULES: {missing}"
    assert len(apis.HANDLERS) == len(on_disk)


def test_the_served_table_says_what_each_handler_module_says() -> None:
    """broker.apis.SERVED is read at start instead of importing the handlers (issue 35): each row must be its
    module's own API_KEY, MIN_VERSION and MAX_VERSION."""
    rows = {key: (served.module, served.min_version, served.max_version) for key, served in apis.SERVED.items()}
    modules = {m.API_KEY: (m.__name__.rsplit(".", 1)[1], m.MIN_VERSION, m.MAX_VERSION)
               for m in handler_modules_on_disk()}
    assert rows == modules


def test_a_handler_module_that_disagrees_with_its_row_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    from broker.apis import SERVED, Served

    monkeypatch.setitem(SERVED, ApiKey.METADATA, Served("metadata", 0, 99))
    monkeypatch.delitem(apis.LOADED, ApiKey.METADATA, raising=False)
    with pytest.raises(HandlerRegistrationError, match="broker.apis.metadata serves METADATA v0-v12 but "
                                                       "broker.apis.SERVED says METADATA v0-v99"):
        apis.handler(ApiKey.METADATA)


def test_advertised_ranges_are_inside_what_the_codec_supports() -> None:
    advertised = apis.advertised_versions()
    assert ApiKey.API_VERSIONS in advertised and ApiKey.PRODUCE in advertised
    for key, (low, high) in advertised.items():
        assert key in SUPPORTED_VERSIONS, f"{api_name(key)} is advertised but the codec cannot decode it"
        codec_low, codec_high = SUPPORTED_VERSIONS[key]
        assert codec_low <= low <= high <= codec_high, f"{api_name(key)} v{low}-v{high} vs codec " \
                                                       f"v{codec_low}-v{codec_high}"
        for version in (low, high):
            request_class(key)[version]
            response_class(key)[version]


def fake_handler(name: str, api_key: int, low: int, high: int) -> ModuleType:
    module = ModuleType(name)
    module.API_KEY, module.MIN_VERSION, module.MAX_VERSION = api_key, low, high  # type: ignore[attr-defined]
    return module


def test_registration_refuses_a_second_module_for_one_api_key() -> None:
    with pytest.raises(HandlerRegistrationError, match="METADATA is served by both broker.apis.metadata and "
                                                       "other_metadata"):
        register([apis.metadata, fake_handler("other_metadata", ApiKey.METADATA, 0, 1)])


def test_registration_refuses_a_range_the_codec_cannot_decode() -> None:
    high = SUPPORTED_VERSIONS[ApiKey.METADATA][1]
    with pytest.raises(HandlerRegistrationError, match=f"METADATA v0-v{high + 1}, outside .* \\(v0-v{high}\\)"):
        register([fake_handler("future_metadata", ApiKey.METADATA, 0, high + 1)])
    with pytest.raises(HandlerRegistrationError, match="API key 999 v0-v0, outside .* \\(nothing\\)"):
        register([fake_handler("unknown", 999, 0, 0)])


# --- over a raw socket ------------------------------------------------------------------------------------


@pytest.fixture
def conn(broker: Any) -> Any:
    s = socket.create_connection(("127.0.0.1", broker.port), timeout=10)
    yield s
    s.close()


def frame_of(request: Any, correlation_id: int, *, api_key: int | None = None, version: int | None = None) -> bytes:
    """A request frame built by the codec, then given another API key or version in its header."""
    request.with_header(correlation_id=correlation_id, client_id="raw")
    frame = bytearray(encode_request(request))
    if api_key is not None:
        struct.pack_into(">h", frame, 0, api_key)
    if version is not None:
        struct.pack_into(">h", frame, 2, version)
    return struct.pack(">i", len(frame)) + bytes(frame)


def api_versions_request(version: int) -> Any:
    return request_class(ApiKey.API_VERSIONS)[version](client_software_name="raw", client_software_version="1")


def assert_closed(sock: socket.socket) -> None:
    try:
        data = sock.recv(4096)
    except ConnectionResetError:
        return
    assert data == b"", f"expected the broker to close the connection, got {data[:64]!r}"


def lines_about(caplog: pytest.LogCaptureFixture, sock: socket.socket) -> list[str]:
    host, port = sock.getsockname()
    return [r.getMessage() for r in caplog.records if f"{host}:{port}" in r.getMessage()]


def test_api_versions_lists_the_handlers_within_the_codec(conn: Any) -> None:
    resp = roundtrip(conn, api_versions_request(3), 7)
    assert resp.error_code == 0
    ranges = {k.api_key: (k.min_version, k.max_version) for k in resp.api_keys}
    # every handler's range, but for the KRaft-only APIs a single-node broker does not enable (zk_apis) and, with no
    # metrics.prometheus.listener, KIP-714's push APIs (no telemetry receiver)
    left_out = zk_apis.KRAFT_BROKER_ONLY | apis.api_versions.TELEMETRY_APIS
    assert ranges == {k: r for k, r in apis.advertised_versions().items() if k not in left_out}
    assert ApiKey.DESCRIBE_QUORUM in apis.advertised_versions() and ApiKey.DESCRIBE_QUORUM not in ranges
    assert all(SUPPORTED_VERSIONS[k][0] <= low <= high <= SUPPORTED_VERSIONS[k][1]
               for k, (low, high) in ranges.items())


def test_api_versions_v5_checks_the_cluster_and_node_the_client_means(conn: Any, broker: Any) -> None:
    """KIP-1242 (Kafka 4.4's clients): the right cluster and node, or no cluster id, get the ranges; another
    cluster, or this cluster with another node id, get REBOOTSTRAP_REQUIRED and no ranges."""
    cluster_id, node_id = broker.server.metadata_cache.cluster_id, broker.server.broker_id
    v5 = request_class(ApiKey.API_VERSIONS)[5]

    def ask(**ids: Any) -> Any:
        return roundtrip(conn, v5(client_software_name="raw", client_software_version="1", **ids), 9)

    for ids in ({"cluster_id": cluster_id, "node_id": node_id}, {"cluster_id": None, "node_id": node_id + 7}, {}):
        resp = ask(**ids)
        assert resp.error_code == 0 and resp.api_keys, ids
        assert {k.api_key: k.max_version for k in resp.api_keys}[ApiKey.API_VERSIONS] == 5
    for ids in ({"cluster_id": "another-cluster", "node_id": node_id},
                {"cluster_id": cluster_id, "node_id": node_id + 1}):
        resp = ask(**ids)
        assert (resp.error_code, list(resp.api_keys)) == (ErrorCode.REBOOTSTRAP_REQUIRED, []), ids


def test_api_versions_at_an_unserved_version_gets_the_v0_fallback_and_one_log_line(
        conn: Any, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)
    top = apis.api_versions.MAX_VERSION
    conn.sendall(frame_of(api_versions_request(top), 41, version=top + 1))
    fallback = recv(conn, ApiKey.API_VERSIONS, top)  # a client reads it as v0 (KIP-511)
    assert fallback.API_VERSION == 0 and fallback.header.correlation_id == 41
    assert fallback.error_code == ErrorCode.UNSUPPORTED_VERSION
    assert [(k.api_key, k.min_version, k.max_version) for k in fallback.api_keys] == [
        (ApiKey.API_VERSIONS, apis.api_versions.MIN_VERSION, top)]
    # The connection stays up: the client retries at a version we serve.
    assert roundtrip(conn, api_versions_request(top), 42).error_code == 0
    [line] = lines_about(caplog, conn)
    assert f"API_VERSIONS v{top + 1} is not served" in line


@pytest.mark.parametrize("case", ["unserved version", "codec-only key", "unknown key"])
def test_any_other_unserved_request_closes_the_connection_with_one_log_line(
        conn: Any, caplog: pytest.LogCaptureFixture, case: str) -> None:
    caplog.set_level(logging.INFO)
    metadata = request_class(ApiKey.METADATA)
    request = metadata[9](topics=[], allow_auto_topic_creation=False, include_topic_authorized_operations=False)
    if case == "unserved version":
        version = apis.metadata.MAX_VERSION + 1
        frame, expected = frame_of(request, 5, version=version), f"METADATA v{version} is not served"
    elif case == "codec-only key":
        unserved = [k for k in SUPPORTED_VERSIONS if k not in apis.HANDLERS]
        if not unserved:
            pytest.skip("every API the codec knows is served")
        key = unserved[0]
        frame, expected = frame_of(request, 5, api_key=key, version=0), f"{api_name(key)} v0 is not served"
    else:
        frame, expected = frame_of(request, 5, api_key=9999, version=3), "API key 9999 v3 is not served"
    conn.sendall(frame)
    assert_closed(conn)
    [line] = lines_about(caplog, conn)
    assert expected in line


def test_the_broker_serves_others_after_closing_one(broker: Any) -> None:
    bad = socket.create_connection(("127.0.0.1", broker.port), timeout=10)
    good = socket.create_connection(("127.0.0.1", broker.port), timeout=10)
    try:
        bad.sendall(frame_of(api_versions_request(3), 1, api_key=9999))
        assert_closed(bad)
        assert roundtrip(good, api_versions_request(3), 2).error_code == 0
    finally:
        bad.close()
        good.close()


def test_fallback_frame_carries_the_range_it_is_given() -> None:
    from protocol import api_versions_fallback_response

    frame = api_versions_fallback_response(SimpleNamespace(correlation_id=9), (0, 3))
    assert frame == struct.pack(">ihihhh", 9, ErrorCode.UNSUPPORTED_VERSION, 1, ApiKey.API_VERSIONS, 0, 3)


def test_api_versions_v4_advertises_group_version_1_supported_and_finalized(conn: Any) -> None:
    # Kafka's GroupVersion: level 1 is the KIP-848 consumer rebalance protocol, which this broker serves.
    resp = roundtrip(conn, api_versions_request(4), 8)
    supported = {f.name: (f.min_version, f.max_version) for f in resp.supported_features}
    finalized = {f.name: (f.min_version_level, f.max_version_level) for f in resp.finalized_features}
    assert supported == {"group.version": (0, 1), "share.version": (0, 1)}
    assert finalized == {"group.version": (1, 1), "share.version": (1, 1)}
    assert resp.finalized_features_epoch == 0
    # v3: a supported range starting at 0 is left out (KAFKA-17492); the finalized levels stay.
    v3 = roundtrip(conn, api_versions_request(3), 9)
    assert list(v3.supported_features) == []
    assert {f.name: f.max_version_level for f in v3.finalized_features} == {"group.version": 1, "share.version": 1}
    # v0-2 have no feature fields: still answered.
    assert roundtrip(conn, api_versions_request(2), 10).error_code == 0

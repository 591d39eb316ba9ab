"""Broken TLS and SASL from a client close only that client's connection, and the listener keeps serving:
garbage where a TLS ClientHello belongs, a ClientHello cut short, garbage frames and non-SASL requests on a SASL
listener before authentication, a mechanism the listener does not enable (answered UNSUPPORTED_SASL_MECHANISM,
then closed). Also the SaslHandshake v0 flow with raw tokens (older clients), passing and failing."""

from __future__ import annotations

import os
import socket
import ssl
import struct
from typing import Any

import pytest

from protocol import ApiKey, request_class
from protocol.errors import ErrorCode
from tests.broker.wire import recv_exactly, roundtrip, send

ApiVersions = request_class(ApiKey.API_VERSIONS)
Handshake = request_class(ApiKey.SASL_HANDSHAKE)
Metadata = request_class(ApiKey.METADATA)


def _closed(sock: socket.socket) -> bool:
    """True when the broker closed the connection (EOF or reset) without sending anything more than an alert."""
    sock.settimeout(10)
    try:
        while True:
            data = sock.recv(4096)
            if not data:
                return True
    except (ConnectionResetError, BrokenPipeError):
        return True


def _tls_metadata_works(secured: Any, listener: str = "SSL") -> None:
    ctx = ssl.create_default_context(cafile=str(secured.pki.ca))
    with socket.create_connection(("127.0.0.1", secured.ports[listener]), timeout=10) as raw, \
            ctx.wrap_socket(raw, server_hostname="127.0.0.1") as s:
        resp = roundtrip(s, Metadata[9](topics=[], allow_auto_topic_creation=False), 1)
        # The SSL listener's own endpoint, not the PLAINTEXT one.
        assert [(b.host, b.port) for b in resp.brokers] == [("127.0.0.1", secured.ports[listener])]


def _sasl_socket(secured: Any) -> socket.socket:
    return socket.create_connection(("127.0.0.1", secured.ports["SASL_PLAINTEXT"]), timeout=10)


@pytest.mark.parametrize("payload", [
    b"GET / HTTP/1.1\r\nHost: x\r\n\r\n",
    b"\x16\x03\x01\x00\x2a" + os.urandom(42),  # a TLS record header, then random bytes as the hello
    b"\x16\x03\x01\xff\xff" + b"\x01" * 64,  # an oversized record length announced
], ids=["http", "random-hello", "oversized-record"])
def test_garbage_instead_of_a_client_hello(secured: Any, payload: bytes) -> None:
    with socket.create_connection(("127.0.0.1", secured.ports["SSL"]), timeout=10) as s:
        s.sendall(payload)
        assert _closed(s)
    _tls_metadata_works(secured)


def test_truncated_client_hello(secured: Any) -> None:
    # A real ClientHello from Python's ssl module, cut in half, then the client goes away.
    incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
    tls = ssl.create_default_context().wrap_bio(incoming, outgoing, server_hostname="127.0.0.1")
    with pytest.raises(ssl.SSLWantReadError):
        tls.do_handshake()
    hello = outgoing.read()
    with socket.create_connection(("127.0.0.1", secured.ports["SSL"]), timeout=10) as s:
        s.sendall(hello[: len(hello) // 2])
        s.shutdown(socket.SHUT_WR)
        assert _closed(s)
    _tls_metadata_works(secured)


def test_garbage_frame_before_sasl(secured: Any) -> None:
    with _sasl_socket(secured) as s:
        s.sendall(struct.pack(">i", 3) + b"\xff\x00\x01")
        assert _closed(s)
    with _sasl_socket(secured) as s:
        s.sendall(struct.pack(">i", 64) + os.urandom(64))
        assert _closed(s)


def test_oversized_frame_before_authentication(secured: Any) -> None:
    # Over sasl.server.max.receive.size (512 KiB): refused from its size prefix, nothing allocated for it.
    with _sasl_socket(secured) as s:
        s.sendall(struct.pack(">i", 524289) + b"\x00" * 64)
        assert _closed(s)


@pytest.mark.parametrize("first_api_versions", [False, True])
def test_request_before_authentication_closes(secured: Any, first_api_versions: bool) -> None:
    with _sasl_socket(secured) as s:
        if first_api_versions:
            resp = roundtrip(s, ApiVersions[3](client_software_name="t", client_software_version="1"), 1)
            assert resp.error_code == 0
        send(s, Metadata[9](topics=[], allow_auto_topic_creation=False), 2)
        assert _closed(s)


def test_unsupported_mechanism_is_answered_then_closed(secured: Any) -> None:
    with _sasl_socket(secured) as s:
        resp = roundtrip(s, Handshake[1](mechanism="GSSAPI"), 1)
        assert resp.error_code == ErrorCode.UNSUPPORTED_SASL_MECHANISM
        assert resp.mechanisms == ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"]
        assert _closed(s)


def test_handshake_v0_raw_token_flow(secured: Any) -> None:
    with _sasl_socket(secured) as s:
        assert roundtrip(s, Handshake[0](mechanism="PLAIN"), 1).error_code == 0
        token = b"\x00alice\x00alice-secret"
        s.sendall(struct.pack(">i", len(token)) + token)
        assert recv_exactly(s, 4) == b"\x00\x00\x00\x00"  # PLAIN's empty answer, size-prefixed
        resp = roundtrip(s, Metadata[9](topics=[], allow_auto_topic_creation=False), 2)
        assert [(b.host, b.port) for b in resp.brokers] == [("127.0.0.1", secured.ports["SASL_PLAINTEXT"])]
        # Authenticated: KafkaApis answers a further SaslAuthenticate ILLEGAL_SASL_STATE.
        again = roundtrip(s, request_class(ApiKey.SASL_AUTHENTICATE)[1](auth_bytes=token), 3)
        assert again.error_code == ErrorCode.ILLEGAL_SASL_STATE


def test_handshake_v0_wrong_password_closes(secured: Any) -> None:
    with _sasl_socket(secured) as s:
        assert roundtrip(s, Handshake[0](mechanism="PLAIN"), 1).error_code == 0
        token = b"\x00alice\x00nope"
        s.sendall(struct.pack(">i", len(token)) + token)
        assert _closed(s)


def test_authenticate_v2_garbage_scram_token(secured: Any) -> None:
    Auth = request_class(ApiKey.SASL_AUTHENTICATE)
    with _sasl_socket(secured) as s:
        assert roundtrip(s, Handshake[1](mechanism="SCRAM-SHA-256"), 1).error_code == 0
        resp = roundtrip(s, Auth[2](auth_bytes=os.urandom(200)), 2)
        assert resp.error_code == ErrorCode.SASL_AUTHENTICATION_FAILED
        assert resp.error_message == ("Authentication failed during authentication due to invalid credentials with "
                                      "SASL mechanism SCRAM-SHA-256")
        assert _closed(s)

"""Re-authentication (KIP-368, `connections.max.reauth.ms`): confluent-kafka keeps producing across several
re-authentications with PLAIN, SCRAM and OAUTHBEARER; a client that does not re-authenticate is disconnected
once its session ends; a re-authentication may not change the principal or the mechanism; an OAuth token's
expiry bounds the session even without the config; and without either nothing changes."""

from __future__ import annotations

import base64
import json
import logging
import socket
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Producer

from broker.testing import EmbeddedBroker, free_port
from protocol import ApiKey, request_class
from protocol.errors import ErrorCode
from tests.broker.wire import roundtrip, send
from tests.security.support import add_scram_user, plain_jaas

REAUTH_MS = 2000
USERS = {"admin": "admin-secret", "alice": "alice-secret"}
OAUTH_JAAS = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required ;"
Handshake = request_class(ApiKey.SASL_HANDSHAKE)
Authenticate = request_class(ApiKey.SASL_AUTHENTICATE)
Metadata = request_class(ApiKey.METADATA)


def _broker(data_dir: Path, **extra: str) -> tuple[EmbeddedBroker, int]:
    plain, sasl = free_port(), free_port()
    broker = EmbeddedBroker({
        "listeners": f"PLAINTEXT://127.0.0.1:{plain},SASL_PLAINTEXT://127.0.0.1:{sasl}",
        "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256,OAUTHBEARER",
        "listener.name.sasl_plaintext.plain.sasl.jaas.config": plain_jaas(USERS),
        "listener.name.sasl_plaintext.oauthbearer.sasl.jaas.config": OAUTH_JAAS,
        "connection.failed.authentication.delay.ms": "0", **extra,
    }, data_dir=data_dir, port=plain).start()
    return broker, sasl


@pytest.fixture(scope="module")
def reauth(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[EmbeddedBroker, int]]:
    broker, port = _broker(Path(tmp_path_factory.mktemp("reauth")), **{"connections.max.reauth.ms": str(REAUTH_MS)})
    try:
        add_scram_user(broker.bootstrap, "bob", "bob-secret")
        yield broker, port
    finally:
        broker.stop()


CLIENTS = {
    "PLAIN": {"sasl.username": "alice", "sasl.password": "alice-secret"},
    "SCRAM-SHA-256": {"sasl.username": "bob", "sasl.password": "bob-secret"},
    "OAUTHBEARER": {"enable.sasl.oauthbearer.unsecure.jwt": True, "sasl.oauthbearer.config": "principal=carol"},
}


@pytest.mark.parametrize("mechanism", list(CLIENTS))
def test_confluent_produces_across_re_authentications(reauth: Any, mechanism: str, caplog: Any) -> None:
    caplog.set_level(logging.DEBUG, logger="broker.security")
    _, port = reauth
    errors: list[Any] = []
    producer = Producer({"bootstrap.servers": f"127.0.0.1:{port}", "security.protocol": "SASL_PLAINTEXT",
                         "sasl.mechanism": mechanism, **CLIENTS[mechanism], "linger.ms": 0})
    deadline = time.monotonic() + 3 * REAUTH_MS / 1000 + 1
    sent = 0
    while time.monotonic() < deadline:
        producer.produce(f"reauth-{mechanism.lower()}", b"m%d" % sent, on_delivery=lambda e, _m: errors.append(e))
        sent += 1
        producer.poll(0.2)
    assert producer.flush(15) == 0
    assert errors == [None] * sent
    again = [r for r in caplog.records if "re-authenticated" in r.getMessage() and mechanism in r.getMessage()]
    assert len(again) >= 2, [r.getMessage() for r in caplog.records][-20:]
    assert not any("expired" in r.getMessage() for r in caplog.records)


def _authenticate(sock: socket.socket, user: str, correlation: int = 1) -> Any:
    assert roundtrip(sock, Handshake[1](mechanism="PLAIN"), correlation).error_code == 0
    token = f"\x00{user}\x00{USERS[user]}".encode()
    return roundtrip(sock, Authenticate[1](auth_bytes=token), correlation + 1)


def _closed(sock: socket.socket) -> bool:
    sock.settimeout(5)
    try:
        return sock.recv(1) == b""
    except ConnectionResetError:
        return True


def test_a_client_that_does_not_re_authenticate_is_disconnected(reauth: Any) -> None:
    _, port = reauth
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        response = _authenticate(s, "alice")
        assert response.error_code == 0 and 0 < response.session_lifetime_ms <= REAUTH_MS
        assert roundtrip(s, Metadata[9](topics=[], allow_auto_topic_creation=False), 3).brokers
        time.sleep(response.session_lifetime_ms / 1000 + 0.3)
        send(s, Metadata[9](topics=[], allow_auto_topic_creation=False), 4)
        assert _closed(s)


def test_re_authentication_on_the_connection(reauth: Any) -> None:
    _, port = reauth
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        assert _authenticate(s, "alice").error_code == 0
        time.sleep(1.1)  # Kafka allows one re-authentication a second
        again = _authenticate(s, "alice", 3)
        assert again.error_code == 0 and again.session_lifetime_ms > 0
        assert roundtrip(s, Metadata[9](topics=[], allow_auto_topic_creation=False), 5).brokers


def test_re_authentication_cannot_change_the_principal(reauth: Any) -> None:
    _, port = reauth
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        assert _authenticate(s, "alice").error_code == 0
        time.sleep(1.1)
        other = _authenticate(s, "admin", 3)
        assert other.error_code == ErrorCode.SASL_AUTHENTICATION_FAILED
        assert other.error_message == "Cannot change principals during re-authentication from User.alice: User.admin"
        assert _closed(s)


def test_re_authentication_cannot_change_the_mechanism(reauth: Any) -> None:
    _, port = reauth
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        assert _authenticate(s, "alice").error_code == 0
        time.sleep(1.1)
        assert roundtrip(s, Handshake[1](mechanism="SCRAM-SHA-256"), 3).error_code == 0  # Kafka answers it
        failed = roundtrip(s, Authenticate[1](auth_bytes=b"n,,n=bob,r=abc"), 4)
        assert failed.error_code == ErrorCode.SASL_AUTHENTICATION_FAILED
        assert "not supported for re-authentication of mechanism 'PLAIN'" in failed.error_message
        assert _closed(s)


def test_a_handshake_within_a_second_is_not_a_re_authentication(reauth: Any) -> None:
    _, port = reauth
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        assert _authenticate(s, "alice").error_code == 0
        assert roundtrip(s, Handshake[1](mechanism="PLAIN"), 3).error_code == 0  # the first one may start at once
        assert roundtrip(s, Authenticate[1](auth_bytes=b"\x00alice\x00alice-secret"), 4).error_code == 0
        assert roundtrip(s, Handshake[1](mechanism="PLAIN"), 5).error_code == ErrorCode.ILLEGAL_SASL_STATE


def _token(lifetime_s: float) -> bytes:
    def part(value: dict[str, Any]) -> str:
        return base64.urlsafe_b64encode(json.dumps(value).encode()).rstrip(b"=").decode()
    now = time.time()
    jws = f"{part({'alg': 'none'})}.{part({'sub': 'dave', 'iat': now, 'exp': now + lifetime_s})}."
    return f"n,,\x01auth=Bearer {jws}\x01\x01".encode()


def test_without_the_config_only_a_token_expiry_ends_a_session(tmp_path: Path) -> None:
    broker, port = _broker(tmp_path / "plain")
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
            response = _authenticate(s, "alice")
            assert response.error_code == 0 and response.session_lifetime_ms == 0
            assert roundtrip(s, Handshake[1](mechanism="PLAIN"), 3).error_code == ErrorCode.ILLEGAL_SASL_STATE
        with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
            assert roundtrip(s, Handshake[1](mechanism="OAUTHBEARER"), 1).error_code == 0
            response = roundtrip(s, Authenticate[1](auth_bytes=_token(30)), 2)
            assert response.error_code == 0 and 25_000 < response.session_lifetime_ms <= 31_000  # the token's 30 s
    finally:
        broker.stop()

"""What goes wrong, as a client sees it against Kafka, and the broker serving everyone else meanwhile: a wrong
password or an unknown user (PLAIN and SCRAM), no client certificate where one is required, a CA the client
does not trust; the one log line a failed authentication leaves (client address and principal, never the
secret); and the principal of a mutual-TLS client, its certificate's subject DN in Kafka's form."""

from __future__ import annotations

import asyncio
import logging
import socket
import ssl
from typing import Any

import pytest

from protocol import ApiKey, request_class
from tests.broker.wire import roundtrip
from tests.security.conftest import SCRAM_USERS

SCRAM_FAILED = "Authentication failed during authentication due to invalid credentials with SASL mechanism {}"


def confluent_errors(conf: dict[str, Any], seconds: float = 3.0) -> list[Any]:
    from confluent_kafka import Producer

    errors: list[Any] = []
    producer = Producer({**conf, "error_cb": errors.append, "reconnect.backoff.ms": 1000})
    deadline_polls = int(seconds / 0.2)
    for _ in range(deadline_polls):
        producer.poll(0.2)
        if errors:
            break
    return errors


def assert_still_serving(secured: Any) -> None:
    """A correct client on the SASL_SSL listener still produces after the failures."""
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": secured.bootstrap("SASL_SSL"), "security.protocol": "SASL_SSL",
                         "ssl.ca.location": str(secured.pki.ca), "sasl.mechanism": "SCRAM-SHA-256",
                         "sasl.username": "bob", "sasl.password": SCRAM_USERS["bob"]})
    producer.produce("still-serving", b"v")
    assert producer.flush(30) == 0


@pytest.mark.parametrize("mechanism,user,password,message", [
    ("PLAIN", "alice", "wrong", "Authentication failed: Invalid username or password"),
    ("PLAIN", "mallory", "x", "Authentication failed: Invalid username or password"),
    ("SCRAM-SHA-256", "bob", "wrong", SCRAM_FAILED.format("SCRAM-SHA-256")),
    ("SCRAM-SHA-512", "mallory", "x", SCRAM_FAILED.format("SCRAM-SHA-512")),
])
def test_confluent_authentication_failure(secured: Any, caplog: pytest.LogCaptureFixture, mechanism: str, user: str,
                                          password: str, message: str) -> None:
    from confluent_kafka import KafkaError

    caplog.set_level(logging.INFO, logger="broker.security")
    errors = confluent_errors({"bootstrap.servers": secured.bootstrap("SASL_PLAINTEXT"),
                               "security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": mechanism,
                               "sasl.username": user, "sasl.password": password})
    assert errors and errors[0].code() == KafkaError._AUTHENTICATION, errors
    assert message in errors[0].str()
    lines = [r.getMessage() for r in caplog.records if r.name == "broker.security" and "Failed authentication" in
             r.getMessage()]
    assert lines and f"User:{user}" in lines[0] and "127.0.0.1" in lines[0] and message in lines[0]
    assert not any(password in line for line in lines if password not in message)
    assert_still_serving(secured)


def test_kafka_python_authentication_failure(secured: Any) -> None:
    from kafka import KafkaProducer
    from kafka.errors import KafkaError

    with pytest.raises(KafkaError):
        KafkaProducer(bootstrap_servers=secured.bootstrap("SASL_SSL"), security_protocol="SASL_SSL",
                      ssl_cafile=str(secured.pki.ca), sasl_mechanism="SCRAM-SHA-512",
                      sasl_plain_username="carol", sasl_plain_password="wrong", bootstrap_timeout_ms=3000)
    assert_still_serving(secured)


def test_aiokafka_authentication_failure(secured: Any, caplog: pytest.LogCaptureFixture) -> None:
    from aiokafka import AIOKafkaProducer
    from aiokafka.errors import KafkaConnectionError

    async def run() -> None:
        producer = AIOKafkaProducer(bootstrap_servers=secured.bootstrap("SASL_PLAINTEXT"),
                                    security_protocol="SASL_PLAINTEXT", sasl_mechanism="SCRAM-SHA-256",
                                    sasl_plain_username="nobody", sasl_plain_password="x")
        try:
            with pytest.raises(KafkaConnectionError):
                await producer.start()
        finally:
            await producer.stop()

    caplog.set_level(logging.ERROR, logger="aiokafka")
    asyncio.run(run())
    assert any("SaslAuthenticationFailed" in r.getMessage() and SCRAM_FAILED.format("SCRAM-SHA-256") in r.getMessage()
               for r in caplog.records if r.name.startswith("aiokafka"))
    assert_still_serving(secured)


def test_mutual_tls_requires_a_client_certificate(secured: Any) -> None:
    from confluent_kafka import KafkaError

    errors = confluent_errors({"bootstrap.servers": secured.bootstrap("MTLS"), "security.protocol": "SSL",
                               "ssl.ca.location": str(secured.pki.ca)})
    assert errors and errors[0].code() in (KafkaError._TRANSPORT, KafkaError._SSL), errors
    assert "certificate required" in errors[0].str()
    assert_still_serving(secured)


def test_untrusted_server_certificate(secured: Any) -> None:
    from confluent_kafka import KafkaError

    errors = confluent_errors({"bootstrap.servers": secured.bootstrap("SSL"), "security.protocol": "SSL",
                               "ssl.ca.location": str(secured.pki.other_ca)})
    assert errors and errors[0].code() in (KafkaError._SSL, KafkaError._TRANSPORT), errors  # librdkafka says either
    assert "certificate verify failed" in errors[0].str()
    assert_still_serving(secured)


def _tls_client(secured: Any, mutual: bool) -> ssl.SSLContext:
    ctx = ssl.create_default_context(cafile=str(secured.pki.ca))
    if mutual:
        ctx.load_cert_chain(str(secured.pki.client_cert), str(secured.pki.client_key))
    return ctx


@pytest.mark.parametrize("listener,expected", [("MTLS", "dn"), ("SSL", "User:ANONYMOUS")])
def test_principal_of_a_tls_client(secured: Any, listener: str, expected: str) -> None:
    ctx = _tls_client(secured, mutual=True)
    Req = request_class(ApiKey.API_VERSIONS)
    with socket.create_connection(("127.0.0.1", secured.ports[listener]), timeout=10) as raw, \
            ctx.wrap_socket(raw, server_hostname="127.0.0.1") as s:
        assert roundtrip(s, Req[3](client_software_name="t", client_software_version="1"), 1).error_code == 0
        local_port = s.getsockname()[1]
        server = secured.broker.server
        principals = secured.broker.call(lambda: {c.peer[1]: c.principal for c in
                                                  server.socket_servers[listener].connections.values()})
    want = f"User:{secured.pki.client_dn}" if expected == "dn" else expected
    assert principals[local_port] == want

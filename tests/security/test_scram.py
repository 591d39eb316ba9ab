"""SCRAM-SHA-256 against RFC 7677's example exchange, the stored credential's text form, and the JAAS parser."""

from __future__ import annotations

import asyncio
import base64

import pytest

from broker.config.kafka_config import ConfigError
from broker.security import scram
from broker.security.sasl import parse_jaas

SALT = base64.b64decode("W22ZaJ0SNY7soEsUEjb6gQ==")
SERVER_NONCE = "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0"
CLIENT_FINAL = (b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
                b"p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=")


def _server(monkeypatch: pytest.MonkeyPatch, password: str = "pencil") -> scram.ScramServer:
    credential = scram.credential_from_password("SCRAM-SHA-256", password, 4096, SALT)
    monkeypatch.setattr(scram.secrets, "token_urlsafe", lambda n: SERVER_NONCE)

    async def lookup(user: str, mechanism: str) -> scram.ScramCredential | None:
        return credential if user == "user" else None

    return scram.ScramServer("SCRAM-SHA-256", lookup)


def test_rfc7677_exchange(monkeypatch: pytest.MonkeyPatch) -> None:
    server = _server(monkeypatch)
    first = asyncio.run(server.evaluate(b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO"))
    assert first == b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"
    assert asyncio.run(server.evaluate(CLIENT_FINAL)) == b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="
    assert server.complete and server.username == "user"


def test_wrong_password_and_unknown_user_fail(monkeypatch: pytest.MonkeyPatch) -> None:
    server = _server(monkeypatch, password="not-pencil")
    asyncio.run(server.evaluate(b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO"))
    with pytest.raises(scram.ScramError):
        asyncio.run(server.evaluate(CLIENT_FINAL))
    with pytest.raises(scram.ScramError):
        asyncio.run(_server(monkeypatch).evaluate(b"n,,n=nobody,r=abc"))
    for garbage in (b"\xff\xfe", b"p=tls-unique,,n=user,r=x", b"n,,r=x", b"n,,n=a=b,r=x"):
        with pytest.raises(scram.ScramError):
            asyncio.run(_server(monkeypatch).evaluate(garbage))


def test_client_and_server_agree() -> None:
    credential = scram.credential_from_password("SCRAM-SHA-512", "s3cret,=x", 4096)

    async def lookup(user: str, mechanism: str) -> scram.ScramCredential | None:
        return credential if user == "a,b=c" else None

    server = scram.ScramServer("SCRAM-SHA-512", lookup)
    client = scram.ScramClient("SCRAM-SHA-512", "a,b=c", "s3cret,=x")
    client.verify(asyncio.run(server.evaluate(client.final(asyncio.run(server.evaluate(client.first()))))))
    assert server.username == "a,b=c"


def test_credential_text_is_kafkas() -> None:
    c = scram.ScramCredential(b"salt", b"stored", b"server", 4096)
    assert c.to_text() == "salt=c2FsdA==,stored_key=c3RvcmVk,server_key=c2VydmVy,iterations=4096"
    assert scram.ScramCredential.from_text(c.to_text()) == c
    for bad in ("salt=c2FsdA==,iterations=4096", "x", "salt=!,stored_key=a,server_key=b,iterations=1"):
        with pytest.raises(ValueError):
            scram.ScramCredential.from_text(bad)


def test_jaas() -> None:
    module, options = parse_jaas('org.apache.kafka.common.security.plain.PlainLoginModule required '
                                 'username="admin" password="a \\"quoted\\" secret" user_bob=bob-pw;')
    assert module == "org.apache.kafka.common.security.plain.PlainLoginModule"
    assert options == {"username": "admin", "password": 'a "quoted" secret', "user_bob": "bob-pw"}
    for bad in ("PlainLoginModule", 'PlainLoginModule required username="a"', "PlainLoginModule maybe a=b;"):
        with pytest.raises(ConfigError):
            parse_jaas(bad)

"""SASL/OAUTHBEARER with Kafka's unsecured validator, over real sockets with confluent-kafka, kafka-python and
aiokafka on SASL_PLAINTEXT and SASL_SSL; invalid tokens fail as with Kafka (the `invalid_token` /
`insufficient_scope` exchange) and the broker keeps serving; ACLs apply to the token's principal."""

from __future__ import annotations

import asyncio
import base64
import json
import logging
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import KafkaError, Producer
from confluent_kafka.admin import (
    AclBinding,
    AclOperation,
    AclPermissionType,
    AdminClient,
    NewTopic,
    ResourcePatternType,
    ResourceType,
)

from broker.config.kafka_config import ConfigError
from broker.security.oauthbearer import InvalidToken, OAuthBearerServer, listener_validator, unsecured_validator
from broker.security.sasl_errors import AuthenticationFailed, InvalidSaslMessage
from broker.testing import EmbeddedBroker, free_port
from tests.security.support import Pki

JAAS = ("org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required "
        'unsecuredValidatorRequiredScope="kafka" unsecuredValidatorAllowableClockSkewMs="1000";')


def jws(claims: dict[str, Any], header: dict[str, Any] | None = None) -> str:
    def part(value: dict[str, Any]) -> str:
        return base64.urlsafe_b64encode(json.dumps(value).encode()).rstrip(b"=").decode()
    return f"{part(header or {'alg': 'none'})}.{part(claims)}."


def claims(sub: str = "alice", scope: Any = ("kafka",), lifetime_s: float = 3600, **more: Any) -> dict[str, Any]:
    now = time.time()
    return {"sub": sub, "iat": now, "exp": now + lifetime_s, "scope": list(scope), **more}


def first_message(token: str, authzid: str = "") -> bytes:
    return f"n,{'a=' + authzid if authzid else ''},\x01auth=Bearer {token}\x01\x01".encode()


# ---- the validator and the exchange ----------------------------------------------------------------------

VALIDATE = unsecured_validator({"unsecuredValidatorRequiredScope": "kafka"})


def test_a_valid_unsecured_token_names_its_principal_and_expiry() -> None:
    c = claims()
    assert VALIDATE(jws(c)) == ("alice", round(c["exp"] * 1000))
    assert unsecured_validator({"unsecuredValidatorPrincipalClaimName": "uid"})(jws({**c, "uid": "bob"}))[0] == "bob"
    assert VALIDATE(jws({**c, "scope": "kafka"}))[0] == "alice"  # a single scope may be a string


@pytest.mark.parametrize(("token", "reason"), [
    (jws(claims(lifetime_s=-5)), "Expiration Time"),
    (jws({k: v for k, v in claims().items() if k != "exp"}), "No expiration time"),
    (jws(claims(sub=" ")), "No principal name"),
    (jws(claims(), header={"alg": "HS256"}), "'none' for an algorithm"),
    (jws(claims()) + "c2ln", "must not contain a digital signature"),
    (jws(claims(iat=time.time() + 86_400)), "Issued At"),  # a day ahead: built at collection, run minutes later
    ("abc..def", "'..'"),
    ("only.two", "3 dot-separated"),
    ("e30.!!!.", "Base64"),
])
def test_invalid_tokens(token: str, reason: str) -> None:
    with pytest.raises(InvalidToken, match=reason):
        VALIDATE(token)


def test_a_missing_scope_is_insufficient_scope() -> None:
    with pytest.raises(InvalidToken) as e:
        VALIDATE(jws(claims(scope=["other"])))
    assert e.value.scope == "[kafka]"


def test_the_exchange_of_an_invalid_token_ends_with_kafkas_json() -> None:
    server = OAuthBearerServer(VALIDATE)
    challenge = asyncio.run(server.evaluate(first_message(jws(claims(scope=[])))))
    assert challenge == b'{"status":"insufficient_scope", "scope":"[kafka]"}'
    assert not server.complete
    with pytest.raises(AuthenticationFailed, match="insufficient_scope"):
        asyncio.run(server.evaluate(b"\x01"))
    expired = OAuthBearerServer(VALIDATE)
    assert asyncio.run(expired.evaluate(first_message(jws(claims(lifetime_s=-1))))) == b'{"status":"invalid_token"}'


@pytest.mark.parametrize("message", [
    b"garbage", b"n,,\x01auth=Bearer\x01\x01", b"n,,\x01auth=Basic abc\x01\x01", b"n,,\x01host=x\x01\x01",
    b"y,,\x01auth=Bearer a.b.\x01\x01",
])
def test_first_messages_that_do_not_parse(message: bytes) -> None:
    with pytest.raises(InvalidSaslMessage):
        asyncio.run(OAuthBearerServer(VALIDATE).evaluate(message))


def test_an_authorization_id_must_be_the_principal_and_extensions_pass() -> None:
    token = jws(claims())
    server = OAuthBearerServer(VALIDATE)
    assert asyncio.run(server.evaluate(
        f"n,a=alice,\x01auth=Bearer {token}\x01traceId=42\x01\x01".encode())) == b""
    assert server.complete and server.username == "alice"
    with pytest.raises(AuthenticationFailed, match="authorization id"):
        asyncio.run(OAuthBearerServer(VALIDATE).evaluate(first_message(token, authzid="mallory")))


def python_validator(token: str) -> tuple[str, int]:
    """A validator a user plugs in (sasl.server.callback.handler.class=module:attribute)."""
    if not token.startswith("e30"):
        raise InvalidToken("not ours")
    return "plugged", int(time.time() * 1000) + 60_000


def test_a_python_validator_is_the_hook_and_java_validators_are_refused() -> None:
    assert listener_validator({}, f"{__name__}:python_validator") is python_validator
    for name in ("org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler",
                 f"{__name__}:missing", "no_such_module_here:validate"):
        with pytest.raises(ConfigError):
            listener_validator({}, name)


# ---- stock clients -----------------------------------------------------------------------------------------

class OAuthBroker:
    def __init__(self, broker: EmbeddedBroker, ports: dict[str, int], pki: Pki) -> None:
        self.broker, self.ports, self.pki = broker, ports, pki

    def bootstrap(self, listener: str) -> str:
        return f"127.0.0.1:{self.ports[listener]}"


@pytest.fixture(scope="module")
def oauth(pki: Pki, tmp_path_factory: pytest.TempPathFactory) -> Iterator[OAuthBroker]:
    ports = {name: free_port() for name in ("PLAINTEXT", "SASL_PLAINTEXT", "SASL_SSL")}
    broker = EmbeddedBroker({
        "listeners": ",".join(f"{n}://127.0.0.1:{p}" for n, p in ports.items()),
        "ssl.keystore.type": "PEM", "ssl.keystore.location": str(pki.server),
        "ssl.truststore.type": "PEM", "ssl.truststore.location": str(pki.ca),
        "sasl.enabled.mechanisms": "OAUTHBEARER",
        "listener.name.sasl_plaintext.oauthbearer.sasl.jaas.config": JAAS,
        "listener.name.sasl_ssl.oauthbearer.sasl.jaas.config": JAAS,
        "authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
        "super.users": "User:ANONYMOUS",
        "connection.failed.authentication.delay.ms": "0",
    }, data_dir=Path(tmp_path_factory.mktemp("oauth")), port=ports["PLAINTEXT"]).start()
    try:
        admin = AdminClient({"bootstrap.servers": broker.bootstrap})
        for f in admin.create_topics([NewTopic(t, 1, 1) for t in ("oauth-topic", "other-topic")]).values():
            f.result(30)
        grants = [AclBinding(rtype, "oauth-", ResourcePatternType.PREFIXED, "User:alice", "*", AclOperation.ALL,
                             AclPermissionType.ALLOW) for rtype in (ResourceType.TOPIC, ResourceType.GROUP)]
        for f in admin.create_acls(grants).values():
            f.result(30)
        yield OAuthBroker(broker, ports, pki)
    finally:
        broker.stop()


def confluent_conf(oauth: OAuthBroker, listener: str, principal: str = "alice",
                   scope: str = "kafka") -> dict[str, Any]:
    conf = {"bootstrap.servers": oauth.bootstrap(listener), "security.protocol": listener,
            "sasl.mechanism": "OAUTHBEARER", "enable.sasl.oauthbearer.unsecure.jwt": True,
            "sasl.oauthbearer.config": f"principal={principal} scope={scope}"}
    if listener == "SASL_SSL":
        conf["ssl.ca.location"] = str(oauth.pki.ca)
    return conf


def confluent_produce(conf: dict[str, Any], topic: str, n: int = 5) -> list[KafkaError | None]:
    results: list[KafkaError | None] = []
    producer = Producer({"message.timeout.ms": 10000, **conf})
    for i in range(n):
        producer.produce(topic, b"m%d" % i, on_delivery=lambda err, _m: results.append(err))
    producer.flush(20)
    return results


@pytest.mark.parametrize("listener", ["SASL_PLAINTEXT", "SASL_SSL"])
def test_confluent_produces_and_consumes(oauth: OAuthBroker, listener: str) -> None:
    from confluent_kafka import Consumer

    conf = confluent_conf(oauth, listener)
    assert confluent_produce(conf, "oauth-topic") == [None] * 5
    consumer = Consumer({**conf, "group.id": f"oauth-{listener}", "auto.offset.reset": "earliest"})
    consumer.subscribe(["oauth-topic"])
    got = 0
    try:
        for _ in range(40):
            m = consumer.poll(0.5)
            if m is not None and m.error() is None:
                got += 1
            if got >= 5:
                break
    finally:
        consumer.close()
    assert got >= 5


def test_acls_apply_to_the_tokens_principal(oauth: OAuthBroker) -> None:
    refused = confluent_produce(confluent_conf(oauth, "SASL_PLAINTEXT"), "other-topic", 1)
    assert refused and refused[0] is not None and refused[0].code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
    bob = confluent_produce(confluent_conf(oauth, "SASL_PLAINTEXT", principal="bob"), "oauth-topic", 1)
    assert bob and bob[0] is not None and bob[0].code() == KafkaError.TOPIC_AUTHORIZATION_FAILED


def test_confluent_without_the_required_scope_fails_and_others_go_on(oauth: OAuthBroker, caplog: Any) -> None:
    caplog.set_level(logging.INFO, logger="broker.security")
    failed = confluent_produce({**confluent_conf(oauth, "SASL_PLAINTEXT", scope="other"),
                                "message.timeout.ms": 3000}, "oauth-topic", 1)
    assert failed and failed[0] is not None
    assert any("insufficient_scope" in r.getMessage() and "127.0.0.1" in r.getMessage() for r in caplog.records)
    assert confluent_produce(confluent_conf(oauth, "SASL_PLAINTEXT"), "oauth-topic", 1) == [None]


class KafkaPythonTokens:
    def __init__(self, token: str) -> None:
        self._token = token

    def token(self) -> str:
        return self._token

    def extensions(self) -> dict[str, str]:
        return {}


def kafka_python_conf(oauth: OAuthBroker, listener: str, token: str) -> dict[str, Any]:
    from kafka.net.sasl.oauth import AbstractTokenProvider

    provider = type("Provider", (KafkaPythonTokens, AbstractTokenProvider), {})(token)
    conf: dict[str, Any] = {"bootstrap_servers": oauth.bootstrap(listener), "security_protocol": listener,
                            "sasl_mechanism": "OAUTHBEARER", "sasl_oauth_token_provider": provider}
    if listener == "SASL_SSL":
        conf["ssl_cafile"] = str(oauth.pki.ca)
    return conf


@pytest.mark.parametrize("listener", ["SASL_PLAINTEXT", "SASL_SSL"])
def test_kafka_python(oauth: OAuthBroker, listener: str) -> None:
    from kafka import KafkaProducer

    producer = KafkaProducer(**kafka_python_conf(oauth, listener, jws(claims())))
    try:
        assert producer.send("oauth-topic", b"kp").get(15).offset >= 0
    finally:
        producer.close(5)


def test_kafka_python_with_an_expired_token_cannot_connect(oauth: OAuthBroker, caplog: Any) -> None:
    caplog.set_level(logging.INFO, logger="broker.security")
    from kafka import KafkaProducer
    from kafka.errors import KafkaError as KafkaPythonError

    with pytest.raises(KafkaPythonError):
        KafkaProducer(**kafka_python_conf(oauth, "SASL_PLAINTEXT", jws(claims(lifetime_s=-10))),
                      bootstrap_timeout_ms=3000)
    assert any("invalid_token" in r.getMessage() for r in caplog.records)
    token = jws(claims(lifetime_s=-10))
    assert not any(token in r.getMessage() for r in caplog.records)  # the token is never logged


@pytest.mark.parametrize("listener", ["SASL_PLAINTEXT", "SASL_SSL"])
def test_aiokafka(oauth: OAuthBroker, listener: str) -> None:
    from aiokafka import AIOKafkaProducer
    from aiokafka.abc import AbstractTokenProvider
    from aiokafka.helpers import create_ssl_context

    class Tokens(AbstractTokenProvider):
        async def token(self) -> str:
            return jws(claims())

    async def run() -> int:
        ssl_context = create_ssl_context(cafile=str(oauth.pki.ca)) if listener == "SASL_SSL" else None
        producer = AIOKafkaProducer(bootstrap_servers=oauth.bootstrap(listener), security_protocol=listener,
                                    sasl_mechanism="OAUTHBEARER", sasl_oauth_token_provider=Tokens(),
                                    ssl_context=ssl_context)
        await producer.start()
        try:
            return (await producer.send_and_wait("oauth-topic", b"aio")).offset
        finally:
            await producer.stop()

    assert asyncio.run(run()) >= 0


@pytest.mark.skipif(shutil.which("kcat") is None, reason="the kcat binary is not installed")
@pytest.mark.parametrize(("listener", "scope", "works"), [
    ("SASL_SSL", "kafka", True), ("SASL_PLAINTEXT", "kafka", True), ("SASL_PLAINTEXT", "other", False)])
def test_kcat(oauth: OAuthBroker, listener: str, scope: str, works: bool) -> None:
    settings = [x for k, v in confluent_conf(oauth, listener, scope=scope).items() if k != "bootstrap.servers"
                for x in ("-X", f"{k}={str(v).lower() if isinstance(v, bool) else v}")]
    line = f"kcat-{listener}-{scope}".encode()
    produced = subprocess.run(["kcat", "-b", oauth.bootstrap(listener), *settings, "-P", "-t", "oauth-topic",
                               "-X", "message.timeout.ms=5000"], input=line + b"\n", capture_output=True, timeout=60)
    if not works:  # kcat reports the broker's insufficient_scope and fails, as against Kafka
        assert produced.returncode != 0 and b"insufficient_scope" in produced.stderr, produced.stderr[-500:]
        return
    assert produced.returncode == 0, produced.stderr.decode()[-1000:]
    consumed = subprocess.run(["kcat", "-b", oauth.bootstrap(listener), *settings, "-C", "-t", "oauth-topic",
                               "-o", "beginning", "-e", "-q"], capture_output=True, timeout=60)
    assert consumed.returncode == 0 and line in consumed.stdout.splitlines(), consumed.stderr.decode()[-1000:]

"""Stock clients on every security protocol: confluent-kafka (librdkafka), kafka-python and aiokafka produce and
consume in a group over SSL (server-only and mutual TLS), SASL_PLAINTEXT and SASL_SSL with PLAIN, SCRAM-SHA-256
and SCRAM-SHA-512, each with its own client settings as it would use them against Kafka; kcat produces and
consumes on three of the cases. The group's coordinator and the partition leaders are found through Metadata
and FindCoordinator on the same listener, so these also prove both answer with that listener's endpoints."""

from __future__ import annotations

import asyncio
import shutil
import subprocess
import time
from typing import Any

import pytest

from tests.security.conftest import SCRAM_USERS
from tests.security.support import PLAIN_USERS

N = 50

# (listener, mechanism or None, user, mutual TLS)
CASES = {
    "ssl": ("SSL", None, None, False),
    "mtls": ("MTLS", None, None, True),
    "sasl_plaintext-plain": ("SASL_PLAINTEXT", "PLAIN", "alice", False),
    "sasl_plaintext-scram256": ("SASL_PLAINTEXT", "SCRAM-SHA-256", "bob", False),
    "sasl_ssl-scram512": ("SASL_SSL", "SCRAM-SHA-512", "carol", False),
    "sasl_ssl-plain": ("SASL_SSL", "PLAIN", "admin", False),
}


def _password(user: str) -> str:
    return {**PLAIN_USERS, **SCRAM_USERS}[user]


def _protocol(listener: str) -> str:
    return "SSL" if listener == "MTLS" else listener


# Each client's names for: bootstrap, protocol, CA file, certificate, key, mechanism, user name, password.
CONFLUENT_KEYS = ("bootstrap.servers", "security.protocol", "ssl.ca.location", "ssl.certificate.location",
                  "ssl.key.location", "sasl.mechanism", "sasl.username", "sasl.password")
KAFKA_PYTHON_KEYS = ("bootstrap_servers", "security_protocol", "ssl_cafile", "ssl_certfile", "ssl_keyfile",
                     "sasl_mechanism", "sasl_plain_username", "sasl_plain_password")


def client_conf(secured: Any, case: str, keys: tuple[str, ...]) -> dict[str, Any]:
    listener, mechanism, user, mutual = CASES[case]
    bootstrap, protocol, ca, cert, key, mech, username, password = keys
    conf: dict[str, Any] = {bootstrap: secured.bootstrap(listener), protocol: _protocol(listener)}
    if listener.endswith("SSL") or listener == "MTLS":
        conf[ca] = str(secured.pki.ca)
    if mutual:
        conf[cert] = str(secured.pki.client_cert)
        conf[key] = str(secured.pki.client_key)
    if mechanism:
        conf.update({mech: mechanism, username: user, password: _password(user)})
    return conf


def aiokafka_conf(secured: Any, case: str) -> dict[str, Any]:
    from aiokafka.helpers import create_ssl_context

    listener, mechanism, user, mutual = CASES[case]
    conf: dict[str, Any] = {"bootstrap_servers": secured.bootstrap(listener), "security_protocol": _protocol(listener)}
    if listener.endswith("SSL") or listener == "MTLS":
        conf["ssl_context"] = create_ssl_context(
            cafile=str(secured.pki.ca), certfile=str(secured.pki.client_cert) if mutual else None,
            keyfile=str(secured.pki.client_key) if mutual else None)
    if mechanism:
        conf.update({"sasl_mechanism": mechanism, "sasl_plain_username": user, "sasl_plain_password": _password(user)})
    return conf


def _values(tag: str) -> list[bytes]:
    return [f"{tag}-{i}".encode() * (1 + i % 7) for i in range(N)]


@pytest.mark.parametrize("case", list(CASES))
def test_confluent(secured: Any, case: str) -> None:
    from confluent_kafka import Consumer, Producer

    conf = client_conf(secured, case, CONFLUENT_KEYS)
    topic = f"cf-{case}"
    sent = _values(topic)
    producer = Producer({**conf, "acks": "all"})
    for v in sent:
        producer.produce(topic, v)
    assert producer.flush(30) == 0
    consumer = Consumer({**conf, "group.id": f"g-{topic}", "auto.offset.reset": "earliest"})
    consumer.subscribe([topic])
    got: list[bytes] = []
    deadline = time.monotonic() + 30
    try:
        while len(got) < N and time.monotonic() < deadline:
            m = consumer.poll(0.5)
            if m is not None and m.error() is None:
                got.append(m.value())
        consumer.commit(asynchronous=False)
    finally:
        consumer.close()
    assert got == sent


@pytest.mark.parametrize("case", list(CASES))
def test_kafka_python(secured: Any, case: str) -> None:
    from kafka import KafkaConsumer, KafkaProducer

    conf = client_conf(secured, case, KAFKA_PYTHON_KEYS)
    topic = f"kp-{case}"
    sent = _values(topic)
    producer = KafkaProducer(acks="all", **conf)
    try:
        for f in [producer.send(topic, v) for v in sent]:
            f.get(timeout=30)
    finally:
        producer.close(10)
    consumer = KafkaConsumer(topic, group_id=f"g-{topic}", auto_offset_reset="earliest", fetch_max_wait_ms=100,
                             **conf)
    got: list[bytes] = []
    deadline = time.monotonic() + 30
    try:
        while len(got) < N and time.monotonic() < deadline:
            for records in consumer.poll(timeout_ms=500).values():
                got.extend(r.value for r in records)
        consumer.commit()
    finally:
        consumer.close()
    assert got == sent


@pytest.mark.parametrize("case", list(CASES))
def test_aiokafka(secured: Any, case: str) -> None:
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer

    topic = f"aio-{case}"
    sent = _values(topic)

    async def run() -> list[bytes]:
        producer = AIOKafkaProducer(acks="all", **aiokafka_conf(secured, case))
        await producer.start()
        try:
            for v in sent:
                await producer.send_and_wait(topic, v)
        finally:
            await producer.stop()
        consumer = AIOKafkaConsumer(topic, group_id=f"g-{topic}", auto_offset_reset="earliest",
                                    fetch_max_wait_ms=100, **aiokafka_conf(secured, case))
        await consumer.start()
        got: list[bytes] = []
        try:
            deadline = time.monotonic() + 30
            while len(got) < N and time.monotonic() < deadline:
                for records in (await consumer.getmany(timeout_ms=500)).values():
                    got.extend(r.value for r in records)
            await consumer.commit()
        finally:
            await consumer.stop()
        return got

    assert asyncio.run(run()) == sent


@pytest.mark.skipif(shutil.which("kcat") is None, reason="the kcat binary is not installed")
@pytest.mark.parametrize("case", list(CASES))
def test_kcat(secured: Any, case: str) -> None:
    settings = [x for k, v in client_conf(secured, case, CONFLUENT_KEYS).items() if k != "bootstrap.servers"
                for x in ("-X", f"{k}={v}")]
    bootstrap = ["-b", secured.bootstrap(CASES[case][0])]
    topic = f"kcat-{case}"
    sent = [f"{topic}-{i}" for i in range(N)]

    def kcat(*args: str, stdin: bytes | None = None) -> bytes:
        proc = subprocess.run(["kcat", *bootstrap, *settings, *args], input=stdin, capture_output=True, timeout=60)
        assert proc.returncode == 0, proc.stderr.decode()[-2000:]
        return proc.stdout

    kcat("-P", "-t", topic, "-p", "0", stdin="\n".join(sent).encode() + b"\n")
    assert kcat("-C", "-t", topic, "-p", "0", "-o", "beginning", "-e", "-q").decode().splitlines() == sent

"""Key and trust stores in Java's formats (PKCS12, JKS — Kafka's default type) on a mutual-TLS listener.

The stores are made here from the test PKI: PKCS12 with `cryptography` and, as a Kafka user makes them, with
Java's `keytool` (JKS key store with its own key password, JKS and PKCS12 trust stores). A broker started on
them serves confluent-kafka over mutual TLS; a wrong password stops the start with one line that never
shows the password."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer
from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.serialization import pkcs12

from broker.config.kafka_config import ConfigError
from broker.security.key_stores import KeyStoreError, read_key_store, read_trust_store
from broker.testing import EmbeddedBroker, free_port
from tests.security.support import Pki

STORE_PASSWORD = "store-secret-1"
KEY_PASSWORD = "key-secret-2"

needs_keytool = pytest.mark.skipif(shutil.which("keytool") is None, reason="Java's keytool is not installed")


def _p12(pki: Pki, path: Path, password: str) -> Path:
    key = serialization.load_pem_private_key(pki.server_key.read_bytes(), None)
    chain = x509.load_pem_x509_certificates(pki.server_chain.read_bytes())
    path.write_bytes(pkcs12.serialize_key_and_certificates(
        b"server", key, chain[0], chain[1:], serialization.BestAvailableEncryption(password.encode())))  # type: ignore[arg-type]
    return path


def _keytool(*args: str) -> None:
    subprocess.run(["keytool", *args], check=True, capture_output=True, timeout=120)


def _jks_key_store(pki: Pki, directory: Path) -> Path:
    p12 = _p12(pki, directory / "server-for-jks.p12", STORE_PASSWORD)
    jks = directory / "server.jks"
    _keytool("-importkeystore", "-srckeystore", str(p12), "-srcstoretype", "PKCS12", "-srcstorepass",
             STORE_PASSWORD, "-destkeystore", str(jks), "-deststoretype", "JKS", "-deststorepass", STORE_PASSWORD,
             "-destkeypass", KEY_PASSWORD, "-srcalias", "server", "-destalias", "server", "-noprompt")
    return jks


def _trust_store(pki: Pki, directory: Path, store_type: str) -> Path:
    path = directory / f"trust.{store_type.lower()}"
    _keytool("-importcert", "-noprompt", "-alias", "ca", "-file", str(pki.ca), "-keystore", str(path),
             "-storetype", store_type, "-storepass", STORE_PASSWORD)
    return path


def _start(pki: Pki, data_dir: Path, stores: dict[str, str]) -> tuple[EmbeddedBroker, str]:
    plain, mtls = free_port(), free_port()
    broker = EmbeddedBroker({
        "listeners": f"PLAINTEXT://127.0.0.1:{plain},MTLS://127.0.0.1:{mtls}",
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,MTLS:SSL",
        "listener.name.mtls.ssl.client.auth": "required", **stores,
    }, data_dir=data_dir, port=plain).start()
    return broker, f"127.0.0.1:{mtls}"


def _round_trip(pki: Pki, bootstrap: str, topic: str) -> list[bytes]:
    tls = {"bootstrap.servers": bootstrap, "security.protocol": "SSL", "ssl.ca.location": str(pki.ca),
           "ssl.certificate.location": str(pki.client_cert), "ssl.key.location": str(pki.client_key)}
    producer = Producer({**tls, "message.timeout.ms": 15000})
    for i in range(5):
        producer.produce(topic, b"v%d" % i)
    assert producer.flush(20) == 0
    consumer = Consumer({**tls, "group.id": "stores", "auto.offset.reset": "earliest"})
    consumer.subscribe([topic])
    got: list[bytes] = []
    try:
        for _ in range(40):
            m = consumer.poll(0.5)
            if m is not None and m.error() is None:
                got.append(m.value())
            if len(got) == 5:
                break
    finally:
        consumer.close()
    return got


def test_pkcs12_key_and_trust_stores(pki: Pki, tmp_path: Path) -> None:
    key_store = _p12(pki, tmp_path / "server.p12", STORE_PASSWORD)
    ca = x509.load_pem_x509_certificate(pki.ca.read_bytes())
    trust = tmp_path / "trust.p12"
    trust.write_bytes(pkcs12.serialize_key_and_certificates(
        None, None, None, [ca], serialization.BestAvailableEncryption(STORE_PASSWORD.encode())))
    broker, mtls = _start(pki, tmp_path / "data", {
        "ssl.keystore.type": "PKCS12", "ssl.keystore.location": str(key_store),
        "ssl.keystore.password": STORE_PASSWORD,
        "ssl.truststore.type": "PKCS12", "ssl.truststore.location": str(trust),
        "ssl.truststore.password": STORE_PASSWORD})
    try:
        assert _round_trip(pki, mtls, "pkcs12") == [b"v%d" % i for i in range(5)]
    finally:
        broker.stop()


@needs_keytool
def test_jks_stores_made_by_keytool(pki: Pki, tmp_path: Path) -> None:
    # Kafka's default store type, with a key password of its own, as `keytool` makes them.
    broker, mtls = _start(pki, tmp_path / "data", {
        "ssl.keystore.location": str(_jks_key_store(pki, tmp_path)),
        "ssl.keystore.password": STORE_PASSWORD, "ssl.key.password": KEY_PASSWORD,
        "ssl.truststore.location": str(_trust_store(pki, tmp_path, "JKS")),
        "ssl.truststore.password": STORE_PASSWORD})
    try:
        assert _round_trip(pki, mtls, "jks") == [b"v%d" % i for i in range(5)]
    finally:
        broker.stop()


@needs_keytool
def test_trust_stores_made_by_keytool_read_as_java_reads_them(pki: Pki, tmp_path: Path) -> None:
    ca_der = x509.load_pem_x509_certificate(pki.ca.read_bytes()).public_bytes(serialization.Encoding.DER)
    for store_type in ("JKS", "PKCS12"):
        pem = read_trust_store(store_type, str(_trust_store(pki, tmp_path, store_type)), STORE_PASSWORD)
        assert [c.public_bytes(serialization.Encoding.DER) for c in x509.load_pem_x509_certificates(pem.encode())] \
            == [ca_der]
    # A JKS trust store without a password is read without its integrity check, as Java does.
    assert read_trust_store("JKS", str(tmp_path / "trust.jks"), None)


@needs_keytool
def test_wrong_passwords_are_refused_without_showing_them(pki: Pki, tmp_path: Path) -> None:
    jks = str(_jks_key_store(pki, tmp_path))
    with pytest.raises(KeyStoreError, match="ssl.key.password") as key_error:
        read_key_store("JKS", jks, STORE_PASSWORD, "not-the-key-password")
    with pytest.raises(KeyStoreError, match="password is wrong") as store_error:
        read_key_store("JKS", jks, "not-the-store-password", KEY_PASSWORD)
    for e in (key_error, store_error):
        assert "not-the" not in str(e.value) and KEY_PASSWORD not in str(e.value)
    # the key's password defaults to the store's (Kafka's DefaultSslEngineFactory): here it differs
    with pytest.raises(KeyStoreError):
        read_key_store("JKS", jks, STORE_PASSWORD, None)
    key_pem, chain_pem = read_key_store("JKS", jks, STORE_PASSWORD, KEY_PASSWORD)
    assert serialization.load_pem_private_key(key_pem, None).public_key().public_numbers() == \
        x509.load_pem_x509_certificates(chain_pem)[0].public_key().public_numbers()


def test_a_wrong_pkcs12_password_stops_the_start(pki: Pki, tmp_path: Path, caplog: Any) -> None:
    key_store = _p12(pki, tmp_path / "server.p12", STORE_PASSWORD)
    with pytest.raises((ConfigError, RuntimeError)) as e:
        _start(pki, tmp_path / "data", {
            "ssl.keystore.type": "PKCS12", "ssl.keystore.location": str(key_store),
            "ssl.keystore.password": "wrong-password-3", "ssl.truststore.type": "PEM",
            "ssl.truststore.location": str(pki.ca)})
    assert "cannot load the key store" in str(e.value)
    assert "wrong-password-3" not in str(e.value)
    assert not any("wrong-password-3" in r.getMessage() for r in caplog.records)


def test_a_truncated_jks_store_is_a_clear_error(pki: Pki, tmp_path: Path) -> None:
    path = tmp_path / "cut.jks"
    path.write_bytes(bytes.fromhex("feedfeed0000000200000001") + b"\x00\x00\x00\x01\x00\x05ser")
    with pytest.raises(KeyStoreError, match="truncated"):
        read_key_store("JKS", str(path), STORE_PASSWORD, None)
    path.write_bytes(b"PK\x03\x04 not a store")
    with pytest.raises(KeyStoreError, match="not a JKS"):
        read_key_store("JKS", str(path), STORE_PASSWORD, None)

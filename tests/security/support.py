"""Certificates and a secured broker for the security tests.

- `Pki`: a CA and leaf certificates made for this test run with trustme (nothing is checked in): the server's
  for 127.0.0.1/localhost, a client's for mutual TLS, and a CA the broker does not trust.
- `secured_props(pki, ports)`: Kafka properties for one broker with five listeners — PLAINTEXT, SSL
  (server-only TLS), MTLS (SSL with ssl.client.auth=required), SASL_PLAINTEXT and SASL_SSL — PEM stores,
  PLAIN users from the listeners' JAAS configs and SCRAM enabled.
- `add_scram_user(bootstrap, user, password)`: SCRAM-SHA-256 and -512 credentials through confluent-kafka's
  AdminClient (AlterUserScramCredentials on the PLAINTEXT listener).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import trustme

LISTENERS = ("PLAINTEXT", "SSL", "MTLS", "SASL_PLAINTEXT", "SASL_SSL")
PLAIN_USERS = {"admin": "admin-secret", "alice": "alice-secret"}


@dataclass
class Pki:
    dir: Path
    ca: Path
    server: Path  # key and certificate chain in one PEM file (ssl.keystore.location)
    server_key: Path
    server_chain: Path
    client_cert: Path
    client_key: Path
    client_dn: str  # RFC 4514 form, as an independent library writes it
    other_ca: Path

    @classmethod
    def make(cls, directory: Path) -> Pki:
        from cryptography import x509

        ca = trustme.CA()
        server = ca.issue_cert("127.0.0.1", "localhost")
        client = ca.issue_cert("client.example", common_name="client")
        paths = {name: directory / name for name in
                 ("ca.pem", "server.pem", "server.key", "server.crt", "client.crt", "client.key", "other-ca.pem")}
        ca.cert_pem.write_to_path(paths["ca.pem"])
        server.private_key_and_cert_chain_pem.write_to_path(paths["server.pem"])
        server.private_key_pem.write_to_path(paths["server.key"])
        paths["server.crt"].write_bytes(b"".join(c.bytes() for c in server.cert_chain_pems))
        client.cert_chain_pems[0].write_to_path(paths["client.crt"])
        client.private_key_pem.write_to_path(paths["client.key"])
        trustme.CA().cert_pem.write_to_path(paths["other-ca.pem"])
        dn = x509.load_pem_x509_certificate(client.cert_chain_pems[0].bytes()).subject.rfc4514_string()
        return cls(directory, paths["ca.pem"], paths["server.pem"], paths["server.key"], paths["server.crt"],
                   paths["client.crt"], paths["client.key"], dn, paths["other-ca.pem"])


def plain_jaas(users: dict[str, str], username: str = "admin") -> str:
    options = " ".join(f'user_{u}="{p}"' for u, p in users.items())
    return ("org.apache.kafka.common.security.plain.PlainLoginModule required "
            f'username="{username}" password="{users[username]}" {options};')


def secured_props(pki: Pki, ports: dict[str, int]) -> dict[str, str]:
    return {
        "listeners": ",".join(f"{name}://127.0.0.1:{ports[name]}" for name in LISTENERS),
        "listener.security.protocol.map":
            "PLAINTEXT:PLAINTEXT,SSL:SSL,MTLS:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL",
        "inter.broker.listener.name": "PLAINTEXT",
        "ssl.keystore.type": "PEM",
        "ssl.keystore.location": str(pki.server),
        "ssl.truststore.type": "PEM",
        "ssl.truststore.location": str(pki.ca),
        "listener.name.mtls.ssl.client.auth": "required",
        "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512",
        "listener.name.sasl_plaintext.plain.sasl.jaas.config": plain_jaas(PLAIN_USERS),
        "listener.name.sasl_ssl.plain.sasl.jaas.config": plain_jaas(PLAIN_USERS),
        # No delay on failed authentication, so the failure tests do not wait for it (Kafka's default is 100).
        "connection.failed.authentication.delay.ms": "0",
    }


def add_scram_user(bootstrap: str, user: str, password: str) -> None:
    from confluent_kafka.admin import (
        AdminClient,
        ScramCredentialInfo,
        ScramMechanism,
        UserScramCredentialUpsertion,
    )

    admin = AdminClient({"bootstrap.servers": bootstrap})
    futures = admin.alter_user_scram_credentials([
        UserScramCredentialUpsertion(user, ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 4096),
                                     password.encode()),
        UserScramCredentialUpsertion(user, ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 8192),
                                     password.encode())])
    for future in futures.values():
        future.result(30)

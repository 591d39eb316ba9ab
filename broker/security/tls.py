"""TLS for a listener, with Python's `ssl` module, configured by Kafka's `ssl.*` keys.

Contract:
- `server_context(config, listener)` builds the listener's `ssl.SSLContext`: key store from
  `ssl.keystore.location` (a PEM file holding the private key and the certificate chain) or from the inline
  `ssl.keystore.key` + `ssl.keystore.certificate.chain`, the key decrypted with `ssl.key.password`; trust store
  from `ssl.truststore.location` or the inline `ssl.truststore.certificates`; `ssl.client.auth`
  none/requested/required; the TLS versions `ssl.enabled.protocols` names. Stores of type PEM, PKCS12 or JKS
  (`ssl.keystore.type`, `ssl.truststore.type`, Kafka's default JKS; broker.security.key_stores reads the Java
  formats with `ssl.keystore.password`, `ssl.key.password`, `ssl.truststore.password`).
- `client_context(config, listener)` is the same for the broker's own connections to that listener (the
  inter-broker listener): it trusts the trust store, presents the key store, and checks host names when
  `ssl.endpoint.identification.algorithm` is `https` (Kafka's default).
- `principal_name(peercert)` is Kafka's default principal of a client certificate: its subject
  distinguished name as Java's X500Principal.getName() writes it (RFC 2253: the last RDN first, short
  attribute names, special characters escaped), e.g. `CN=client,O=Example,C=US`; `ANONYMOUS` without one.
- `principal_builder(config, listener)` is the listener's principal of a TLS connection: that DN mapped by
  `ssl.principal.mapping.rules` (broker.security.principal_mapping; rules that do not parse are a start-up
  error), `ANONYMOUS` without a client certificate; it raises NoMatchingRule when no rule applies.
"""

from __future__ import annotations

import os
import ssl
import tempfile
from collections.abc import Callable
from typing import Any

from broker.config.kafka_config import ConfigError, KafkaConfig
from broker.security.key_stores import KeyStoreError, read_key_store, read_trust_store
from broker.security.principal_mapping import InvalidRule, SslPrincipalMapper

_VERSIONS = {"TLSv1.2": ssl.TLSVersion.TLSv1_2, "TLSv1.3": ssl.TLSVersion.TLSv1_3,
             "TLSv1.1": ssl.TLSVersion.TLSv1_1, "TLSv1": ssl.TLSVersion.TLSv1}
_STORE_TYPES = ("PEM", "PKCS12", "JKS")
_CLIENT_AUTH = {"none": ssl.CERT_NONE, "requested": ssl.CERT_OPTIONAL, "required": ssl.CERT_REQUIRED}

# RFC 2253 short names, as Java's X500Principal writes them; Python's ssl module reports the long names.
_SHORT_NAMES = {"commonName": "CN", "countryName": "C", "localityName": "L", "stateOrProvinceName": "ST",
                "organizationName": "O", "organizationalUnitName": "OU", "streetAddress": "STREET",
                "domainComponent": "DC", "userId": "UID"}
# OIDs of the attributes X500Principal.getName() prints by OID (RFC 2253 knows no short name for them).
_OIDS = {"emailAddress": "1.2.840.113549.1.9.1", "serialNumber": "2.5.4.5", "title": "2.5.4.12",
         "surname": "2.5.4.4", "givenName": "2.5.4.42", "initials": "2.5.4.43",
         "generationQualifier": "2.5.4.44", "dnQualifier": "2.5.4.46", "pseudonym": "2.5.4.65",
         "postalCode": "2.5.4.17", "businessCategory": "2.5.4.15"}


def _value(config: KafkaConfig, listener: str, key: str) -> Any:
    value = config.listener_value(listener, key)
    return getattr(value, "value", value)  # PASSWORD values are wrapped so they never print


def _protocol_range(config: KafkaConfig, listener: str) -> tuple[ssl.TLSVersion, ssl.TLSVersion]:
    names = [n.strip() for n in _value(config, listener, "ssl.enabled.protocols") or [] if n.strip()]
    unknown = [n for n in names if n not in _VERSIONS]
    if unknown or not names:
        raise ConfigError(f"ssl.enabled.protocols: {','.join(unknown) or '(empty)'} not supported; "
                          f"use {', '.join(_VERSIONS)}")
    versions = sorted(_VERSIONS[n] for n in names)
    return versions[0], versions[-1]


def _load_key_store(ctx: ssl.SSLContext, config: KafkaConfig, listener: str, required: bool) -> None:
    store_type = (_value(config, listener, "ssl.keystore.type") or "").upper()
    location = _value(config, listener, "ssl.keystore.location")
    chain = _value(config, listener, "ssl.keystore.certificate.chain")
    key = _value(config, listener, "ssl.keystore.key")
    password = _value(config, listener, "ssl.key.password")
    if not location and not (chain and key):
        if required:
            raise ConfigError(f"listener {listener}: SSL needs a key store (ssl.keystore.location, or "
                              "ssl.keystore.certificate.chain with ssl.keystore.key)")
        return
    if store_type not in _STORE_TYPES:
        raise ConfigError(f"ssl.keystore.type {store_type}: use PEM, PKCS12 or JKS")
    try:
        if store_type != "PEM":
            if not location:
                raise ConfigError(f"listener {listener}: a {store_type} key store needs ssl.keystore.location")
            key_pem, chain_pem = read_key_store(store_type, location, _value(config, listener, "ssl.keystore.password"),
                                                password)
            key, chain, password = key_pem.decode(), chain_pem.decode(), None
        elif location:
            ctx.load_cert_chain(location, password=password)
            return
        # load_cert_chain reads files only: inline PEM and keys from Java stores go through a private temporary
        # file, removed at once.
        fd, path = tempfile.mkstemp(prefix="keystore-", suffix=".pem")
        try:
            with os.fdopen(fd, "w") as f:
                f.write(f"{key.strip()}\n{chain.strip()}\n")
            ctx.load_cert_chain(path, password=password)
        finally:
            os.unlink(path)
    except (ssl.SSLError, OSError, KeyStoreError) as e:
        raise ConfigError(f"listener {listener}: cannot load the key store: {e}") from None


def _load_trust_store(ctx: ssl.SSLContext, config: KafkaConfig, listener: str) -> bool:
    location = _value(config, listener, "ssl.truststore.location")
    certificates = _value(config, listener, "ssl.truststore.certificates")
    if not location and not certificates:
        return False
    store_type = (_value(config, listener, "ssl.truststore.type") or "").upper()
    if store_type not in _STORE_TYPES:
        raise ConfigError(f"ssl.truststore.type {store_type}: use PEM, PKCS12 or JKS")
    try:
        if store_type != "PEM":
            if not location:
                raise ConfigError(f"listener {listener}: a {store_type} trust store needs ssl.truststore.location")
            ctx.load_verify_locations(cadata=read_trust_store(store_type, location,
                                                              _value(config, listener, "ssl.truststore.password")))
        elif location:
            ctx.load_verify_locations(cafile=location)
        else:
            ctx.load_verify_locations(cadata=certificates)
    except (ssl.SSLError, OSError, KeyStoreError) as e:
        raise ConfigError(f"listener {listener}: cannot load the trust store: {e}") from None
    return True


def server_context(config: KafkaConfig, listener: str) -> ssl.SSLContext:
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.minimum_version, ctx.maximum_version = _protocol_range(config, listener)
    _load_key_store(ctx, config, listener, required=True)
    client_auth = (_value(config, listener, "ssl.client.auth") or "none").lower()
    if client_auth not in _CLIENT_AUTH:
        raise ConfigError(f"Invalid value {client_auth} for configuration ssl.client.auth")
    trusted = _load_trust_store(ctx, config, listener)
    if client_auth != "none" and not trusted:
        ctx.load_default_certs(ssl.Purpose.CLIENT_AUTH)
    ctx.verify_mode = _CLIENT_AUTH[client_auth]
    return ctx


def client_context(config: KafkaConfig, listener: str) -> ssl.SSLContext:
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.minimum_version, ctx.maximum_version = _protocol_range(config, listener)
    if not _load_trust_store(ctx, config, listener):
        ctx.load_default_certs(ssl.Purpose.SERVER_AUTH)
    _load_key_store(ctx, config, listener, required=False)
    ctx.check_hostname = (_value(config, listener, "ssl.endpoint.identification.algorithm") or "").lower() == "https"
    return ctx


def _escape(value: str) -> str:
    out = []
    for i, ch in enumerate(value):
        if ch in ',+"\\<>;' or (i == 0 and ch in "# ") or (i == len(value) - 1 and ch == " "):
            out.append("\\" + ch)
        else:
            out.append(ch)
    return "".join(out)


def _attribute(name: str, value: str) -> str:
    short = _SHORT_NAMES.get(name)
    if short is not None:
        return f"{short}={_escape(value)}"
    oid = _OIDS.get(name, name)
    # X500Principal prints attributes without a short name as OID=#<DER hex> (an IA5String/UTF8String here).
    raw = value.encode()
    tag = 0x16 if name == "emailAddress" else 0x13 if value.isascii() else 0x0C
    return f"{oid}=#{tag:02x}{len(raw):02x}{raw.hex()}" if len(raw) < 128 else f"{oid}={_escape(value)}"


def principal_name(peercert: dict[str, Any] | None) -> str:
    """The client certificate's subject DN in Kafka's (Java's RFC 2253) form; ANONYMOUS without a certificate."""
    if not peercert or not peercert.get("subject"):
        return "ANONYMOUS"
    rdns = ["+".join(_attribute(name, value) for name, value in rdn) for rdn in peercert["subject"]]
    return ",".join(reversed(rdns))


def principal_builder(config: KafkaConfig, listener: str) -> Callable[[dict[str, Any] | None], str]:
    try:
        mapper = SslPrincipalMapper(_value(config, listener, "ssl.principal.mapping.rules"))
    except InvalidRule as e:
        raise ConfigError(f"listener {listener}: ssl.principal.mapping.rules: {e}") from None

    def principal(peercert: dict[str, Any] | None) -> str:
        dn = principal_name(peercert)
        return dn if dn == "ANONYMOUS" or mapper.is_default else mapper.name(dn)

    return principal

"""The broker's own client security for its inter-broker listener (replica fetchers, controller channel,
transaction markers, controller requests) and, in KRaft mode, for the controller quorum's listener, from Kafka's
keys.

`ClientSecurity`: what a client connection of this broker (broker.network.inter_broker) needs to connect: TLS
context and SASL credentials.
`inter_broker_security(config)`: the inter-broker listener's protocol; for SSL/SASL_SSL a client TLS context
(`broker.security.tls.client_context`); for SASL_* the mechanism `sasl.mechanism.inter.broker.protocol`
(PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512 here) with the `username`/`password` options of the listener's
`listener.name.<l>.<mechanism>.sasl.jaas.config` (Kafka's place for them). Raises ConfigError otherwise.
`controller_security(config)`: the same for the first of `controller.listener.names` (the listener a KRaft
broker reaches the controllers on, Kafka's RaftManager and NodeToControllerChannelManager), with
`sasl.mechanism.controller.protocol` and the `listener.name.<controller listener>.*` TLS and JAAS keys. As in
Kafka, a broker-only node does not need the mechanism among its own `sasl.enabled.mechanisms`.
"""

from __future__ import annotations

import ssl
from dataclasses import dataclass, field

from broker.config.kafka_config import ConfigError, KafkaConfig
from broker.security import tls
from broker.security.sasl import SUPPORTED_MECHANISMS, parse_jaas


@dataclass(frozen=True)
class ClientSecurity:
    """How this broker connects to its inter-broker listener: TLS context (SSL, SASL_SSL) and SASL credentials."""

    protocol: str = "PLAINTEXT"
    ssl_context: ssl.SSLContext | None = None
    mechanism: str | None = None
    username: str = ""
    password: str = field(default="", repr=False)


PLAINTEXT_CLIENT = ClientSecurity()


def inter_broker_security(config: KafkaConfig) -> ClientSecurity:
    listener = config.inter_broker_listener_name
    protocol = config.listener_security_protocol_map.get(listener, "PLAINTEXT")
    return _client_security(config, listener, protocol, "sasl.mechanism.inter.broker.protocol", True)


def controller_security(config: KafkaConfig) -> ClientSecurity:
    return _client_security(config, config.controller_listener_names[0], config.controller_security_protocol,
                            "sasl.mechanism.controller.protocol", False)


def _client_security(config: KafkaConfig, listener: str, protocol: str, mechanism_key: str,
                     must_be_enabled: bool) -> ClientSecurity:
    if protocol == "PLAINTEXT":
        return ClientSecurity()
    context = tls.client_context(config, listener) if protocol.endswith("SSL") else None
    if not protocol.startswith("SASL_"):
        return ClientSecurity(protocol, context)
    mechanism = config[mechanism_key]
    if mechanism not in SUPPORTED_MECHANISMS:
        raise ConfigError(f"{mechanism_key} {mechanism} is not supported "
                          f"(supported: {', '.join(SUPPORTED_MECHANISMS)})")
    enabled = config.listener_value(listener, "sasl.enabled.mechanisms") or []
    if must_be_enabled and mechanism not in enabled:
        raise ConfigError("requirement failed: sasl.mechanism.inter.broker.protocol must be included in "
                          "sasl.enabled.mechanisms when SASL is used for inter-broker communication")
    jaas = config.listener_value(listener, "sasl.jaas.config", mechanism)
    options = parse_jaas(getattr(jaas, "value", jaas))[1] if jaas else {}
    if "username" not in options or "password" not in options:
        what = "other brokers" if must_be_enabled else "the controllers"
        raise ConfigError(f"listener.name.{listener.lower()}.{mechanism.lower()}.sasl.jaas.config needs the "
                          f"username and password this broker authenticates with to {what}")
    return ClientSecurity(protocol, context, mechanism, options["username"], options["password"])

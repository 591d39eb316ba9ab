"""SASL mechanisms, the server side, from Kafka's keys: which ones a listener enables, and each one's exchange.

- `listener_mechanisms(config, listener, lookup)`: the listener's `sasl.enabled.mechanisms` (PLAIN, SCRAM-SHA-256,
  SCRAM-SHA-512, OAUTHBEARER; ConfigError for others), each a factory of its server side, with the mechanism's
  `connections.max.reauth.ms` (per listener and mechanism as `listener.name.<l>.<mech>.`).
- Mechanisms: PLAIN (users from the listener's JAAS config, Kafka's `user_<name>="<password>"` options),
  SCRAM-SHA-256/512 (credentials from the metadata store at each authentication, `scram_lookup`) and OAUTHBEARER
  (broker.security.oauthbearer: Kafka's unsecured validator, or a Python validator the listener names).
- `parse_jaas`: Kafka's `sasl.jaas.config` syntax.

The authenticator that runs a mechanism on a connection until its client is authenticated (Kafka's
SaslServerAuthenticator) is broker/apis/sasl_authenticator.py: it answers requests, so it sits with the handlers.
"""

from __future__ import annotations

import hmac
import re
from collections.abc import Awaitable, Callable
from typing import Any

from broker.config.kafka_config import ConfigError, KafkaConfig
from broker.security.oauthbearer import OAuthBearerServer, listener_validator
from broker.security.sasl_errors import AuthenticationFailed, InvalidSaslMessage
from broker.security.scram import MECHANISMS, ScramCredential, ScramServer

SUPPORTED_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")  # ours as a client too (inter-broker)
SERVER_MECHANISMS = (*SUPPORTED_MECHANISMS, "OAUTHBEARER")
__all__ = ["AuthenticationFailed", "InvalidSaslMessage", "SERVER_MECHANISMS", "SUPPORTED_MECHANISMS"]

_JAAS_RE = re.compile(r'\s*([^\s=;]+)\s*=\s*("(?:[^"\\]|\\.)*"|[^\s;]+)')


def parse_jaas(text: str) -> tuple[str, dict[str, str]]:
    """Kafka's `sasl.jaas.config` syntax: `<LoginModule class> <flag> key="value" ... ;` -> (class, options)."""
    parts = text.strip().split(None, 2)
    if len(parts) < 2 or parts[1] not in ("required", "requisite", "sufficient", "optional"):
        raise ConfigError("sasl.jaas.config: expected '<LoginModule> <flag> key=\"value\" ... ;'")
    rest = parts[2] if len(parts) > 2 else ""
    options: dict[str, str] = {}
    pos = 0
    while True:
        m = _JAAS_RE.match(rest, pos)
        if m is None:
            break
        value = m[2]
        if value.startswith('"'):
            value = re.sub(r"\\(.)", r"\1", value[1:-1])
        options[m[1]] = value
        pos = m.end()
    if not rest[pos:].strip().startswith(";") or rest[pos:].strip() != ";":
        raise ConfigError("sasl.jaas.config: the login module entry must end with ';'")
    return parts[0], options


class PlainServer:
    def __init__(self, users: dict[str, str]) -> None:
        self._users = users
        self.username: str | None = None
        self.complete = False

    async def evaluate(self, token: bytes) -> bytes:
        parts = token.decode("utf-8", "replace").split("\x00")
        if len(parts) != 3:
            raise AuthenticationFailed("Invalid SASL/PLAIN response: expected 3 tokens, got "
                                       f"{min(len(parts), 4)}", None)
        authzid, user, password = parts
        if not user:
            raise AuthenticationFailed("Authentication failed: username not specified", None)
        if not password:
            raise AuthenticationFailed("Authentication failed: password not specified", user)
        expected = self._users.get(user)
        if expected is None or not hmac.compare_digest(expected.encode(), password.encode()):
            raise AuthenticationFailed("Authentication failed: Invalid username or password", user)
        if authzid and authzid != user:
            raise AuthenticationFailed("Authentication failed: Client requested an authorization id that is "
                                       "different from username", user)
        self.username = user
        self.complete = True
        return b""


MechanismFactory = Callable[[], Any]
CredentialLookup = Callable[[str, str], Awaitable[ScramCredential | None]]


def listener_mechanisms(config: KafkaConfig, listener: str, lookup: CredentialLookup) -> dict[str, MechanismFactory]:
    """The listener's enabled mechanisms -> a factory of their server side (ConfigError for what we lack)."""
    enabled = [m.strip() for m in config.listener_value(listener, "sasl.enabled.mechanisms") or [] if m.strip()]
    unsupported = [m for m in enabled if m not in SERVER_MECHANISMS]
    if unsupported:
        raise ConfigError(f"listener {listener}: sasl.enabled.mechanisms {','.join(unsupported)} not supported "
                          f"(supported: {', '.join(SERVER_MECHANISMS)})")
    if not enabled:
        raise ConfigError(f"listener {listener}: sasl.enabled.mechanisms is empty")
    out: dict[str, MechanismFactory] = {}
    for mechanism in enabled:
        reauth_ms = config.listener_value(listener, "connections.max.reauth.ms", mechanism) or 0
        out[mechanism] = _with_reauth(_mechanism_factory(config, listener, mechanism, lookup), reauth_ms)
    return out


def _with_reauth(factory: MechanismFactory, reauth_ms: int) -> MechanismFactory:
    def make() -> Any:
        server = factory()
        server.max_reauth_ms = reauth_ms
        return server
    return make


def _mechanism_factory(config: KafkaConfig, listener: str, mechanism: str,
                       lookup: CredentialLookup) -> MechanismFactory:
    """The server side of one mechanism, configured for the listener."""
    if mechanism == "PLAIN":
        jaas = config.listener_value(listener, "sasl.jaas.config", "plain")
        if not jaas:
            raise ConfigError(f"listener {listener}: PLAIN needs listener.name.{listener.lower()}"
                              ".plain.sasl.jaas.config with user_<name>=\"<password>\" options")
        _, options = parse_jaas(getattr(jaas, "value", jaas))
        users = {k[len("user_"):]: v for k, v in options.items() if k.startswith("user_")}
        return lambda: PlainServer(users)
    if mechanism == "OAUTHBEARER":
        jaas = config.listener_value(listener, "sasl.jaas.config", "oauthbearer")
        _, options = parse_jaas(getattr(jaas, "value", jaas)) if jaas else ("", {})
        handler = config.listener_value(listener, "sasl.server.callback.handler.class", "oauthbearer")
        validator = listener_validator(options, getattr(handler, "value", handler))
        return lambda: OAuthBearerServer(validator)
    return lambda: ScramServer(mechanism, lookup)


def scram_lookup(controller: Any) -> CredentialLookup:
    from broker.security.credentials import CredentialStore

    async def lookup(user: str, mechanism: str) -> ScramCredential | None:
        if mechanism not in MECHANISMS:
            return None
        return await controller.call(CredentialStore(controller.store).credential, user, mechanism)

    return lookup

"""SASL authentication of a connection, as Kafka's SaslServerAuthenticator: it sees every frame of a SASL
listener's connection until the client is authenticated, then steps aside.

Contract:
- Before authentication a connection may send ApiVersions (answered as usual) and SaslHandshake v0/v1 naming
  one of the listener's `sasl.enabled.mechanisms` (answered NONE and the enabled list; a mechanism not enabled
  is answered UNSUPPORTED_SASL_MECHANISM with the list, then the connection closes). Any other request, or
  bytes that are not a Kafka request, close the connection with one log line ("Unexpected Kafka request of
  type ... during SASL handshake.").
- After SaslHandshake v1 the client's tokens come in SaslAuthenticate v0-v2 requests and leave in their
  responses (session_lifetime_ms 0: no re-authentication is asked for); after v0 they come as raw
  size-prefixed tokens and leave the same way (the flow kafka-python and old clients use).
- Mechanisms: PLAIN (users from the listener's JAAS config, Kafka's `user_<name>="<password>"` options),
  SCRAM-SHA-256/512 (credentials from the metadata store at each authentication) and OAUTHBEARER
  (broker.security.oauthbearer: Kafka's unsecured validator, or a Python validator the listener names).
- A failed authentication is answered, after `connection.failed.authentication.delay.ms`, with
  SASL_AUTHENTICATION_FAILED and Kafka's message (PLAIN: "Authentication failed: Invalid username or
  password"; SCRAM: "Authentication failed during authentication due to invalid credentials with SASL mechanism
  SCRAM-SHA-256"), then the connection closes; one log line names the client address, the mechanism and the
  user name the client gave — never a password or a token. In the raw (v0) flow the connection just closes.
- Until authenticated a frame may be at most `sasl.server.max.receive.size` (the socket layer closes the
  connection otherwise); on success the bound is `socket.request.max.bytes` again and the connection's
  `principal` is `User:<name>`.
"""

from __future__ import annotations

import asyncio
import hmac
import logging
import re
from collections.abc import Awaitable, Callable
from struct import unpack_from
from typing import Any

from broker.apis.base import RequestContext
from broker.config import ConfigError, KafkaConfig
from broker.network import Connection, Response
from broker.security.oauthbearer import OAuthBearerServer, listener_validator
from broker.security.sasl_errors import AuthenticationFailed, InvalidSaslMessage
from broker.security.scram import MECHANISMS, ScramCredential, ScramError, ScramServer
from protocol import ApiKey, ProtocolError, decode_request, response_class
from protocol.api_keys import api_name
from protocol.errors import ErrorCode

log = logging.getLogger("broker.security")

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
        if mechanism == "PLAIN":
            jaas = config.listener_value(listener, "sasl.jaas.config", "plain")
            if not jaas:
                raise ConfigError(f"listener {listener}: PLAIN needs listener.name.{listener.lower()}"
                                  ".plain.sasl.jaas.config with user_<name>=\"<password>\" options")
            _, options = parse_jaas(getattr(jaas, "value", jaas))
            users = {k[len("user_"):]: v for k, v in options.items() if k.startswith("user_")}
            out[mechanism] = lambda users=users: PlainServer(users)
        elif mechanism == "OAUTHBEARER":
            jaas = config.listener_value(listener, "sasl.jaas.config", "oauthbearer")
            _, options = parse_jaas(getattr(jaas, "value", jaas)) if jaas else ("", {})
            handler = config.listener_value(listener, "sasl.server.callback.handler.class", "oauthbearer")
            validator = listener_validator(options, getattr(handler, "value", handler))
            out[mechanism] = lambda validator=validator: OAuthBearerServer(validator)
        else:
            out[mechanism] = lambda mechanism=mechanism: ScramServer(mechanism, lookup)
    return out


# States of one connection's authentication.
_HANDSHAKE_OR_VERSIONS, _HANDSHAKE, _AUTHENTICATE, _AUTHENTICATE_RAW, _COMPLETE, _FAILED = range(6)


class SaslAuthenticator:
    __slots__ = ("server", "conn", "mechanisms", "failure_delay_s", "state", "mechanism", "sasl")

    def __init__(self, server: Any, conn: Connection, mechanisms: dict[str, MechanismFactory],
                 failure_delay_ms: int) -> None:
        self.server = server
        self.conn = conn
        self.mechanisms = mechanisms
        self.failure_delay_s = max(failure_delay_ms, 0) / 1000
        self.state = _HANDSHAKE_OR_VERSIONS
        self.mechanism: str | None = None
        self.sasl: Any = None

    @property
    def complete(self) -> bool:
        return self.state == _COMPLETE

    def handle(self, frame: bytearray) -> Any:
        if self.state == _FAILED:
            return None
        if self.state == _AUTHENTICATE_RAW:
            return self._raw_token(bytes(frame))
        if len(frame) < 8:
            return self._fail_closed("the first bytes are not a Kafka request (GSSAPI is not enabled)")
        api_key, version = unpack_from(">hh", frame, 0)
        if self.state in (_HANDSHAKE_OR_VERSIONS, _HANDSHAKE):
            if api_key == ApiKey.API_VERSIONS and self.state == _HANDSHAKE_OR_VERSIONS:
                self.state = _HANDSHAKE
                return self.server.handle_frame(self.conn, frame)
            if api_key == ApiKey.SASL_HANDSHAKE and version <= 1:
                return self._handshake(frame)
            return self._fail_closed(f"Unexpected Kafka request of type {_name(api_key)} during SASL handshake.")
        if api_key != ApiKey.SASL_AUTHENTICATE or version > 2:
            return self._fail_closed(f"Unexpected Kafka request of type {_name(api_key)} during SASL authentication.")
        return self._authenticate(frame)

    # ---- steps
    def _decode(self, frame: bytearray) -> tuple[Any, RequestContext] | None:
        try:
            request = decode_request(frame)
        except ProtocolError as e:
            self._fail_closed(f"malformed request during SASL authentication: {e}")
            return None
        h = request.header
        return request, RequestContext(self.server, self.conn, h.request_api_key, h.request_api_version,
                                       h.correlation_id, h.client_id)

    def _handshake(self, frame: bytearray) -> Response | None:
        decoded = self._decode(frame)
        if decoded is None:
            return None
        request, ctx = decoded
        mechanism = request.mechanism
        enabled = list(self.mechanisms)
        if mechanism not in self.mechanisms:
            response = _response(request, error_code=ErrorCode.UNSUPPORTED_SASL_MECHANISM, mechanisms=enabled)
            self._send_then_close(ctx, response, f"Unsupported SASL mechanism {mechanism}", None, delay=False)
            return None
        self.mechanism = mechanism
        self.sasl = self.mechanisms[mechanism]()
        self.state = _AUTHENTICATE if ctx.api_version >= 1 else _AUTHENTICATE_RAW
        return self.server._encode(ctx, _response(request, error_code=ErrorCode.NONE, mechanisms=enabled))

    async def _authenticate(self, frame: bytearray) -> Response | None:
        decoded = self._decode(frame)
        if decoded is None:
            return None
        request, ctx = decoded
        try:
            challenge = await self.sasl.evaluate(bytes(request.auth_bytes))
        except (AuthenticationFailed, ScramError, InvalidSaslMessage) as e:
            message, user = self._failure(e)
            response = _response(request, error_code=ErrorCode.SASL_AUTHENTICATION_FAILED, error_message=message,
                                 auth_bytes=b"", session_lifetime_ms=0)
            await asyncio.sleep(self.failure_delay_s)
            self._send_then_close(ctx, response, message, user, delay=False)
            return None
        if self.sasl.complete:
            self._completed()
        return self.server._encode(ctx, _response(request, error_code=ErrorCode.NONE, error_message=None,
                                                  auth_bytes=challenge, session_lifetime_ms=0))

    async def _raw_token(self, token: bytes) -> Response | None:
        try:
            challenge = await self.sasl.evaluate(token)
        except (AuthenticationFailed, ScramError, InvalidSaslMessage) as e:
            message, user = self._failure(e)
            await asyncio.sleep(self.failure_delay_s)
            self._log_failure(message, user)
            self.state = _FAILED
            self.conn.close(None)
            return None
        if self.sasl.complete:
            self._completed()
        return Response(len(challenge), [challenge])  # PLAIN's is empty: a zero-size frame, as Kafka sends

    # ---- outcomes
    def _completed(self) -> None:
        self.state = _COMPLETE
        self.conn.principal = f"User:{self.sasl.username}"
        self.conn.max_frame_bytes = self.conn.server.max_request_bytes  # no longer bounded as unauthenticated
        log.debug("%s: authenticated as %s with %s", self.conn, self.conn.principal, self.mechanism)

    def _failure(self, e: Exception) -> tuple[str, str | None]:
        if isinstance(e, (ScramError, InvalidSaslMessage)):
            return ("Authentication failed during authentication due to invalid credentials with SASL mechanism "
                    f"{self.mechanism}", self.sasl.username)
        return str(e), getattr(e, "user", None)

    def _log_failure(self, message: str, user: str | None) -> None:
        log.info("Failed authentication with %s (mechanism %s, principal User:%s): %s", self.conn.peer[0],
                 self.mechanism, user if user is not None else "ANONYMOUS", message)

    def _send_then_close(self, ctx: RequestContext, response: Any, message: str, user: str | None, *,
                         delay: bool) -> None:
        self.state = _FAILED
        self._log_failure(message, user)
        self.conn.send(self.server._encode(ctx, response))
        self.conn.close_when_sent()

    def _fail_closed(self, reason: str) -> None:
        self.state = _FAILED
        log.info("%s: closing during SASL authentication: %s", self.conn, reason)
        self.conn.close(None)
        return None


def _name(api_key: int) -> str:
    try:
        return api_name(api_key)
    except (KeyError, ValueError):
        return str(api_key)


def _response(request: Any, **fields: Any) -> Any:
    """The response at the request's version; fields that version lacks are dropped by the codec's classes."""
    return response_class(request.API_KEY)[request.API_VERSION](**fields)


def scram_lookup(controller: Any) -> CredentialLookup:
    from broker.security.credentials import CredentialStore

    async def lookup(user: str, mechanism: str) -> ScramCredential | None:
        if mechanism not in MECHANISMS:
            return None
        return await controller.call(CredentialStore(controller.store).credential, user, mechanism)

    return lookup

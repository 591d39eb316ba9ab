"""SASL authentication of a connection, as Kafka's SaslServerAuthenticator: it sees every frame of a SASL
listener's connection until the client is authenticated, then steps aside. Its mechanisms are broker.security.sasl's.

Contract:
- Before authentication a connection may send ApiVersions (answered as usual) and SaslHandshake v0/v1 naming
  one of the listener's `sasl.enabled.mechanisms` (answered NONE and the enabled list; a mechanism not enabled
  is answered UNSUPPORTED_SASL_MECHANISM with the list, then the connection closes). Any other request, or
  bytes that are not a Kafka request, close the connection with one log line ("Unexpected Kafka request of
  type ... during SASL handshake.").
- After SaslHandshake v1 the client's tokens come in SaslAuthenticate v0-v2 requests and leave in their
  responses; after v0 they come as raw size-prefixed tokens and leave the same way (the flow kafka-python and
  old clients use).
- Re-authentication (KIP-368) as Kafka: a session ends after the lesser of the mechanism's
  `connections.max.reauth.ms` (when > 0; per listener and mechanism as `listener.name.<l>.<mech>.`) and the
  credential's remaining lifetime (an OAuth token's expiry); SaslAuthenticate v1+ tells the client
  (`session_lifetime_ms`). A SaslHandshake on the authenticated connection starts a re-authentication (at most
  one a second) with the same mechanism and principal (else it fails and the connection closes); any other
  request after the session's end closes the connection. Without a session end, a SaslHandshake after
  authentication is answered ILLEGAL_SASL_STATE by its handler, as KafkaApis does.
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
import logging
import time
from collections.abc import Callable
from struct import unpack_from
from typing import Any

from broker.apis.base import RequestContext
from broker.network.socket_server import Connection, Response
from broker.security.sasl import MechanismFactory
from broker.security.sasl_errors import AuthenticationFailed, InvalidSaslMessage
from broker.security.scram import ScramError
from protocol import ApiKey, ProtocolError, decode_request, response_class
from protocol.api_keys import api_name
from protocol.errors import ErrorCode

log = logging.getLogger("broker.security")


# States of one connection's authentication.
_HANDSHAKE_OR_VERSIONS, _HANDSHAKE, _AUTHENTICATE, _AUTHENTICATE_RAW, _COMPLETE, _FAILED = range(6)


class SaslAuthenticator:
    __slots__ = ("server", "conn", "mechanisms", "failure_delay_s", "state", "mechanism", "sasl", "session_expiry",
                 "_previous", "_reauth_started", "_bad_mechanism", "_max_receive")

    def __init__(self, server: Any, conn: Connection, mechanisms: dict[str, MechanismFactory],
                 failure_delay_ms: int) -> None:
        self.server = server
        self.conn = conn
        self.mechanisms = mechanisms
        self.failure_delay_s = max(failure_delay_ms, 0) / 1000
        self.state = _HANDSHAKE_OR_VERSIONS
        self.mechanism: str | None = None
        self.sasl: Any = None
        self.session_expiry: float | None = None  # monotonic time the session ends; None: it does not (no KIP-368)
        self._previous: tuple[str | None, str] | None = None  # (mechanism, principal) while re-authenticating
        self._reauth_started = -1.0
        self._bad_mechanism: str | None = None
        self._max_receive = 0

    @property
    def complete(self) -> bool:
        return self.state == _COMPLETE

    def takes(self, frame: bytearray) -> bool:
        """After authentication, whether `frame` is this authenticator's (`handle` it): a SaslHandshake that
        starts a re-authentication (at most one a second, as Kafka), or any request once the session has expired
        without one — the connection is then closed, as Kafka's SocketServer closes it."""
        if self.session_expiry is None:
            return False
        now = time.monotonic()
        if len(frame) >= 2 and unpack_from(">h", frame, 0)[0] == ApiKey.SASL_HANDSHAKE and \
                now - self._reauth_started >= 1.0:
            self._reauth_started = now
            self._previous = (self.mechanism, self.conn.principal)
            self.state = _HANDSHAKE
            self.conn.max_frame_bytes = self._max_receive
            return True
        if now > self.session_expiry:
            self.state = _FAILED
            log.info("%s: closing: the SASL session of %s expired and was not re-authenticated", self.conn,
                     self.conn.principal)
            self.conn.close(None)
            return True
        return False

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
        if self._previous is not None and mechanism != self._previous[0]:
            # Kafka answers this handshake and fails the authentication that follows.
            self._bad_mechanism = (f"SASL mechanism '{mechanism}' requested by client is not supported for "
                                   f"re-authentication of mechanism '{self._previous[0]}'")
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
            challenge, lifetime_ms = await self._evaluate(bytes(request.auth_bytes))
        except (AuthenticationFailed, ScramError, InvalidSaslMessage) as e:
            message, user = self._failure(e)
            response = _response(request, error_code=ErrorCode.SASL_AUTHENTICATION_FAILED, error_message=message,
                                 auth_bytes=b"", session_lifetime_ms=0)
            await asyncio.sleep(self.failure_delay_s)
            self._send_then_close(ctx, response, message, user, delay=False)
            return None
        return self.server._encode(ctx, _response(request, error_code=ErrorCode.NONE, error_message=None,
                                                  auth_bytes=challenge, session_lifetime_ms=lifetime_ms))

    async def _evaluate(self, token: bytes) -> tuple[bytes, int]:
        """The mechanism's answer to the client's token, and the session's lifetime once authenticated."""
        if self._bad_mechanism is not None:
            raise AuthenticationFailed(self._bad_mechanism, None)
        challenge = await self.sasl.evaluate(token)
        return challenge, self._completed() if self.sasl.complete else 0

    async def _raw_token(self, token: bytes) -> Response | None:
        try:
            challenge, _ = await self._evaluate(token)
        except (AuthenticationFailed, ScramError, InvalidSaslMessage) as e:
            message, user = self._failure(e)
            await asyncio.sleep(self.failure_delay_s)
            self._log_failure(message, user)
            self.state = _FAILED
            self.conn.close(None)
            return None
        return Response(len(challenge), [challenge])  # PLAIN's is empty: a zero-size frame, as Kafka sends

    # ---- outcomes
    def _completed(self) -> int:
        """The client is authenticated: its principal, and the session's lifetime in ms (0: no expiry)."""
        principal = f"User:{self.sasl.username}"
        if self._previous is not None and principal != self._previous[1]:
            old = self._previous[1].replace(":", ".", 1)
            raise AuthenticationFailed(f"Cannot change principals during re-authentication from {old}: "
                                       f"{principal.replace(':', '.', 1)}", self.sasl.username)
        lifetime_ms = self._session_lifetime_ms()
        self.state = _COMPLETE
        self.conn.principal = principal
        if self._previous is None:
            self._max_receive = self.conn.max_frame_bytes
        self.conn.max_frame_bytes = self.conn.server.max_request_bytes  # no longer bounded as unauthenticated
        log.debug("%s: %s as %s with %s, session lifetime %d ms", self.conn,
                  "authenticated" if self._previous is None else "re-authenticated", principal, self.mechanism,
                  lifetime_ms)
        self._previous = None
        return lifetime_ms

    def _session_lifetime_ms(self) -> int:
        """Kafka's rule (KIP-368): the lesser of the mechanism's connections.max.reauth.ms (when > 0) and the
        credential's remaining lifetime (an OAuth token's expiry); no session end when neither applies."""
        max_reauth_ms = getattr(self.sasl, "max_reauth_ms", 0)
        credential_expiry_ms = getattr(self.sasl, "session_expiry_ms", None)
        if credential_expiry_ms is None and max_reauth_ms <= 0:
            self.session_expiry = None
            return 0
        lifetimes = [max_reauth_ms] if max_reauth_ms > 0 else []
        if credential_expiry_ms is not None:
            lifetimes.append(credential_expiry_ms - int(time.time() * 1000))
        lifetime_ms = max(0, min(lifetimes))
        self.session_expiry = time.monotonic() + lifetime_ms / 1000
        return lifetime_ms

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


def route(conn: Connection, frame: bytearray, handle_frame: Callable[[Connection, bytearray], Any]) -> Any:
    """A SASL listener's frame: the connection's authenticator's until the client is authenticated, then those
    it takes (KIP-368: a re-authentication, or any request once the session expired); the rest are served as on
    any listener."""
    auth = conn.auth
    if auth is not None:
        if not auth.complete or auth.takes(frame):
            return auth.handle(frame)
        if auth.session_expiry is None:
            conn.auth = None  # no session end on this connection: the authenticator's work is done
    return handle_frame(conn, frame)


def _name(api_key: int) -> str:
    try:
        return api_name(api_key)
    except (KeyError, ValueError):
        return str(api_key)


def _response(request: Any, **fields: Any) -> Any:
    """The response at the request's version; fields that version lacks are dropped by the codec's classes."""
    return response_class(request.API_KEY)[request.API_VERSION](**fields)

"""SASL/OAUTHBEARER, the server side, as Kafka's OAuthBearerSaslServer with its default validator.

Contract:
- The client's first message is RFC 7628's `n,[a=<authzid>],\\x01auth=Bearer <token>\\x01[key=value\\x01]...\\x01`.
  A message that does not parse fails the authentication with Kafka's generic SASL text (`InvalidSaslMessage`).
- The token is validated by the listener's validator. The default is Kafka's unsecured validator
  (OAuthBearerUnsecuredValidatorCallbackHandler): an unsecured JWS (`alg` `none`, empty signature) whose
  principal claim (`unsecuredValidatorPrincipalClaimName`, default `sub`) is a non-blank string, with an
  `exp` not passed and an `iat` (if any) not in the future, both within `unsecuredValidatorAllowableClockSkewMs`,
  `exp` after `iat`, and every scope of `unsecuredValidatorRequiredScope` (space-separated) in the scope claim
  (`unsecuredValidatorScopeClaimName`, default `scope`, a string or a list) — the options of the listener's
  OAUTHBEARER JAAS config. `listener.name.<l>.oauthbearer.sasl.server.callback.handler.class` (or the
  unprefixed key) may name a Python callable `module:attribute` instead: called with the token, it returns
  (principal name, token expiry in ms since the epoch) or raises `InvalidToken`.
- An invalid token is answered as Kafka answers it: a challenge `{"status":"invalid_token"}` (or
  `insufficient_scope` with the required scope); the client acknowledges it with `\\x01` and the authentication
  then fails with that JSON as its message. An authorization id other than the token's principal fails.
- Success: the principal is `User:<principal name>`, and `session_expiry_ms` is the token's expiry.
- Kafka's OIDC validator (`sasl.oauthbearer.jwks.endpoint.url`, its callback handler class) is not served:
  naming it is a start-up error.
"""

from __future__ import annotations

import base64
import binascii
import importlib
import json
import math
import re
import time
from collections.abc import Callable
from typing import Any

from broker.config.kafka_config import ConfigError
from broker.security.sasl_errors import AuthenticationFailed, InvalidSaslMessage

_CONTROL_A = "\x01"
_SASLNAME = r"(?:[\x01-\x2B\x2D-\x3C\x3E-\x7F]|=2C|=3D)+"  # any ASCII but "," and "=", which are escaped
_KVPAIRS = r"(?:[A-Za-z]+=[\x21-\x7E \t\r\n]+\x01)*"
_FIRST_MESSAGE = re.compile(rf"n,(?:a=(?P<authzid>{_SASLNAME}))?,\x01(?P<kvpairs>{_KVPAIRS})\x01")
_AUTH = re.compile(r"(?P<scheme>\w+) +(?P<token>[-_.a-zA-Z0-9]+)")

UNSECURED_HANDLER = "org.apache.kafka.common.security.oauthbearer.internals.unsecured." \
                    "OAuthBearerUnsecuredValidatorCallbackHandler"

# token -> (principal name, expiry ms); raises InvalidToken
Validator = Callable[[str], tuple[str, int]]


class InvalidToken(Exception):
    """The token is not valid; `scope` names the required scope when that is why (insufficient_scope)."""

    def __init__(self, reason: str, scope: str | None = None) -> None:
        super().__init__(reason)
        self.scope = scope


def unsecured_validator(options: dict[str, str], clock: Callable[[], float] = time.time) -> Validator:
    principal_claim = options.get("unsecuredValidatorPrincipalClaimName", "").strip() or "sub"
    scope_claim = options.get("unsecuredValidatorScopeClaimName", "").strip() or "scope"
    required_scope = options.get("unsecuredValidatorRequiredScope", "").split()
    skew_text = options.get("unsecuredValidatorAllowableClockSkewMs", "").strip() or "0"
    try:
        skew_ms = int(skew_text)
    except ValueError:
        raise ConfigError(f"unsecuredValidatorAllowableClockSkewMs: not a number: {skew_text}") from None
    if skew_ms < 0:
        raise ConfigError(f"Allowable clock skew millis must not be negative: {skew_text}")

    def validate(token: str) -> tuple[str, int]:
        header, claims = _unsecured_jws(token)
        if header.get("alg") != "none":
            raise InvalidToken("Unsecured JWS must have 'none' for an algorithm")
        principal = claims.get(principal_claim)
        if not isinstance(principal, str) or not principal.strip():
            raise InvalidToken(f"No principal name in JWT claim: {principal_claim}")
        exp, iat = claims.get("exp"), claims.get("iat")
        if not _is_number(exp):
            raise InvalidToken("No expiration time in JWT")
        if iat is not None and not _is_number(iat):
            raise InvalidToken("The 'iat' claim was not a number")
        now_ms = clock() * 1000
        if iat is not None and 1000 * iat > now_ms + skew_ms:
            raise InvalidToken("The Issued At value was after the indicated time plus allowable clock skew")
        if now_ms - skew_ms >= 1000 * exp:
            raise InvalidToken("The indicated time minus allowable clock skew was on or after the Expiration Time")
        if iat is not None and exp <= iat:
            raise InvalidToken("The Expiration Time time was not after the Issued At time")
        scope = _scope(claims.get(scope_claim))
        missing = [s for s in required_scope if s not in scope]
        if missing:
            raise InvalidToken(f"The provided scope was missing a required scope ({missing[0]})",
                               scope="[" + ", ".join(required_scope) + "]")
        return principal, round(exp * 1000)

    return validate


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _scope(value: Any) -> set[str]:
    if isinstance(value, str):
        return {value.strip()} if value.strip() else set()
    if isinstance(value, list):
        return {str(v).strip() for v in value if str(v).strip()}
    return set()


def _unsecured_jws(token: str) -> tuple[dict[str, Any], dict[str, Any]]:
    if ".." in token:
        raise InvalidToken("Malformed compact serialization contains '..'")
    parts = token.split(".")
    if len(parts) != 3:
        raise InvalidToken("Unsecured JWS compact serializations must have 3 dot-separated Base64URL-encoded values")
    if parts[2]:
        raise InvalidToken("Unsecured JWS must not contain a digital signature")
    return _json_part(parts[0]), _json_part(parts[1])


def _json_part(text: str) -> dict[str, Any]:
    try:
        raw = base64.b64decode(text + "=" * (-len(text) % 4), altchars=b"-_", validate=True)
    except (binascii.Error, ValueError):
        raise InvalidToken("malformed Base64 URL encoded value") from None
    try:
        value = json.loads(raw)
    except (ValueError, UnicodeDecodeError):
        raise InvalidToken("malformed JSON") from None
    if not isinstance(value, dict):
        raise InvalidToken("malformed JSON")
    return value


def listener_validator(options: dict[str, str], handler_class: str | None) -> Validator:
    """The listener's validator: the unsecured one, or the Python callable `module:attribute` named."""
    if not handler_class or handler_class == UNSECURED_HANDLER:
        return unsecured_validator(options)
    if ":" not in handler_class:
        raise ConfigError(f"sasl.server.callback.handler.class {handler_class}: Kafka's Java callback handlers "
                          "other than the unsecured validator are not served; name a Python callable "
                          "'module:attribute' that validates a token")
    module, _, attribute = handler_class.partition(":")
    try:
        validator = getattr(importlib.import_module(module), attribute)
    except (ImportError, AttributeError) as e:
        raise ConfigError(f"sasl.server.callback.handler.class {handler_class}: {e}") from None
    if not callable(validator):
        raise ConfigError(f"sasl.server.callback.handler.class {handler_class} is not callable")
    return validator


class OAuthBearerServer:
    def __init__(self, validator: Validator) -> None:
        self._validator = validator
        self._error: str | None = None
        self.username: str | None = None
        self.session_expiry_ms: int | None = None
        self.complete = False

    async def evaluate(self, response: bytes) -> bytes:
        if response == b"\x01" and self._error is not None:
            raise AuthenticationFailed(self._error, None)
        self._error = None
        text = response.decode("utf-8", "replace")
        m = _FIRST_MESSAGE.fullmatch(text)
        if m is None:
            raise InvalidSaslMessage("Invalid OAUTHBEARER client first message")
        pairs = dict(p.split("=", 1) for p in m["kvpairs"].split(_CONTROL_A) if p)
        auth = pairs.get("auth")
        if auth is None:
            raise InvalidSaslMessage("Invalid OAUTHBEARER client first message: 'auth' not specified")
        a = _AUTH.fullmatch(auth)
        if a is None:
            raise InvalidSaslMessage("Invalid OAUTHBEARER client first message: invalid 'auth' format")
        if a["scheme"].lower() != "bearer":
            raise InvalidSaslMessage(f"Invalid scheme in OAUTHBEARER client first message: {a['scheme']}")
        try:
            principal, expiry_ms = self._validator(a["token"])
        except InvalidToken as e:
            status = {"status": "insufficient_scope" if e.scope is not None else "invalid_token"}
            if e.scope is not None:
                status["scope"] = e.scope
            self._error = json.dumps(status, separators=(", ", ":"))
            self.username = None
            return self._error.encode()
        authzid = (m["authzid"] or "").replace("=2C", ",").replace("=3D", "=")
        if authzid and authzid != principal:
            raise AuthenticationFailed(
                f"Authentication failed: Client requested an authorization id ({authzid}) that is different from "
                f"the token's principal name ({principal})", principal)
        self.username = principal
        self.session_expiry_ms = expiry_ms
        self.complete = True
        return b""

"""SaslAuthenticate (key 36), versions 0–2.

A SASL listener's authenticator (broker.apis.sasl_authenticator) takes every SaslAuthenticate before the client is
authenticated; what reaches this handler is one after that, or one on a listener without SASL. Kafka's
KafkaApis answers both ILLEGAL_SASL_STATE ("SaslAuthenticate request received after successful
authentication"); so do we.
"""

from __future__ import annotations

from typing import Any

from broker.apis.base import RequestContext, response_for
from protocol.errors import ErrorCode

API_KEY = 36
MIN_VERSION = 0
MAX_VERSION = 2
ERRORS: tuple[ErrorCode, ...] = (ErrorCode.ILLEGAL_SASL_STATE,)


def handle(ctx: RequestContext, request: Any) -> Any:
    return response_for(request, error_code=ErrorCode.ILLEGAL_SASL_STATE,
                        error_message="SaslAuthenticate request received after successful authentication",
                        auth_bytes=b"", session_lifetime_ms=0)

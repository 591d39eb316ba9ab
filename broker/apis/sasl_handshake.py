"""SaslHandshake (key 17), versions 0–1.

A SASL listener's authenticator (broker.apis.sasl_authenticator) takes the handshakes that start an authentication or
a re-authentication (KIP-368); what reaches this handler is one on a listener without SASL, or one after
authentication that starts nothing (no session end on the connection, or within a second of the last
re-authentication). Kafka's KafkaApis answers those ILLEGAL_SASL_STATE with an empty list of mechanisms; so do we.
"""

from __future__ import annotations

from typing import Any

from broker.apis.base import RequestContext, response_for
from protocol.errors import ErrorCode

API_KEY = 17
MIN_VERSION = 0
MAX_VERSION = 1
ERRORS: tuple[ErrorCode, ...] = (ErrorCode.ILLEGAL_SASL_STATE,)


def handle(ctx: RequestContext, request: Any) -> Any:
    return response_for(request, error_code=ErrorCode.ILLEGAL_SASL_STATE, mechanisms=[])

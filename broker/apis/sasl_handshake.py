"""SaslHandshake (key 17), versions 0–1.

This broker has PLAINTEXT listeners only: every handshake answers ILLEGAL_SASL_STATE with an empty list of
mechanisms, which is what Kafka's KafkaApis says when a SaslHandshake reaches it on a listener without SASL
(no authenticator took the request first).
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

"""SaslHandshake (key 17), versions 0–1.

This broker has PLAINTEXT listeners only: every mechanism answers UNSUPPORTED_SASL_MECHANISM with an
empty list of enabled mechanisms, which is what Kafka says on a listener without SASL.
"""

from __future__ import annotations

from typing import Any

from broker.apis.base import RequestContext, response_for
from protocol.errors import ErrorCode

API_KEY = 17
MIN_VERSION = 0
MAX_VERSION = 1


def handle(ctx: RequestContext, request: Any) -> Any:
    return response_for(request, error_code=ErrorCode.UNSUPPORTED_SASL_MECHANISM, mechanisms=[])

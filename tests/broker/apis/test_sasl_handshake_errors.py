"""SaslHandshake: every code of `broker.apis.sasl_handshake.ERRORS`, over a real socket with our codec."""

from __future__ import annotations

from broker.apis import sasl_handshake
from protocol import ApiKey, request_class
from protocol.errors import ErrorCode

from .support import Producer, error_path_test

Req = request_class(ApiKey.SASL_HANDSHAKE)

PRODUCERS: dict[ErrorCode, Producer] = {
    ErrorCode.ILLEGAL_SASL_STATE: lambda b: b.call(Req[1](mechanism="PLAIN")),
}

test_errors = error_path_test(sasl_handshake, PRODUCERS)

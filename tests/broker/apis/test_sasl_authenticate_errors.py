"""SaslAuthenticate: every code of `broker.apis.sasl_authenticate.ERRORS`, over a real socket with our codec."""

from __future__ import annotations

from broker.apis import sasl_authenticate
from protocol import ApiKey, request_class
from protocol.errors import ErrorCode

from .support import Producer, error_path_test

Req = request_class(ApiKey.SASL_AUTHENTICATE)

PRODUCERS: dict[ErrorCode, Producer] = {
    # On a PLAINTEXT listener no authenticator takes it: KafkaApis' answer.
    ErrorCode.ILLEGAL_SASL_STATE: lambda b: b.call(Req[2](auth_bytes=b"\x00u\x00p")),
}

test_errors = error_path_test(sasl_authenticate, PRODUCERS)

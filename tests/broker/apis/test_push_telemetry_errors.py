"""PushTelemetry: every code of `broker.apis.push_telemetry.ERRORS`, over a real socket with our codec."""

from __future__ import annotations

import uuid
from typing import Any

from broker.apis import push_telemetry
from protocol.errors import ErrorCode

from .support import Brokers, Producer, error_path_test
from .telemetry_support import ZERO, push, subscribed


def pushed_twice(b: Brokers) -> Any:
    s = subscribed(b)
    assert push(b, s.client_instance_id, s.subscription_id).error_code == ErrorCode.NONE
    return push(b, s.client_instance_id, s.subscription_id)  # within the 5-minute push interval


def fresh(b: Brokers, **fields: Any) -> Any:
    s = subscribed(b)
    return push(b, s.client_instance_id, fields.pop("subscription_id", s.subscription_id), **fields)


PRODUCERS: dict[ErrorCode, Producer] = {
    ErrorCode.INVALID_REQUEST: lambda b: push(b, ZERO, 0),
    ErrorCode.THROTTLING_QUOTA_EXCEEDED: pushed_twice,
    ErrorCode.UNKNOWN_SUBSCRIPTION_ID: lambda b: fresh(b, subscription_id=12345),
    ErrorCode.UNSUPPORTED_COMPRESSION_TYPE: lambda b: fresh(b, compression_type=9),
    ErrorCode.TELEMETRY_TOO_LARGE: lambda b: fresh(b, metrics=bytes(1001)),  # telemetry.max.bytes=1000
    ErrorCode.INVALID_RECORD: lambda b: fresh(b, metrics=b"\x0a\xff\xff\xff"),  # a length past the end
    ErrorCode.UNSUPPORTED_VERSION: lambda b: push(b, uuid.uuid4(), 0, port=b.single.port),  # no receiver
}

test_errors = error_path_test(push_telemetry, PRODUCERS)

"""GetTelemetrySubscriptions: every code of `broker.apis.get_telemetry_subscriptions.ERRORS`, over a real socket with
our codec."""

from __future__ import annotations

from typing import Any

from broker.apis import get_telemetry_subscriptions
from protocol.errors import ErrorCode

from .support import Brokers, Producer, error_path_test
from .telemetry_support import ZERO, Get, receiving, subscribed


def asked_twice(b: Brokers) -> Any:
    first = subscribed(b)  # no subscription matches: the default push interval, 5 minutes
    assert first.error_code == ErrorCode.NONE and first.client_instance_id != ZERO
    return b.call(Get[0](client_instance_id=first.client_instance_id), receiving(b))


PRODUCERS: dict[ErrorCode, Producer] = {
    ErrorCode.THROTTLING_QUOTA_EXCEEDED: asked_twice,
    # the session's broker has no metrics.prometheus.listener: no telemetry receiver
    ErrorCode.UNSUPPORTED_VERSION: lambda b: b.call(Get[0](client_instance_id=ZERO)),
}

test_errors = error_path_test(get_telemetry_subscriptions, PRODUCERS)

"""KIP-714 requests for the error paths: a broker with a telemetry receiver (the Prometheus endpoint) and a client
instance that has just asked for its subscription."""

from __future__ import annotations

import uuid
from typing import Any

from protocol import ApiKey, request_class

from .support import Brokers

Get = request_class(ApiKey.GET_TELEMETRY_SUBSCRIPTIONS)
Push = request_class(ApiKey.PUSH_TELEMETRY)
ZERO = uuid.UUID(int=0)


def receiving(b: Brokers) -> int:
    """The port of a broker that receives client metrics (telemetry.max.bytes 1000)."""
    return b.other(metrics_prometheus_listener="http://127.0.0.1:0", telemetry_max_bytes="1000").port


def subscribed(b: Brokers) -> Any:
    """A new client instance's GetTelemetrySubscriptions answer (its id and subscription id)."""
    return b.call(Get[0](client_instance_id=ZERO), receiving(b))


def push(b: Brokers, instance_id: uuid.UUID, subscription_id: int, *, compression_type: int = 0,
         metrics: bytes = b"", terminating: bool = False, port: int | None = None) -> Any:
    return b.call(Push[0](client_instance_id=instance_id, subscription_id=subscription_id, terminating=terminating,
                          compression_type=compression_type, metrics=metrics), port or receiving(b))

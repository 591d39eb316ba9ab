"""GetTelemetrySubscriptions (key 71), version 0 (KIP-714, Kafka 3.7+).

A client asks which of its metrics the broker wants and how often (broker/metrics/client_metrics.py): a zero
`client_instance_id` gets a new one; the answer carries the subscription id, the requested metric prefixes ("*":
all; none: no subscription matches and the client pushes nothing), the push interval, `telemetry.max.bytes`, the
compression types accepted (zstd, lz4, gzip, snappy) and delta temporality, as Kafka's ClientMetricsManager answers.
Errors: THROTTLING_QUOTA_EXCEEDED, asked again before the push interval has passed; UNSUPPORTED_VERSION, from a
broker that receives no client metrics (no `metrics.prometheus.listener`: ApiVersions then leaves this API out, as
Kafka leaves it out without a telemetry receiver).
"""

from __future__ import annotations

import uuid
from typing import Any

from broker.apis.base import RequestContext, response_for
from broker.controller import client_metrics_configs
from broker.metrics.client_metrics import ACCEPTED_COMPRESSION_TYPES
from protocol.errors import ErrorCode

API_KEY = 71
MIN_VERSION = 0
MAX_VERSION = 0
ERRORS: tuple[ErrorCode, ...] = (ErrorCode.THROTTLING_QUOTA_EXCEEDED, ErrorCode.UNSUPPORTED_VERSION)

_ZERO = uuid.UUID(int=0)


def _error(request: Any, error: ErrorCode) -> Any:
    return response_for(request, throttle_time_ms=0, error_code=error, client_instance_id=_ZERO, subscription_id=0,
                        accepted_compression_types=[], push_interval_ms=0, telemetry_max_bytes=0,
                        delta_temporality=False, requested_metrics=[])


async def handle(ctx: RequestContext, request: Any) -> Any:
    manager = await client_metrics_configs.manager(ctx.server)
    if not manager.receiving:
        return _error(request, ErrorCode.UNSUPPORTED_VERSION)
    error, instance = manager.get_subscriptions(request.client_instance_id, client_metrics_configs.client_of(ctx))
    if instance is None:
        return _error(request, error)
    return response_for(request, throttle_time_ms=0, error_code=ErrorCode.NONE,
                        client_instance_id=instance.instance_id, subscription_id=instance.subscription_id,
                        accepted_compression_types=list(ACCEPTED_COMPRESSION_TYPES),
                        push_interval_ms=instance.interval_ms, telemetry_max_bytes=manager.telemetry_max_bytes,
                        delta_temporality=True, requested_metrics=list(instance.metrics))

"""PushTelemetry (key 72), version 0 (KIP-714, Kafka 3.7+).

A client pushes the metrics of its subscription as OpenTelemetry's OTLP MetricsData protobuf, compressed with one
of Kafka's codecs or not; they are decoded (broker/metrics/otlp.py) and served on the Prometheus endpoint with the
client's labels (broker/metrics/client_metrics.py). `terminating` is the client's last push.
Errors, checked in Kafka's ClientMetricsManager's order: INVALID_REQUEST (a zero or reserved client instance id, or
a push after a terminating one), THROTTLING_QUOTA_EXCEEDED (before the push interval, unless terminating),
UNKNOWN_SUBSCRIPTION_ID (the subscription changed: the client asks again), UNSUPPORTED_COMPRESSION_TYPE (not one of
Kafka's codec ids), TELEMETRY_TOO_LARGE (more than `telemetry.max.bytes`), INVALID_RECORD (metrics that do not
decompress or decode); UNSUPPORTED_VERSION from a broker that receives no client metrics (no
`metrics.prometheus.listener`, as Kafka without a telemetry receiver).
"""

from __future__ import annotations

from typing import Any

from broker.apis.base import RequestContext, response_for
from broker.controller import client_metrics_configs
from protocol.errors import ErrorCode

API_KEY = 72
MIN_VERSION = 0
MAX_VERSION = 0
ERRORS: tuple[ErrorCode, ...] = (
    ErrorCode.INVALID_REQUEST, ErrorCode.THROTTLING_QUOTA_EXCEEDED, ErrorCode.UNKNOWN_SUBSCRIPTION_ID,
    ErrorCode.UNSUPPORTED_COMPRESSION_TYPE, ErrorCode.TELEMETRY_TOO_LARGE, ErrorCode.INVALID_RECORD,
    ErrorCode.UNSUPPORTED_VERSION,
)


async def handle(ctx: RequestContext, request: Any) -> Any:
    manager = await client_metrics_configs.manager(ctx.server)
    if not manager.receiving:
        return response_for(request, throttle_time_ms=0, error_code=ErrorCode.UNSUPPORTED_VERSION)
    error = manager.push(request.client_instance_id, request.subscription_id, bool(request.terminating),
                         request.compression_type, request.metrics, client_metrics_configs.client_of(ctx))
    return response_for(request, throttle_time_ms=0, error_code=error)

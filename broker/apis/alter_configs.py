"""AlterConfigs (key 33), versions 0–2 — the legacy, whole-set replacement.

TOPIC resources: the topic's overrides become exactly the given set (validated first), stored in the
metadata store (Kafka: /config/topics/<topic> with a change notification) and applied to the topic's
logs at once. BROKER resources: the dynamic configs of this broker ("<id>") or of the cluster-wide
default ("") become exactly the given set, persisted (/config/brokers/<entity>) and applied on every
broker. `validate_only` checks without changing anything. Error codes and messages are Kafka's; see
broker/controller/config_admin.py.
KRaft mode (`process.roles=broker`): topic and broker configs are set on the controller (ConfigRecords, any
broker's id), answered once this broker's metadata has them; REQUEST_TIMED_OUT when it cannot be reached.
With an authorizer (Kafka): ALTER_CONFIGS on the topic (else TOPIC_AUTHORIZATION_FAILED) or on the
cluster for broker resources (else CLUSTER_AUTHORIZATION_FAILED).
More than 10,000 configs in one request (a record each in Kafka's controller, `broker.controller.limits`):
every resource POLICY_VIOLATION "Unable to perform excessively large batch operation.", nothing changed.
"""

from __future__ import annotations

from typing import Any

from broker.apis.base import RequestContext, response_for, response_type
from broker.controller.config_admin import alter_resources
from protocol.errors import ErrorCode

API_KEY = 33
MIN_VERSION = 0
MAX_VERSION = 2
ERRORS: tuple[ErrorCode, ...] = (
    ErrorCode.INVALID_REQUEST, ErrorCode.INVALID_CONFIG, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
    ErrorCode.TOPIC_AUTHORIZATION_FAILED, ErrorCode.CLUSTER_AUTHORIZATION_FAILED, ErrorCode.REQUEST_TIMED_OUT,
    ErrorCode.POLICY_VIOLATION,
)


async def handle(ctx: RequestContext, request: Any) -> Any:
    Resp = response_type(request)
    results = await alter_resources(ctx.server, request.resources, bool(request.validate_only),
                                    authorize=ctx.authorize, incremental=False)
    return response_for(request, throttle_time_ms=0, responses=[Resp.AlterConfigsResourceResponse(
        error_code=err, error_message=msg, resource_type=res.resource_type, resource_name=res.resource_name)
        for res, (err, msg) in results])

"""IncrementalAlterConfigs (key 44), versions 0–1.

SET (0) / DELETE (1) / APPEND (2) / SUBTRACT (3) on TOPIC resources (the topic's overrides, stored in the
metadata store and applied to its logs at once) and BROKER resources (dynamic broker configs: "<id>" for
this broker, "" for the cluster-wide default; persisted in the metadata store and applied on every
broker without a restart). APPEND/SUBTRACT only on list keys; an empty list (cleanup.policy="") is a
valid value. `validate_only` checks without changing anything. Error codes and messages are Kafka's;
see broker/controller/config_admin.py for each.
KRaft mode (`process.roles=broker`): topic and broker configs are set on the controller (ConfigRecords, any
broker's id), answered once this broker's metadata has them; REQUEST_TIMED_OUT when it cannot be reached.
Gaps: BROKER_LOGGER resources (log levels) answer INVALID_REQUEST.
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

API_KEY = 44
MIN_VERSION = 0
MAX_VERSION = 1
ERRORS: tuple[ErrorCode, ...] = (
    ErrorCode.INVALID_REQUEST, ErrorCode.INVALID_CONFIG, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
    ErrorCode.TOPIC_AUTHORIZATION_FAILED, ErrorCode.CLUSTER_AUTHORIZATION_FAILED, ErrorCode.REQUEST_TIMED_OUT,
    ErrorCode.POLICY_VIOLATION,
)


async def handle(ctx: RequestContext, request: Any) -> Any:
    Resp = response_type(request)
    results = await alter_resources(ctx.server, request.resources, bool(request.validate_only),
                                    authorize=ctx.authorize, incremental=True)
    return response_for(request, throttle_time_ms=0, responses=[Resp.AlterConfigsResourceResponse(
        error_code=err, error_message=msg, resource_type=res.resource_type, resource_name=res.resource_name)
        for res, (err, msg) in results])

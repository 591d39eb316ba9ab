"""AlterConfigs (key 33), versions 0–2 — the legacy, whole-set replacement.

TOPIC resources: the topic's overrides become exactly the given set (validated first: INVALID_CONFIG
naming the key), stored in the metadata store (Kafka: /config/topics/<topic> with a change
notification) and applied to the topic's logs at once. `validate_only` checks without changing.
Gaps: BROKER resources (dynamic broker configs) answer INVALID_REQUEST: broker configuration comes
from server.properties and --override only.
"""

from __future__ import annotations

from typing import Any

from broker.apis.base import RequestContext, response_for, response_type
from protocol.errors import ErrorCode

API_KEY = 33
MIN_VERSION = 0
MAX_VERSION = 2

TOPIC = 2


async def handle(ctx: RequestContext, request: Any) -> Any:
    controller = ctx.server.controller
    assert controller is not None
    Resp = response_type(request)
    out = []
    for res in request.resources:
        if res.resource_type == TOPIC:
            configs = {c.name: c.value for c in res.configs if c.value is not None}
            err, msg = await controller.admin.alter_topic_configs(res.resource_name, configs, request.validate_only)
        else:
            err, msg = ErrorCode.INVALID_REQUEST, "only topic configs can be altered on this broker"
        out.append(Resp.AlterConfigsResourceResponse(error_code=err, error_message=msg,
                                                     resource_type=res.resource_type,
                                                     resource_name=res.resource_name))
    return response_for(request, throttle_time_ms=0, responses=out)

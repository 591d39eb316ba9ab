"""IncrementalAlterConfigs (key 44), versions 0–1.

TOPIC resources: SET (0) / DELETE (1) / APPEND (2) / SUBTRACT (3) applied to the topic's current
overrides (APPEND/SUBTRACT on list-valued keys such as cleanup.policy), validated as a whole
(INVALID_CONFIG), stored and applied as AlterConfigs does. `validate_only` checks without changing.
Gaps: BROKER resources answer INVALID_REQUEST (no dynamic broker configs).
"""

from __future__ import annotations

from typing import Any

from broker.apis.base import RequestContext, response_for, response_type
from protocol.errors import ErrorCode

API_KEY = 44
MIN_VERSION = 0
MAX_VERSION = 1

TOPIC = 2
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3
LIST_KEYS = {"cleanup.policy", "follower.replication.throttled.replicas", "leader.replication.throttled.replicas"}


async def handle(ctx: RequestContext, request: Any) -> Any:
    server = ctx.server
    controller = server.controller
    assert controller is not None
    Resp = response_type(request)
    out = []
    for res in request.resources:
        err, msg = ErrorCode.NONE, None
        if res.resource_type != TOPIC:
            err, msg = ErrorCode.INVALID_REQUEST, "only topic configs can be altered on this broker"
        elif res.resource_name not in server.metadata_cache.topics:
            err, msg = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"Topic {res.resource_name} does not exist"
        else:
            configs = dict(server.topic_configs.overrides(res.resource_name))
            defaults = server.config.topic_defaults()
            for c in res.configs:
                op = c.config_operation
                if op == SET:
                    configs[c.name] = c.value
                elif op == DELETE:
                    configs.pop(c.name, None)
                elif op in (APPEND, SUBTRACT):
                    if c.name not in LIST_KEYS:
                        err, msg = ErrorCode.INVALID_CONFIG, f"Config {c.name} is not a list"
                        break
                    current = [x for x in configs.get(c.name, defaults.get(c.name, "")).split(",") if x]
                    given = [x.strip() for x in (c.value or "").split(",") if x.strip()]
                    if op == APPEND:
                        current += [x for x in given if x not in current]
                    else:
                        current = [x for x in current if x not in given]
                    configs[c.name] = ",".join(current)
                else:
                    err, msg = ErrorCode.INVALID_REQUEST, f"Unknown config operation {op}"
                    break
            if err == ErrorCode.NONE:
                err, msg = await controller.admin.alter_topic_configs(res.resource_name, configs, request.validate_only)
        out.append(Resp.AlterConfigsResourceResponse(error_code=err, error_message=msg,
                                                     resource_type=res.resource_type,
                                                     resource_name=res.resource_name))
    return response_for(request, throttle_time_ms=0, responses=out)

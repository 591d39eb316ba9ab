"""ListConfigResources (key 74), versions 0-1: Kafka 3.7's ListClientMetricsResources (v0: the `client-metrics`
subscriptions' names), renamed in Kafka 4.1 (KIP-1142), whose v1 lists the config resources of the types asked
for: TOPIC (2), BROKER (4), BROKER_LOGGER (8), CLIENT_METRICS (16), GROUP (32) (all of them when none is named).

Topics are those of the metadata cache, brokers and broker loggers the live brokers' ids, groups those with group
configs (broker/config/group_configs.py), client metrics the subscriptions
(broker/controller/client_metrics_configs.py).
Errors: CLUSTER_AUTHORIZATION_FAILED without DESCRIBE_CONFIGS on the cluster (with an authorizer);
UNSUPPORTED_VERSION for a resource type not listed above (as Kafka).
"""

from __future__ import annotations

import asyncio
from typing import Any

from broker.apis.base import RequestContext, response_for, response_type
from broker.controller import client_metrics_configs
from broker.security.acl import AclOperation
from protocol.errors import ErrorCode

API_KEY = 74
MIN_VERSION = 0
MAX_VERSION = 1
ERRORS: tuple[ErrorCode, ...] = (ErrorCode.CLUSTER_AUTHORIZATION_FAILED, ErrorCode.UNSUPPORTED_VERSION)

TOPIC, BROKER, BROKER_LOGGER, CLIENT_METRICS, GROUP = 2, 4, 8, 16, 32
SUPPORTED = (GROUP, CLIENT_METRICS, BROKER_LOGGER, BROKER, TOPIC)


async def handle(ctx: RequestContext, request: Any) -> Any:
    if not ctx.authorize_cluster(AclOperation.DESCRIBE_CONFIGS):
        return response_for(request, throttle_time_ms=0, error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
                            config_resources=[])
    types = list(request.resource_types or ()) if request.API_VERSION >= 1 else [CLIENT_METRICS]
    if any(t not in SUPPORTED for t in types):
        return response_for(request, throttle_time_ms=0, error_code=ErrorCode.UNSUPPORTED_VERSION,
                            config_resources=[])
    Resource = response_type(request).ConfigResource
    server = ctx.server
    out = []
    for kind in [t for t in SUPPORTED if t in types] if types else SUPPORTED:
        if kind == GROUP:
            names = await asyncio.to_thread(_group_config_ids, server)
        elif kind == CLIENT_METRICS:
            names = await client_metrics_configs.names(server)
        elif kind in (BROKER, BROKER_LOGGER):
            names = [str(b) for b in sorted(server.metadata_cache.brokers)]
        else:
            names = sorted(server.metadata_cache.topics)
        out += [Resource(resource_name=name, resource_type=kind) for name in names]
    return response_for(request, throttle_time_ms=0, error_code=ErrorCode.NONE, config_resources=out)


def _group_config_ids(server: Any) -> list[str]:
    tree = getattr(getattr(server.controller, "store", None), "_tree", None)
    return sorted(tree.children("/config/groups") or ()) if tree is not None else []

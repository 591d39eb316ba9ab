"""DescribeConfigs (key 32), versions 0–4, answered as Kafka 3.7's ConfigHelper answers.

TOPIC resources (type 2): an invalid name answers INVALID_TOPIC_EXCEPTION, a missing topic
UNKNOWN_TOPIC_OR_PARTITION (no message); otherwise every topic key with its effective value, Kafka's
`config_type`, `config_source` and synonyms (the override, then the broker keys behind it over the
dynamic per-broker, dynamic cluster-wide, static and default layers; see broker/config/describe.py).
The topic's overrides are read from the metadata store first (a broker that is not the controller may
not have seen a new topic's config yet).
BROKER resources (type 4): "<this broker's id>" lists every broker key and every supplied key; "" lists
the cluster-wide dynamic defaults. A non-integer name: INVALID_REQUEST "Broker id must be an integer, but
it is: x"; another broker's id: INVALID_REQUEST "Unexpected broker id, expected <id> or empty string, but
received <x>". PASSWORD keys and unknown keys are sensitive (value null). `configuration_keys` filters;
synonyms only with `include_synonyms` (v1+); `documentation` (v3+) only with `include_documentation`.
v0 carries `is_default`, which Kafka 3.7 leaves false; v1+ carry `config_source` instead.
GROUP resources (type 32): the share-group configs of broker/config/group_configs.py, each with its value (the
group's override, source GROUP_CONFIG, else the default); an empty group id is INVALID_REQUEST.
CLIENT_METRICS resources (type 16, KIP-714): the keys a subscription sets, source CLIENT_METRICS_CONFIG (as Kafka
3.7); an empty name is INVALID_REQUEST (broker/controller/client_metrics_configs.py).
Gaps: BROKER_LOGGER (8) resources answer INVALID_REQUEST.
With an authorizer (Kafka): DESCRIBE_CONFIGS on the topic (else TOPIC_AUTHORIZATION_FAILED) or on the
cluster for broker resources (else CLUSTER_AUTHORIZATION_FAILED).
"""

from __future__ import annotations

from typing import Any

from broker.apis.base import RequestContext, response_for, response_type
from broker.config.describe import DescribedConfig, describe_broker, describe_topic
from broker.config.group_configs import GROUP, group_configs
from broker.config.topics import topic_name_error
from broker.controller import client_metrics_configs
from broker.controller.config_admin import config_refusal
from broker.security.acl import AclOperation
from protocol.errors import ErrorCode

API_KEY = 32
MIN_VERSION = 0
MAX_VERSION = 4
ERRORS: tuple[ErrorCode, ...] = (
    ErrorCode.INVALID_TOPIC_EXCEPTION, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode.INVALID_REQUEST,
    ErrorCode.TOPIC_AUTHORIZATION_FAILED, ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
)

TOPIC = 2
BROKER = 4
CLIENT_METRICS = 16


async def handle(ctx: RequestContext, request: Any) -> Any:
    server = ctx.server
    v = request.API_VERSION
    Result = response_type(request).DescribeConfigsResult
    Entry = Result.DescribeConfigsResourceResult
    include_synonyms = v >= 1 and bool(request.include_synonyms)
    include_docs = v >= 3 and bool(getattr(request, "include_documentation", False))

    def entry(c: DescribedConfig) -> Any:
        synonyms = [Entry.DescribeConfigsSynonym(name=s.name, value=s.value, source=int(s.source))
                    for s in c.synonyms] if include_synonyms else []
        return Entry(name=c.name, value=c.value, read_only=c.read_only, is_default=False,
                     config_source=int(c.source), is_sensitive=c.sensitive, synonyms=synonyms,
                     config_type=int(c.type), documentation=c.documentation)

    results = []
    for res in request.resources:
        keys = set(res.configuration_keys) if res.configuration_keys else None
        configs: list[DescribedConfig] = []
        error, message = ErrorCode.NONE, None
        refused = config_refusal(ctx.authorize, AclOperation.DESCRIBE_CONFIGS, res.resource_type, res.resource_name) \
            if server.authorizer is not None else None
        if refused is not None:
            error, message = refused
        elif res.resource_type == TOPIC:
            name_error = topic_name_error(res.resource_name)
            if name_error is not None:
                error, message = ErrorCode.INVALID_TOPIC_EXCEPTION, name_error
            elif res.resource_name not in server.metadata_cache.topics:
                error = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            else:
                await server.refresh_topic_config(res.resource_name)
                configs = describe_topic(server.config, server.topic_configs.overrides(res.resource_name),
                                         documentation=include_docs)
        elif res.resource_type == BROKER:
            error, message = _check_broker_name(res.resource_name, server.broker_id)
            if error == ErrorCode.NONE:
                configs = describe_broker(server.config, per_broker=res.resource_name != "",
                                          documentation=include_docs)
        elif res.resource_type == GROUP:
            if res.resource_name:
                configs = await group_configs(server).describe(res.resource_name)
            else:
                error, message = ErrorCode.INVALID_REQUEST, "Group id must not be empty."
        elif res.resource_type == CLIENT_METRICS:
            (error, message), configs = await client_metrics_configs.describe(server, res.resource_name)
        else:
            error, message = ErrorCode.INVALID_REQUEST, f"Unsupported resource type: {res.resource_type}"
        results.append(Result(error_code=error, error_message=message, resource_type=res.resource_type,
                              resource_name=res.resource_name,
                              configs=[entry(c) for c in configs if keys is None or c.name in keys]))
    return response_for(request, throttle_time_ms=0, results=results)


def _check_broker_name(name: str, broker_id: int) -> tuple[ErrorCode, str | None]:
    if name == "":
        return ErrorCode.NONE, None
    try:
        requested = int(name)
    except ValueError:
        return ErrorCode.INVALID_REQUEST, f"Broker id must be an integer, but it is: {name}"
    if requested != broker_id:
        return ErrorCode.INVALID_REQUEST, (f"Unexpected broker id, expected {broker_id} or empty string, "
                                           f"but received {name}")
    return ErrorCode.NONE, None

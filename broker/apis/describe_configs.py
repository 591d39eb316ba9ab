"""DescribeConfigs (key 32), versions 0–4.

TOPIC resources (type 2), read from the metadata store: every topic-level config with its effective
value and source (TOPIC_CONFIG for overrides, STATIC_BROKER_CONFIG when the broker's server.properties
set the default, else DEFAULT_CONFIG), and synonyms (v1+) naming the broker key behind each default.
BROKER resources (type 4, named by broker id): the broker's configuration, read-only
(STATIC_BROKER_CONFIG / DEFAULT_CONFIG). `configuration_keys` filters. Unknown topic:
UNKNOWN_TOPIC_OR_PARTITION; another broker's id or an unknown resource type: INVALID_REQUEST.
v3+ config types are STRING unless known.
Gaps: BROKER_LOGGER resources are answered INVALID_REQUEST; no documentation strings.
"""

from __future__ import annotations

from typing import Any

from broker.apis.base import RequestContext, response_for, response_type
from broker.config import DEFINITIONS
from broker.topics import _BROKER_KEY_FOR_TOPIC_KEY, SOURCE_DEFAULT, SOURCE_STATIC_BROKER, SOURCE_TOPIC
from protocol.errors import ErrorCode

API_KEY = 32
MIN_VERSION = 0
MAX_VERSION = 4

TOPIC = 2
BROKER = 4

_CONFIG_TYPES = {"bool": 1, "string": 2, "int": 3, "short": 4, "long": 5, "double": 6, "list": 7,
                 "password": 9}


async def handle(ctx: RequestContext, request: Any) -> Any:
    server = ctx.server
    v = request.API_VERSION
    Resp = response_type(request)
    Result = Resp.DescribeConfigsResult
    Entry = Result.DescribeConfigsResourceResult
    include_synonyms = v >= 1 and bool(request.include_synonyms)
    results = []
    for res in request.resources:
        keys = set(res.configuration_keys) if res.configuration_keys else None
        entries = []
        error, message = ErrorCode.NONE, None
        if res.resource_type == TOPIC:
            if res.resource_name not in server.metadata_cache.topics:
                error, message = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"Topic {res.resource_name} does not exist"
            else:
                await server.refresh_topic_config(res.resource_name)
                for e in server.topic_configs.describe(res.resource_name):
                    if keys is not None and e.name not in keys:
                        continue
                    synonyms = []
                    if include_synonyms:
                        if e.source == SOURCE_TOPIC:
                            synonyms.append(Entry.DescribeConfigsSynonym(name=e.name, value=e.value,
                                                                         source=SOURCE_TOPIC))
                        broker_key = _BROKER_KEY_FOR_TOPIC_KEY.get(e.name)
                        if broker_key is not None:
                            bval = server.config.originals.get(broker_key)
                            if bval is not None:
                                synonyms.append(Entry.DescribeConfigsSynonym(name=broker_key, value=bval,
                                                                             source=SOURCE_STATIC_BROKER))
                    entries.append(Entry(name=e.name, value=e.value, read_only=False,
                                         config_source=e.source, is_default=e.source == SOURCE_DEFAULT,
                                         is_sensitive=False, synonyms=synonyms, config_type=2,
                                         documentation=None))
        elif res.resource_type == BROKER:
            if res.resource_name not in ("", str(server.broker_id)):
                error, message = ErrorCode.INVALID_REQUEST, f"Unexpected broker id {res.resource_name}"
            else:
                for name, value in server.config.items():
                    if keys is not None and name not in keys:
                        continue
                    source = SOURCE_DEFAULT if server.config.is_default(name) else SOURCE_STATIC_BROKER
                    text = None if value is None else (",".join(value) if isinstance(value, list)
                                                        else str(value).lower() if isinstance(value, bool)
                                                        else str(value))
                    synonyms = [Entry.DescribeConfigsSynonym(name=name, value=text, source=source)] \
                        if include_synonyms else []
                    entries.append(Entry(name=name, value=text, read_only=True, config_source=source,
                                         is_default=source == SOURCE_DEFAULT, is_sensitive=False,
                                         synonyms=synonyms, config_type=_CONFIG_TYPES.get(DEFINITIONS[name].type, 2),
                                         documentation=None))
        else:
            error, message = ErrorCode.INVALID_REQUEST, f"Unsupported resource type {res.resource_type}"
        results.append(Result(error_code=error, error_message=message, resource_type=res.resource_type,
                              resource_name=res.resource_name, configs=entries))
    return response_for(request, throttle_time_ms=0, results=results)

"""AlterConfigs and IncrementalAlterConfigs, resource by resource, as Kafka 3.7's ZooKeeper-mode broker does.

Contract (Kafka's ConfigAdminManager preprocessing plus ZkAdminManager persistence, same error codes
and messages):
- A resource named twice in one request: INVALID_REQUEST "Each resource must appear at most once." for
  both; a key named twice in one resource: INVALID_REQUEST "Error due to duplicate config keys"; a null
  value (other than for DELETE): INVALID_REQUEST "Null value not supported for : a, b".
- TOPIC: "" is INVALID_REQUEST "Default topic resources are not allowed."; the incremental operations apply
  to the topic's stored overrides (APPEND/SUBTRACT only on list keys, starting from Kafka's topic default:
  INVALID_CONFIG "Config value append is not allowed for config key: x"); a missing topic is
  UNKNOWN_TOPIC_OR_PARTITION "The topic 't' does not exist."; then Kafka's validation: an unknown key or a
  min/max compaction lag conflict INVALID_CONFIG with its own message, a bad value INVALID_CONFIG
  "Invalid config value for resource ConfigResource(type=TOPIC, name='t'): Invalid value ...". An empty
  list (cleanup.policy="") is valid, as in Kafka 3.7.
- BROKER: "" is the cluster-wide default, "<this broker's id>" this broker ("Node id must be an integer,
  but it is: x" / "Unexpected broker id, expected 0, but received 3": INVALID_REQUEST); validation failures
  of dynamic broker configs answer INVALID_REQUEST with Kafka's message (broker/config/dynamic.py);
  dynamic passwords INVALID_CONFIG (we cannot store them encrypted as Kafka does). KRaft mode: any broker's id
  is taken (as Kafka's KRaft broker forwards it; validated against this broker's config), the incremental
  operations apply to the metadata image's set, then it is set on the controller as IncrementalAlterConfigs of
  the BROKER resource (ConfigRecords), answered once this broker's metadata has them (broker/kraft/admin.py
  `alter_broker_configs`).
- GROUP: the share-group configs of broker/config/group_configs.py (INVALID_CONFIG for unknown keys or values out of
  the broker's bounds).
- CLIENT_METRICS: KIP-714 subscriptions (broker/controller/client_metrics_configs.py; Kafka's ClientMetricsConfigs
  validation: INVALID_REQUEST or INVALID_CONFIG with its messages).
- Other resource types: INVALID_REQUEST.
- APPEND/SUBTRACT on a key Kafka does not define: UNKNOWN_SERVER_ERROR without a message, as Kafka 3.7.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from broker.config.alter import (
    OK,
    AdminError,
    Result,
    apply_operations,
    broker_list_default,
    check_entries,
    topic_list_default,
)
from broker.config.dynamic import DEFAULT_ENTITY, NotPersistable
from broker.config.group_configs import GROUP, GroupConfigsServer, group_configs
from broker.config.types import ConfigError
from broker.controller.limits import EXCESSIVE_BATCH, too_many_records
from broker.metadata import UnknownTopicError
from broker.security.acl import CLUSTER_NAME, AclOperation, ResourceType
from protocol.errors import ErrorCode

if TYPE_CHECKING:
    from broker.config.dynamic import DynamicBrokerConfig
    from broker.config.topics import TopicConfigs
    from broker.metadata.metadata_cache import MetadataCache

TOPIC, BROKER = 2, 4
_TYPE_NAMES = {TOPIC: "TOPIC", BROKER: "BROKER", 8: "BROKER_LOGGER", 16: "CLIENT_METRICS", GROUP: "GROUP"}


class ConfigAdminServer(GroupConfigsServer, Protocol):
    """The broker as AlterConfigs sees it (KafkaServer): its id, the metadata cache (which topics exist), the topic
    configs and dynamic broker configs it alters, and its controller, which writes them (`controller.admin`)."""

    broker_id: int
    dynamic_config: DynamicBrokerConfig
    metadata_cache: MetadataCache
    topic_configs: TopicConfigs

    async def refresh_topic_config(self, topic: str) -> None: ...


def resource_string(resource_type: int, name: str) -> str:
    return f"ConfigResource(type={_TYPE_NAMES.get(resource_type, 'UNKNOWN')}, name='{name}')"


def invalid_config(resource_type: int, name: str, error: Exception) -> AdminError:
    """Kafka's answer to a ConfigException while altering: INVALID_CONFIG naming the resource."""
    return AdminError(ErrorCode.INVALID_CONFIG,
                      f"Invalid config value for resource {resource_string(resource_type, name)}: {error}")


Authorize = Callable[[AclOperation, ResourceType, str], bool]


def config_refusal(authorize: Authorize, operation: AclOperation, resource_type: int, name: str) -> Result | None:
    """Kafka's check of a config resource: a topic needs `operation` (ALTER_CONFIGS, DESCRIBE_CONFIGS) on the
    topic, a broker or broker logger on the cluster; refused: TOPIC_ / CLUSTER_AUTHORIZATION_FAILED."""
    if resource_type == TOPIC:
        if not authorize(operation, ResourceType.TOPIC, name):
            return ErrorCode.TOPIC_AUTHORIZATION_FAILED, None
    elif not authorize(operation, ResourceType.CLUSTER, CLUSTER_NAME):
        return ErrorCode.CLUSTER_AUTHORIZATION_FAILED, None
    return None


async def alter_resources(server: ConfigAdminServer, resources: Sequence[Any], validate_only: bool,
                          incremental: bool, authorize: Authorize) -> list[tuple[Any, Result]]:
    """AlterConfigs and IncrementalAlterConfigs: each resource with its (error, message), in request order; a
    resource named twice is refused every time, as Kafka does, one the principal may not ALTER_CONFIGS is
    refused (`config_refusal`), and the others are altered one by one. More than 10,000 configs in all (a record
    each in Kafka's controller, `broker.controller.limits`) refuse every resource POLICY_VIOLATION."""
    if too_many_records(sum(len(r.configs or ()) for r in resources)):
        # a record per config in Kafka's controller, which refuses the whole request past its bound
        return [(res, (ErrorCode.POLICY_VIOLATION, EXCESSIVE_BATCH)) for res in resources]
    counts = Counter((r.resource_type, r.resource_name) for r in resources)
    out: list[tuple[Any, Result]] = []
    for res in resources:
        if counts[(res.resource_type, res.resource_name)] > 1:
            out.append((res, (ErrorCode.INVALID_REQUEST, "Each resource must appear at most once.")))
        elif (refused := config_refusal(authorize, AclOperation.ALTER_CONFIGS, res.resource_type,
                                        res.resource_name)) is not None:
            out.append((res, refused))
        else:
            out.append((res, await alter_resource(server, res, validate_only, incremental)))
    return out


def broker_entity(name: str, broker_id: int, any_id: bool = False) -> str:
    if name == "":
        return DEFAULT_ENTITY
    if not re.fullmatch(r"[+-]?[0-9]+", name):
        raise AdminError(ErrorCode.INVALID_REQUEST, f"Node id must be an integer, but it is: {name}")
    if int(name) != broker_id and not any_id:
        raise AdminError(ErrorCode.INVALID_REQUEST, f"Unexpected broker id, expected {broker_id}, but received {name}")
    return name


async def alter_topic(server: ConfigAdminServer, topic: str, configs: Sequence[Any], validate_only: bool,
                      incremental: bool) -> Result:
    try:
        check_entries(configs, incremental)
        if topic == "":
            raise AdminError(ErrorCode.INVALID_REQUEST, "Default topic resources are not allowed.")
        exists = topic in server.metadata_cache.topics
        if incremental:
            if exists:
                try:
                    await server.refresh_topic_config(topic)
                except UnknownTopicError:  # deleted while we read its config
                    exists = False
            props = apply_operations(configs, server.topic_configs.overrides(topic) if exists else {},
                                     topic_list_default)
        else:
            props = {c.name: c.value for c in configs}
        if not exists:
            raise AdminError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"The topic '{topic}' does not exist.")
        try:
            server.topic_configs.validate(props)
        except ConfigError as e:
            raise invalid_config(TOPIC, topic, e) from None
        except ValueError as e:
            raise AdminError(ErrorCode.INVALID_CONFIG, str(e)) from None
    except AdminError as e:
        return e.result
    if validate_only:
        return OK
    assert server.controller is not None
    return await server.controller.admin.alter_topic_configs(topic, props, validate_only)


async def alter_broker(server: ConfigAdminServer, name: str, configs: Sequence[Any], validate_only: bool,
                       incremental: bool) -> Result:
    dynamic = server.dynamic_config
    try:
        check_entries(configs, incremental)
        kraft = server.config.is_kraft  # any broker's configs, set on the controller, as Kafka's KRaft broker
        entity = broker_entity(name, server.broker_id, any_id=kraft)
        if incremental:
            assert server.controller is not None
            current = server.controller.admin.broker_configs(entity) if kraft else await dynamic.persisted(entity)
            props = apply_operations(configs, current, broker_list_default)
        else:
            props = {c.name: c.value for c in configs}
        try:
            await dynamic.alter(entity, props, validate_only or server.config.is_kraft)
            if server.config.is_kraft and not validate_only:  # the controller writes the ConfigRecords
                assert server.controller is not None
                return await server.controller.admin.alter_broker_configs(
                    "" if entity == DEFAULT_ENTITY else entity, props, validate_only)
        except NotPersistable as e:
            raise invalid_config(BROKER, name, e) from None
        except ConfigError as e:
            raise AdminError(ErrorCode.INVALID_REQUEST, str(e)) from None
    except AdminError as e:
        return e.result
    return OK


async def alter_resource(server: ConfigAdminServer, res: Any, validate_only: bool, incremental: bool) -> Result:
    if res.resource_type == TOPIC:
        return await alter_topic(server, res.resource_name, res.configs, validate_only, incremental)
    if res.resource_type == BROKER:
        return await alter_broker(server, res.resource_name, res.configs, validate_only, incremental)
    if res.resource_type == GROUP:
        return await group_configs(server).alter(res.resource_name, res.configs, validate_only, incremental)
    if res.resource_type == 16:  # KIP-714 client-metrics subscriptions
        from broker.controller import client_metrics_configs

        return await client_metrics_configs.alter(server, res.resource_name, res.configs, validate_only, incremental)
    try:
        check_entries(res.configs, incremental)
    except AdminError as e:
        return e.result
    return ErrorCode.INVALID_REQUEST, f"Unknown resource type {res.resource_type}"

"""`client-metrics` config resources (ConfigResource type 16, KIP-714): where they are stored and how the config
APIs reach them; shared by DescribeConfigs, AlterConfigs, IncrementalAlterConfigs, ListConfigResources and the two
telemetry handlers.

Contract:
- ZooKeeper mode and the single node: `/config/client-metrics/<name>` in the metadata store
  (``{"version":1,"config":{...}}``, as every entity config) with a /config/changes notification, so every broker
  sharing the store reloads that subscription; an empty set (every key deleted) is no subscription. Read once, when
  the broker first needs them, then kept up to date by the notifications.
- KRaft: ConfigRecords of resource type 16 in the metadata log (the image's configs), set through the controller
  as IncrementalAlterConfigs of that resource; the manager follows the image whenever it is asked.
- `alter(...)`: AlterConfigs (the whole set) or IncrementalAlterConfigs (SET, DELETE, APPEND and SUBTRACT on the
  list keys `metrics` and `match`), validated as Kafka's ClientMetricsConfigs (client_metrics.validate) before it
  is stored; `describe(...)`: the keys set, source CLIENT_METRICS_CONFIG (as Kafka 3.7's ConfigHelper); an empty
  name is INVALID_REQUEST for both.
- `manager(server)` (async): the broker's ClientMetricsManager, made on first use (`server.client_metrics`), with
  the stored subscriptions; `names(server)`: the subscriptions' names.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from broker.config.describe import DescribedConfig
from broker.config.dynamic_store import watch_config_changes, write_entity_config
from broker.config.types import ConfigSource, ConfigType
from broker.metadata import znodes
from broker.metrics.client_metrics import (
    CLIENT_METRICS,
    INTERVAL_MS,
    MATCH,
    METRICS,
    ClientMetricsManager,
    SubscriptionError,
    validate,
)
from protocol.errors import ErrorCode


class ClientMetricsServer(Protocol):
    """What the subscriptions need of the broker (KafkaServer implements it): its config, its metrics (None when
    metrics.prometheus.listener is unset), and its controller (the metadata store, or the KRaft loader and admin)."""

    config: Any
    metrics: Any
    controller: Any

_KIND = "client-metrics"
_ROOT = f"/config/{_KIND}"
_TYPES = {METRICS: ConfigType.LIST, INTERVAL_MS: ConfigType.INT, MATCH: ConfigType.LIST}

Result = tuple[ErrorCode, str | None]


class _Subscriptions:
    """The store side of a broker's ClientMetricsManager (see the contract)."""

    def __init__(self, server: ClientMetricsServer) -> None:
        self.server = server
        self.manager = ClientMetricsManager(server.config["telemetry.max.bytes"])
        self.manager.receiving = server.metrics is not None
        self.stored: dict[str, dict[str, str]] = {}
        self._loaded = False
        self._watch: Any = None
        self._image_configs: Any = None

    def _image(self) -> Any:
        loader = getattr(self.server.controller, "loader", None)
        return loader.image.configs if loader is not None else None

    def _tree(self) -> Any:
        return self.server.controller.store._tree  # type: ignore[union-attr]

    async def load(self) -> ClientMetricsManager:
        image = self._image()
        if image is not None:
            if image is not self._image_configs:  # the image is immutable: a new one is a new state
                self._image_configs = image
                self.stored = {name: dict(props) for (kind, name), props in image.resources.items()
                               if kind == CLIENT_METRICS}
                self.manager.set_subscriptions(self.stored)
        elif not self._loaded:
            loop = asyncio.get_running_loop()
            self._watch = watch_config_changes(self._tree(), _KIND, lambda path: self._changed(path[0]),
                                               loop.call_soon_threadsafe)
            self.stored = await asyncio.to_thread(self._read_all)
            self.manager.set_subscriptions(self.stored)
            self._loaded = True
        return self.manager

    def _read_all(self) -> dict[str, dict[str, str]]:
        return {name: props for name in self._tree().children(_ROOT) or () if (props := self._read(name))}

    def _read(self, name: str) -> dict[str, str]:
        path = f"{_ROOT}/{name}"
        node = self._tree().get(path)
        return {} if node is None else znodes.decode_topic_config(path, node[0])

    def _changed(self, name: str) -> None:
        async def reload() -> None:
            props = await asyncio.to_thread(self._read, name)
            self._set(name, props)

        asyncio.get_running_loop().create_task(reload())

    def _set(self, name: str, props: Mapping[str, str]) -> None:
        if props:
            self.stored[name] = dict(props)
        else:
            self.stored.pop(name, None)
        self.manager.set_subscriptions(self.stored)

    async def write(self, name: str, props: dict[str, str]) -> Result:
        if self._image() is not None:
            return await self.server.controller.admin.alter_resource_configs(  # type: ignore[union-attr]
                CLIENT_METRICS, name, props, False)
        await asyncio.to_thread(write_entity_config, self._tree(), _KIND, name, props)
        self._set(name, props)
        return ErrorCode.NONE, None

    def close(self) -> None:
        if self._watch is not None:
            self._watch.close()
            self._watch = None


def _subscriptions(server: ClientMetricsServer) -> _Subscriptions:
    subs = getattr(server, "client_metrics_subscriptions", None)
    if subs is None:
        subs = _Subscriptions(server)
        server.client_metrics_subscriptions = subs  # type: ignore[attr-defined]
        server.client_metrics = subs.manager  # type: ignore[attr-defined]  # broker/metrics/broker_state.py
    return subs


async def manager(server: ClientMetricsServer) -> ClientMetricsManager:
    return await _subscriptions(server).load()


async def names(server: ClientMetricsServer) -> list[str]:
    subs = _subscriptions(server)
    await subs.load()
    return sorted(subs.stored)


def _list_default(name: str) -> str | None:
    if name not in _TYPES:
        raise KeyError(name)
    return "" if _TYPES[name] is ConfigType.LIST else None


async def alter(server: ClientMetricsServer, name: str, configs: Sequence[Any], validate_only: bool,
                incremental: bool) -> Result:
    from broker.controller.config_admin import AdminError, apply_operations, check_entries

    subs = _subscriptions(server)
    try:
        check_entries(configs, incremental)
        if not name:
            raise AdminError(ErrorCode.INVALID_REQUEST, "Subscription name can't be empty")
        await subs.load()
        if incremental:
            props = apply_operations(configs, subs.stored.get(name, {}), _list_default)
        else:
            props = {c.name: c.value for c in configs}
        validate(name, props)
    except AdminError as e:
        return e.result
    except SubscriptionError as e:
        return e.code, str(e)
    if validate_only:
        return ErrorCode.NONE, None
    return await subs.write(name, props)


async def describe(server: ClientMetricsServer, name: str) -> tuple[Result, list[DescribedConfig]]:
    if not name:
        return (ErrorCode.INVALID_REQUEST, "Client metrics subscription name must not be empty"), []
    subs = _subscriptions(server)
    await subs.load()
    props = subs.stored.get(name, {})
    return (ErrorCode.NONE, None), [DescribedConfig(key, value, ConfigSource.CLIENT_METRICS_CONFIG,
                                                    _TYPES.get(key, ConfigType.STRING))
                                    for key, value in sorted(props.items())]


def client_of(ctx: Any) -> dict[str, str | None]:
    """The values a subscription's `match` patterns are matched against (Kafka's ClientMetricsInstanceMetadata)."""
    conn = ctx.connection
    software = getattr(conn, "client_software", None) or (None, None)
    return {"client_id": ctx.client_id, "client_software_name": software[0], "client_software_version": software[1],
            "client_source_address": conn.peer[0] if conn is not None else None,
            "client_source_port": str(conn.peer[1]) if conn is not None else None}

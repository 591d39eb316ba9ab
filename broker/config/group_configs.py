"""Group configs (Kafka's GroupConfig, ConfigResource type GROUP = 32): per-group overrides of the broker's
share-group settings, altered with IncrementalAlterConfigs / AlterConfigs and read with DescribeConfigs.

Contract:
- Keys served (the share-group half of Kafka 4.1's GroupConfig): `share.auto.offset.reset` ("latest", Kafka's
  default, "earliest", or "by_duration:<ISO-8601 duration>": the first offset of a record at most that old),
  `share.isolation.level`, `share.record.lock.duration.ms`, `share.session.timeout.ms`,
  `share.heartbeat.interval.ms`, `share.partition.max.record.locks` (Kafka 4.2); each numeric one
  defaults to the broker's group.share.* property and must lie within the broker's min/max for it
  (INVALID_CONFIG otherwise, as Kafka's GroupConfig.validate). Any other key is INVALID_CONFIG (the consumer.*
  and streams.* group configs are not served).
- Stored in the metadata store as `/config/groups/<group>` (``{"version":1,"config":{...}}``, the layout of
  every entity config) with a /config/changes notification, so every broker sharing the store drops its cached
  copy and reads the new one.
- `overrides(group)` (async) reads through a cache; `cached(group)` answers from the cache at once (the group
  coordinator's heartbeats: a miss answers {} and loads in the background).
- Who uses them: share-partition leaders (the auto offset reset of a share partition never initialized, the
  isolation level, the record lock duration, the in-flight record limit; read when the share partition is
  loaded), the group coordinator (session timeout and heartbeat interval of share members).
- Gaps: authorized as other non-topic config resources here (ALTER_CONFIGS / DESCRIBE_CONFIGS on the cluster;
  Kafka checks the group resource); on a KRaft broker the store is the broker's own (not the controller's
  ConfigRecords).
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from broker.config.alter import AdminError, apply_operations, check_entries
from broker.config.describe import DescribedConfig
from broker.config.dynamic_store import watch_config_changes, write_entity_config
from broker.config.types import ConfigSource, ConfigType
from broker.metadata import znodes
from protocol.errors import ErrorCode

if TYPE_CHECKING:
    from broker.config.kafka_config import KafkaConfig

log = logging.getLogger("broker.group_configs")

GROUP = 32
_KIND = "groups"

Result = tuple[int, str | None]


@dataclass(frozen=True)
class _Key:
    name: str
    type: ConfigType
    broker_default: str | None = None  # the broker property giving the default
    bounds: tuple[str, str] | None = None  # the broker properties giving min and max
    choices: tuple[str, ...] = ()
    default: str = ""


KEYS: dict[str, _Key] = {k.name: k for k in (
    _Key("share.auto.offset.reset", ConfigType.STRING, choices=("latest", "earliest"), default="latest"),
    _Key("share.isolation.level", ConfigType.STRING, choices=("read_uncommitted", "read_committed"),
         default="read_uncommitted"),
    _Key("share.record.lock.duration.ms", ConfigType.INT, "group.share.record.lock.duration.ms",
         ("group.share.min.record.lock.duration.ms", "group.share.max.record.lock.duration.ms")),
    _Key("share.session.timeout.ms", ConfigType.INT, "group.share.session.timeout.ms",
         ("group.share.min.session.timeout.ms", "group.share.max.session.timeout.ms")),
    _Key("share.heartbeat.interval.ms", ConfigType.INT, "group.share.heartbeat.interval.ms",
         ("group.share.min.heartbeat.interval.ms", "group.share.max.heartbeat.interval.ms")),
    _Key("share.partition.max.record.locks", ConfigType.INT, "group.share.partition.max.record.locks",
         ("group.share.min.partition.max.record.locks", "group.share.max.partition.max.record.locks")),
)}


class GroupConfigsServer(Protocol):
    """The broker as its group configs see it (KafkaServer): the broker's config (the defaults and bounds) and
    its controller, whose metadata store (`controller.store`) holds the groups' overrides. `group_configs(server)`
    keeps the one `GroupConfigs` of a broker on it as `server.group_configs`."""

    config: KafkaConfig
    controller: Any  # broker.controller.Controller, or broker.kraft.broker_server.KRaftBroker: rooms above this one


class GroupConfigs:
    def __init__(self, server: GroupConfigsServer) -> None:
        self.server = server
        self._cache: dict[str, dict[str, str]] = {}
        self._watch: Any = None

    def _tree(self) -> Any:
        return self.server.controller.store._tree

    def _start_watching(self) -> None:
        if self._watch is None:
            loop = asyncio.get_running_loop()
            self._watch = watch_config_changes(self._tree(), _KIND, lambda path: self._cache.pop(path[0], None),
                                               loop.call_soon_threadsafe)

    # ---------------------------------------------------------------- reading
    async def overrides(self, group_id: str) -> dict[str, str]:
        self._start_watching()
        cached = self._cache.get(group_id)
        if cached is None:
            cached = self._cache[group_id] = await asyncio.to_thread(self._read, group_id)
        return dict(cached)

    def cached(self, group_id: str) -> dict[str, str]:
        cached = self._cache.get(group_id)
        if cached is None:
            task = asyncio.get_running_loop().create_task(self.overrides(group_id))
            task.add_done_callback(lambda t: None if t.cancelled() else t.exception())
            return {}
        return dict(cached)

    def _read(self, group_id: str) -> dict[str, str]:
        path = f"/config/{_KIND}/{group_id}"
        node = self._tree().get(path)
        return {} if node is None else znodes.decode_topic_config(path, node[0])

    def value(self, overrides: Mapping[str, str], name: str) -> str:
        """The effective value of a group config: the group's override, else its default."""
        if name in overrides:
            return overrides[name]
        key = KEYS[name]
        return str(self.server.config[key.broker_default]) if key.broker_default else key.default

    # ---------------------------------------------------------------- altering and describing
    def validate(self, props: Mapping[str, str]) -> str | None:
        """Kafka's GroupConfig.validate: an error message, or None."""
        cfg = self.server.config
        for name, value in props.items():
            key = KEYS.get(name)
            if key is None:
                return f"Unknown group config name: {name}"
            if name == "share.auto.offset.reset" and value.startswith(BY_DURATION):
                if by_duration_ms(value) is None:
                    return f"Invalid value {value} for configuration {name}: by_duration must be followed by " \
                           "an ISO-8601 duration (e.g. by_duration:PT1H)"
            elif key.choices and value not in key.choices:
                return f"Invalid value {value} for configuration {name}: String must be one of: " + \
                    ", ".join(key.choices) + f", {BY_DURATION}<duration>"
            if key.type is ConfigType.INT:
                try:
                    number = int(value)
                except ValueError:
                    return f"Invalid value {value} for configuration {name}: Not a number of type INT"
                if key.bounds is not None:
                    low, high = (int(cfg[b]) for b in key.bounds)
                    if not low <= number <= high:
                        return f"{name} must be greater than or equal to {key.bounds[0]} ({low}) and less than " \
                               f"or equal to {key.bounds[1]} ({high})"
        return None

    async def alter(self, group_id: str, configs: Sequence[Any], validate_only: bool, incremental: bool) -> Result:
        try:
            check_entries(configs, incremental)
            if not group_id:
                raise AdminError(ErrorCode.INVALID_REQUEST, "Group id must not be empty.")
            if incremental:
                props = apply_operations(configs, await self.overrides(group_id), _no_list_keys)
            else:
                props = {c.name: c.value for c in configs}
            message = self.validate(props)
            if message is not None:
                raise AdminError(ErrorCode.INVALID_CONFIG, message)
        except AdminError as e:
            return e.result
        if not validate_only:
            self._start_watching()
            await asyncio.to_thread(write_entity_config, self._tree(), _KIND, group_id, props)
            self._cache[group_id] = dict(props)
            log.info("group %s: configs %s", group_id, props or "none")
        return ErrorCode.NONE, None

    async def describe(self, group_id: str) -> list[DescribedConfig]:
        overrides = await self.overrides(group_id)
        return [DescribedConfig(name, self.value(overrides, name),
                                ConfigSource.GROUP_CONFIG if name in overrides else ConfigSource.DEFAULT_CONFIG,
                                KEYS[name].type)
                for name in sorted(KEYS)]

    def close(self) -> None:
        if self._watch is not None:
            self._watch.close()
            self._watch = None


BY_DURATION = "by_duration:"
_ISO_DURATION = re.compile(r"P(?:(\d+)D)?(?:T(?:(\d+)H)?(?:(\d+)M)?(?:(\d+(?:\.\d+)?)S)?)?")


def by_duration_ms(value: str) -> int | None:
    """The milliseconds of `by_duration:<ISO-8601 duration>` (days, hours, minutes, seconds, as Java's
    Duration.parse reads them; not negative), or None when it is not one."""
    if not value.startswith(BY_DURATION):
        return None
    text = value[len(BY_DURATION):]
    m = _ISO_DURATION.fullmatch(text)
    if m is None or text in ("P", "PT") or text.endswith("T"):
        return None
    days, hours, minutes, seconds = (float(g) if g else 0.0 for g in m.groups())
    return int(((days * 24 + hours) * 60 + minutes) * 60_000 + seconds * 1000)


def _no_list_keys(name: str) -> str | None:
    if name not in KEYS:
        raise KeyError(name)
    return None


def group_configs(server: GroupConfigsServer) -> GroupConfigs:
    """The broker's group configs, made on first use."""
    configs = getattr(server, "group_configs", None)
    if configs is None:
        configs = GroupConfigs(server)
        server.group_configs = configs  # type: ignore[attr-defined]
    return configs

"""Topic names and topic-level configuration (broker defaults + per-topic overrides), as Kafka has them.

`TopicConfigs` answers "what is this topic's effective config": the broker's `log.*` defaults under their
topic-level names (following dynamic broker configs), overridden by the topic's own settings (from
CreateTopics, AlterConfigs or the metadata store). `validate()` checks overrides as Kafka's
LogConfig.validate does and raises ValueError with Kafka's message: "Unknown topic config name: x",
"Invalid value y for configuration x: ...", the min/max compaction lag conflict, tiered storage being off.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from broker.config.kafka_config import KafkaConfig
from broker.config.keys import TOPIC_KEYS
from broker.config.types import ConfigError, to_string
from storage import LogConfig

MAX_NAME_LENGTH = 249
_LEGAL = re.compile(r"^[a-zA-Z0-9._-]+$")

# Topic keys the broker (not storage) acts on; storage ignores them.
_BROKER_TOPIC_KEYS = frozenset({"min.insync.replicas", "unclean.leader.election.enable", "compression.type"})


def valid_topic_name(name: str) -> bool:
    return topic_name_error(name) is None


def topic_name_error(name: str) -> str | None:
    if not name:
        return "Topic name is illegal, it can't be empty"
    if name in (".", ".."):
        return "Topic name cannot be \".\" or \"..\""
    if len(name) > MAX_NAME_LENGTH:
        return f"Topic name is illegal, it can't be longer than {MAX_NAME_LENGTH} characters"
    if not _LEGAL.match(name):
        return (f"Topic name \"{name}\" is illegal, it contains a character other than ASCII alphanumerics, "
                "'.', '_' and '-'")
    return None


class InvalidConfiguration(ValueError):
    """Kafka's InvalidConfigurationException: its message goes to the client as it is."""


def parse_topic_configs(props: Mapping[str, Any], defaults: Mapping[str, Any]) -> dict[str, Any]:
    """Kafka's LogConfig.validate: names, then values, then the cross-key rules; returns the typed
    effective values (defaults overlaid with `props`). Raises InvalidConfiguration, or ConfigError for a
    bad value (Kafka's ConfigException, which AlterConfigs prefixes with the resource); both are ValueErrors."""
    for name in props:
        if name not in TOPIC_KEYS:
            raise InvalidConfiguration(f"Unknown topic config name: {name}")
    values = dict(defaults)
    for name, raw in props.items():
        values[name] = TOPIC_KEYS[name].parse(raw)  # InvalidValue (a ConfigError) names key and value
    if values["min.compaction.lag.ms"] > values["max.compaction.lag.ms"]:
        low, high = values["min.compaction.lag.ms"], values["max.compaction.lag.ms"]
        raise InvalidConfiguration(f"conflict topic config setting min.compaction.lag.ms ({low}) > "
                                   f"max.compaction.lag.ms ({high})")
    if values["remote.storage.enable"]:
        raise ConfigError("Tiered Storage functionality is disabled in the broker. "
                         "Topic cannot be configured with remote log storage.")
    return values


class TopicConfigs:
    def __init__(self, config: KafkaConfig) -> None:
        self.broker_config = config
        self._overrides: dict[str, dict[str, str]] = {}
        self._cache: dict[str, LogConfig] = {}
        self._default = self._default_log_config()

    def _default_log_config(self) -> LogConfig:
        defaults = self.broker_config.topic_defaults()
        storage_props = {k: to_string(v, TOPIC_KEYS[k].type) or "" for k, v in defaults.items()
                         if k not in _BROKER_TOPIC_KEYS}
        return LogConfig.from_topic_config(storage_props, LogConfig())

    def default_log_config(self) -> LogConfig:
        return self._default

    def reload_defaults(self) -> None:
        """The broker's log defaults changed (a dynamic broker config): topics without overrides follow."""
        self._default = self._default_log_config()
        self._cache.clear()

    def overrides(self, topic: str) -> Mapping[str, str]:
        return self._overrides.get(topic, {})

    def set_overrides(self, topic: str, props: Mapping[str, str]) -> None:
        self.validate(props)
        self._overrides[topic] = dict(props)
        self._cache.pop(topic, None)

    def remove(self, topic: str) -> None:
        self._overrides.pop(topic, None)
        self._cache.pop(topic, None)

    def validate(self, props: Mapping[str, str]) -> None:
        """Raise ValueError with Kafka's message for the first unknown key or bad value."""
        parse_topic_configs(props, self.broker_config.topic_defaults())

    def effective(self, topic: str) -> dict[str, Any]:
        """Every topic key's typed value for `topic` (its overrides over the broker's defaults)."""
        return parse_topic_configs(self.overrides(topic), self.broker_config.topic_defaults())

    def log_config(self, topic: str) -> LogConfig:
        cfg = self._cache.get(topic)
        if cfg is None:
            props = {k: v for k, v in self.overrides(topic).items() if k not in _BROKER_TOPIC_KEYS}
            cfg = LogConfig.from_topic_config(props, self._default)
            self._cache[topic] = cfg
        return cfg

    def min_insync_replicas(self, topic: str) -> int:
        v = self.overrides(topic).get("min.insync.replicas")
        return int(v) if v is not None else self.broker_config["min.insync.replicas"]

"""Topic names and topic-level configuration (broker defaults + per-topic overrides), as Kafka has them.

`TopicConfigs` answers "what is this topic's effective config": the broker's `log.*` defaults under their
topic-level names, overridden by the topic's own settings (from CreateTopics, AlterConfigs or the
metadata store). `validate()` rejects unknown keys and bad values with a message naming the key, the way
CreateTopics/AlterConfigs report INVALID_CONFIG.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from broker.config import KafkaConfig
from storage import LogConfig

MAX_NAME_LENGTH = 249
_LEGAL = re.compile(r"^[a-zA-Z0-9._-]+$")

# Topic keys the broker (not storage) acts on, with their validation.
_BROKER_TOPIC_KEYS = {
    "min.insync.replicas": lambda v: int(v) >= 1,
    "unclean.leader.election.enable": lambda v: v.lower() in ("true", "false"),
    "compression.type": lambda v: v in ("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer"),
}

# Config sources in DescribeConfigs (Kafka's ConfigSource ids).
SOURCE_TOPIC = 1
SOURCE_DYNAMIC_BROKER = 2
SOURCE_STATIC_BROKER = 4
SOURCE_DEFAULT = 5


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


@dataclass(frozen=True)
class ConfigEntry:
    name: str
    value: str | None
    source: int
    read_only: bool = False
    sensitive: bool = False


class TopicConfigs:
    def __init__(self, config: KafkaConfig) -> None:
        self.broker_config = config
        self._overrides: dict[str, dict[str, str]] = {}
        self._cache: dict[str, LogConfig] = {}
        self._default = self._default_log_config()

    def _default_log_config(self) -> LogConfig:
        return LogConfig.from_topic_config(
            {k: v for k, v in self.broker_config.topic_defaults().items()
             if k not in _BROKER_TOPIC_KEYS and k != "unclean.leader.election.enable"},
            LogConfig())

    def default_log_config(self) -> LogConfig:
        return self._default

    def reload_defaults(self) -> None:
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
        """Raise ValueError naming the first unknown key or bad value."""
        storage_props = {}
        for key, value in props.items():
            check = _BROKER_TOPIC_KEYS.get(key)
            if check is not None:
                try:
                    ok = check(str(value))
                except ValueError:
                    ok = False
                if not ok:
                    raise ValueError(f"Invalid value {value} for configuration {key}")
            else:
                storage_props[key] = value
        LogConfig.from_topic_config(storage_props, self._default)

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

    def describe(self, topic: str) -> list[ConfigEntry]:
        overrides = self.overrides(topic)
        entries = []
        for key, default in sorted(self.broker_config.topic_defaults().items()):
            if key in overrides:
                entries.append(ConfigEntry(key, overrides[key], SOURCE_TOPIC))
            else:
                broker_key = _BROKER_KEY_FOR_TOPIC_KEY.get(key)
                static = broker_key is not None and not self.broker_config.is_default(broker_key)
                entries.append(ConfigEntry(key, default, SOURCE_STATIC_BROKER if static else SOURCE_DEFAULT))
        return entries


_BROKER_KEY_FOR_TOPIC_KEY = {
    "cleanup.policy": "log.cleanup.policy",
    "compression.type": "compression.type",
    "delete.retention.ms": "log.cleaner.delete.retention.ms",
    "file.delete.delay.ms": "log.segment.delete.delay.ms",
    "flush.messages": "log.flush.interval.messages",
    "flush.ms": "log.flush.interval.ms",
    "index.interval.bytes": "log.index.interval.bytes",
    "max.message.bytes": "message.max.bytes",
    "message.timestamp.type": "log.message.timestamp.type",
    "min.cleanable.dirty.ratio": "log.cleaner.min.cleanable.ratio",
    "min.compaction.lag.ms": "log.cleaner.min.compaction.lag.ms",
    "min.insync.replicas": "min.insync.replicas",
    "preallocate": "log.preallocate",
    "retention.bytes": "log.retention.bytes",
    "retention.ms": "log.retention.ms",
    "segment.bytes": "log.segment.bytes",
    "segment.index.bytes": "log.index.size.max.bytes",
    "segment.ms": "log.roll.ms",
    "unclean.leader.election.enable": "unclean.leader.election.enable",
}

"""Per-log configuration: Kafka's topic-level settings that the storage engine acts on.

Contract: ``LogConfig`` defaults are Kafka's broker defaults. ``LogConfig.from_topic_config(props, defaults)``
maps Kafka topic-level keys (``segment.bytes``, ``retention.ms``, ...) onto fields; a key Kafka does not know,
or a value that does not parse or is out of Kafka's range, raises ``ValueError`` naming the key. Topic keys
Kafka knows but that are not storage's business (``min.insync.replicas``, ``compression.type``, ...) are
accepted and ignored here; the broker reads them itself.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

INT64_MAX = 9223372036854775807
INT32_MAX = 2147483647


@dataclass(frozen=True)
class LogConfig:
    segment_bytes: int = 1073741824  # segment.bytes / log.segment.bytes
    segment_ms: int = 604800000  # segment.ms / log.roll.ms
    segment_index_bytes: int = 10485760  # segment.index.bytes / log.index.size.max.bytes
    index_interval_bytes: int = 4096  # index.interval.bytes / log.index.interval.bytes
    retention_ms: int = 604800000  # retention.ms / log.retention.ms (-1 = forever)
    retention_bytes: int = -1  # retention.bytes / log.retention.bytes
    flush_messages: int = INT64_MAX  # flush.messages / log.flush.interval.messages
    flush_ms: int = INT64_MAX  # flush.ms / log.flush.interval.ms
    file_delete_delay_ms: int = 60000  # file.delete.delay.ms / log.segment.delete.delay.ms
    cleanup_policy: str = "delete"  # cleanup.policy: "delete" | "compact" | "compact,delete"
    delete_retention_ms: int = 86400000  # delete.retention.ms
    min_cleanable_dirty_ratio: float = 0.5  # min.cleanable.dirty.ratio
    min_compaction_lag_ms: int = 0  # min.compaction.lag.ms
    max_message_bytes: int = 1048588  # max.message.bytes / message.max.bytes
    message_timestamp_type: str = "CreateTime"  # message.timestamp.type
    preallocate: bool = False  # preallocate / log.preallocate

    @property
    def compact(self) -> bool:
        return "compact" in self.cleanup_policy

    @property
    def delete_enabled(self) -> bool:
        return "delete" in self.cleanup_policy

    @classmethod
    def from_topic_config(cls, props: Mapping[str, str], defaults: LogConfig) -> LogConfig:
        changes: dict[str, Any] = {}
        for key, raw in props.items():
            if key in _IGNORED_TOPIC_KEYS:
                continue
            spec = _TOPIC_KEYS.get(key)
            if spec is None:
                raise ValueError(f"unknown topic config {key!r}")
            field, parse = spec
            try:
                changes[field] = parse(str(raw).strip())
            except ValueError as e:
                raise ValueError(f"invalid value {raw!r} for topic config {key!r}: {e}") from None
        return dataclasses.replace(defaults, **changes)


def _int_at_least(low: int, high: int = INT64_MAX) -> Callable[[str], int]:
    def parse(s: str) -> int:
        v = int(s)
        if not low <= v <= high:
            raise ValueError(f"must be in [{low}, {high}]")
        return v

    return parse


def _ratio(s: str) -> float:
    v = float(s)
    if not 0.0 <= v <= 1.0:
        raise ValueError("must be in [0, 1]")
    return v


def _policy(s: str) -> str:
    # Empty is valid (Kafka 3.7): neither deleted by retention nor compacted.
    parts = sorted({p.strip() for p in s.split(",") if p.strip()})
    if any(p not in ("compact", "delete") for p in parts):
        raise ValueError("must be a list of 'compact' and 'delete'")
    return ",".join(parts)


def _timestamp_type(s: str) -> str:
    if s not in ("CreateTime", "LogAppendTime"):
        raise ValueError("must be CreateTime or LogAppendTime")
    return s


def _bool(s: str) -> bool:
    if s.lower() not in ("true", "false"):
        raise ValueError("must be true or false")
    return s.lower() == "true"


_TOPIC_KEYS: dict[str, tuple[str, Callable[[str], Any]]] = {
    "segment.bytes": ("segment_bytes", _int_at_least(14, INT32_MAX)),
    "segment.ms": ("segment_ms", _int_at_least(1)),
    "segment.index.bytes": ("segment_index_bytes", _int_at_least(4, INT32_MAX)),
    "index.interval.bytes": ("index_interval_bytes", _int_at_least(0, INT32_MAX)),
    "retention.ms": ("retention_ms", _int_at_least(-1)),
    "retention.bytes": ("retention_bytes", _int_at_least(-1)),
    "flush.messages": ("flush_messages", _int_at_least(1)),
    "flush.ms": ("flush_ms", _int_at_least(0)),
    "file.delete.delay.ms": ("file_delete_delay_ms", _int_at_least(0)),
    "cleanup.policy": ("cleanup_policy", _policy),
    "delete.retention.ms": ("delete_retention_ms", _int_at_least(0)),
    "min.cleanable.dirty.ratio": ("min_cleanable_dirty_ratio", _ratio),
    "min.compaction.lag.ms": ("min_compaction_lag_ms", _int_at_least(0)),
    "max.message.bytes": ("max_message_bytes", _int_at_least(0, INT32_MAX)),
    "message.timestamp.type": ("message_timestamp_type", _timestamp_type),
    "preallocate": ("preallocate", _bool),
}

# Kafka topic-level keys that are valid but act outside storage (broker, replication, validation, tiering).
_IGNORED_TOPIC_KEYS = frozenset(
    {
        "compression.type",
        "compression.gzip.level",
        "compression.lz4.level",
        "compression.zstd.level",
        "follower.replication.throttled.replicas",
        "leader.replication.throttled.replicas",
        "local.retention.bytes",
        "local.retention.ms",
        "max.compaction.lag.ms",
        "message.downconversion.enable",
        "message.format.version",
        "message.timestamp.after.max.ms",
        "message.timestamp.before.max.ms",
        "message.timestamp.difference.max.ms",
        "min.insync.replicas",
        "remote.storage.enable",
        "remote.log.copy.disable",
        "remote.log.delete.on.disable",
        "segment.jitter.ms",
        "unclean.leader.election.enable",
    }
)

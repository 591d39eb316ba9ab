"""Broker configuration: Kafka's `server.properties` names, types and defaults.

Contract:
- `KafkaConfig.load(path, overrides)` reads a Java-properties file (``key=value`` or ``key: value``,
  ``#``/``!`` comments, backslash line continuations) and then applies ``--override key=value`` pairs.
- Every key must be one Kafka defines and we honour (`DEFINITIONS`); an unknown key or a value of the wrong
  type/range raises `ConfigError` naming the key, so a typo fails at start-up instead of being ignored.
  Kafka keys we accept but do not act on yet are listed in `ACCEPTED_IGNORED` (operators copy whole
  Kafka files; refusing them would be hostile) and logged once at start-up.
- Values are typed (int, long, bool, double, string, list, password). Lookups: `config["log.dirs"]` or the
  typed helpers. `node.id` and `broker.id` are synonyms, as in Kafka.
- Topic-level defaults for the storage layer come from `log_config()` (Kafka's mapping of broker
  `log.*` keys onto topic keys).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

LONG_MAX = 9223372036854775807


class ConfigError(ValueError):
    """A bad configuration key or value; the message names the key."""


@dataclass(frozen=True)
class ConfigDef:
    name: str
    type: str  # int | long | bool | double | string | list | password
    default: Any
    doc: str = ""
    min: float | None = None
    choices: tuple[str, ...] | None = None
    dynamic: bool = False  # may be changed at runtime through AlterConfigs (broker-level)


def _d(name: str, type_: str, default: Any, doc: str = "", *, min: float | None = None,
       choices: tuple[str, ...] | None = None, dynamic: bool = False) -> ConfigDef:
    return ConfigDef(name, type_, default, doc, min, choices, dynamic)


DEFINITIONS: dict[str, ConfigDef] = {d.name: d for d in [
    # --- server basics
    _d("node.id", "int", -1, "broker id (synonym of broker.id)", min=-1),
    _d("broker.id", "int", -1, "broker id", min=-1),
    _d("listeners", "list", "PLAINTEXT://127.0.0.1:9092", "listeners this broker binds"),
    _d("advertised.listeners", "list", None, "listeners advertised to clients (default: listeners)"),
    _d("listener.security.protocol.map", "string",
       "PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL"),
    _d("inter.broker.listener.name", "string", None),
    _d("broker.rack", "string", None),
    _d("log.dirs", "list", None, "log directories (default: log.dir)"),
    _d("log.dir", "string", "./data"),
    _d("cluster.id", "string", None, "cluster id for the embedded default (generated when absent)"),
    # --- topics
    _d("num.partitions", "int", 1, min=1, dynamic=True),
    _d("default.replication.factor", "int", 1, min=1),
    _d("min.insync.replicas", "int", 1, min=1, dynamic=True),
    _d("auto.create.topics.enable", "bool", True),
    _d("delete.topic.enable", "bool", True),
    _d("unclean.leader.election.enable", "bool", False, dynamic=True),
    _d("auto.leader.rebalance.enable", "bool", True),
    _d("leader.imbalance.check.interval.seconds", "long", 300, min=1),
    _d("leader.imbalance.per.broker.percentage", "int", 10, min=0),
    # --- log
    _d("log.segment.bytes", "int", 1073741824, min=14, dynamic=True),
    _d("log.roll.ms", "long", None, dynamic=True),
    _d("log.roll.hours", "int", 168, min=1, dynamic=True),
    _d("log.retention.ms", "long", None, dynamic=True),
    _d("log.retention.minutes", "int", None, dynamic=True),
    _d("log.retention.hours", "int", 168, dynamic=True),
    _d("log.retention.bytes", "long", -1, dynamic=True),
    _d("log.retention.check.interval.ms", "long", 300000, min=1),
    _d("log.index.size.max.bytes", "int", 10485760, min=4, dynamic=True),
    _d("log.index.interval.bytes", "int", 4096, min=0, dynamic=True),
    _d("log.flush.interval.messages", "long", LONG_MAX, min=1, dynamic=True),
    _d("log.flush.interval.ms", "long", None, dynamic=True),
    _d("log.flush.scheduler.interval.ms", "long", LONG_MAX),
    _d("log.flush.offset.checkpoint.interval.ms", "int", 60000, min=0),
    _d("log.flush.start.offset.checkpoint.interval.ms", "int", 60000, min=0),
    _d("log.segment.delete.delay.ms", "long", 60000, min=0, dynamic=True),
    _d("log.cleanup.policy", "list", "delete", dynamic=True),
    _d("log.cleaner.enable", "bool", True),
    _d("log.cleaner.backoff.ms", "long", 15000, min=0),
    _d("log.cleaner.delete.retention.ms", "long", 86400000, min=0, dynamic=True),
    _d("log.cleaner.min.cleanable.ratio", "double", 0.5, min=0, dynamic=True),
    _d("log.cleaner.min.compaction.lag.ms", "long", 0, min=0, dynamic=True),
    _d("log.message.timestamp.type", "string", "CreateTime", choices=("CreateTime", "LogAppendTime"),
       dynamic=True),
    _d("log.preallocate", "bool", False, dynamic=True),
    _d("num.recovery.threads.per.data.dir", "int", 2, min=1),
    _d("message.max.bytes", "int", 1048588, min=0, dynamic=True),
    _d("compression.type", "string", "producer",
       choices=("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer"), dynamic=True),
    # --- network
    _d("socket.request.max.bytes", "int", 104857600, min=1),
    # -1 (the kernel's autotuning) rather than Kafka's 102400: see "Where we differ" in the README.
    _d("socket.send.buffer.bytes", "int", -1),
    _d("socket.receive.buffer.bytes", "int", -1),
    _d("connections.max.idle.ms", "long", 600000),
    _d("num.network.threads", "int", 3, min=1),
    _d("num.io.threads", "int", 8, min=1),
    _d("queued.max.requests", "int", 500, min=1),
    _d("fetch.max.bytes", "int", 57671680, min=1024),
    _d("max.connections", "int", 2147483647, min=0),
    # --- groups and offsets
    _d("offsets.topic.num.partitions", "int", 50, min=1),
    _d("offsets.topic.replication.factor", "int", 3, min=1),
    _d("offsets.topic.segment.bytes", "int", 104857600, min=1),
    _d("offsets.retention.minutes", "int", 10080, min=1),
    _d("offsets.retention.check.interval.ms", "long", 600000, min=1),
    _d("offsets.commit.timeout.ms", "int", 5000, min=1),
    _d("offsets.load.buffer.size", "int", 5242880, min=1),
    _d("offset.metadata.max.bytes", "int", 4096),
    _d("group.initial.rebalance.delay.ms", "int", 3000, min=0),
    _d("group.min.session.timeout.ms", "int", 6000),
    _d("group.max.session.timeout.ms", "int", 1800000),
    _d("group.max.size", "int", 2147483647, min=1),
    # --- transactions / producer ids
    _d("transaction.state.log.num.partitions", "int", 50, min=1),
    _d("transaction.state.log.replication.factor", "int", 3, min=1),
    _d("transaction.state.log.min.isr", "int", 2, min=1),
    _d("transactional.id.expiration.ms", "int", 604800000, min=1),
    _d("producer.id.expiration.ms", "int", 86400000, min=1),
    _d("max.incremental.fetch.session.cache.slots", "int", 1000, min=0),
    # --- replication
    _d("replica.lag.time.max.ms", "long", 30000),
    _d("replica.fetch.max.bytes", "int", 1048576, min=0),
    _d("replica.fetch.response.max.bytes", "int", 10485760, min=0),
    _d("replica.fetch.wait.max.ms", "int", 500),
    _d("replica.fetch.min.bytes", "int", 1),
    _d("replica.fetch.backoff.ms", "int", 1000, min=0),
    _d("replica.socket.timeout.ms", "int", 30000),
    _d("replica.high.watermark.checkpoint.interval.ms", "long", 5000, min=1),
    _d("num.replica.fetchers", "int", 1, min=1),
    _d("controller.socket.timeout.ms", "int", 30000),
    _d("controlled.shutdown.enable", "bool", True),
    _d("controlled.shutdown.max.retries", "int", 3),
    _d("controlled.shutdown.retry.backoff.ms", "long", 5000),
    # --- zookeeper
    _d("zookeeper.connect", "string", None),
    _d("zookeeper.session.timeout.ms", "int", 18000),
    _d("zookeeper.connection.timeout.ms", "int", None),
    # --- misc
    _d("request.timeout.ms", "int", 30000),
]}

# Kafka keys that operators' files commonly carry and that we accept without acting on them.
ACCEPTED_IGNORED = frozenset({
    "num.network.threads", "num.io.threads",
    "num.recovery.threads.per.data.dir", "queued.max.requests", "transaction.state.log.num.partitions",
    "transaction.state.log.replication.factor", "transaction.state.log.min.isr",
    "log.flush.scheduler.interval.ms", "zookeeper.connection.timeout.ms", "inter.broker.listener.name",
    "listener.security.protocol.map", "max.connections",
})

_LISTENER_RE = re.compile(r"^(?P<name>[A-Za-z0-9_]+)://(?P<host>\[[^\]]*\]|[^:]*):(?P<port>\d+)$")


@dataclass(frozen=True)
class Endpoint:
    listener: str
    host: str
    port: int

    def __str__(self) -> str:
        return f"{self.listener}://{self.host}:{self.port}"


def parse_listener(value: str, key: str = "listeners") -> Endpoint:
    m = _LISTENER_RE.match(value.strip())
    if not m:
        raise ConfigError(f"{key}: '{value}' is not of the form NAME://host:port")
    host = m["host"].strip("[]")
    port = int(m["port"])
    if not 0 <= port <= 65535:
        raise ConfigError(f"{key}: port {port} out of range")
    return Endpoint(m["name"].upper(), host, port)


def parse_properties(text: str) -> dict[str, str]:
    """Java .properties syntax, the subset Kafka's files use."""
    props: dict[str, str] = {}
    logical: list[str] = []
    for raw in text.splitlines():
        line = raw.strip() if not logical else raw.lstrip()
        if not logical and (not line or line[0] in "#!"):
            continue
        if line.endswith("\\") and not line.endswith("\\\\"):
            logical.append(line[:-1])
            continue
        logical.append(line)
        entry = "".join(logical)
        logical = []
        m = re.match(r"^([^=:\s]+)\s*[=:\s]\s*(.*)$", entry)
        if m:
            props[m[1]] = m[2].strip()
        else:
            props[entry] = ""
    return props


def _convert(d: ConfigDef, value: Any) -> Any:
    if value is None:
        return None
    if d.type in ("int", "long"):
        try:
            v = int(str(value).strip())
        except ValueError:
            raise ConfigError(f"{d.name}: '{value}' is not an integer") from None
        limit = 2**31 if d.type == "int" else 2**63
        if not -limit <= v < limit:
            raise ConfigError(f"{d.name}: {v} does not fit in a {d.type}")
    elif d.type == "double":
        try:
            v = float(str(value).strip())
        except ValueError:
            raise ConfigError(f"{d.name}: '{value}' is not a number") from None
    elif d.type == "bool":
        s = str(value).strip().lower()
        if s not in ("true", "false"):
            raise ConfigError(f"{d.name}: '{value}' is not true or false")
        v = s == "true"
    elif d.type == "list":
        v = [p.strip() for p in str(value).split(",") if p.strip()] if isinstance(value, str) else list(value)
    else:
        v = str(value)
    if d.min is not None and isinstance(v, int | float) and not isinstance(v, bool) and v < d.min:
        raise ConfigError(f"{d.name}: {v} is below the minimum {d.min:g}")
    if d.choices is not None and v not in d.choices:
        raise ConfigError(f"{d.name}: '{v}' is not one of {', '.join(d.choices)}")
    return v


class KafkaConfig:
    def __init__(self, props: Mapping[str, Any] | None = None) -> None:
        self.originals: dict[str, str] = {}
        self._values: dict[str, Any] = {n: _convert(d, d.default) for n, d in DEFINITIONS.items()}
        for key, value in (props or {}).items():
            self.set(key, value)
        self._validate()

    @classmethod
    def load(cls, path: str | Path | None = None, overrides: Iterable[str] = ()) -> KafkaConfig:
        props: dict[str, str] = {}
        if path is not None:
            try:
                props.update(parse_properties(Path(path).read_text()))
            except OSError as e:
                raise ConfigError(f"cannot read config file {path}: {e.strerror}") from None
        for item in overrides:
            if "=" not in item:
                raise ConfigError(f"--override '{item}' is not key=value")
            key, value = item.split("=", 1)
            props[key.strip()] = value.strip()
        return cls(props)

    def set(self, key: str, value: Any) -> None:
        d = DEFINITIONS.get(key)
        if d is None:
            raise ConfigError(f"unknown configuration key '{key}'")
        self._values[key] = _convert(d, value)
        self.originals[key] = "" if value is None else str(value)

    def _validate(self) -> None:
        node_id, broker_id = self._values["node.id"], self._values["broker.id"]
        if node_id >= 0 and broker_id >= 0 and node_id != broker_id:
            raise ConfigError(f"node.id ({node_id}) and broker.id ({broker_id}) disagree")
        for ep in self.listeners:
            if ep.listener not in ("PLAINTEXT",):
                raise ConfigError(f"listeners: only PLAINTEXT listeners are supported, not {ep.listener}")
        if not self.log_dirs:
            raise ConfigError("log.dirs: no log directory given")
        if self["min.insync.replicas"] > 32767:
            raise ConfigError("min.insync.replicas: too large")

    def __getitem__(self, key: str) -> Any:
        return self._values[key]

    def get(self, key: str, default: Any = None) -> Any:
        v = self._values.get(key)
        return default if v is None else v

    def items(self) -> list[tuple[str, Any]]:
        return sorted(self._values.items())

    def is_default(self, key: str) -> bool:
        return key not in self.originals

    def ignored_keys(self) -> list[str]:
        return sorted(k for k in self.originals if k in ACCEPTED_IGNORED)

    # ---- derived values, as Kafka derives them
    @property
    def broker_id(self) -> int:
        bid = self._values["node.id"] if self._values["node.id"] >= 0 else self._values["broker.id"]
        return bid if bid >= 0 else 0

    @property
    def listeners(self) -> list[Endpoint]:
        return [parse_listener(v) for v in self._values["listeners"]]

    @property
    def advertised_listeners(self) -> list[Endpoint]:
        adv = self._values["advertised.listeners"]
        if not adv:
            return self.listeners
        return [parse_listener(v, "advertised.listeners") for v in adv]

    @property
    def log_dirs(self) -> list[Path]:
        dirs = self._values["log.dirs"] or [self._values["log.dir"]]
        return [Path(d) for d in dirs]

    @property
    def log_roll_ms(self) -> int:
        v = self._values["log.roll.ms"]
        return v if v is not None else self._values["log.roll.hours"] * 3600_000

    @property
    def log_retention_ms(self) -> int:
        if self._values["log.retention.ms"] is not None:
            return self._values["log.retention.ms"]
        if self._values["log.retention.minutes"] is not None:
            return self._values["log.retention.minutes"] * 60_000
        hours = self._values["log.retention.hours"]
        return -1 if hours < 0 else hours * 3600_000

    @property
    def log_flush_interval_ms(self) -> int:
        v = self._values["log.flush.interval.ms"]
        return v if v is not None else LONG_MAX

    def topic_defaults(self) -> dict[str, str]:
        """Broker-level defaults under their topic-level names (what DescribeConfigs shows for a topic)."""
        return {
            "cleanup.policy": ",".join(self["log.cleanup.policy"]),
            "compression.type": self["compression.type"],
            "delete.retention.ms": str(self["log.cleaner.delete.retention.ms"]),
            "file.delete.delay.ms": str(self["log.segment.delete.delay.ms"]),
            "flush.messages": str(self["log.flush.interval.messages"]),
            "flush.ms": str(self.log_flush_interval_ms),
            "index.interval.bytes": str(self["log.index.interval.bytes"]),
            "max.message.bytes": str(self["message.max.bytes"]),
            "message.timestamp.type": self["log.message.timestamp.type"],
            "min.cleanable.dirty.ratio": str(self["log.cleaner.min.cleanable.ratio"]),
            "min.compaction.lag.ms": str(self["log.cleaner.min.compaction.lag.ms"]),
            "min.insync.replicas": str(self["min.insync.replicas"]),
            "preallocate": str(self["log.preallocate"]).lower(),
            "retention.bytes": str(self["log.retention.bytes"]),
            "retention.ms": str(self.log_retention_ms),
            "segment.bytes": str(self["log.segment.bytes"]),
            "segment.index.bytes": str(self["log.index.size.max.bytes"]),
            "segment.ms": str(self.log_roll_ms),
            "unclean.leader.election.enable": str(self["unclean.leader.election.enable"]).lower(),
        }

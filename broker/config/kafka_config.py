"""Broker configuration: Kafka's `server.properties` namespace, values and precedence.

Contract:
- `KafkaConfig.load(path, overrides)` reads a Java-properties file (``key=value`` or ``key: value``,
  ``#``/``!`` comments, backslash continuations), then applies ``--override key=value`` pairs.
- Every key Kafka 3.x defines is accepted (`broker.config.keys`). A bad value of a known key raises
  `ConfigError` with Kafka's message naming key and value; so do Kafka's cross-key requirements
  ("requirement failed: ..."). Unknown keys are ignored; `startup_warnings()` gives at most two lines:
  the keys that are not Kafka's at all (with a "did you mean" for near misses) and the Kafka keys
  that have no effect on this broker (with why).
- Three layers, Kafka's precedence: static (file and overrides, `originals`) < cluster-wide dynamic
  (`dynamic_default`) < per-broker dynamic (`dynamic_broker`). A dynamic key replaces its synonyms from
  lower layers (a dynamic log.retention.ms hides a static log.retention.hours), as Kafka's overrideProps.
  `set_dynamic()` swaps a dynamic layer and returns the keys whose value changed.
- Lookups: `config["key"]` is the effective typed value (int, float, bool, str, list or None).
  Derived values as Kafka derives them: `broker_id`, `listeners`, `log_dirs`, `log_retention_ms`,
  `log_roll_ms`, `log_flush_interval_ms`, `inter_broker_protocol_version`, and `topic_defaults()`
  (Kafka's mapping of broker `log.*` keys onto topic keys, typed).
"""

from __future__ import annotations

import difflib
import functools
import re
import types
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from broker.common.metadata_version import MetadataVersion
from broker.config.keys import BROKER_KEYS, TOPIC_KEYS, BrokerKey, broker_synonyms, listener_base_name
from broker.config.support import OUR_KEYS, has_effect, is_plugin_key, no_effect_note
from broker.config.types import (
    LONG_MAX,
    ConfigError,
    InvalidValue,
    to_string,
)

__all__ = ["ConfigError", "InvalidValue", "KafkaConfig", "Endpoint", "parse_listener", "parse_properties",
           "LONG_MAX", "key_of"]

_LISTENER_RE = re.compile(r"^(?P<name>[A-Za-z0-9_]+)://(?P<host>\[[^\]]*\]|[^:]*):(?P<port>\d+)$")


def key_of(name: str) -> BrokerKey | None:
    """The definition of a broker key (Kafka's, or one of ours); per-listener keys resolve to their base."""
    key = BROKER_KEYS.get(name) or OUR_KEYS.get(name)
    if key is None:
        base = listener_base_name(name)
        if base is not None:
            key = BROKER_KEYS.get(base)
    return key


def is_known(name: str) -> bool:
    return key_of(name) is not None or is_plugin_key(name)


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


def _as_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    return to_string(value, None) or ""


def _overlay(props: dict[str, str], layer: Mapping[str, str]) -> None:
    """Kafka's overrideProps: a key from a higher layer first removes its synonyms from the lower ones."""
    for key, value in layer.items():
        for synonym in broker_synonyms(key) if listener_base_name(key) is None else [key]:
            props.pop(synonym, None)
        props[key] = value


def _require(ok: bool, message: str) -> None:
    if not ok:
        raise ConfigError(f"requirement failed: {message}")


class KafkaConfig:
    def __init__(self, props: Mapping[str, Any] | None = None) -> None:
        static = {str(k): _as_text(v) for k, v in (props or {}).items()}
        # Kafka treats node.id and broker.id as one setting: either fills the other.
        if "node.id" in static and "broker.id" not in static:
            static["broker.id"] = static["node.id"]
        elif "broker.id" in static and "node.id" not in static:
            static["node.id"] = static["broker.id"]
        self.originals: dict[str, str] = static
        self.dynamic_default: dict[str, str] = {}
        self.dynamic_broker: dict[str, str] = {}
        self._values: dict[str, Any] = self._resolve(static, {}, {})

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

    # ---- layers
    @staticmethod
    def merged(static: Mapping[str, str], dynamic_default: Mapping[str, str],
               dynamic_broker: Mapping[str, str]) -> dict[str, str]:
        props = dict(static)
        _overlay(props, dynamic_default)
        _overlay(props, dynamic_broker)
        return props

    def _resolve(self, static: Mapping[str, str], dynamic_default: Mapping[str, str],
                 dynamic_broker: Mapping[str, str]) -> dict[str, Any]:
        props = self.merged(static, dynamic_default, dynamic_broker)
        values: dict[str, Any] = {}
        for name, key in (BROKER_KEYS | OUR_KEYS).items():
            values[name] = key.parse(props[name]) if name in props else key.effective_default
        for name, raw in props.items():  # per-listener overrides are checked against their base key's type
            base = listener_base_name(name)
            if base is not None and base in BROKER_KEYS:
                BROKER_KEYS[base].parse(raw)
        _check_requirements(values)
        _check_kraft(values, "listener.security.protocol.map" in props)
        self._explicit_protocol_map = "listener.security.protocol.map" in props
        return values

    def with_dynamic(self, dynamic_default: Mapping[str, str] | None = None,
                     dynamic_broker: Mapping[str, str] | None = None) -> dict[str, Any]:
        """The values the config would have with these dynamic layers (raises ConfigError)."""
        return self._resolve(self.originals,
                             self.dynamic_default if dynamic_default is None else dynamic_default,
                             self.dynamic_broker if dynamic_broker is None else dynamic_broker)

    def set_dynamic(self, dynamic_default: Mapping[str, str] | None = None,
                    dynamic_broker: Mapping[str, str] | None = None) -> set[str]:
        """Replace a dynamic layer (None keeps it); returns the keys whose effective value changed."""
        values = self.with_dynamic(dynamic_default, dynamic_broker)
        if dynamic_default is not None:
            self.dynamic_default = dict(dynamic_default)
        if dynamic_broker is not None:
            self.dynamic_broker = dict(dynamic_broker)
        changed = {k for k, v in values.items() if self._values.get(k) != v}
        self._values = values
        return changed

    # ---- lookups
    def __getitem__(self, key: str) -> Any:
        return self._values[key]

    def get(self, key: str, default: Any = None) -> Any:
        v = self._values.get(key)
        return default if v is None else v

    def items(self) -> list[tuple[str, Any]]:
        return sorted(self._values.items())

    def is_default(self, key: str) -> bool:
        return not any(key in layer for layer in (self.originals, self.dynamic_default, self.dynamic_broker))

    def static_defaults(self) -> Mapping[str, str]:
        """Every key's default as text, where it has one (Kafka's DEFAULT_CONFIG synonyms); the same for every
        broker of the process, made once (DescribeConfigs asks for it once per key it describes)."""
        return _static_defaults()

    # ---- start-up report
    def unknown_keys(self) -> list[str]:
        return sorted(k for k in self.originals if not is_known(k))

    def no_effect_keys(self) -> list[str]:
        return sorted(k for k in self.originals if is_known(k) and not has_effect(k))

    def startup_warnings(self) -> list[str]:
        lines = []
        unknown = self.unknown_keys()
        if unknown:
            names = list(BROKER_KEYS) + list(OUR_KEYS)
            shown = []
            for k in unknown:
                close = difflib.get_close_matches(k, names, n=1, cutoff=0.8)
                shown.append(f"'{k}' (did you mean '{close[0]}'?)" if close else f"'{k}'")
            lines.append("These configurations were supplied but are not Kafka broker configurations, "
                         "so they are ignored: " + ", ".join(shown))
        by_note: dict[str, list[str]] = {}
        for k in self.no_effect_keys():
            by_note.setdefault(no_effect_note(k), []).append(k)
        if by_note:
            lines.append("These Kafka configurations have no effect on this broker: "
                         + "; ".join(f"{', '.join(keys)} ({note})" for note, keys in by_note.items()))
        return lines

    # ---- derived values, as Kafka derives them
    @property
    def broker_id(self) -> int:
        bid = self._values["broker.id"]
        return bid if bid >= 0 else 0

    @property
    def listeners(self) -> list[Endpoint]:
        return [parse_listener(v) for v in _csv(self._values["listeners"])]

    @property
    def broker_listeners(self) -> list[Endpoint]:
        """The listeners the broker serves: `listeners` without the controller listeners of a combined node
        (process.roles=broker,controller), which its controller serves."""
        return _broker_listeners(self._values)

    @property
    def advertised_listeners(self) -> list[Endpoint]:
        adv = _csv(self._values["advertised.listeners"])
        if not adv:
            return self.broker_listeners
        return [parse_listener(v, "advertised.listeners") for v in adv]

    @property
    def listener_security_protocol_map(self) -> dict[str, str]:
        """Listener name -> security protocol (`listener.security.protocol.map`, names upper-cased as Kafka's)."""
        return _protocol_map(self._values["listener.security.protocol.map"])

    @property
    def inter_broker_listener_name(self) -> str:
        """`inter.broker.listener.name`, else the listener named after `security.inter.broker.protocol`."""
        return (self._values["inter.broker.listener.name"] or self._values["security.inter.broker.protocol"]).upper()

    def listener_value(self, listener: str, key: str, mechanism: str | None = None) -> Any:
        """A key's value for one listener: `listener.name.<listener>.[<mechanism>.]<key>` (lower-case names, as
        Kafka's ListenerName.configPrefix) over the broker-wide key. Typed like the base key."""
        props = self.merged(self.originals, self.dynamic_default, self.dynamic_broker)
        prefix = f"listener.name.{listener.lower()}."
        names = ([f"{prefix}{mechanism.lower()}.{key}"] if mechanism else []) + [f"{prefix}{key}"]
        for name in names:
            if name in props:
                return BROKER_KEYS[key].parse(props[name])
        return self._values.get(key)

    # ---- KRaft (process.roles=broker; docs/kraft.md)
    @property
    def process_roles(self) -> list[str]:
        return list(self._values["process.roles"])

    @property
    def is_kraft(self) -> bool:
        """`process.roles` set: a KRaft broker; empty: the ZooKeeper-mode or embedded broker."""
        return bool(self._values["process.roles"])

    @property
    def quorum_voters(self) -> dict[int, tuple[str, int]]:
        """`controller.quorum.voters` as Kafka's QuorumConfig.parseVoterConnections: id -> (host, port)."""
        return parse_quorum_voters(self._values["controller.quorum.voters"])

    @property
    def quorum_bootstrap_servers(self) -> list[tuple[str, int]]:
        return [parse_bootstrap_server(s) for s in self._values["controller.quorum.bootstrap.servers"]]

    @property
    def controller_listener_names(self) -> list[str]:
        return [n.upper() for n in _csv(self._values["controller.listener.names"])]

    @property
    def controller_security_protocol(self) -> str:
        """The security protocol of the first controller listener (the one a broker-only node uses), from
        Kafka's effective map: PLAINTEXT when the map is the default and nothing uses SSL or SASL."""
        name = self.controller_listener_names[0]
        return _effective_protocol_map(self._values, self._explicit_protocol_map).get(name, "PLAINTEXT")

    @property
    def metadata_log_dir(self) -> Path:
        """`metadata.log.dir`, else the first log dir (Kafka's metadataLogDir)."""
        return Path(self._values["metadata.log.dir"]) if self._values["metadata.log.dir"] else self.log_dirs[0]

    @property
    def log_dirs(self) -> list[Path]:
        dirs = _csv(self._values["log.dirs"]) or _csv(self._values["log.dir"])
        return [Path(d) for d in dirs]

    @property
    def log_roll_ms(self) -> int:
        return _log_roll_ms(self._values)

    @property
    def log_retention_ms(self) -> int:
        return _log_retention_ms(self._values)

    @property
    def log_flush_interval_ms(self) -> int:
        v = self._values["log.flush.interval.ms"]
        return v if v is not None else self._values["log.flush.scheduler.interval.ms"]

    @property
    def inter_broker_protocol_version(self) -> MetadataVersion:
        """`inter.broker.protocol.version`, ordered: compare with `>=` or MetadataVersion's predicates."""
        return MetadataVersion.parse(self._values["inter.broker.protocol.version"])

    def topic_defaults(self) -> dict[str, Any]:
        """The broker's defaults under their topic-level names, typed (Kafka's extractLogConfigMap)."""
        v = self._values
        out = {t.name: v[t.broker_synonym] for t in TOPIC_KEYS.values()
               if t.broker_synonym is not None and t.broker_synonym in v}
        out.update({
            "segment.ms": self.log_roll_ms,
            "segment.jitter.ms": v["log.roll.jitter.ms"] if v["log.roll.jitter.ms"] is not None
            else v["log.roll.jitter.hours"] * 3_600_000,
            "flush.ms": self.log_flush_interval_ms,
            "retention.ms": self.log_retention_ms,
            # Ignored from inter.broker.protocol.version 3.0 on: topics see Kafka's fixed default.
            "message.format.version": TOPIC_KEYS["message.format.version"].default
            if self.inter_broker_protocol_version.is_at_least("3.0-IV1") else v["log.message.format.version"],
        })
        for t in TOPIC_KEYS.values():
            out.setdefault(t.name, t.default)
        return out


def _csv(value: str | None) -> list[str]:
    return [p.strip() for p in (value or "").split(",") if p.strip()]


def _log_roll_ms(v: Mapping[str, Any]) -> int:
    return v["log.roll.ms"] if v["log.roll.ms"] is not None else v["log.roll.hours"] * 3_600_000


def _log_retention_ms(v: Mapping[str, Any]) -> int:
    if v["log.retention.ms"] is not None:
        ms = v["log.retention.ms"]
    elif v["log.retention.minutes"] is not None:
        ms = v["log.retention.minutes"] * 60_000
    else:
        ms = v["log.retention.hours"] * 3_600_000
    return -1 if ms < 0 else ms


def _check_requirements(v: Mapping[str, Any]) -> None:
    """Kafka's cross-key checks (KafkaConfig.validateValues), for the ZooKeeper-mode broker we are."""
    if v["node.id"] != v["broker.id"]:
        raise ConfigError("You must set `node.id` to the same value as `broker.id`.")
    _require(-1 <= v["broker.id"] <= v["reserved.broker.max.id"],
             "broker.id must be greater than or equal to -1 and not greater than reserved.broker.max.id")
    _require(_log_roll_ms(v) >= 1, "log.roll.ms must be greater than or equal to 1")
    jitter = v["log.roll.jitter.ms"] if v["log.roll.jitter.ms"] is not None else v["log.roll.jitter.hours"]
    _require(jitter >= 0, "log.roll.jitter.ms must be greater than or equal to 0")
    retention = _log_retention_ms(v)
    _require(retention >= 1 or retention == -1,
             "log.retention.ms must be unlimited (-1) or, greater than or equal to 1")
    _require(bool(_csv(v["log.dirs"]) or _csv(v["log.dir"])),
             "At least one log directory must be defined via log.dirs or log.dir.")
    if v["log.cleaner.threads"] == 0:  # Kafka divides by it here and fails with Java's own message
        raise ConfigError("/ by zero")
    _require(v["log.cleaner.dedupe.buffer.size"] // v["log.cleaner.threads"] > 1024 * 1024,
             "log.cleaner.dedupe.buffer.size must be at least 1MB per cleaner thread.")
    _require(v["replica.fetch.wait.max.ms"] <= v["replica.socket.timeout.ms"],
             "replica.socket.timeout.ms should always be at least replica.fetch.wait.max.ms to prevent unnecessary "
             "socket timeouts")
    _require(v["replica.fetch.wait.max.ms"] <= v["replica.lag.time.max.ms"],
             "replica.fetch.wait.max.ms should always be less than or equal to replica.lag.time.max.ms to prevent "
             "frequent changes in ISR")
    _require(-1 <= v["offsets.commit.required.acks"] <= v["offsets.topic.replication.factor"],
             "offsets.commit.required.acks must be greater or equal -1 and less or equal to "
             "offsets.topic.replication.factor")
    _require(v["queued.max.request.bytes"] <= 0 or v["queued.max.request.bytes"] >= v["socket.request.max.bytes"],
             "queued.max.request.bytes must be larger or equal to socket.request.max.bytes")
    if v["max.connections.per.ip"] == 0:
        _require(bool(v["max.connections.per.ip.overrides"]), "max.connections.per.ip can be set to zero only if "
                 "max.connections.per.ip.overrides property is set.")
    if v["connections.max.idle.ms"] >= 0:
        delay, idle = v["connection.failed.authentication.delay.ms"], v["connections.max.idle.ms"]
        _require(delay < idle, f"connection.failed.authentication.delay.ms={delay} should always be less than "
                 f"connections.max.idle.ms={idle} to prevent failed authentication responses from timing out")
    ibp = MetadataVersion.parse(v["inter.broker.protocol.version"])
    if not ibp.is_at_least("3.0-IV1"):  # from 3.0 on Kafka ignores log.message.format.version
        fmt = MetadataVersion.parse(v["log.message.format.version"])
        _require(ibp.highest_record_version >= fmt.highest_record_version,
                 f"log.message.format.version {v['log.message.format.version']} can only be used when "
                 "inter.broker.protocol.version is set to a version that supports its record format")
    for a, at_least_b, b in _GROUP_ORDER:
        ok = v[a] >= v[b] if at_least_b else v[a] <= v[b]
        _require(ok, f"{a} must be {'greater' if at_least_b else 'less'} than or equals to {b}")
    _check_listeners(v)


# KIP-848 group timing bounds: (a, True, b) requires a >= b, (a, False, b) requires a <= b.
_GROUP_ORDER: list[tuple[str, bool, str]] = [
    ("group.consumer.max.heartbeat.interval.ms", True, "group.consumer.min.heartbeat.interval.ms"),
    ("group.consumer.heartbeat.interval.ms", True, "group.consumer.min.heartbeat.interval.ms"),
    ("group.consumer.heartbeat.interval.ms", False, "group.consumer.max.heartbeat.interval.ms"),
    ("group.consumer.max.session.timeout.ms", True, "group.consumer.min.session.timeout.ms"),
    ("group.consumer.session.timeout.ms", True, "group.consumer.min.session.timeout.ms"),
    ("group.consumer.session.timeout.ms", False, "group.consumer.max.session.timeout.ms"),
]


SECURITY_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")


def _protocol_map(text: str | None) -> dict[str, str]:
    out: dict[str, str] = {}
    for entry in _csv(text or ""):
        name, colon, protocol = entry.partition(":")
        if not colon or protocol.strip().upper() not in SECURITY_PROTOCOLS:
            raise ConfigError(f"Invalid value {text} for configuration listener.security.protocol.map: "
                              "Map entry should be of form <String>:<SecurityProtocol>")
        out[name.strip().upper()] = protocol.strip().upper()
    return out


def _broker_listeners(v: Mapping[str, Any]) -> list[Endpoint]:
    listeners = [parse_listener(x) for x in _csv(v["listeners"])]
    if "controller" not in v["process.roles"]:
        return listeners
    names = {n.upper() for n in _csv(v["controller.listener.names"])}
    return [ep for ep in listeners if ep.listener not in names]


def _check_listeners(v: Mapping[str, Any]) -> None:
    if list(v["process.roles"]) == ["controller"]:
        return  # a controller's listeners are its controller listeners alone (_check_controller_role)
    listeners = _broker_listeners(v)
    advertised = [parse_listener(x, "advertised.listeners") for x in _csv(v["advertised.listeners"])] or listeners
    protocols = _protocol_map(v["listener.security.protocol.map"])
    for ep in listeners + advertised:
        if ep.listener not in protocols:
            raise ConfigError(f"No security protocol defined for listener {ep.listener}")
    for what, eps in (("listeners", listeners), ("advertised.listeners", advertised)):
        _require(len({ep.listener for ep in eps}) == len(eps),
                 f"Each listener must have a different name, listeners: {v[what]}")
    ports = [ep.port for ep in listeners if ep.port != 0]
    _require(len(set(ports)) == len(ports), f"Each listener must have a different port, listeners: {v['listeners']}")
    names = {ep.listener for ep in listeners}
    adv_names = {ep.listener for ep in advertised}
    _require(adv_names <= names, "advertised.listeners listener names must be equal to or a subset of the ones "
             f"defined in listeners. Found {','.join(sorted(adv_names))}. The valid options based on the current "
             f"configuration are {','.join(sorted(names))}")
    inter = (v["inter.broker.listener.name"] or v["security.inter.broker.protocol"]).upper()
    _require(inter in adv_names, "inter.broker.listener.name must be a listener name defined in advertised.listeners. "
             f"The valid options based on currently configured listeners are {','.join(sorted(adv_names))}")
    if v["min.insync.replicas"] > 32767:
        raise ConfigError("min.insync.replicas: too large")



# ---- KRaft: Kafka's QuorumConfig parsing and KafkaConfig.validateValues for process.roles=broker
_VOTER_FORM = ". Each entry should be in the form `{id}@{host}:{port}`."
_HOST_PORT_RE = re.compile(r"^\[?([0-9a-zA-Z\-%._:]*)]?:([0-9]+)$")  # Kafka's Utils.getHost / getPort


def _host_port(text: str) -> tuple[str | None, int | None]:
    m = _HOST_PORT_RE.match(text.strip())
    if not m:
        return None, None
    return (m[1] or None), int(m[2])


def parse_quorum_voters(entries: Iterable[str]) -> dict[int, tuple[str, int]]:
    voters: dict[int, tuple[str, int]] = {}
    for entry in entries:
        parts = entry.split("@")
        if len(parts) != 2:
            raise ConfigError("Invalid configuration value for controller.quorum.voters" + _VOTER_FORM)
        try:
            voter_id = int(parts[0])
        except ValueError:
            raise ConfigError(f"Failed to parse voter ID as an integer from {parts[0]}") from None
        host, port = _host_port(parts[1])
        if host is None:
            raise ConfigError(f"Failed to parse host name from entry {entry} for the configuration "
                              "controller.quorum.voters" + _VOTER_FORM)
        if port is None:
            raise ConfigError(f"Failed to parse host port from entry {entry} for the configuration "
                              "controller.quorum.voters" + _VOTER_FORM)
        if host == "0.0.0.0":
            raise ConfigError(f"Host string ({host}) is not routeable")
        voters[voter_id] = (host, port)
    return voters


def parse_bootstrap_server(entry: str) -> tuple[str, int]:
    host, port = _host_port(entry)
    form = ('for the configuration controller.quorum.bootstrap.servers. Each entry should be in the form '
            '"{host}:{port}"')
    if host is None:
        raise ConfigError(f"Failed to parse host name from {entry} {form}")
    if port is None:
        raise ConfigError(f"Failed to parse host port from {entry} {form}")
    return host, port


def _effective_protocol_map(v: Mapping[str, Any], explicit: bool) -> dict[str, str]:
    """Kafka's effectiveListenerSecurityProtocolMap: in KRaft, with the default map and no SSL/SASL in use,
    the controller listeners map to PLAINTEXT."""
    protocols = _protocol_map(v["listener.security.protocol.map"])
    if not v["process.roles"] or explicit:
        return protocols
    secure = {"SSL", "SASL_SSL", "SASL_PLAINTEXT"}
    names = [n.upper() for n in _csv(v["controller.listener.names"])]
    if any(n in secure for n in names) or any(
            parse_listener(x).listener in secure for x in _csv(v["listeners"])):
        return protocols
    return {**protocols, **{n: "PLAINTEXT" for n in names if n not in protocols}}


def _check_kraft(v: Mapping[str, Any], explicit_protocol_map: bool) -> None:
    roles = list(v["process.roles"])
    if not roles:
        return
    if len(set(roles)) != len(roles):
        raise ConfigError(f"Duplicate role names found in `process.roles`: [{', '.join(roles)}]")
    if not set(roles) <= {"broker", "controller"}:
        raise ConfigError(f"Unknown process role in `process.roles`: {','.join(roles)} (the roles are 'broker' "
                          "and 'controller')")
    node_id = v["node.id"]
    if node_id < 0:
        raise ConfigError("Missing configuration `node.id` which is required when `process.roles` is defined "
                          "(i.e. when running in KRaft mode).")
    voters = parse_quorum_voters(v["controller.quorum.voters"])
    for server in v["controller.quorum.bootstrap.servers"]:
        parse_bootstrap_server(server)
    if not voters and not v["controller.quorum.bootstrap.servers"]:
        raise ConfigError("If using process.roles, either controller.quorum.bootstrap.servers must contain the "
                          "set of bootstrap controllers or controller.quorum.voters must contain a parseable set "
                          "of controllers.")
    _require(not v["control.plane.listener.name"], "control.plane.listener.name is not supported in KRaft mode.")
    if "controller" in roles:
        _check_controller_role(v, node_id, voters, explicit_protocol_map)
        return
    _require(node_id not in voters, "If process.roles contains just the 'broker' role, the node id "
             f"{node_id} must not be included in the set of voters controller.quorum.voters="
             f"Set({', '.join(str(i) for i in voters)})")
    names = [n.upper() for n in _csv(v["controller.listener.names"])]
    _require(bool(names), "controller.listener.names must contain at least one value when running KRaft with "
             "just the broker role")
    listener_names = {parse_listener(x).listener for x in _csv(v["listeners"])}
    _require(not listener_names & set(names), "controller.listener.names must not contain a value appearing in "
             "the 'listeners' configuration when running KRaft with just the broker role")
    protocols = _effective_protocol_map(v, explicit_protocol_map)
    for name in names:
        if name not in protocols:
            raise ConfigError(
                f"Controller listener with name {name} defined in controller.listener.names not found in "
                "listener.security.protocol.map  (an explicit security mapping for each controller listener is "
                "required if listener.security.protocol.map is non-empty, or if there are security protocols "
                "other than PLAINTEXT in use)")


def _check_controller_role(v: Mapping[str, Any], node_id: int, voters: Mapping[int, Any],
                           explicit_protocol_map: bool) -> None:
    """Kafka's KafkaConfig.validateValues for process.roles=controller and broker,controller (a combined node
    advertising a controller listener is refused by _check_listeners: its broker listeners exclude them)."""
    only = list(v["process.roles"]) == ["controller"]
    if voters:
        _require(node_id in voters, f"If process.roles contains {'just ' if only else ''}the 'controller' role, "
                 f"the node id {node_id} must be included in the set of voters controller.quorum.voters="
                 f"Set({', '.join(str(i) for i in voters)})")
    names = [n.upper() for n in _csv(v["controller.listener.names"])]
    listener_names = [parse_listener(x).listener for x in _csv(v["listeners"])]
    _require(bool(set(names) & set(listener_names)), "controller.listener.names must contain at least one value "
             "appearing in the 'listeners' configuration when running the KRaft controller role")
    if only:
        _require(set(listener_names) <= set(names), "The listeners config must only contain KRaft controller "
                 "listeners from controller.listener.names when process.roles=controller")
    protocols = _effective_protocol_map(v, explicit_protocol_map)
    for name in names:
        if name not in protocols:
            raise ConfigError(f"Controller listener with name {name} defined in controller.listener.names not "
                              "found in listener.security.protocol.map")


@functools.cache
def _static_defaults() -> Mapping[str, str]:
    out = {}
    for name, key in (BROKER_KEYS | OUR_KEYS).items():
        text = to_string(key.effective_default, key.type)
        if text is not None:
            out[name] = text
    return types.MappingProxyType(out)

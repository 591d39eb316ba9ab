"""Dynamic broker configs (KIP-226): validate, persist and apply without a restart, as Kafka does.

Contract:
- `validate(config, props, per_broker)` checks a whole new set of dynamic configs for one entity (this
  broker, or the cluster-wide default) with Kafka's rules and messages, raising ConfigError:
  read-only keys ("Cannot update these configs dynamically: Set(...)"), SSL stores without a listener
  prefix, value types and ranges, per-broker keys at the default level, the whole resulting
  configuration's cross-key requirements, and the thread-count rules ("Invalid dynamic configuration").
  Keys Kafka does not know are allowed (Kafka keeps custom dynamic configs).
- `DynamicBrokerConfig(server)`: at start-up (`startup(store)`) it reads `/config/brokers/<default>` and
  `/config/brokers/<id>` from the metadata store and applies them, then follows change notifications,
  so a change made through any broker (or Kafka's tools) reaches every broker. `alter()` validates,
  persists (honouring validate_only) and applies at once on the broker that took the request.
- Applying swaps the config's dynamic layer (static < cluster default < per-broker) and reconfigures
  what follows: topic defaults derived from broker `log.*` keys reach every log without an override.
  A stored value that is invalid is dropped with one error line, as Kafka drops it.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any, Protocol

from broker.config.dynamic_store import DEFAULT_ENTITY, BrokerConfigStore
from broker.config.kafka_config import KafkaConfig
from broker.config.keys import (
    BROKER_KEYS,
    LISTENER_ONLY_KEYS,
    TOPIC_KEY_OF_BROKER_KEY,
    UpdateMode,
    broker_synonyms,
    listener_base_name,
)
from broker.config.types import PASSWORD, ConfigError

if TYPE_CHECKING:
    from broker.config.topics import TopicConfigs
    from storage import LogManager

log = logging.getLogger("broker.dynamic_config")

# Listener-scoped keys that may still be set cluster-wide (Kafka's ClusterLevelListenerConfigs).
_CLUSTER_LEVEL_LISTENER_KEYS = frozenset({"max.connections", "max.connection.creation.rate", "num.network.threads"})
_THREAD_POOLS = ("num.io.threads", "num.replica.fetchers", "num.recovery.threads.per.data.dir", "background.threads")
_CLEANER_KEYS = frozenset({"log.cleaner.threads", "log.cleaner.dedupe.buffer.size", "log.cleaner.io.buffer.load.factor",
                           "log.cleaner.io.buffer.size", "message.max.bytes", "log.cleaner.io.max.bytes.per.second",
                           "log.cleaner.backoff.ms"})
_LOCAL_RETENTION_KEYS = frozenset(TOPIC_KEY_OF_BROKER_KEY) | {"log.retention.minutes", "log.retention.hours"}


def scala_set(names: Iterable[str]) -> str:
    """How Kafka's messages print a Scala Set of names."""
    items = list(dict.fromkeys(names))
    return ("Set(" if len(items) <= 4 else "HashSet(") + ", ".join(items) + ")"


def _base(name: str) -> str:
    return listener_base_name(name) or name


def is_dynamic(name: str) -> bool:
    key = BROKER_KEYS.get(name)
    return key is not None and (key.mode != UpdateMode.READ_ONLY or key.dynamic_only)


def _non_dynamic(props: Iterable[str]) -> list[str]:
    return [k for k in props if k in BROKER_KEYS and not is_dynamic(k)]


def _per_broker_only(props: Iterable[str]) -> list[str]:
    out = []
    for k in props:
        base = listener_base_name(k)
        if base is not None:
            if base not in _CLUSTER_LEVEL_LISTENER_KEYS:
                out.append(k)
        elif k in BROKER_KEYS and BROKER_KEYS[k].mode == UpdateMode.PER_BROKER:
            out.append(k)
    return out


def _check_types(props: Mapping[str, str]) -> None:
    for k, v in props.items():
        base = _base(k)
        if is_dynamic(base):
            BROKER_KEYS[base].parse(v)


def validate(config: KafkaConfig, props: Mapping[str, str], per_broker: bool) -> None:
    """Kafka's DynamicBrokerConfig.validate for the new full set `props` of one entity."""
    non_dynamic = _non_dynamic(props)
    if non_dynamic:
        raise ConfigError(f"Cannot update these configs dynamically: {scala_set(non_dynamic)}")
    unprefixed = [k for k in props if k in LISTENER_ONLY_KEYS]
    if unprefixed:
        raise ConfigError("These security configs can be dynamically updated only per-listener using the "
                          f"listener prefix: {scala_set(unprefixed)}")
    _check_types(props)
    if not per_broker:
        per_broker_keys = _per_broker_only(props)
        if per_broker_keys:
            raise ConfigError("Cannot update these configs at default cluster level, broker id must be specified: "
                              f"{scala_set(per_broker_keys)}")
    new = config.with_dynamic(dynamic_broker=props) if per_broker else config.with_dynamic(dynamic_default=props)
    try:
        _check_reconfiguration(config, new)
    except ConfigError:
        raise ConfigError("Invalid dynamic configuration") from None


def _check_reconfiguration(config: KafkaConfig, new: Mapping[str, Any]) -> None:
    """The checks Kafka's reconfigurable components make before accepting a change to their keys."""
    changed = {k for k, v in new.items() if config[k] != v}
    for name in _THREAD_POOLS:
        old, value = config[name], new[name]
        if name in changed and (value <= 0 or value < old // 2 or value > old * 2):
            raise ConfigError(f"Dynamic thread count update validation failed for {name}={value}")
    if config["log.cleaner.enable"] and changed & _CLEANER_KEYS:
        old, value = config["log.cleaner.threads"], new["log.cleaner.threads"]
        if value < 1 or value < old // 2 or value > old * 2:
            raise ConfigError("Log cleaner threads out of range")
    if changed & _LOCAL_RETENTION_KEYS:
        for name, total in (("log.local.retention.ms", _retention_ms(new)),
                            ("log.local.retention.bytes", new["log.retention.bytes"])):
            local = new[name]
            if total != -1 and local != -2 and (local == -1 or local > total):
                raise ConfigError(f"Invalid value {local} for configuration {name}")


def _retention_ms(values: Mapping[str, Any]) -> int:
    for key, factor in (("log.retention.ms", 1), ("log.retention.minutes", 60_000), ("log.retention.hours", 3_600_000)):
        if values[key] is not None:
            ms = values[key] * factor
            return -1 if ms < 0 else ms
    return -1


class NotPersistable(ConfigError):
    """Valid, but Kafka would refuse to store it (dynamic passwords without password.encoder.secret)."""


def check_persistable(props: Mapping[str, str], per_broker: bool) -> None:
    """Kafka stores dynamic passwords encrypted with password.encoder.secret; we cannot write that
    encoding, so we answer as Kafka does when no secret is configured."""
    for k, v in props.items():
        base = BROKER_KEYS.get(_base(k))
        if base is not None and base.type == PASSWORD and v is not None:
            if not per_broker:
                raise NotPersistable("Password config can be defined only at broker level")
            raise NotPersistable("Password encoder secret not configured")


def loggable(props: Mapping[str, str]) -> dict[str, str]:
    """`props` with the values of sensitive keys (passwords, keys of unknown type) replaced, as Kafka logs them."""
    def sensitive(name: str) -> bool:
        key = BROKER_KEYS.get(_base(name))
        return key is None or key.type == PASSWORD
    return {k: "(redacted)" if sensitive(k) else v for k, v in props.items()}


def from_persistent(props: Mapping[str, str], per_broker: bool, what: str) -> dict[str, str]:
    """Kafka's fromPersistentProps: drop what cannot apply (bad values, read-only or per-broker keys at the
    wrong level, undecodable passwords), each with one error line."""
    kept = dict(props)
    bad = []
    for k, v in props.items():
        try:
            _check_types({k: v})
        except ConfigError:
            bad.append(k)
    dropped = {
        "contains invalid values in": bad,
        "has non-dynamic configs": _non_dynamic(kept),
        "has security configs without a listener prefix": [k for k in kept if k in LISTENER_ONLY_KEYS],
        "has per-broker configs at the default cluster level": [] if per_broker else _per_broker_only(kept),
        "has encrypted passwords this broker cannot decode":
            [k for k in kept if (b := BROKER_KEYS.get(_base(k))) is not None and b.type == PASSWORD],
    }
    for reason, keys in dropped.items():
        if keys:
            log.error("dynamic %s config %s: %s, ignored", what, reason, ", ".join(sorted(set(keys))))
            for k in keys:
                kept.pop(k, None)
    return kept


class DynamicConfigServer(Protocol):
    """The broker as its dynamic config sees it (KafkaServer): its id and static config, and what a changed
    broker default reconfigures (topic defaults, open logs, producer state)."""

    broker_id: int
    config: KafkaConfig
    topic_configs: TopicConfigs
    log_manager: LogManager

    def refresh_log_configs(self) -> None: ...


class DynamicBrokerConfig:
    def __init__(self, server: DynamicConfigServer) -> None:
        self.server = server
        self.config = server.config
        self.store: BrokerConfigStore | None = None

    @property
    def broker_entity(self) -> str:
        return str(self.server.broker_id)

    async def startup(self, metadata_store: Any) -> None:
        loop = asyncio.get_running_loop()
        self.store = BrokerConfigStore(metadata_store, loop.call_soon_threadsafe)
        self.store.watch(self._on_change)
        default, own = await asyncio.to_thread(lambda: (self._read(DEFAULT_ENTITY), self._read(self.broker_entity)))
        self.apply(DEFAULT_ENTITY, default)
        self.apply(self.broker_entity, own)

    def shutdown(self) -> None:
        if self.store is not None:
            self.store.close()

    def _read(self, entity: str) -> dict[str, str]:
        assert self.store is not None
        return self.store.read(entity)

    async def persisted(self, entity: str) -> dict[str, str]:
        """The entity's stored set, as Kafka reads it back (usable entries only)."""
        stored = await asyncio.to_thread(self._read, entity)
        return from_persistent(stored, entity != DEFAULT_ENTITY, _what(entity))

    async def alter(self, entity: str, props: Mapping[str, str], validate_only: bool) -> None:
        """Replace the entity's dynamic set (ConfigError: invalid; the caller maps it to Kafka's error)."""
        per_broker = entity != DEFAULT_ENTITY
        validate(self.config, props, per_broker)
        check_persistable(props, per_broker)
        if validate_only:
            return
        assert self.store is not None
        store = self.store
        await asyncio.to_thread(store.write, entity, dict(props))
        log.info("dynamic config of %s set to %s", _what(entity), loggable(props))
        self.apply(entity, props)

    def _on_change(self, entity: str) -> None:
        if entity in (DEFAULT_ENTITY, self.broker_entity):
            asyncio.ensure_future(self._reload(entity))

    async def _reload(self, entity: str) -> None:
        self.apply(entity, await asyncio.to_thread(self._read, entity))

    def apply(self, entity: str, stored: Mapping[str, str]) -> None:
        per_broker = entity != DEFAULT_ENTITY
        if per_broker and entity != self.broker_entity:
            return
        props = from_persistent(stored, per_broker, _what(entity))
        try:
            changed = (self.config.set_dynamic(dynamic_broker=props) if per_broker
                       else self.config.set_dynamic(dynamic_default=props))
        except ConfigError as e:
            log.error("dynamic %s config could not be applied (%s): %s", _what(entity), e, ", ".join(props))
            return
        if changed:
            log.info("dynamic config of %s applied, changed: %s", _what(entity), ", ".join(sorted(changed)))
            self._reconfigure(changed)

    def _reconfigure(self, changed: set[str]) -> None:
        """Push changed values to what uses them; keys read at each use need nothing."""
        log_keys = {s for k in TOPIC_KEY_OF_BROKER_KEY for s in broker_synonyms(k)}
        if changed & log_keys:
            server = self.server
            server.topic_configs.reload_defaults()
            server.log_manager.default_config = server.topic_configs.default_log_config()
            server.refresh_log_configs()
        if "producer.id.expiration.ms" in changed:  # Kafka's DynamicProducerStateManagerConfig
            self.server.log_manager.producer_state_config.producer_id_expiration_ms = \
                self.config["producer.id.expiration.ms"]


def _what(entity: str) -> str:
    return "the cluster default" if entity == DEFAULT_ENTITY else f"broker {entity}"

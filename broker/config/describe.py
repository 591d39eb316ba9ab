"""What DescribeConfigs (and CreateTopics v5+) report for a topic or a broker, entry by entry, as Kafka does.

Contract (Kafka 3.7's ConfigHelper):
- A topic lists every topic key of Kafka 3.7 plus any key the topic overrides, with its effective value.
  Synonyms: the topic's own override (TOPIC_CONFIG) if any, then, for the broker keys behind the topic key
  (retention.ms <- log.retention.ms, .minutes, .hours), each layer in precedence order: per-broker dynamic,
  cluster-wide dynamic, static (server.properties), Kafka's default. As in Kafka, the broker part starts at
  the first synonym named like the primary broker key, so retention.ms shows no broker synonyms unless
  log.retention.ms itself is set somewhere. The entry's source is its first synonym's (else DEFAULT_CONFIG).
- A broker (by id) lists every non-internal broker key plus every key supplied to it (also unknown ones,
  typed UNKNOWN and treated as sensitive), with synonyms over the layers of its own name and its synonyms
  (log.retention.ms/minutes/hours); read-only unless Kafka can update the key dynamically.
- The cluster-wide default broker resource ("") lists only the keys set cluster-wide, with only that
  layer's synonyms.
- PASSWORD keys are sensitive: value and synonym values are null.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from broker.config.kafka_config import KafkaConfig, key_of
from broker.config.keys import BROKER_KEYS, TOPIC_KEYS, UpdateMode, broker_synonyms
from broker.config.support import OUR_KEYS, broker_doc, topic_doc
from broker.config.topics import parse_topic_configs
from broker.config.types import ConfigSource, ConfigType, to_string


@dataclass(frozen=True)
class Synonym:
    name: str
    value: str | None
    source: ConfigSource


@dataclass(frozen=True)
class DescribedConfig:
    name: str
    value: str | None
    source: ConfigSource
    type: ConfigType
    read_only: bool = False
    sensitive: bool = False
    synonyms: list[Synonym] = field(default_factory=list)
    documentation: str | None = None


def _layers(config: KafkaConfig) -> list[tuple[Mapping[str, str], ConfigSource]]:
    return [(config.dynamic_broker, ConfigSource.DYNAMIC_BROKER_CONFIG),
            (config.dynamic_default, ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG),
            (config.originals, ConfigSource.STATIC_BROKER_CONFIG),
            (config.static_defaults(), ConfigSource.DEFAULT_CONFIG)]


def config_synonyms(config: KafkaConfig, name: str, names: list[str], sensitive: bool) -> list[Synonym]:
    """Kafka's ConfigHelper.configSynonyms: every layer's value of each of `names`, highest precedence
    first, from the first one called `name` on."""
    found = [Synonym(n, None if sensitive else layer[n], source)
             for layer, source in _layers(config) for n in names if n in layer]
    for i, s in enumerate(found):
        if s.name == name:
            return found[i:]
    return []


def describe_topic(config: KafkaConfig, overrides: Mapping[str, str], *, documentation: bool = False
                   ) -> list[DescribedConfig]:
    values = parse_topic_configs(overrides, config.topic_defaults())
    names = sorted({n for n, t in TOPIC_KEYS.items() if t.since is None} | set(overrides))
    out = []
    for name in names:
        key = TOPIC_KEYS[name]
        text = to_string(values[name], key.type)
        synonyms = [Synonym(name, text, ConfigSource.TOPIC_CONFIG)] if name in overrides else []
        if key.broker_synonym is not None:
            synonyms += config_synonyms(config, key.broker_synonym, broker_synonyms(key.broker_synonym), False)
        out.append(DescribedConfig(
            name, text, synonyms[0].source if synonyms else ConfigSource.DEFAULT_CONFIG, key.type,
            synonyms=synonyms, documentation=topic_doc(name) if documentation else None))
    return out


def describe_broker(config: KafkaConfig, *, per_broker: bool = True, documentation: bool = False
                    ) -> list[DescribedConfig]:
    """Broker `broker.id` (per_broker) or the cluster-wide default resource ""."""
    if per_broker:
        supplied = KafkaConfig.merged(config.originals, config.dynamic_default, config.dynamic_broker)
        names = sorted({n for n, k in BROKER_KEYS.items() if not k.internal and not k.dynamic_only
                        and k.since is None} | set(supplied))
    else:
        supplied = dict(config.dynamic_default)
        names = sorted(supplied)
    out = []
    for name in names:
        key = key_of(name)
        type_ = key.type if key is not None else ConfigType.UNKNOWN
        sensitive = key is None or type_ == ConfigType.PASSWORD  # an unknown type is hidden, as Kafka does
        if sensitive:
            text = None
        elif per_broker and (name in BROKER_KEYS or name in OUR_KEYS):
            text = to_string(config[name], type_)
        else:  # the cluster default's own text, or a per-listener key as supplied
            text = supplied.get(name)
        synonyms = config_synonyms(config, name, broker_synonyms(name), sensitive)
        if not per_broker:
            synonyms = [s for s in synonyms if s.source == ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG]
        brokers_key = BROKER_KEYS.get(name)
        out.append(DescribedConfig(
            name, text, synonyms[0].source if synonyms else ConfigSource.DEFAULT_CONFIG, type_,
            read_only=brokers_key is None or brokers_key.mode == UpdateMode.READ_ONLY, sensitive=sensitive,
            synonyms=synonyms, documentation=broker_doc(name, key) if documentation else None))
    return out

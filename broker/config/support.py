"""Which Kafka configuration keys this broker honours, which it accepts without effect, and why.

Contract:
- `IMPLEMENTED`: broker keys that act here as they act in Kafka. A module that starts honouring a key
  adds it here (and the start-up warning stops naming it).
- `no_effect_note(key)`: for a known key outside `IMPLEMENTED`, one short reason (or what we do
  instead), used by the single start-up warning line and by DescribeConfigs documentation.
- `OUR_KEYS`: this broker's own keys (not Kafka's), typed like Kafka's.
- `PLUGIN_KEYS` / `is_plugin_key(key)`: keys Kafka's plugins read (authorizer, config providers,
  per-listener overrides, tiered-storage plugin settings); known, no effect here.
- `broker_doc(key)` / `topic_doc(key)`: our one-line documentation (DescribeConfigs v3+).
"""

from __future__ import annotations

from broker.config.keys import BROKER_KEYS, BrokerKey, listener_base_name
from broker.config.types import STRING, InvalidValue


def prometheus_listener(name: str, value: str) -> None:
    """`http://host:port` or empty."""
    from broker.metrics.prometheus import parse_listener

    if value and parse_listener(value) is None:
        raise InvalidValue(name, value, "expected http://host:port or empty")


IMPLEMENTED: frozenset[str] = frozenset({
    # identity, listeners, storage location
    "broker.id", "node.id", "listeners", "advertised.listeners", "broker.rack", "log.dir", "log.dirs",
    "zookeeper.connect", "zookeeper.session.timeout.ms",
    # KRaft broker (broker/kraft/, docs/kraft.md)
    "process.roles", "controller.quorum.voters", "controller.quorum.bootstrap.servers", "controller.listener.names",
    "metadata.log.dir", "broker.heartbeat.interval.ms", "broker.session.timeout.ms",
    "initial.broker.registration.timeout.ms", "metadata.log.max.record.bytes.between.snapshots",
    "metadata.log.max.snapshot.interval.ms", "metadata.log.segment.bytes", "metadata.log.segment.ms",
    # topics and leadership
    "num.partitions", "default.replication.factor", "min.insync.replicas", "auto.create.topics.enable",
    "delete.topic.enable", "unclean.leader.election.enable", "auto.leader.rebalance.enable",
    "leader.imbalance.check.interval.seconds", "leader.imbalance.per.broker.percentage",
    # the log (and the topic defaults derived from it)
    "log.segment.bytes", "log.roll.ms", "log.roll.hours", "log.retention.ms", "log.retention.minutes",
    "log.retention.hours", "log.retention.bytes", "log.retention.check.interval.ms", "log.index.size.max.bytes",
    "log.index.interval.bytes", "log.flush.interval.messages", "log.flush.interval.ms",
    "log.flush.scheduler.interval.ms", "log.flush.offset.checkpoint.interval.ms",
    "log.flush.start.offset.checkpoint.interval.ms", "log.segment.delete.delay.ms", "log.cleanup.policy",
    "log.cleaner.enable", "log.cleaner.backoff.ms", "log.cleaner.delete.retention.ms",
    "log.cleaner.min.cleanable.ratio", "log.cleaner.min.compaction.lag.ms", "log.message.timestamp.type",
    "log.preallocate", "message.max.bytes",
    # network
    "socket.request.max.bytes", "socket.send.buffer.bytes", "socket.receive.buffer.bytes",
    "connections.max.idle.ms", "queued.max.request.bytes",
    # groups and offsets
    "offsets.topic.num.partitions", "offsets.topic.replication.factor", "offsets.topic.segment.bytes",
    "offsets.retention.minutes", "offsets.retention.check.interval.ms", "offsets.commit.timeout.ms",
    "offset.metadata.max.bytes", "group.initial.rebalance.delay.ms", "group.min.session.timeout.ms",
    "group.max.session.timeout.ms", "group.max.size",
    # KIP-848 consumer groups (broker/coordinator/group/consumer_requests.py); the min/max bounds are checked
    "group.consumer.session.timeout.ms", "group.consumer.heartbeat.interval.ms", "group.consumer.max.size",
    "group.consumer.assignors", "group.consumer.min.session.timeout.ms", "group.consumer.max.session.timeout.ms",
    "group.consumer.min.heartbeat.interval.ms", "group.consumer.max.heartbeat.interval.ms",
    # fetch sessions and replication
    "max.incremental.fetch.session.cache.slots", "replica.lag.time.max.ms", "replica.fetch.max.bytes",
    "replica.fetch.response.max.bytes", "replica.fetch.wait.max.ms", "replica.fetch.min.bytes",
    "replica.fetch.backoff.ms", "replica.socket.timeout.ms", "replica.high.watermark.checkpoint.interval.ms",
    "controller.socket.timeout.ms", "controlled.shutdown.enable", "controlled.shutdown.max.retries",
    "controlled.shutdown.retry.backoff.ms",
    # producer state and the transaction coordinator
    "producer.id.expiration.ms", "producer.id.expiration.check.interval.ms", "transactional.id.expiration.ms",
    "transaction.max.timeout.ms", "transaction.state.log.min.isr", "transaction.state.log.replication.factor",
    "transaction.state.log.num.partitions", "transaction.state.log.segment.bytes",
    "transaction.abort.timed.out.transaction.cleanup.interval.ms",
    "transaction.remove.expired.transaction.cleanup.interval.ms", "transaction.partition.verification.enable",
    # the share coordinator (broker/coordinator/share/)
    "share.coordinator.state.topic.num.partitions", "share.coordinator.state.topic.replication.factor",
    "share.coordinator.state.topic.min.isr", "share.coordinator.state.topic.segment.bytes",
    "share.coordinator.snapshot.update.records.per.snapshot", "share.coordinator.write.timeout.ms",
    "share.coordinator.state.topic.prune.interval.ms", "share.coordinator.cold.partition.snapshot.interval.ms",
    # inter-broker protocol: request versions, AlterPartition and AllocateProducerIds as Kafka's brokers
    "inter.broker.protocol.version",
    # authorization (broker/security/authorizer.py): Kafka's AclAuthorizer and the keys it reads
    "authorizer.class.name", "super.users", "allow.everyone.if.no.acl.found",
    # listener security (docs/security.md); per-listener `listener.name.<l>.` forms count as their base key
    "listener.security.protocol.map", "inter.broker.listener.name", "security.inter.broker.protocol",
    "ssl.keystore.type", "ssl.keystore.location", "ssl.keystore.key", "ssl.keystore.certificate.chain",
    "ssl.key.password", "ssl.keystore.password", "ssl.truststore.password", "ssl.truststore.type",
    "ssl.truststore.location", "ssl.truststore.certificates", "ssl.client.auth", "ssl.enabled.protocols",
    "ssl.endpoint.identification.algorithm", "ssl.principal.mapping.rules",
    "sasl.enabled.mechanisms", "sasl.jaas.config", "sasl.mechanism.inter.broker.protocol",
    "connection.failed.authentication.delay.ms", "sasl.server.max.receive.size", "connections.max.reauth.ms",
    "quota.window.num", "quota.window.size.seconds",
    # KIP-714 client telemetry (broker/metrics/client_metrics.py)
    "telemetry.max.bytes",
})

# This broker's own keys (Kafka has no such key).
OUR_KEYS: dict[str, BrokerKey] = {
    "cluster.id": BrokerKey("cluster.id", STRING, None),
    # Kafka's metrics for Prometheus on an HTTP listener, e.g. http://127.0.0.1:9404 (empty: none); broker/metrics/
    "metrics.prometheus.listener": BrokerKey("metrics.prometheus.listener", STRING, "", prometheus_listener),
}

# Keys read by Kafka's plugins rather than KafkaConfig (the authorizer, config providers).
PLUGIN_KEYS = frozenset({"super.users", "allow.everyone.if.no.acl.found", "config.providers"})
_PLUGIN_PREFIXES = ("config.providers.", "rsm.config.", "rlmm.config.", "listener.name.")


def is_plugin_key(name: str) -> bool:
    return name in PLUGIN_KEYS or name.startswith(_PLUGIN_PREFIXES)


_TLS = ("not applied (docs/security.md): no GSSAPI, OIDC validation, "
        "delegation tokens or custom principal builders")
_THREADS = "one event loop and a small I/O pool do the work of Kafka's thread pools"
_QUOTAS = ("client quotas only (byte rates, request percentage, controller mutations): replication throttles and "
           "connection limits are not enforced")
_KRAFT = "ZooKeeper mode and the embedded single node only: no KRaft"
_REMOTE = "no tiered storage"
_GROUPS = "no share groups, no migration between classic and KIP-848 consumer groups"
_TXN = "the transaction coordinator reads __transaction_state in its own chunks while loading"
_METRICS = "no metrics reporters: Kafka's metrics are served for Prometheus (metrics.prometheus.listener)"

# (prefixes or exact names, note), first match wins.
_NOTES: list[tuple[tuple[str, ...], str]] = [
    (("log.message.format.version", "message.format.version"),
     "ignored, as Kafka ignores it from inter.broker.protocol.version 3.0: batches are kept as written"),
    (("zookeeper.ssl.", "zookeeper.set.acl", "zookeeper.clientCnxnSocket"),
     "the ZooKeeper client connects in plain text and sets no ACLs"),
    (("zookeeper.connection.timeout.ms", "zookeeper.max.in.flight.requests"),
     "the ZooKeeper client connects within zookeeper.session.timeout.ms"),
    (("zookeeper.metadata.migration.", "process.roles", "controller.quorum.", "controller.listener.names",
      "metadata.", "broker.heartbeat.interval.ms", "broker.session.timeout.ms",
      "initial.broker.registration.timeout.ms", "sasl.mechanism.controller.protocol", "eligible.leader.replicas",
      "server.max.startup.time.ms", "early.start.listeners", "unstable."), _KRAFT),
    (("ssl.", "sasl.", "security.", "principal.builder.class", "connections.max.reauth.ms", "delegation.token.",
      "password.encoder.", "connection.failed.authentication.delay.ms", "listener.security.protocol.map",
      "inter.broker.listener.name", "control.plane.listener.name", "listener.name."), _TLS),
    (("num.network.threads", "num.io.threads", "background.threads", "queued.max.request",
      "num.recovery.threads.per.data.dir", "num.replica.alter.log.dirs.threads", "num.replica.fetchers",
      "log.cleaner.threads", "log.cleaner.io.", "log.cleaner.dedupe.buffer.size", "socket.listen.backlog.size",
      "fetch.purgatory.purge", "producer.purgatory.purge", "delete.records.purgatory.purge"), _THREADS),
    (("quota.", "replication.quota.", "alter.log.dirs.replication.quota.", "controller.quota.",
      "client.quota.callback.class", "leader.replication.throttled", "follower.replication.throttled",
      "replica.alter.log.dirs.io.max.bytes.per.second", "max.connection", "replica.socket.receive.buffer.bytes"),
     _QUOTAS),
    (("metric.reporters", "metrics.", "kafka.metrics.", "auto.include.jmx.reporter"), _METRICS),
    (("remote.", "log.local.retention.", "rsm.config.", "rlmm.config."), _REMOTE),
    (("group.consumer.", "group.coordinator.", "group.share."), _GROUPS),
    (("transaction.state.log.load.buffer.size",), _TXN),
    (("share.coordinator.",), "one share coordinator on the event loop: no linger, uncompressed, loaded in the "
                              "runtime's own chunks"),
    (("create.topic.policy.class.name", "alter.config.policy.class.name"), "no create-topic or alter-config policy"),
    (("compression.",), "batches are stored as the producer compressed them"),
    (("log.message.timestamp.", "log.message.downconversion.enable"),
     "record timestamps are not range-checked; old fetch versions are always down-converted"),
    (("log.roll.jitter.", "log.cleaner.max.compaction.lag.ms"), "not applied by this broker's log"),
    (("broker.id.generation.enable", "reserved.broker.max.id"), "broker ids are never generated: set broker.id"),
    (("config.providers",), "configuration values are used literally (no ${provider:...} substitution)"),
]


def no_effect_note(name: str) -> str:
    base = listener_base_name(name)
    for keys, note in _NOTES:
        if name.startswith(keys) or (base is not None and base.startswith(keys)):
            return note
    return "accepted; no effect on this broker"


def has_effect(name: str) -> bool:
    base = listener_base_name(name)
    return name in IMPLEMENTED or name in OUR_KEYS or (base is not None and base in IMPLEMENTED)


_DOCS: dict[str, str] = {
    "broker.id": "This broker's id in the cluster (synonym of node.id).",
    "node.id": "This broker's id in the cluster (synonym of broker.id).",
    "listeners": "Where the broker listens, NAME://host:port,... (protocols from listener.security.protocol.map).",
    "advertised.listeners": "The addresses clients and other brokers are told to use; default: listeners.",
    "broker.rack": "The rack of this broker, registered in the cluster metadata.",
    "log.dir": "The log directory, used when log.dirs is not set.",
    "log.dirs": "Comma-separated log directories holding the partitions' segment files.",
    "zookeeper.connect": "ZooKeeper connect string for cluster mode (host:port[,host:port][/chroot]).",
    "zookeeper.session.timeout.ms": "ZooKeeper session timeout: how long a dead broker stays registered.",
    "num.partitions": "Partitions of an auto-created topic, or of CreateTopics asking for -1.",
    "default.replication.factor": "Replicas of an auto-created topic, or of CreateTopics asking for -1.",
    "min.insync.replicas": "The fewest in-sync replicas an acks=all write needs (topic default).",
    "auto.create.topics.enable": "Create a topic when a client asks for metadata of a missing one.",
    "delete.topic.enable": "Allow DeleteTopics.",
    "unclean.leader.election.enable": "Elect an out-of-sync replica when no in-sync one is alive (topic default).",
    "auto.leader.rebalance.enable": "Move leadership back to preferred replicas periodically.",
    "log.retention.ms": "Delete segments older than this; -1 keeps them (topic default retention.ms).",
    "log.retention.bytes": "Delete old segments past this size per partition; -1 no limit (retention.bytes).",
    "log.retention.check.interval.ms": "How often retention is applied.",
    "log.segment.bytes": "Roll a new segment at this size (topic default segment.bytes).",
    "log.cleanup.policy": "delete and/or compact (topic default cleanup.policy).",
    "message.max.bytes": "The largest record batch accepted (topic default max.message.bytes).",
    "socket.request.max.bytes": "The largest request frame accepted.",
    "queued.max.request.bytes": "The request bytes a listener's connections may hold at once (-1: no bound).",
    "connections.max.idle.ms": "Close connections idle for this long.",
    "offsets.topic.num.partitions": "Partitions of __consumer_offsets.",
    "replica.lag.time.max.ms": "A follower that has not caught up for this long leaves the ISR.",
    "producer.id.expiration.ms": "A partition forgets a producer id idle this long without an open transaction.",
    "producer.id.expiration.check.interval.ms": "How often partitions look for producer ids to expire.",
}


def broker_doc(name: str, key: BrokerKey | None = None) -> str:
    doc = _DOCS.get(name)
    if doc is not None:
        return doc
    if name == "metrics.prometheus.listener":
        return "Serve Kafka's broker metrics and pushed client metrics for Prometheus at http://host:port/metrics."
    if name in OUR_KEYS:
        return "This broker's cluster id check: start-up fails if the metadata store holds another id."
    key = key or BROKER_KEYS.get(name)
    kind = key.type.name if key is not None else "UNKNOWN"
    if name in IMPLEMENTED:
        return f"Kafka's {name} ({kind}), honoured as Kafka honours it."
    return f"Kafka's {name} ({kind}); no effect on this broker: {no_effect_note(name)}."


_TOPIC_DOCS: dict[str, str] = {
    "cleanup.policy": "delete (retention), compact (keep the last record per key), both, or neither (empty).",
    "retention.ms": "Delete segments older than this; -1 keeps them.",
    "retention.bytes": "Delete old segments past this size per partition; -1 no limit.",
    "segment.bytes": "Roll a new segment at this size.",
    "segment.ms": "Roll a new segment after this long.",
    "max.message.bytes": "The largest record batch accepted.",
    "min.insync.replicas": "The fewest in-sync replicas an acks=all write needs.",
    "unclean.leader.election.enable": "Elect an out-of-sync replica when no in-sync one is alive.",
    "message.timestamp.type": "CreateTime (the producer's) or LogAppendTime (the broker's).",
}


def topic_doc(name: str) -> str:
    return _TOPIC_DOCS.get(name) or f"Kafka's topic setting {name}."

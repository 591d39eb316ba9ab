"""Kafka's configuration namespace as this broker knows it: every broker key and every topic key.

Contract:
- `BROKER_KEYS` holds every broker configuration key of Apache Kafka 3.7.1 (KafkaConfig, the dynamic-only
  replication throttles, the remote log manager keys) plus those 3.8/3.9 added (`since="3.9"`), each with
  Kafka's type, default, validation and dynamic update mode (read-only, per-broker, cluster-wide).
  `default` is Kafka's; `ours` is the default this broker uses where it deliberately differs (README:
  "Where we differ"). `internal` keys are accepted but not listed by DescribeConfigs unless set.
- `TOPIC_KEYS` holds Kafka's topic-level keys with their broker synonyms, in Kafka's precedence order
  (e.g. retention.ms <- log.retention.ms, log.retention.minutes, log.retention.hours).
- `broker_synonyms(key)`: the broker keys that set the same value, in Kafka's precedence order;
  `listener_base_name(key)`: the key a `listener.name.<l>.<key>` override stands for.
Which keys act on this broker, and why the others do not, is broker/config/support.py.
The facts (names, types, defaults, modes) are Kafka's; the table and its wording are ours.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Any

from broker.config.types import (
    BOOLEAN,
    CLASS,
    DOUBLE,
    DOUBLE_MAX,
    GZIP_LEVEL,
    INT,
    INT_MAX,
    LIST,
    LONG,
    LONG_MAX,
    METADATA_VERSION,
    NON_EMPTY,
    NON_NULL,
    PASSWORD,
    SHORT,
    STRING,
    ConfigType,
    InvalidValue,
    Validator,
    at_least,
    between,
    list_of,
    one_of,
    parse_checked,
)


class UpdateMode(Enum):
    """How a broker key may change without a restart (Kafka's "Update Mode" column)."""

    READ_ONLY = "read-only"
    PER_BROKER = "per-broker"
    CLUSTER_WIDE = "cluster-wide"


PB, CW = UpdateMode.PER_BROKER, UpdateMode.CLUSTER_WIDE
COMPRESSION_TYPES = one_of("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer")


@dataclass(frozen=True)
class BrokerKey:
    name: str
    type: ConfigType
    default: Any  # Kafka's default, typed (None: no default)
    validator: Validator | None = None
    mode: UpdateMode = UpdateMode.READ_ONLY
    internal: bool = False
    since: str | None = None  # a Kafka release after 3.7 that added the key
    dynamic_only: bool = False  # Kafka reads it only from the dynamic config (replication throttles)
    ours: Any = None  # this broker's default where it differs from Kafka's

    @property
    def effective_default(self) -> Any:
        return self.ours if self.ours is not None else self.default

    def parse(self, raw: Any) -> Any:
        return parse_checked(self.name, self.type, self.validator, raw)


def _k(name: str, type_: ConfigType, default: Any, validator: Validator | None = None, *,
       mode: UpdateMode = UpdateMode.READ_ONLY, internal: bool = False, since: str | None = None,
       dynamic_only: bool = False, ours: Any = None) -> BrokerKey:
    return BrokerKey(name, type_, default, validator, mode, internal, since, dynamic_only, ours)


def _throttled_replicas(name: str, value: Any) -> None:
    items = [str(v).strip() for v in value]
    if "".join(items) == "*":
        return
    for item in items:
        if item and not (item.count(":") == 1 and all(p.isdigit() for p in item.split(":"))):
            raise InvalidValue(name, value, f"{name} must be the literal '*' or a list of replicas in the following "
                               "format: [partitionId]:[brokerId],[partitionId]:[brokerId],...")


BROKER_KEYS: dict[str, BrokerKey] = {k.name: k for k in [
    _k("zookeeper.connect", STRING, None),
    _k("zookeeper.session.timeout.ms", INT, 18000),
    _k("zookeeper.connection.timeout.ms", INT, None),
    _k("zookeeper.set.acl", BOOLEAN, False),
    _k("zookeeper.max.in.flight.requests", INT, 10, at_least(1)),
    _k("zookeeper.ssl.client.enable", BOOLEAN, False),
    _k("zookeeper.clientCnxnSocket", STRING, None),
    _k("zookeeper.ssl.keystore.location", STRING, None),
    _k("zookeeper.ssl.keystore.password", PASSWORD, None),
    _k("zookeeper.ssl.keystore.type", STRING, None),
    _k("zookeeper.ssl.truststore.location", STRING, None),
    _k("zookeeper.ssl.truststore.password", PASSWORD, None),
    _k("zookeeper.ssl.truststore.type", STRING, None),
    _k("zookeeper.ssl.protocol", STRING, "TLSv1.2"),
    _k("zookeeper.ssl.enabled.protocols", LIST, None),
    _k("zookeeper.ssl.cipher.suites", LIST, None),
    _k("zookeeper.ssl.endpoint.identification.algorithm", STRING, "HTTPS"),
    _k("zookeeper.ssl.crl.enable", BOOLEAN, False),
    _k("zookeeper.ssl.ocsp.enable", BOOLEAN, False),
    _k("broker.id.generation.enable", BOOLEAN, True),
    _k("reserved.broker.max.id", INT, 1000, at_least(0)),
    _k("broker.id", INT, -1),
    _k("message.max.bytes", INT, 1048588, at_least(0), mode=CW),
    _k("num.network.threads", INT, 3, at_least(1), mode=CW),
    _k("num.io.threads", INT, 8, at_least(1), mode=CW),
    _k("num.replica.alter.log.dirs.threads", INT, None),
    _k("background.threads", INT, 10, at_least(1), mode=CW),
    _k("queued.max.requests", INT, 500, at_least(1)),
    _k("queued.max.request.bytes", LONG, -1),
    _k("request.timeout.ms", INT, 30000),
    _k("socket.connection.setup.timeout.ms", LONG, 10000),
    _k("socket.connection.setup.timeout.max.ms", LONG, 30000),
    _k("metadata.log.max.record.bytes.between.snapshots", LONG, 20971520, at_least(1)),
    _k("metadata.log.max.snapshot.interval.ms", LONG, 3600000, at_least(0)),
    _k("process.roles", LIST, [], list_of("broker", "controller")),
    _k("node.id", INT, -1),
    _k("initial.broker.registration.timeout.ms", INT, 60000),
    _k("broker.heartbeat.interval.ms", INT, 2000),
    _k("broker.session.timeout.ms", INT, 9000),
    _k("controller.listener.names", STRING, None),
    _k("sasl.mechanism.controller.protocol", STRING, "GSSAPI"),
    _k("metadata.log.dir", STRING, None),
    _k("metadata.log.segment.bytes", INT, 1073741824, at_least(12)),
    _k("metadata.log.segment.min.bytes", INT, 8388608, at_least(12), internal=True),
    _k("metadata.log.segment.ms", LONG, 604800000),
    _k("metadata.max.retention.bytes", LONG, 104857600),
    _k("metadata.max.retention.ms", LONG, 604800000),
    _k("metadata.max.idle.interval.ms", INT, 500, at_least(0)),
    _k("server.max.startup.time.ms", LONG, LONG_MAX, at_least(0), internal=True),
    _k("zookeeper.metadata.migration.enable", BOOLEAN, False),
    _k("eligible.leader.replicas.enable", BOOLEAN, False),
    _k("zookeeper.metadata.migration.min.batch.size", INT, 200, at_least(1), internal=True),
    _k("authorizer.class.name", STRING, "", NON_NULL),
    _k("early.start.listeners", STRING, None),
    _k("listeners", STRING, "PLAINTEXT://:9092", ours="PLAINTEXT://127.0.0.1:9092", mode=PB),
    # per-broker dynamic up to Kafka 4.0; read-only in 4.4 (not in DynamicListenerConfig.RECONFIGURABLE_CONFIGS)
    _k("advertised.listeners", STRING, None),
    _k("listener.security.protocol.map", STRING,
       "PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL", mode=PB),
    _k("control.plane.listener.name", STRING, None),
    _k("socket.send.buffer.bytes", INT, 102400, ours=-1),
    _k("socket.receive.buffer.bytes", INT, 102400, ours=-1),
    _k("socket.request.max.bytes", INT, 104857600, at_least(1)),
    _k("socket.listen.backlog.size", INT, 50, at_least(1)),
    _k("max.connections.per.ip", INT, INT_MAX, at_least(0), mode=CW),
    _k("max.connections.per.ip.overrides", STRING, "", mode=CW),
    _k("max.connections", INT, INT_MAX, at_least(0), mode=CW),
    _k("max.connection.creation.rate", INT, INT_MAX, at_least(0), mode=CW),
    _k("connections.max.idle.ms", LONG, 600000),
    _k("connection.failed.authentication.delay.ms", INT, 100, at_least(0)),
    _k("broker.rack", STRING, None),
    _k("num.partitions", INT, 1, at_least(1)),
    _k("log.dir", STRING, "/tmp/kafka-logs", ours="./data"),
    _k("log.dirs", STRING, None),
    _k("log.segment.bytes", INT, 1073741824, at_least(14), mode=CW),
    _k("log.roll.ms", LONG, None, mode=CW),
    _k("log.roll.hours", INT, 168, at_least(1)),
    _k("log.roll.jitter.ms", LONG, None, mode=CW),
    _k("log.roll.jitter.hours", INT, 0, at_least(0)),
    _k("log.retention.ms", LONG, None, mode=CW),
    _k("log.retention.minutes", INT, None),
    _k("log.retention.hours", INT, 168),
    _k("log.retention.bytes", LONG, -1, mode=CW),
    _k("log.retention.check.interval.ms", LONG, 300000, at_least(1)),
    _k("log.cleanup.policy", LIST, ["delete"], list_of("compact", "delete"), mode=CW),
    _k("log.cleaner.threads", INT, 1, at_least(0), mode=CW),
    _k("log.cleaner.io.max.bytes.per.second", DOUBLE, DOUBLE_MAX, mode=CW),
    _k("log.cleaner.dedupe.buffer.size", LONG, 134217728, mode=CW),
    _k("log.cleaner.io.buffer.size", INT, 524288, at_least(0), mode=CW),
    _k("log.cleaner.io.buffer.load.factor", DOUBLE, 0.9, mode=CW),
    _k("log.cleaner.backoff.ms", LONG, 15000, at_least(0), mode=CW),
    _k("log.cleaner.min.cleanable.ratio", DOUBLE, 0.5, between(0, 1), mode=CW),
    _k("log.cleaner.enable", BOOLEAN, True),
    _k("log.cleaner.delete.retention.ms", LONG, 86400000, at_least(0), mode=CW),
    _k("log.cleaner.min.compaction.lag.ms", LONG, 0, at_least(0), mode=CW),
    _k("log.cleaner.max.compaction.lag.ms", LONG, LONG_MAX, at_least(1), mode=CW),
    _k("log.index.size.max.bytes", INT, 10485760, at_least(4), mode=CW),
    _k("log.index.interval.bytes", INT, 4096, at_least(0), mode=CW),
    _k("log.flush.interval.messages", LONG, LONG_MAX, at_least(1), mode=CW),
    _k("log.segment.delete.delay.ms", LONG, 60000, at_least(0), mode=CW),
    _k("log.flush.scheduler.interval.ms", LONG, LONG_MAX),
    _k("log.flush.interval.ms", LONG, None, mode=CW),
    _k("log.flush.offset.checkpoint.interval.ms", INT, 60000, at_least(0)),
    _k("log.flush.start.offset.checkpoint.interval.ms", INT, 60000, at_least(0)),
    _k("log.preallocate", BOOLEAN, False, mode=CW),
    _k("num.recovery.threads.per.data.dir", INT, 1, at_least(1), mode=CW),
    _k("auto.create.topics.enable", BOOLEAN, True),
    _k("min.insync.replicas", INT, 1, at_least(1), mode=CW),
    _k("log.message.format.version", STRING, "3.0-IV1", METADATA_VERSION),
    _k("log.message.timestamp.type", STRING, "CreateTime", one_of("CreateTime", "LogAppendTime"), mode=CW),
    _k("log.message.timestamp.difference.max.ms", LONG, LONG_MAX, at_least(0), mode=CW),
    _k("log.message.timestamp.before.max.ms", LONG, LONG_MAX, at_least(0), mode=CW),
    _k("log.message.timestamp.after.max.ms", LONG, LONG_MAX, at_least(0), mode=CW),
    _k("create.topic.policy.class.name", CLASS, None),
    _k("alter.config.policy.class.name", CLASS, None),
    _k("log.message.downconversion.enable", BOOLEAN, True, mode=CW),
    _k("controller.socket.timeout.ms", INT, 30000),
    _k("default.replication.factor", INT, 1),
    _k("replica.lag.time.max.ms", LONG, 30000),
    _k("replica.socket.timeout.ms", INT, 30000),
    _k("replica.socket.receive.buffer.bytes", INT, 65536),
    _k("replica.fetch.max.bytes", INT, 1048576, at_least(0)),
    _k("replica.fetch.wait.max.ms", INT, 500),
    _k("replica.fetch.backoff.ms", INT, 1000, at_least(0)),
    _k("replica.fetch.min.bytes", INT, 1),
    _k("replica.fetch.response.max.bytes", INT, 10485760, at_least(0)),
    _k("num.replica.fetchers", INT, 1, mode=CW),
    _k("replica.high.watermark.checkpoint.interval.ms", LONG, 5000),
    _k("fetch.purgatory.purge.interval.requests", INT, 1000),
    _k("producer.purgatory.purge.interval.requests", INT, 1000),
    _k("delete.records.purgatory.purge.interval.requests", INT, 1),
    _k("auto.leader.rebalance.enable", BOOLEAN, True),
    _k("leader.imbalance.per.broker.percentage", INT, 10),
    _k("leader.imbalance.check.interval.seconds", LONG, 300, at_least(1)),
    _k("unclean.leader.election.enable", BOOLEAN, False, mode=CW),
    _k("security.inter.broker.protocol", STRING, "PLAINTEXT", one_of("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")),
    _k("inter.broker.protocol.version", STRING, "3.7-IV4", METADATA_VERSION),
    _k("inter.broker.listener.name", STRING, None),
    _k("replica.selector.class", STRING, None),
    _k("controlled.shutdown.max.retries", INT, 3),
    _k("controlled.shutdown.retry.backoff.ms", LONG, 5000),
    _k("controlled.shutdown.enable", BOOLEAN, True),
    _k("group.min.session.timeout.ms", INT, 6000),
    _k("group.max.session.timeout.ms", INT, 1800000),
    _k("group.initial.rebalance.delay.ms", INT, 3000),
    _k("group.max.size", INT, INT_MAX, at_least(1)),
    _k("group.coordinator.rebalance.protocols", LIST, ["classic"], list_of("consumer", "classic")),
    _k("group.coordinator.threads", INT, 1, at_least(1)),
    _k("group.coordinator.new.enable", BOOLEAN, False, internal=True),
    _k("group.consumer.session.timeout.ms", INT, 45000, at_least(1)),
    _k("group.consumer.min.session.timeout.ms", INT, 45000, at_least(1)),
    _k("group.consumer.max.session.timeout.ms", INT, 60000, at_least(1)),
    _k("group.consumer.heartbeat.interval.ms", INT, 5000, at_least(1)),
    _k("group.consumer.min.heartbeat.interval.ms", INT, 5000, at_least(1)),
    _k("group.consumer.max.heartbeat.interval.ms", INT, 15000, at_least(1)),
    _k("group.consumer.max.size", INT, INT_MAX, at_least(1)),
    _k("group.consumer.migration.policy", STRING, "bidirectional",
       one_of("disabled", "upgrade", "downgrade", "bidirectional"), since="3.8"),
    _k("group.consumer.assignors", LIST, ["org.apache.kafka.coordinator.group.assignor.UniformAssignor",
                                          "org.apache.kafka.coordinator.group.assignor.RangeAssignor"]),
    _k("offset.metadata.max.bytes", INT, 4096),
    _k("offsets.load.buffer.size", INT, 5242880, at_least(1)),
    _k("offsets.topic.replication.factor", SHORT, 3, at_least(1)),
    _k("offsets.topic.num.partitions", INT, 50, at_least(1)),
    _k("offsets.topic.segment.bytes", INT, 104857600, at_least(1)),
    _k("offsets.topic.compression.codec", INT, 0),
    _k("offsets.retention.minutes", INT, 10080, at_least(1)),
    _k("offsets.retention.check.interval.ms", LONG, 600000, at_least(1)),
    _k("offsets.commit.timeout.ms", INT, 5000, at_least(1)),
    _k("offsets.commit.required.acks", SHORT, -1),
    _k("delete.topic.enable", BOOLEAN, True),
    _k("compression.type", STRING, "producer", COMPRESSION_TYPES, mode=CW),
    _k("transactional.id.expiration.ms", INT, 604800000, at_least(1)),
    _k("transaction.max.timeout.ms", INT, 900000, at_least(1)),
    _k("transaction.state.log.min.isr", INT, 2, at_least(1)),
    _k("transaction.state.log.load.buffer.size", INT, 5242880, at_least(1)),
    _k("transaction.state.log.replication.factor", SHORT, 3, at_least(1)),
    _k("transaction.state.log.num.partitions", INT, 50, at_least(1)),
    _k("transaction.state.log.segment.bytes", INT, 104857600, at_least(1)),
    _k("transaction.abort.timed.out.transaction.cleanup.interval.ms", INT, 10000, at_least(1)),
    _k("transaction.remove.expired.transaction.cleanup.interval.ms", INT, 3600000, at_least(1)),
    _k("transaction.partition.verification.enable", BOOLEAN, True, mode=CW),
    _k("producer.id.expiration.ms", INT, 86400000, at_least(1), mode=CW),
    _k("producer.id.expiration.check.interval.ms", INT, 600000, at_least(1), internal=True),
    _k("max.incremental.fetch.session.cache.slots", INT, 1000, at_least(0)),
    _k("fetch.max.bytes", INT, 57671680, at_least(1024)),
    _k("metrics.num.samples", INT, 2, at_least(1)),
    _k("metrics.sample.window.ms", LONG, 30000, at_least(1)),
    _k("metric.reporters", LIST, [], mode=CW),
    _k("metrics.recording.level", STRING, "INFO"),
    _k("auto.include.jmx.reporter", BOOLEAN, True),
    _k("kafka.metrics.reporters", LIST, []),
    _k("kafka.metrics.polling.interval.secs", INT, 10, at_least(1)),
    _k("telemetry.max.bytes", INT, 1048576, at_least(1)),
    _k("quota.window.num", INT, 11, at_least(1)),
    _k("replication.quota.window.num", INT, 11, at_least(1)),
    _k("alter.log.dirs.replication.quota.window.num", INT, 11, at_least(1)),
    _k("controller.quota.window.num", INT, 11, at_least(1)),
    _k("quota.window.size.seconds", INT, 1, at_least(1)),
    _k("replication.quota.window.size.seconds", INT, 1, at_least(1)),
    _k("alter.log.dirs.replication.quota.window.size.seconds", INT, 1, at_least(1)),
    _k("controller.quota.window.size.seconds", INT, 1, at_least(1)),
    _k("client.quota.callback.class", CLASS, None),
    _k("connections.max.reauth.ms", LONG, 0),
    _k("sasl.server.max.receive.size", INT, 524288),
    _k("security.providers", STRING, None),
    _k("principal.builder.class", CLASS, "org.apache.kafka.common.security.authenticator.DefaultKafkaPrincipalBuilder",
       mode=PB),
    _k("ssl.protocol", STRING, "TLSv1.3", mode=PB),
    _k("ssl.provider", STRING, None, mode=PB),
    _k("ssl.enabled.protocols", LIST, ["TLSv1.2", "TLSv1.3"], mode=PB),
    _k("ssl.keystore.type", STRING, "JKS", mode=PB),
    _k("ssl.keystore.location", STRING, None, mode=PB),
    _k("ssl.keystore.password", PASSWORD, None, mode=PB),
    _k("ssl.key.password", PASSWORD, None, mode=PB),
    _k("ssl.keystore.key", PASSWORD, None, mode=PB),
    _k("ssl.keystore.certificate.chain", PASSWORD, None, mode=PB),
    _k("ssl.truststore.type", STRING, "JKS", mode=PB),
    _k("ssl.truststore.location", STRING, None, mode=PB),
    _k("ssl.truststore.password", PASSWORD, None, mode=PB),
    _k("ssl.truststore.certificates", PASSWORD, None, mode=PB),
    _k("ssl.keymanager.algorithm", STRING, "SunX509", mode=PB),
    _k("ssl.trustmanager.algorithm", STRING, "PKIX", mode=PB),
    _k("ssl.endpoint.identification.algorithm", STRING, "https", mode=PB),
    _k("ssl.secure.random.implementation", STRING, None, mode=PB),
    _k("ssl.client.auth", STRING, "none", one_of("required", "requested", "none"), mode=PB),
    _k("ssl.cipher.suites", LIST, [], mode=PB),
    _k("ssl.principal.mapping.rules", STRING, "DEFAULT"),
    _k("ssl.engine.factory.class", CLASS, None, mode=PB),
    _k("ssl.allow.dn.changes", BOOLEAN, False),
    _k("ssl.allow.san.changes", BOOLEAN, False),
    _k("sasl.mechanism.inter.broker.protocol", STRING, "GSSAPI", mode=PB),
    _k("sasl.jaas.config", PASSWORD, None, mode=PB),
    _k("sasl.enabled.mechanisms", LIST, ["GSSAPI"], mode=PB),
    _k("sasl.server.callback.handler.class", CLASS, None),
    _k("sasl.client.callback.handler.class", CLASS, None),
    _k("sasl.login.class", CLASS, None),
    _k("sasl.login.callback.handler.class", CLASS, None),
    _k("sasl.kerberos.service.name", STRING, None, mode=PB),
    _k("sasl.kerberos.kinit.cmd", STRING, "/usr/bin/kinit", mode=PB),
    _k("sasl.kerberos.ticket.renew.window.factor", DOUBLE, 0.8, mode=PB),
    _k("sasl.kerberos.ticket.renew.jitter", DOUBLE, 0.05, mode=PB),
    _k("sasl.kerberos.min.time.before.relogin", LONG, 60000, mode=PB),
    _k("sasl.kerberos.principal.to.local.rules", LIST, ["DEFAULT"], mode=PB),
    _k("sasl.login.refresh.window.factor", DOUBLE, 0.8, mode=PB),
    _k("sasl.login.refresh.window.jitter", DOUBLE, 0.05, mode=PB),
    _k("sasl.login.refresh.min.period.seconds", SHORT, 60, mode=PB),
    _k("sasl.login.refresh.buffer.seconds", SHORT, 300, mode=PB),
    _k("sasl.login.connect.timeout.ms", INT, None),
    _k("sasl.login.read.timeout.ms", INT, None),
    _k("sasl.login.retry.backoff.max.ms", LONG, 10000),
    _k("sasl.login.retry.backoff.ms", LONG, 100),
    _k("sasl.oauthbearer.scope.claim.name", STRING, "scope"),
    _k("sasl.oauthbearer.sub.claim.name", STRING, "sub"),
    _k("sasl.oauthbearer.token.endpoint.url", STRING, None),
    _k("sasl.oauthbearer.jwks.endpoint.url", STRING, None),
    _k("sasl.oauthbearer.jwks.endpoint.refresh.ms", LONG, 3600000),
    _k("sasl.oauthbearer.jwks.endpoint.retry.backoff.ms", LONG, 100),
    _k("sasl.oauthbearer.jwks.endpoint.retry.backoff.max.ms", LONG, 10000),
    _k("sasl.oauthbearer.clock.skew.seconds", INT, 30),
    _k("sasl.oauthbearer.expected.audience", LIST, None),
    _k("sasl.oauthbearer.expected.issuer", STRING, None),
    _k("delegation.token.master.key", PASSWORD, None),
    _k("delegation.token.secret.key", PASSWORD, None),
    _k("delegation.token.max.lifetime.ms", LONG, 604800000, at_least(1)),
    _k("delegation.token.expiry.time.ms", LONG, 86400000, at_least(1)),
    _k("delegation.token.expiry.check.interval.ms", LONG, 3600000, at_least(1)),
    _k("password.encoder.secret", PASSWORD, None),
    _k("password.encoder.old.secret", PASSWORD, None),
    _k("password.encoder.keyfactory.algorithm", STRING, None),
    _k("password.encoder.cipher.algorithm", STRING, "AES/CBC/PKCS5Padding"),
    _k("password.encoder.key.length", INT, 128, at_least(8)),
    _k("password.encoder.iterations", INT, 4096, at_least(1024)),
    _k("controller.quorum.voters", LIST, []),
    _k("controller.quorum.election.timeout.ms", INT, 1000),
    _k("controller.quorum.fetch.timeout.ms", INT, 2000),
    _k("controller.quorum.election.backoff.max.ms", INT, 1000),
    _k("controller.quorum.append.linger.ms", INT, 25),
    _k("controller.quorum.request.timeout.ms", INT, 2000),
    _k("controller.quorum.retry.backoff.ms", INT, 20),
    _k("unstable.api.versions.enable", BOOLEAN, False, internal=True),
    _k("unstable.metadata.versions.enable", BOOLEAN, False, internal=True),
    _k("remote.log.storage.system.enable", BOOLEAN, False),
    _k("remote.log.storage.manager.impl.prefix", STRING, "rsm.config.", NON_EMPTY),
    _k("remote.log.metadata.manager.impl.prefix", STRING, "rlmm.config.", NON_EMPTY),
    _k("remote.log.storage.manager.class.name", STRING, None, NON_EMPTY),
    _k("remote.log.storage.manager.class.path", STRING, None),
    _k("remote.log.metadata.manager.class.name", STRING,
       "org.apache.kafka.server.log.remote.metadata.storage.TopicBasedRemoteLogMetadataManager", NON_EMPTY),
    _k("remote.log.metadata.manager.class.path", STRING, None),
    _k("remote.log.metadata.manager.listener.name", STRING, None, NON_EMPTY),
    _k("remote.log.metadata.custom.metadata.max.bytes", INT, 128, at_least(0)),
    _k("remote.log.index.file.cache.total.size.bytes", LONG, 1073741824, at_least(1), mode=CW),
    _k("remote.log.manager.thread.pool.size", INT, 10, at_least(1)),
    _k("remote.log.manager.task.interval.ms", LONG, 30000, at_least(1)),
    _k("remote.log.manager.task.retry.backoff.ms", LONG, 500, at_least(1), internal=True),
    _k("remote.log.manager.task.retry.backoff.max.ms", LONG, 30000, at_least(1), internal=True),
    _k("remote.log.manager.task.retry.jitter", DOUBLE, 0.2, between(0, 0.5), internal=True),
    _k("remote.log.reader.threads", INT, 10, at_least(1)),
    _k("remote.log.reader.max.pending.tasks", INT, 100, at_least(1)),
    _k("log.local.retention.ms", LONG, -2, at_least(-2), mode=CW),
    _k("log.local.retention.bytes", LONG, -2, at_least(-2), mode=CW),
    _k("leader.replication.throttled.rate", LONG, LONG_MAX, at_least(0), mode=CW, dynamic_only=True),
    _k("follower.replication.throttled.rate", LONG, LONG_MAX, at_least(0), mode=CW, dynamic_only=True),
    _k("replica.alter.log.dirs.io.max.bytes.per.second", LONG, LONG_MAX, at_least(0), mode=CW, dynamic_only=True),
    _k("remote.log.manager.copier.thread.pool.size", INT, -1, since="3.9"),
    _k("remote.log.manager.expiration.thread.pool.size", INT, -1, since="3.9"),
    _k("remote.log.manager.copy.max.bytes.per.second", LONG, LONG_MAX, at_least(1), mode=CW, since="3.9"),
    _k("remote.log.manager.copy.quota.window.num", INT, 11, at_least(1), since="3.9"),
    _k("remote.log.manager.copy.quota.window.size.seconds", INT, 1, at_least(1), since="3.9"),
    _k("remote.log.manager.fetch.max.bytes.per.second", LONG, LONG_MAX, at_least(1), mode=CW, since="3.9"),
    _k("remote.log.manager.fetch.quota.window.num", INT, 11, at_least(1), since="3.9"),
    _k("remote.log.manager.fetch.quota.window.size.seconds", INT, 1, at_least(1), since="3.9"),
    _k("remote.fetch.max.wait.ms", INT, 500, at_least(1), mode=CW, since="3.9"),
    _k("max.request.partition.size.limit", INT, 2000, at_least(1), since="3.9"),
    _k("unstable.feature.versions.enable", BOOLEAN, False, internal=True, since="3.9"),
    _k("unclean.leader.election.interval.ms", LONG, 300000, at_least(1), internal=True, since="3.9"),
    _k("group.coordinator.append.linger.ms", INT, 10, at_least(0), since="3.9"),
    _k("group.share.session.timeout.ms", INT, 45000, at_least(1), since="3.9"),
    _k("group.share.min.session.timeout.ms", INT, 45000, at_least(1), since="3.9"),
    _k("group.share.max.session.timeout.ms", INT, 60000, at_least(1), since="3.9"),
    _k("group.share.heartbeat.interval.ms", INT, 5000, at_least(1), since="3.9"),
    _k("group.share.min.heartbeat.interval.ms", INT, 5000, at_least(1), since="3.9"),
    _k("group.share.max.heartbeat.interval.ms", INT, 15000, at_least(1), since="3.9"),
    _k("group.share.max.size", SHORT, 200, between(10, 1000), since="3.9"),
    _k("log.dir.failure.timeout.ms", LONG, 30000, at_least(1), since="3.9"),
    _k("log.initial.task.delay.ms", LONG, 30000, at_least(0), internal=True, since="3.9"),
    _k("controller.quorum.bootstrap.servers", LIST, [], since="3.9"),
    _k("group.share.enable", BOOLEAN, False, internal=True, since="3.9"),
    _k("group.share.delivery.count.limit", INT, 5, between(2, 10), since="3.9"),
    _k("group.share.record.lock.duration.ms", INT, 30000, between(1000, 60000), since="3.9"),
    _k("group.share.min.record.lock.duration.ms", INT, 15000, between(1000, 30000), since="3.9"),
    _k("group.share.max.record.lock.duration.ms", INT, 60000, between(30000, 3600000), since="3.9"),
    _k("group.share.max.groups", SHORT, 10, between(1, 100), since="3.9"),
    # 200 in Kafka 3.9/4.0; 2000 since 4.1 (the share groups served here are 4.1+'s, and a 200-offset window
    # throttles a partition read by several members: franz-go's TestShareGroupETL).
    _k("group.share.partition.max.record.locks", INT, 2000, between(100, 10000), since="3.9"),
    # the bounds of the share.partition.max.record.locks group config (Kafka 4.2)
    _k("group.share.min.partition.max.record.locks", INT, 100, between(100, 2000), since="4.2"),
    _k("group.share.max.partition.max.record.locks", INT, 4000, between(2000, 10000), since="4.2"),
    _k("compression.gzip.level", INT, -1, GZIP_LEVEL, mode=CW, since="3.9"),
    _k("compression.lz4.level", INT, 9, between(1, 17), mode=CW, since="3.9"),
    _k("compression.zstd.level", INT, 3, between(-131072, 22), mode=CW, since="3.9"),
    # the share coordinator (KIP-932, Kafka 4.0's ShareCoordinatorConfig)
    _k("share.coordinator.state.topic.num.partitions", INT, 50, at_least(1), since="4.0"),
    _k("share.coordinator.state.topic.replication.factor", SHORT, 3, at_least(1), since="4.0"),
    _k("share.coordinator.state.topic.min.isr", SHORT, 2, at_least(1), since="4.0"),
    _k("share.coordinator.state.topic.segment.bytes", INT, 104857600, at_least(1), since="4.0"),
    _k("share.coordinator.state.topic.compression.codec", INT, 0, since="4.0"),
    _k("share.coordinator.threads", INT, 1, at_least(1), since="4.0"),
    _k("share.coordinator.snapshot.update.records.per.snapshot", INT, 500, between(0, 500), since="4.0"),
    _k("share.coordinator.write.timeout.ms", INT, 5000, at_least(1), since="4.0"),
    _k("share.coordinator.load.buffer.size", INT, 5242880, at_least(1), since="4.0"),
    _k("share.coordinator.append.linger.ms", INT, 5, at_least(0), since="4.0"),
    _k("share.coordinator.state.topic.prune.interval.ms", INT, 300000, at_least(1), internal=True, since="4.1"),
    _k("share.coordinator.cold.partition.snapshot.interval.ms", INT, 300000, at_least(1), internal=True,
       since="4.1"),
]}


@dataclass(frozen=True)
class TopicKey:
    name: str
    type: ConfigType
    default: Any
    validator: Validator | None = None
    # Broker keys that supply the default, highest precedence first, with the factor that converts
    # each to the topic key's unit (log.retention.hours -> retention.ms: 3600000).
    synonyms: tuple[tuple[str, int], ...] = ()
    since: str | None = None

    @property
    def broker_synonym(self) -> str | None:
        return self.synonyms[0][0] if self.synonyms else None

    def parse(self, raw: Any) -> Any:
        return parse_checked(self.name, self.type, self.validator, raw)


def _t(name: str, type_: ConfigType, default: Any, validator: Validator | None = None,
       *synonyms: str | tuple[str, int], since: str | None = None) -> TopicKey:
    syn = tuple(s if isinstance(s, tuple) else (s, 1) for s in synonyms)
    return TopicKey(name, type_, default, validator, syn, since)


HOURS, MINUTES = 3_600_000, 60_000
TOPIC_KEYS: dict[str, TopicKey] = {t.name: t for t in [
    _t("cleanup.policy", LIST, ["delete"], list_of("compact", "delete"), "log.cleanup.policy"),
    _t("compression.type", STRING, "producer", COMPRESSION_TYPES, "compression.type"),
    _t("delete.retention.ms", LONG, 86400000, at_least(0), "log.cleaner.delete.retention.ms"),
    _t("file.delete.delay.ms", LONG, 60000, at_least(0), "log.segment.delete.delay.ms"),
    _t("flush.messages", LONG, LONG_MAX, at_least(1), "log.flush.interval.messages"),
    _t("flush.ms", LONG, LONG_MAX, at_least(0), "log.flush.interval.ms", "log.flush.scheduler.interval.ms"),
    _t("follower.replication.throttled.replicas", LIST, [], _throttled_replicas),
    _t("index.interval.bytes", INT, 4096, at_least(0), "log.index.interval.bytes"),
    _t("leader.replication.throttled.replicas", LIST, [], _throttled_replicas),
    _t("local.retention.bytes", LONG, -2, at_least(-2), "log.local.retention.bytes"),
    _t("local.retention.ms", LONG, -2, at_least(-2), "log.local.retention.ms"),
    _t("max.compaction.lag.ms", LONG, LONG_MAX, at_least(1), "log.cleaner.max.compaction.lag.ms"),
    _t("max.message.bytes", INT, 1048588, at_least(0), "message.max.bytes"),
    _t("message.downconversion.enable", BOOLEAN, True, None, "log.message.downconversion.enable"),
    _t("message.format.version", STRING, "3.0-IV1", METADATA_VERSION, "log.message.format.version"),
    _t("message.timestamp.after.max.ms", LONG, LONG_MAX, at_least(0), "log.message.timestamp.after.max.ms"),
    _t("message.timestamp.before.max.ms", LONG, LONG_MAX, at_least(0), "log.message.timestamp.before.max.ms"),
    _t("message.timestamp.difference.max.ms", LONG, LONG_MAX, at_least(0), "log.message.timestamp.difference.max.ms"),
    _t("message.timestamp.type", STRING, "CreateTime", one_of("CreateTime", "LogAppendTime"),
       "log.message.timestamp.type"),
    _t("min.cleanable.dirty.ratio", DOUBLE, 0.5, between(0, 1), "log.cleaner.min.cleanable.ratio"),
    _t("min.compaction.lag.ms", LONG, 0, at_least(0), "log.cleaner.min.compaction.lag.ms"),
    _t("min.insync.replicas", INT, 1, at_least(1), "min.insync.replicas"),
    _t("preallocate", BOOLEAN, False, None, "log.preallocate"),
    _t("remote.storage.enable", BOOLEAN, False),
    _t("retention.bytes", LONG, -1, None, "log.retention.bytes"),
    _t("retention.ms", LONG, 604800000, at_least(-1), "log.retention.ms", ("log.retention.minutes", MINUTES),
       ("log.retention.hours", HOURS)),
    _t("segment.bytes", INT, 1073741824, at_least(14), "log.segment.bytes"),
    _t("segment.index.bytes", INT, 10485760, at_least(4), "log.index.size.max.bytes"),
    _t("segment.jitter.ms", LONG, 0, at_least(0), "log.roll.jitter.ms", ("log.roll.jitter.hours", HOURS)),
    _t("segment.ms", LONG, 604800000, at_least(1), "log.roll.ms", ("log.roll.hours", HOURS)),
    _t("unclean.leader.election.enable", BOOLEAN, False, None, "unclean.leader.election.enable"),
    # Added after 3.7: accepted, listed by DescribeConfigs only once set.
    _t("compression.gzip.level", INT, -1, GZIP_LEVEL, "compression.gzip.level", since="3.9"),
    _t("compression.lz4.level", INT, 9, between(1, 17), "compression.lz4.level", since="3.9"),
    _t("compression.zstd.level", INT, 3, between(-131072, 22), "compression.zstd.level", since="3.9"),
    _t("remote.log.copy.disable", BOOLEAN, False, since="3.9"),
    _t("remote.log.delete.on.disable", BOOLEAN, False, since="3.9"),
]}

# SSL stores: dynamically updatable only per listener (listener.name.<l>.<key>), never bare.
LISTENER_ONLY_KEYS = frozenset({
    "ssl.keystore.type", "ssl.keystore.location", "ssl.keystore.password", "ssl.key.password", "ssl.truststore.type",
    "ssl.truststore.location", "ssl.truststore.password", "ssl.keystore.certificate.chain", "ssl.keystore.key",
    "ssl.truststore.certificates"})

# Broker key -> the topic key it is the default of (first synonyms only, as Kafka's DynamicLogConfig).
TOPIC_KEY_OF_BROKER_KEY: dict[str, str] = {t.broker_synonym: t.name for t in TOPIC_KEYS.values() if t.broker_synonym}


def broker_synonyms(name: str) -> list[str]:
    """The broker keys that set the same value as `name`, highest precedence first (Kafka's
    DynamicBrokerConfig.brokerConfigSynonyms), e.g. log.retention.hours -> [ms, minutes, hours]."""
    if name == "log.flush.interval.ms":  # the scheduler interval is its fallback, not the other way round
        return [name, "log.flush.scheduler.interval.ms"]
    for topic_key in (TOPIC_KEYS["segment.ms"], TOPIC_KEYS["segment.jitter.ms"], TOPIC_KEYS["retention.ms"]):
        names = [s for s, _ in topic_key.synonyms]
        if name in names:
            return names
    base = listener_base_name(name)
    if base is not None:
        return [name, base]
    return [name]


def listener_base_name(name: str) -> str | None:
    """`listener.name.<listener>.<key>` -> `<key>` (a per-listener override); SASL mechanism-scoped keys
    (`listener.name.<l>.<mechanism>.sasl.jaas.config`) map to the mechanism-free key."""
    if not name.startswith("listener.name."):
        return None
    rest = name[len("listener.name."):]
    _, dot, base = rest.partition(".")
    if not dot or not base:
        return None
    for mechanism_key in _LISTENER_MECHANISM_KEYS:
        if base.endswith("." + mechanism_key):
            return mechanism_key
    return base


_LISTENER_MECHANISM_KEYS = ("sasl.jaas.config", "sasl.login.callback.handler.class", "sasl.login.class",
                            "sasl.server.callback.handler.class", "connections.max.reauth.ms")

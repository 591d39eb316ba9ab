"""confluent-kafka (librdkafka) adapter: Producer, Consumer and AdminClient in-process.

librdkafka reports errors under its own names (MSG_SIZE_TOO_LARGE); ``kafka_error_name`` maps
them to Kafka's (MESSAGE_TOO_LARGE) so scenarios check one vocabulary. This adapter is also the
harness's neutral setup client.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterable, Sequence
from typing import Any

from compat.clients.base import ClientAdapter, ConsumerHandle, Offsets, ProducerHandle, TransactionalProducerHandle
from compat.model import (
    ClientSecurity,
    ClusterView,
    GroupDescription,
    Message,
    NotSupported,
    ProduceFailed,
    ProducerFenced,
    Record,
)
from storage.values import TopicPartition

_LIBRDKAFKA_TO_KAFKA = {
    "MSG_SIZE_TOO_LARGE": "MESSAGE_TOO_LARGE",
    "UNKNOWN_TOPIC_OR_PART": "UNKNOWN_TOPIC_OR_PARTITION",
    "NOT_LEADER_FOR_PARTITION": "NOT_LEADER_OR_FOLLOWER",
    "INVALID_MSG_SIZE": "INVALID_RECORD",
    "_MSG_TIMED_OUT": "REQUEST_TIMED_OUT",
    "_UNKNOWN_TOPIC": "UNKNOWN_TOPIC_OR_PARTITION",
}

_GROUP_STATES = {
    "STABLE": "Stable", "EMPTY": "Empty", "DEAD": "Dead",
    "PREPARING_REBALANCE": "PreparingRebalance", "COMPLETING_REBALANCE": "CompletingRebalance",
}


def kafka_error_name(err: Any) -> str:
    name = err.name()
    return _LIBRDKAFKA_TO_KAFKA.get(name, name)


def _raise_on(err: Any) -> None:
    if err is not None:
        from confluent_kafka import KafkaException
        raise KafkaException(err)


class ConfluentConsumer(ConsumerHandle):
    def __init__(self, conf: dict[str, Any], subscribe: Sequence[str], assign: Sequence[TopicPartition]) -> None:
        from confluent_kafka import Consumer
        from confluent_kafka import TopicPartition as CTP
        self._c = Consumer(conf)
        if subscribe:
            self._c.subscribe(list(subscribe))
        if assign:
            self._c.assign([CTP(t, p) for t, p in assign])

    def poll(self, max_records: int, timeout_s: float) -> list[Message]:
        out: list[Message] = []
        for m in self._c.consume(max(1, max_records), timeout_s):
            err = m.error()
            if err is not None:
                if err.name() == "_PARTITION_EOF":
                    continue
                _raise_on(err)
            _, ts = m.timestamp()
            out.append(Message(m.topic(), m.partition(), m.offset(), m.key(), m.value(),
                               tuple((k, v if v is not None else b"") for k, v in (m.headers() or [])), ts))
        return out

    def assignment(self) -> set[TopicPartition]:
        return {TopicPartition(tp.topic, tp.partition) for tp in self._c.assignment()}

    def commit(self, offsets: dict[TopicPartition, tuple[int, str]]) -> None:
        from confluent_kafka import TopicPartition as CTP
        result = self._c.commit(offsets=[CTP(t, p, o, metadata=md) for (t, p), (o, md) in offsets.items()],
                                asynchronous=False)
        for tp in result or []:
            _raise_on(tp.error)

    def committed(self, tps: Sequence[TopicPartition]) -> dict[TopicPartition, tuple[int, str] | None]:
        from confluent_kafka import TopicPartition as CTP
        out: dict[TopicPartition, tuple[int, str] | None] = {}
        for tp in self._c.committed([CTP(t, p) for t, p in tps], timeout=15):
            _raise_on(tp.error)
            out[TopicPartition(tp.topic, tp.partition)] = (
                (tp.offset, tp.metadata or "") if tp.offset >= 0 else None)
        return out

    def seek(self, tp: TopicPartition, offset: int) -> None:
        from confluent_kafka import KafkaException
        from confluent_kafka import TopicPartition as CTP
        deadline = time.monotonic() + 10
        # librdkafka refuses a seek until the partition's fetcher has started; poll to start it.
        while True:
            try:
                self._c.seek(CTP(tp.topic, tp.partition, offset))
                return
            except KafkaException:
                if time.monotonic() > deadline:
                    raise
                self._c.pause([CTP(tp.topic, tp.partition)])
                self._c.consume(1, 0.1)
                self._c.resume([CTP(tp.topic, tp.partition)])

    def pause(self, tps: Iterable[TopicPartition]) -> None:
        from confluent_kafka import TopicPartition as CTP
        self._c.pause([CTP(t, p) for t, p in tps])

    def resume(self, tps: Iterable[TopicPartition]) -> None:
        from confluent_kafka import TopicPartition as CTP
        self._c.resume([CTP(t, p) for t, p in tps])

    def group_metadata(self) -> Any:
        return self._c.consumer_group_metadata()

    def close(self) -> None:
        self._c.close()


class ConfluentShareConsumer(ConsumerHandle):
    """confluent-kafka's ShareConsumer (2.15+, KIP-932), implicit acknowledgement: the records of a poll are
    accepted by the next poll or the close."""

    def __init__(self, conf: dict[str, Any], subscribe: Sequence[str]) -> None:
        from confluent_kafka import ShareConsumer
        self._c = ShareConsumer(conf)
        self._c.subscribe(list(subscribe))

    def poll(self, max_records: int, timeout_s: float) -> list[Message]:
        out: list[Message] = []
        for m in self._c.poll(timeout_s):
            _raise_on(m.error())
            _, ts = m.timestamp()
            out.append(Message(m.topic(), m.partition(), m.offset(), m.key(), m.value(),
                               tuple((k, v if v is not None else b"") for k, v in (m.headers() or [])), ts))
        return out

    def close(self) -> None:
        self._c.close()


class ConfluentProducer(ProducerHandle):
    def __init__(self, conf: dict[str, Any], timeout_s: float) -> None:
        from confluent_kafka import Producer
        self._p = Producer(conf)
        self._timeout = timeout_s

    def send(self, topic: str, records: Sequence[Record]) -> list[tuple[int, int]]:
        results: list[Any] = [None] * len(records)

        def report(i: int) -> Any:
            def cb(err: Any, msg: Any) -> None:
                results[i] = (err, msg)
            return cb

        for i, r in enumerate(records):
            kwargs: dict[str, Any] = {"value": r.value, "key": r.key, "on_delivery": report(i)}
            if r.headers:
                kwargs["headers"] = list(r.headers)
            if r.partition is not None:
                kwargs["partition"] = r.partition
            if r.timestamp_ms is not None:
                kwargs["timestamp"] = r.timestamp_ms
            self._p.produce(topic, **kwargs)
            self._p.poll(0)
        remaining = self._p.flush(self._timeout + 5)
        if remaining:
            raise TimeoutError(f"{remaining} records undelivered after {self._timeout}s")
        out: list[tuple[int, int]] = []
        for err, msg in results:
            if err is not None:
                raise ProduceFailed(kafka_error_name(err), err.str())
            offset = msg.offset()
            out.append((msg.partition(), offset if offset is not None and offset >= 0 else -1))
        return out

    def close(self) -> None:
        self._p.flush(5)


# librdkafka's fatal _FENCED, and the broker's errors it reports for a fenced producer.
_FENCED = {"_FENCED", "PRODUCER_FENCED", "INVALID_PRODUCER_EPOCH"}


class ConfluentTransactionalProducer(ConfluentProducer, TransactionalProducerHandle):
    def __init__(self, conf: dict[str, Any], timeout_s: float) -> None:
        super().__init__(conf, timeout_s)
        self._fenced(self._p.init_transactions, timeout_s)

    def _fenced(self, fn: Any, *args: Any) -> Any:
        from confluent_kafka import KafkaException
        try:
            return fn(*args)
        except KafkaException as e:
            err = e.args[0] if e.args else None
            if err is not None and hasattr(err, "name") and err.name() in _FENCED:
                raise ProducerFenced(f"{err.name()}: {err.str()}") from e
            raise

    def send(self, topic: str, records: Sequence[Record]) -> list[tuple[int, int]]:
        try:
            return self._fenced(super().send, topic, records)
        except ProduceFailed as e:
            if e.error in _FENCED:
                raise ProducerFenced(str(e)) from e
            raise

    def begin(self) -> None:
        self._fenced(self._p.begin_transaction)

    def send_offsets(self, offsets: dict[TopicPartition, int], group_id: str,
                     consumer: ConsumerHandle | None = None) -> None:
        from confluent_kafka import TopicPartition as CTP
        if not isinstance(consumer, ConfluentConsumer):
            raise NotSupported("librdkafka takes the group metadata from a consumer of the group")
        metadata = consumer.group_metadata()
        self._fenced(self._p.send_offsets_to_transaction, [CTP(t, p, o) for (t, p), o in offsets.items()],
                     metadata, self._timeout)

    def commit(self) -> None:
        self._fenced(self._p.commit_transaction, self._timeout)

    def abort(self) -> None:
        self._fenced(self._p.abort_transaction, self._timeout)

    def close(self) -> None:
        self._p.flush(0)


class ConfluentAdapter(ClientAdapter):
    name = "confluent-kafka"

    def __init__(self, bootstrap: str, timeout_s: float = 15.0, security: ClientSecurity | None = None) -> None:
        super().__init__(bootstrap, timeout_s, security)
        self._admin: Any = None

    @classmethod
    def unavailable_reason(cls) -> str | None:
        try:
            import confluent_kafka  # noqa: F401
        except ImportError as e:
            return f"confluent-kafka not installed ({e})"
        return None

    def _security(self) -> dict[str, str]:
        return self.security.librdkafka() if self.security is not None else {}

    @property
    def admin(self) -> Any:
        if self._admin is None:
            from confluent_kafka.admin import AdminClient
            self._admin = AdminClient({"bootstrap.servers": self.bootstrap, "allow.auto.create.topics": False,
                                       **self._security()})
        return self._admin

    def _wait(self, future: Any) -> Any:
        import concurrent.futures
        try:
            return future.result(self.timeout_s + 1)
        except concurrent.futures.TimeoutError:
            raise TimeoutError(f"no admin response within {self.timeout_s}s") from None

    def cluster(self, topics: Sequence[str] | None = None) -> ClusterView:
        view = ClusterView(topic_errors={})
        if topics:
            mds = [self.admin.list_topics(topic=t, timeout=self.timeout_s) for t in topics]
        else:
            mds = [self.admin.list_topics(timeout=self.timeout_s)]
        for md in mds:
            view.cluster_id = md.cluster_id
            view.controller_id = md.controller_id
            view.brokers = {b.id: (b.host, b.port) for b in md.brokers.values()}
            for name, t in md.topics.items():
                if t.error is not None:
                    view.topic_errors[name] = 3 if t.error.name() == "_UNKNOWN_TOPIC" else t.error.code()  # type: ignore[index]
                if t.error is not None and t.error.name() in ("UNKNOWN_TOPIC_OR_PART", "_UNKNOWN_TOPIC"):
                    continue
                view.topics[name] = {p.id: p.leader for p in t.partitions.values()}
        return view

    def producer(self, *, acks: int = -1, compression: str = "none", idempotent: bool = False,
                 max_request_size: int | None = None, timeout_s: float | None = None) -> ProducerHandle:
        timeout = timeout_s or self.timeout_s
        conf: dict[str, Any] = {
            **self._security(), "bootstrap.servers": self.bootstrap, "acks": acks, "compression.type": compression,
            "enable.idempotence": idempotent, "linger.ms": 5, "message.timeout.ms": int(timeout * 1000),
        }
        if max_request_size:
            conf["message.max.bytes"] = max_request_size
        return ConfluentProducer(conf, timeout)

    def transactional_producer(self, transactional_id: str, *, timeout_s: float | None = None
                               ) -> TransactionalProducerHandle:
        timeout = timeout_s or self.timeout_s
        conf: dict[str, Any] = {
            **self._security(), "bootstrap.servers": self.bootstrap, "transactional.id": transactional_id,
            "linger.ms": 5,
            "message.timeout.ms": int(timeout * 1000),
        }
        return ConfluentTransactionalProducer(conf, timeout)

    def consumer(self, *, group_id: str | None = None, subscribe: Sequence[str] = (),
                 assign: Sequence[TopicPartition] = (), group_instance_id: str | None = None,
                 auto_offset_reset: str = "earliest", allow_auto_create_topics: bool = False,
                 isolation_level: str | None = None, group_protocol: str = "classic") -> ConsumerHandle:
        conf: dict[str, Any] = {
            **self._security(), "bootstrap.servers": self.bootstrap,
            # librdkafka wants a group id even for manual assignment; a private one is never joined.
            "group.id": group_id or f"compat-unused-{uuid.uuid4().hex}",
            "enable.auto.commit": False, "auto.offset.reset": auto_offset_reset,
            "allow.auto.create.topics": allow_auto_create_topics,
            "session.timeout.ms": 10000, "heartbeat.interval.ms": 500,
            "topic.metadata.refresh.interval.ms": 1000,
        }
        if isolation_level is not None:
            conf["isolation.level"] = isolation_level
        if group_instance_id:
            conf["group.instance.id"] = group_instance_id
            conf["session.timeout.ms"] = 45000
        if group_protocol != "classic":
            # KIP-848: the broker owns session and heartbeat timing, librdkafka refuses them client-side.
            conf["group.protocol"] = group_protocol
            del conf["session.timeout.ms"], conf["heartbeat.interval.ms"]
        return ConfluentConsumer(conf, subscribe, assign)

    def share_consumer(self, *, group_id: str, subscribe: Sequence[str]) -> ConsumerHandle:
        import confluent_kafka
        if not hasattr(confluent_kafka, "ShareConsumer"):
            raise NotSupported(f"confluent-kafka {confluent_kafka.version()[0]} has no ShareConsumer (2.15+)")
        return ConfluentShareConsumer({**self._security(), "bootstrap.servers": self.bootstrap,
                                       "group.id": group_id}, subscribe)

    def list_offsets(self, tps: Sequence[TopicPartition], spec: str | int) -> Offsets:
        from confluent_kafka import TopicPartition as CTP
        from confluent_kafka.admin import OffsetSpec
        if spec == "earliest":
            ospec = OffsetSpec.earliest()
        elif spec == "latest":
            ospec = OffsetSpec.latest()
        else:
            ospec = OffsetSpec.for_timestamp(int(spec))
        futures = self.admin.list_offsets({CTP(t, p): ospec for t, p in tps}, request_timeout=self.timeout_s)
        return {TopicPartition(tp.topic, tp.partition): max(self._wait(f).offset, -1) for tp, f in futures.items()}

    def create_topic(self, name: str, partitions: int, replication_factor: int = 1,
                     configs: dict[str, str] | None = None) -> None:
        from confluent_kafka.admin import NewTopic
        fs = self.admin.create_topics([NewTopic(name, partitions, replication_factor, config=configs or {})],
                                      request_timeout=self.timeout_s)
        for f in fs.values():
            self._wait(f)

    def delete_topic(self, name: str) -> None:
        for f in self.admin.delete_topics([name], request_timeout=self.timeout_s).values():
            self._wait(f)

    def create_partitions(self, name: str, total: int) -> None:
        from confluent_kafka.admin import NewPartitions
        for f in self.admin.create_partitions([NewPartitions(name, total)],
                                              request_timeout=self.timeout_s).values():
            self._wait(f)

    def describe_configs(self, resource_type: str, name: str) -> dict[str, str]:
        from confluent_kafka.admin import ConfigResource
        res = ConfigResource(resource_type.upper(), name)
        out: dict[str, str] = {}
        for f in self.admin.describe_configs([res], request_timeout=self.timeout_s).values():
            for key, entry in self._wait(f).items():
                if entry.value is not None:
                    out[key] = entry.value
        return out

    def alter_topic_config(self, name: str, configs: dict[str, str]) -> None:
        from confluent_kafka.admin import AlterConfigOpType, ConfigEntry, ConfigResource
        entries = [ConfigEntry(k, v, incremental_operation=AlterConfigOpType.SET) for k, v in configs.items()]
        res = ConfigResource("TOPIC", name, incremental_configs=entries)
        for f in self.admin.incremental_alter_configs([res], request_timeout=self.timeout_s).values():
            self._wait(f)

    def describe_cluster(self) -> ClusterView:
        d = self._wait(self.admin.describe_cluster(request_timeout=self.timeout_s))
        return ClusterView(brokers={n.id: (n.host, n.port) for n in d.nodes},
                           controller_id=d.controller.id if d.controller is not None else None,
                           cluster_id=d.cluster_id)

    def delete_records(self, offsets: Offsets) -> Offsets:
        from confluent_kafka import TopicPartition as CTP
        fs = self.admin.delete_records([CTP(t, p, o) for (t, p), o in offsets.items()],
                                       request_timeout=self.timeout_s)
        return {TopicPartition(tp.topic, tp.partition): self._wait(f).low_watermark for tp, f in fs.items()}

    def list_groups(self) -> set[str]:
        result = self._wait(self.admin.list_consumer_groups(request_timeout=self.timeout_s))
        if result.errors:
            raise RuntimeError(f"ListGroups errors: {result.errors[0]}")
        return {g.group_id for g in result.valid}

    def describe_group(self, group_id: str) -> GroupDescription:
        fs = self.admin.describe_consumer_groups([group_id], request_timeout=self.timeout_s)
        d = self._wait(fs[group_id])
        state = _GROUP_STATES.get(d.state.name, d.state.name)
        return GroupDescription(
            group_id, state, "" if d.is_simple_consumer_group else "consumer",
            tuple(m.member_id for m in d.members), tuple(m.group_instance_id for m in d.members))

    def delete_group(self, group_id: str) -> None:
        for f in self.admin.delete_consumer_groups([group_id], request_timeout=self.timeout_s).values():
            self._wait(f)

    def api_versions(self) -> dict[int, tuple[int, int]]:
        raise NotSupported("librdkafka negotiates ApiVersions internally and does not expose the result")

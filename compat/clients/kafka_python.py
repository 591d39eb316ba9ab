"""kafka-python adapter: KafkaProducer, KafkaConsumer and KafkaAdminClient in-process.

kafka-python names some errors its own way (MESSAGE_SIZE_TOO_LARGE); errors are mapped back to
Kafka's names by error code. Cluster metadata comes from the admin client's Metadata request
(allow_auto_topic_creation=false), a private coroutine of kafka-python 3.0 that pyproject pins.
"""

from __future__ import annotations

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

_KAFKA_NAMES = {3: "UNKNOWN_TOPIC_OR_PARTITION", 6: "NOT_LEADER_OR_FOLLOWER", 7: "REQUEST_TIMED_OUT",
                10: "MESSAGE_TOO_LARGE", 18: "RECORD_LIST_TOO_LARGE"}


def kafka_error_name(exc: BaseException) -> str:
    errno = getattr(exc, "errno", None)
    if isinstance(errno, int) and errno in _KAFKA_NAMES:
        return _KAFKA_NAMES[errno]
    return str(getattr(exc, "message", type(exc).__name__))


def _ktp(tp: TopicPartition) -> Any:
    from kafka import TopicPartition as KTP
    return KTP(tp.topic, tp.partition)


class KafkaPythonConsumer(ConsumerHandle):
    def __init__(self, conf: dict[str, Any], subscribe: Sequence[str], assign: Sequence[TopicPartition]) -> None:
        from kafka import KafkaConsumer
        self._c = KafkaConsumer(**conf)
        if subscribe:
            self._c.subscribe(list(subscribe))
        if assign:
            self._c.assign([_ktp(tp) for tp in assign])

    def poll(self, max_records: int, timeout_s: float) -> list[Message]:
        batches = self._c.poll(timeout_ms=int(timeout_s * 1000), max_records=max(1, max_records))
        out = [Message(r.topic, r.partition, r.offset, r.key, r.value,
                       tuple((k, v if v is not None else b"") for k, v in (r.headers or [])), r.timestamp)
               for records in batches.values() for r in records]
        out.sort(key=lambda m: (m.topic, m.partition, m.offset))
        return out

    def assignment(self) -> set[TopicPartition]:
        return {TopicPartition(tp.topic, tp.partition) for tp in self._c.assignment()}

    def commit(self, offsets: dict[TopicPartition, tuple[int, str]]) -> None:
        from kafka.structs import OffsetAndMetadata
        self._c.commit({_ktp(tp): OffsetAndMetadata(o, md, -1) for tp, (o, md) in offsets.items()})

    def committed(self, tps: Sequence[TopicPartition]) -> dict[TopicPartition, tuple[int, str] | None]:
        out: dict[TopicPartition, tuple[int, str] | None] = {}
        for tp in tps:
            c = self._c.committed(_ktp(tp), metadata=True)
            out[tp] = None if c is None else (c.offset, c.metadata or "")
        return out

    def seek(self, tp: TopicPartition, offset: int) -> None:
        self._c.seek(_ktp(tp), offset)

    def pause(self, tps: Iterable[TopicPartition]) -> None:
        self._c.pause(*[_ktp(tp) for tp in tps])

    def resume(self, tps: Iterable[TopicPartition]) -> None:
        self._c.resume(*[_ktp(tp) for tp in tps])

    def group_metadata(self) -> Any:
        return self._c.group_metadata()

    def close(self) -> None:
        self._c.close()


class KafkaPythonProducer(ProducerHandle):
    def __init__(self, conf: dict[str, Any], timeout_s: float) -> None:
        from kafka import KafkaProducer
        from kafka.errors import KafkaTimeoutError
        try:
            self._p = KafkaProducer(**conf)
        except KafkaTimeoutError as e:
            raise TimeoutError(str(e)) from e
        self._timeout = timeout_s

    def send(self, topic: str, records: Sequence[Record]) -> list[tuple[int, int]]:
        from kafka.errors import KafkaTimeoutError
        try:
            futures = [self._p.send(topic, value=r.value, key=r.key, headers=list(r.headers) or None,
                                    partition=r.partition, timestamp_ms=r.timestamp_ms) for r in records]
            self._p.flush(self._timeout + 2)
            out = []
            for f in futures:
                try:
                    md = f.get(self._timeout)
                except KafkaTimeoutError:
                    raise
                except Exception as e:
                    if hasattr(e, "errno"):
                        raise ProduceFailed(kafka_error_name(e), str(e)) from e
                    raise
                out.append((md.partition, md.offset if md.offset is not None and md.offset >= 0 else -1))
            return out
        except KafkaTimeoutError as e:
            raise TimeoutError(str(e)) from e

    def close(self) -> None:
        self._p.close(timeout=5)


def fenced_error(exc: BaseException) -> BaseException | None:
    """The client's fenced-producer error in exc's chain (causes included), if any: kafka-python's and aiokafka's
    ProducerFenced(Error) and InvalidProducerEpoch(Error) carry Kafka's error codes 90 and 47."""
    seen: BaseException | None = exc
    while seen is not None:
        if getattr(seen, "errno", None) in (47, 90) or type(seen).__name__.startswith("ProducerFenced"):
            return seen
        seen = seen.__cause__ or seen.__context__
    return None


def fenced_call(fn: Any, *args: Any) -> Any:
    """fn(*args), with the client's fenced-producer error raised as ProducerFenced."""
    try:
        return fn(*args)
    except Exception as e:
        fenced = fenced_error(e)
        if fenced is not None:
            raise ProducerFenced(f"{type(fenced).__name__}: {fenced}") from e
        raise


class KafkaPythonTransactionalProducer(KafkaPythonProducer, TransactionalProducerHandle):
    def __init__(self, conf: dict[str, Any], timeout_s: float) -> None:
        super().__init__(conf, timeout_s)
        fenced_call(self._p.init_transactions)

    def send(self, topic: str, records: Sequence[Record]) -> list[tuple[int, int]]:
        return fenced_call(super().send, topic, records)

    def begin(self) -> None:
        fenced_call(self._p.begin_transaction)

    def send_offsets(self, offsets: dict[TopicPartition, int], group_id: str,
                     consumer: ConsumerHandle | None = None) -> None:
        from kafka.structs import OffsetAndMetadata
        # The member's metadata (KIP-447 fencing of stale members) when it is ours, else the bare group id.
        metadata = consumer.group_metadata() if isinstance(consumer, KafkaPythonConsumer) else group_id
        fenced_call(self._p.send_offsets_to_transaction,
                     {_ktp(tp): OffsetAndMetadata(o, "", -1) for tp, o in offsets.items()}, metadata)

    def commit(self) -> None:
        fenced_call(self._p.commit_transaction)

    def abort(self) -> None:
        fenced_call(self._p.abort_transaction)

    def close(self) -> None:
        self._p.close(timeout=1)


class KafkaPythonAdapter(ClientAdapter):
    name = "kafka-python"

    def __init__(self, bootstrap: str, timeout_s: float = 15.0, security: ClientSecurity | None = None) -> None:
        super().__init__(bootstrap, timeout_s, security)
        self._admin: Any = None
        self._ms = int(timeout_s * 1000)

    @classmethod
    def unavailable_reason(cls) -> str | None:
        try:
            import kafka  # noqa: F401
        except ImportError as e:
            return f"kafka-python not installed ({e})"
        return None

    def _common(self) -> dict[str, Any]:
        return {"bootstrap_servers": self.bootstrap.split(","), "request_timeout_ms": self._ms + 5000,
                **(self.security.kafka_python() if self.security is not None else {})}

    @property
    def admin(self) -> Any:
        if self._admin is None:
            from kafka import KafkaAdminClient
            self._admin = KafkaAdminClient(**self._common())
        return self._admin

    def cluster(self, topics: Sequence[str] | None = None) -> ClusterView:
        md = self.admin._manager.run(self.admin._get_cluster_metadata, list(topics) if topics else None)
        view = ClusterView(brokers={b["node_id"]: (b["host"], b["port"]) for b in md["brokers"]},
                           controller_id=md.get("controller_id"), cluster_id=md.get("cluster_id"))
        view.topic_errors = {}
        for t in md["topics"]:
            if t["error_code"]:
                view.topic_errors[t["name"]] = t["error_code"]
            if t["error_code"] == 3:  # UNKNOWN_TOPIC_OR_PARTITION
                continue
            view.topics[t["name"]] = {p["partition_index"]: p["leader_id"] for p in t["partitions"]}
        return view

    def api_versions(self) -> dict[int, tuple[int, int]]:
        return {int(k): (int(v[0]), int(v[1])) for k, v in self.admin.api_versions().items()}

    def producer(self, *, acks: int = -1, compression: str = "none", idempotent: bool = False,
                 max_request_size: int | None = None, timeout_s: float | None = None) -> ProducerHandle:
        timeout = timeout_s or self.timeout_s
        conf: dict[str, Any] = {
            **self._common(), "acks": "all" if acks == -1 else acks,
            "compression_type": None if compression == "none" else compression,
            "enable_idempotence": idempotent, "linger_ms": 5, "max_block_ms": int(timeout * 1000),
            "request_timeout_ms": int(timeout * 1000), "delivery_timeout_ms": int(timeout * 1000) + 1000,
        }
        if max_request_size:
            conf["max_request_size"] = max_request_size
        return KafkaPythonProducer(conf, timeout)

    def transactional_producer(self, transactional_id: str, *, timeout_s: float | None = None
                               ) -> TransactionalProducerHandle:
        timeout = timeout_s or self.timeout_s
        conf: dict[str, Any] = {
            **self._common(), "transactional_id": transactional_id, "linger_ms": 5,
            "max_block_ms": int(timeout * 1000), "request_timeout_ms": int(timeout * 1000),
            "delivery_timeout_ms": int(timeout * 1000) + 1000,
        }
        return KafkaPythonTransactionalProducer(conf, timeout)

    def consumer(self, *, group_id: str | None = None, subscribe: Sequence[str] = (),
                 assign: Sequence[TopicPartition] = (), group_instance_id: str | None = None,
                 auto_offset_reset: str = "earliest", allow_auto_create_topics: bool = False,
                 isolation_level: str | None = None, group_protocol: str = "classic") -> ConsumerHandle:
        if group_protocol != "classic":
            raise NotSupported("kafka-python has no KIP-848 consumer protocol")
        conf: dict[str, Any] = {
            **self._common(), "group_id": group_id, "auto_offset_reset": auto_offset_reset,
            "enable_auto_commit": False, "allow_auto_create_topics": allow_auto_create_topics,
            "session_timeout_ms": 10000, "heartbeat_interval_ms": 500, "fetch_max_wait_ms": 100,
            "metadata_max_age_ms": 1000,
        }
        if isolation_level is not None:
            conf["isolation_level"] = isolation_level
        if group_instance_id:
            conf["group_instance_id"] = group_instance_id
            conf["session_timeout_ms"] = 45000
        return KafkaPythonConsumer(conf, subscribe, assign)

    def list_offsets(self, tps: Sequence[TopicPartition], spec: str | int) -> Offsets:
        from kafka import KafkaConsumer
        c = KafkaConsumer(**self._common())
        try:
            ktps = [_ktp(tp) for tp in tps]
            if spec == "earliest":
                got = c.beginning_offsets(ktps, timeout_ms=self._ms)
                return {TopicPartition(k.topic, k.partition): v for k, v in got.items()}
            if spec == "latest":
                got = c.end_offsets(ktps, timeout_ms=self._ms)
                return {TopicPartition(k.topic, k.partition): v for k, v in got.items()}
            times = c.offsets_for_times({k: int(spec) for k in ktps}, timeout_ms=self._ms)
            return {TopicPartition(k.topic, k.partition): (-1 if v is None else v.offset) for k, v in times.items()}
        finally:
            c.close()

    def create_topic(self, name: str, partitions: int, replication_factor: int = 1,
                     configs: dict[str, str] | None = None) -> None:
        from kafka.admin import NewTopic
        self.admin.create_topics([NewTopic(name, partitions, replication_factor, topic_configs=configs or {})],
                                 timeout_ms=self._ms)

    def delete_topic(self, name: str) -> None:
        self.admin.delete_topics([name], timeout_ms=self._ms)

    def create_partitions(self, name: str, total: int) -> None:
        self.admin.create_partitions({name: total}, timeout_ms=self._ms)

    def describe_configs(self, resource_type: str, name: str) -> dict[str, str]:
        from kafka.admin import ConfigResource
        got = self.admin.describe_configs([ConfigResource(resource_type.upper(), name)], config_filter="all")
        configs = got.get(resource_type.lower(), {}).get(name, {})
        return {k: c["value"] for k, c in configs.items() if c.get("value") is not None}

    def alter_topic_config(self, name: str, configs: dict[str, str]) -> None:
        from kafka.admin import ConfigResource
        result = self.admin.alter_configs([ConfigResource("TOPIC", name, configs)], incremental=True)
        for per_type in (result or {}).values():
            for err in per_type.values():
                if isinstance(err, type) and issubclass(err, Exception) and getattr(err, "errno", 0):
                    raise err()
                if isinstance(err, Exception):
                    raise err

    def describe_cluster(self) -> ClusterView:
        d = self.admin.describe_cluster()
        return ClusterView(brokers={b["broker_id"]: (b["host"], b["port"]) for b in d["brokers"]},
                           controller_id=d.get("controller_id"), cluster_id=d.get("cluster_id"))

    def delete_records(self, offsets: Offsets) -> Offsets:
        got = self.admin.delete_records({_ktp(tp): o for tp, o in offsets.items()}, timeout_ms=self._ms)
        out: Offsets = {}
        for k, v in got.items():
            low = v.get("low_watermark") if isinstance(v, dict) else getattr(v, "low_watermark", v)
            out[TopicPartition(k.topic, k.partition)] = int(low)
        return out

    def describe_log_dirs(self) -> dict[str, dict[TopicPartition, int]]:
        out: dict[str, dict[TopicPartition, int]] = {}
        for broker in self.admin.describe_log_dirs():
            for d in broker["log_dirs"]:
                sizes = out.setdefault(d["log_dir"], {})
                for t in d["topics"]:
                    for p in t["partitions"]:
                        sizes[TopicPartition(t["name"], p["partition_index"])] = p["partition_size"]
        return out

    def list_reassignments(self, tps: Sequence[TopicPartition] | None = None
                           ) -> dict[TopicPartition, tuple[list[int], list[int], list[int]]]:
        got = self.admin.list_partition_reassignments(None if tps is None else [_ktp(tp) for tp in tps])
        return {TopicPartition(k.topic, k.partition): (v["replicas"], v["adding_replicas"], v["removing_replicas"])
                for k, v in got.items()}

    def alter_reassignments(self, targets: dict[TopicPartition, list[int] | None]) -> dict[TopicPartition, str | None]:
        from protocol.errors import ErrorCode

        got = self.admin.alter_partition_reassignments({_ktp(tp): r for tp, r in targets.items()})
        return {TopicPartition(k.topic, k.partition): None if err is None else ErrorCode(err.errno).name
                for k, err in got.items()}

    def list_groups(self) -> set[str]:
        return {g["group_id"] for g in self.admin.list_groups()}

    def describe_group(self, group_id: str) -> GroupDescription:
        d = self.admin.describe_groups([group_id])[group_id]
        members = d.get("members") or []
        return GroupDescription(group_id, d.get("group_state", ""), d.get("protocol_type", ""),
                                tuple(m["member_id"] for m in members),
                                tuple(m.get("group_instance_id") for m in members))

    def delete_group(self, group_id: str) -> None:
        result = self.admin.delete_groups([group_id])
        err = dict(result).get(group_id) if isinstance(result, dict) else dict(result).get(group_id)
        if err is not None and getattr(err, "errno", 0):
            raise (err() if isinstance(err, type) else err)

    def close(self) -> None:
        if self._admin is not None:
            self._admin.close()

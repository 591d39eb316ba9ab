"""aiokafka adapter: AIOKafkaProducer, AIOKafkaConsumer and AIOKafkaAdminClient.

Each adapter owns a private event loop driven with run_until_complete from the scenario's
thread; every client of one scenario lives on that loop, so group members keep heartbeating
while any of them is polled. aiokafka's admin client returns raw responses: ``_raise_errors``
walks them and raises the first non-zero error_code, so a broker error is never mistaken for
success. aiokafka's ``committed()`` returns no metadata; committed metadata is read with the
admin's OffsetFetch instead.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine, Iterable, Sequence
from typing import Any, TypeVar

from compat.clients.base import ClientAdapter, ConsumerHandle, Offsets, ProducerHandle, TransactionalProducerHandle
from compat.clients.kafka_python import fenced_call, kafka_error_name
from compat.model import (
    ClientSecurity,
    ClusterView,
    GroupDescription,
    Message,
    NotSupported,
    ProduceFailed,
    Record,
)
from storage.values import TopicPartition

T = TypeVar("T")


def _raise_errors(obj: Any) -> None:
    """Raise the first non-zero error_code found anywhere in a response's to_object() form."""
    if isinstance(obj, dict):
        code = obj.get("error_code")
        if isinstance(code, int) and code != 0:
            from aiokafka.errors import for_code
            raise for_code(code)(str(obj.get("error_message") or obj.get("topic") or obj.get("name") or ""))
        for v in obj.values():
            _raise_errors(v)
    elif isinstance(obj, list | tuple):
        for v in obj:
            _raise_errors(v)


def _atp(tp: TopicPartition) -> Any:
    from aiokafka.structs import TopicPartition as ATP
    return ATP(tp.topic, tp.partition)


class AioConsumer(ConsumerHandle):
    def __init__(self, adapter: AiokafkaAdapter, conf: dict[str, Any], subscribe: Sequence[str],
                 assign: Sequence[TopicPartition]) -> None:
        from aiokafka import AIOKafkaConsumer
        self._a = adapter
        self._group_id = conf.get("group_id")

        async def start() -> Any:
            c = AIOKafkaConsumer(**conf)
            await c.start()
            if subscribe:
                c.subscribe(list(subscribe))
            if assign:
                c.assign([_atp(tp) for tp in assign])
            return c

        self._c = adapter.run(start())

    def poll(self, max_records: int, timeout_s: float) -> list[Message]:
        batches = self._a.run(self._c.getmany(timeout_ms=int(timeout_s * 1000), max_records=max(1, max_records)))
        out = [Message(r.topic, r.partition, r.offset, r.key, r.value,
                       tuple((k, v if v is not None else b"") for k, v in (r.headers or ())), r.timestamp)
               for records in batches.values() for r in records]
        out.sort(key=lambda m: (m.topic, m.partition, m.offset))
        return out

    def assignment(self) -> set[TopicPartition]:
        return {TopicPartition(tp.topic, tp.partition) for tp in self._c.assignment()}

    def commit(self, offsets: dict[TopicPartition, tuple[int, str]]) -> None:
        from aiokafka.structs import OffsetAndMetadata
        self._a.run(self._c.commit({_atp(tp): OffsetAndMetadata(o, md) for tp, (o, md) in offsets.items()}))

    def committed(self, tps: Sequence[TopicPartition]) -> dict[TopicPartition, tuple[int, str] | None]:
        if self._group_id is None:
            raise NotSupported("committed offsets need a group")
        admin = self._a.admin
        got = self._a.run(admin.list_consumer_group_offsets(self._group_id, partitions=[_atp(tp) for tp in tps]))
        out: dict[TopicPartition, tuple[int, str] | None] = {}
        for tp in tps:
            om = got.get(_atp(tp))
            out[tp] = None if om is None or om.offset < 0 else (om.offset, om.metadata or "")
        return out

    def _sync(self, fn: Any, *args: Any) -> None:
        # aiokafka's synchronous methods create asyncio objects, so they must run inside the loop.
        async def call() -> None:
            fn(*args)
        self._a.run(call())

    def seek(self, tp: TopicPartition, offset: int) -> None:
        self._sync(self._c.seek, _atp(tp), offset)

    def pause(self, tps: Iterable[TopicPartition]) -> None:
        self._sync(self._c.pause, *[_atp(tp) for tp in tps])

    def resume(self, tps: Iterable[TopicPartition]) -> None:
        self._sync(self._c.resume, *[_atp(tp) for tp in tps])

    def close(self) -> None:
        self._a.run(self._c.stop())


class AioProducer(ProducerHandle):
    def __init__(self, adapter: AiokafkaAdapter, conf: dict[str, Any], timeout_s: float) -> None:
        from aiokafka import AIOKafkaProducer
        self._a = adapter
        self._timeout = timeout_s

        async def start() -> Any:
            p = AIOKafkaProducer(**conf)
            await p.start()
            return p
        self._p = adapter.run(start(), timeout_s)

    def send(self, topic: str, records: Sequence[Record]) -> list[tuple[int, int]]:
        from aiokafka.errors import KafkaError, KafkaTimeoutError

        async def go() -> list[tuple[int, int]]:
            futures = [await self._p.send(topic, value=r.value, key=r.key, partition=r.partition,
                                          timestamp_ms=r.timestamp_ms, headers=list(r.headers) or None)
                       for r in records]
            out = []
            for f in futures:
                md = await f
                if md is None:  # acks=0: the broker answers nothing
                    out.append((-1, -1))
                    continue
                out.append((md.partition, md.offset if md.offset is not None and md.offset >= 0 else -1))
            return out

        try:
            return self._a.run(go(), self._timeout)
        except (TimeoutError, KafkaTimeoutError) as e:
            raise TimeoutError(str(e) or f"no delivery within {self._timeout}s") from e
        except KafkaError as e:
            raise ProduceFailed(kafka_error_name(e), str(e)) from e

    def close(self) -> None:
        self._a.run(self._p.stop())


class AioTransactionalProducer(AioProducer, TransactionalProducerHandle):
    """aiokafka initializes the transactional producer (InitProducerId) in start()."""

    def send(self, topic: str, records: Sequence[Record]) -> list[tuple[int, int]]:
        return fenced_call(super().send, topic, records)

    def begin(self) -> None:
        fenced_call(lambda: self._a.run(self._p.begin_transaction(), self._timeout))

    def send_offsets(self, offsets: dict[TopicPartition, int], group_id: str,
                     consumer: ConsumerHandle | None = None) -> None:
        # aiokafka takes the bare group id (no member metadata).
        fenced_call(lambda: self._a.run(self._p.send_offsets_to_transaction(
            {_atp(tp): o for tp, o in offsets.items()}, group_id), self._timeout))

    def commit(self) -> None:
        fenced_call(lambda: self._a.run(self._p.commit_transaction(), self._timeout))

    def abort(self) -> None:
        fenced_call(lambda: self._a.run(self._p.abort_transaction(), self._timeout))


class AiokafkaAdapter(ClientAdapter):
    name = "aiokafka"

    def __init__(self, bootstrap: str, timeout_s: float = 15.0, security: ClientSecurity | None = None) -> None:
        super().__init__(bootstrap, timeout_s, security)
        self._loop = asyncio.new_event_loop()
        self._admin: Any = None
        self._ms = int(timeout_s * 1000)

    @classmethod
    def unavailable_reason(cls) -> str | None:
        try:
            import aiokafka  # noqa: F401
        except ImportError as e:
            return f"aiokafka not installed ({e})"
        return None

    def run(self, coro: Coroutine[Any, Any, T], timeout_s: float | None = None) -> T:
        # aiokafka's synchronous calls (pause, seek) look up the thread's current loop.
        asyncio.set_event_loop(self._loop)
        return self._loop.run_until_complete(asyncio.wait_for(coro, (timeout_s or self.timeout_s) + 5))

    def _security(self) -> dict[str, Any]:
        """aiokafka's security arguments: kafka-python's names, with the CA as an ssl_context."""
        if self.security is None:
            return {}
        from aiokafka.helpers import create_ssl_context

        conf = self.security.kafka_python()
        ca = conf.pop("ssl_cafile", None)
        if ca is not None:
            conf["ssl_context"] = create_ssl_context(cafile=str(ca))
        return conf

    @property
    def admin(self) -> Any:
        if self._admin is None:
            from aiokafka.admin import AIOKafkaAdminClient

            async def start() -> Any:
                a = AIOKafkaAdminClient(bootstrap_servers=self.bootstrap, request_timeout_ms=self._ms,
                                        **self._security())
                await a.start()
                return a
            self._admin = self.run(start())
        return self._admin

    def cluster(self, topics: Sequence[str] | None = None) -> ClusterView:
        from aiokafka.protocol.metadata import MetadataRequest
        request = MetadataRequest(list(topics) if topics else None, allow_auto_topic_creation=False)
        md = self.run(self.admin._send_request(request)).to_object()
        view = ClusterView(brokers={b["node_id"]: (b["host"], b["port"]) for b in md["brokers"]},
                           controller_id=md.get("controller_id"), cluster_id=md.get("cluster_id"))
        view.topic_errors = {}
        for t in md["topics"]:
            if t["error_code"]:
                view.topic_errors[t["topic"]] = t["error_code"]
            if t["error_code"] == 3:  # UNKNOWN_TOPIC_OR_PARTITION
                continue
            view.topics[t["topic"]] = {p["partition"]: p["leader"] for p in t["partitions"]}
        return view

    def producer(self, *, acks: int = -1, compression: str = "none", idempotent: bool = False,
                 max_request_size: int | None = None, timeout_s: float | None = None) -> ProducerHandle:
        timeout = timeout_s or self.timeout_s
        conf: dict[str, Any] = {
            **self._security(), "bootstrap_servers": self.bootstrap, "acks": "all" if acks == -1 else acks,
            "compression_type": None if compression == "none" else compression,
            "enable_idempotence": idempotent, "linger_ms": 5, "request_timeout_ms": int(timeout * 1000),
        }
        if max_request_size:
            conf["max_request_size"] = max_request_size
        return AioProducer(self, conf, timeout)

    def transactional_producer(self, transactional_id: str, *, timeout_s: float | None = None
                               ) -> TransactionalProducerHandle:
        timeout = timeout_s or self.timeout_s
        conf: dict[str, Any] = {**self._security(), "bootstrap_servers": self.bootstrap,
                                "transactional_id": transactional_id,
                                "linger_ms": 5, "request_timeout_ms": int(timeout * 1000)}
        return AioTransactionalProducer(self, conf, timeout)

    def consumer(self, *, group_id: str | None = None, subscribe: Sequence[str] = (),
                 assign: Sequence[TopicPartition] = (), group_instance_id: str | None = None,
                 auto_offset_reset: str = "earliest", allow_auto_create_topics: bool = False,
                 isolation_level: str | None = None, group_protocol: str = "classic") -> ConsumerHandle:
        if group_protocol != "classic":
            raise NotSupported("aiokafka has no KIP-848 consumer protocol")
        conf: dict[str, Any] = {
            **self._security(), "bootstrap_servers": self.bootstrap, "group_id": group_id,
            "auto_offset_reset": auto_offset_reset,
            "enable_auto_commit": False, "session_timeout_ms": 10000, "heartbeat_interval_ms": 500,
            "fetch_max_wait_ms": 100, "metadata_max_age_ms": 1000, "request_timeout_ms": self._ms + 5000,
        }
        if isolation_level is not None:
            conf["isolation_level"] = isolation_level
        if group_instance_id:
            conf["group_instance_id"] = group_instance_id
            conf["session_timeout_ms"] = 45000
        return AioConsumer(self, conf, subscribe, assign)

    def list_offsets(self, tps: Sequence[TopicPartition], spec: str | int) -> Offsets:
        from aiokafka import AIOKafkaConsumer

        async def go() -> Offsets:
            c = AIOKafkaConsumer(bootstrap_servers=self.bootstrap, request_timeout_ms=self._ms, **self._security())
            await c.start()
            try:
                atps = [_atp(tp) for tp in tps]
                if spec == "earliest":
                    got: dict[Any, Any] = await c.beginning_offsets(atps)
                elif spec == "latest":
                    got = await c.end_offsets(atps)
                else:
                    times = await c.offsets_for_times({a: int(spec) for a in atps})
                    got = {a: (-1 if v is None else v.offset) for a, v in times.items()}
                return {TopicPartition(a.topic, a.partition): v for a, v in got.items()}
            finally:
                await c.stop()
        return self.run(go())

    def create_topic(self, name: str, partitions: int, replication_factor: int = 1,
                     configs: dict[str, str] | None = None) -> None:
        from aiokafka.admin import NewTopic
        resp = self.run(self.admin.create_topics([NewTopic(name, partitions, replication_factor,
                                                           topic_configs=configs or {})], timeout_ms=self._ms))
        _raise_errors(resp.to_object())

    def delete_topic(self, name: str) -> None:
        _raise_errors(self.run(self.admin.delete_topics([name], timeout_ms=self._ms)).to_object())

    def create_partitions(self, name: str, total: int) -> None:
        from aiokafka.admin import NewPartitions
        resp = self.run(self.admin.create_partitions({name: NewPartitions(total)}, timeout_ms=self._ms))
        _raise_errors(resp.to_object())

    def describe_configs(self, resource_type: str, name: str) -> dict[str, str]:
        from aiokafka.admin.config_resource import ConfigResource, ConfigResourceType
        res = ConfigResource(ConfigResourceType[resource_type.upper()], name)
        out: dict[str, str] = {}
        for resp in self.run(self.admin.describe_configs([res])):
            obj = resp.to_object()
            _raise_errors(obj)
            for r in obj["resources"]:
                for entry in r["config_entries"]:
                    if entry["config_value"] is not None:
                        out[entry["config_names"]] = entry["config_value"]
        return out

    def alter_topic_config(self, name: str, configs: dict[str, str]) -> None:
        from aiokafka.admin.config_resource import ConfigResource, ConfigResourceType
        res = ConfigResource(ConfigResourceType.TOPIC, name, configs=configs)
        for resp in self.run(self.admin.alter_configs([res])):
            _raise_errors(resp.to_object())

    def describe_cluster(self) -> ClusterView:
        d = self.run(self.admin.describe_cluster())
        return ClusterView(brokers={b["node_id"]: (b["host"], b["port"]) for b in d["brokers"]},
                           controller_id=d.get("controller_id"), cluster_id=d.get("cluster_id"))

    def delete_records(self, offsets: Offsets) -> Offsets:
        from aiokafka.admin import RecordsToDelete
        got = self.run(self.admin.delete_records({_atp(tp): RecordsToDelete(o) for tp, o in offsets.items()},
                                                 timeout_ms=self._ms))
        return {TopicPartition(k.topic, k.partition): int(v) for k, v in got.items()}

    def list_groups(self) -> set[str]:
        return {g[0] for g in self.run(self.admin.list_consumer_groups())}

    def describe_group(self, group_id: str) -> GroupDescription:
        for resp in self.run(self.admin.describe_consumer_groups([group_id])):
            obj = resp.to_object()
            _raise_errors(obj)
            for g in obj["groups"]:
                if g.get("group", g.get("group_id")) == group_id:
                    members = g.get("members") or []
                    return GroupDescription(group_id, g.get("state", g.get("group_state", "")),
                                            g.get("protocol_type", ""), tuple(m["member_id"] for m in members),
                                            tuple(m.get("group_instance_id") for m in members))
        raise LookupError(f"DescribeGroups returned nothing for {group_id}")

    def delete_group(self, group_id: str) -> None:
        raise NotSupported("aiokafka's admin client has no DeleteGroups")

    def close(self) -> None:
        try:
            if self._admin is not None:
                self.run(self._admin.close())
        finally:
            self._loop.close()

"""The admin requests a KRaft broker sends to the controller (Kafka's ForwardingManager and
AutoTopicCreationManager): CreateTopics (admin, auto-creation, internal topics),
DeleteTopics, CreatePartitions, topic config changes (IncrementalAlterConfigs), ElectLeaders, and
AlterPartitionReassignments / ListPartitionReassignments; dynamic broker configs (IncrementalAlterConfigs of
BROKER resources); and, sent on as the client sent them (`forward`), AlterClientQuotas,
AlterUserScramCredentials, CreateAcls and DeleteAcls, whose effects come back through the metadata log
(broker/kraft/security_sync.py).

Contract: each sends its request to the active controller (`KRaftBroker.channel`) and answers once our published
metadata shows the result (topics with leaders, topics gone, the new partitions, the configs, the elected
leader), within the request's timeout (REQUEST_TIMED_OUT after it); the controller's errors pass through as
they are. A controller not known or not reachable is tried again for `request.timeout.ms` (a quorum electing a new
active controller); then REQUEST_TIMED_OUT, except for the reassignment requests (None: their handlers answer
NOT_CONTROLLER).
The reassignments and forwarded requests are answered as the controller answers, without waiting for our
metadata (as Kafka's broker answers them).
Envelopes (KIP-590): while the server runs the handler of a client's FORWARDED_APIS request (`as_client`), every
request sent here goes to the controller in an EnvelopeRequest carrying the client's request header, its
principal (DefaultKafkaPrincipalBuilder's serialization) and its address, for the controller to authorize; the
inner response comes back out of the EnvelopeResponse. An Envelope the controller refuses is answered as an
unreachable controller. Auto-creation for a client's Metadata request goes in an Envelope as that client too
(Kafka's AutoTopicCreationManager); requests of our own (internal topics) go without one.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Mapping
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any

from broker.controller.admin_manager import NewTopic, TopicResult
from broker.controller.limits import MAX_RECORDS_PER_USER_OP
from broker.kraft.lifecycle import ControllerChannel, ControllerUnavailable
from protocol import ApiKey, request_class, response_class
from protocol.envelope import address_bytes, serialize_principal
from protocol.errors import ErrorCode

if TYPE_CHECKING:
    from broker.kraft.broker_server import KRaftBroker

log = logging.getLogger("broker.kraft")

# The client requests whose controller requests go in an Envelope with the client's principal (Kafka 3.9's
# KafkaApis.maybeForwardToController in KRaft mode), and the request being handled, which they are sent for.
FORWARDED_APIS = frozenset({
    ApiKey.CREATE_TOPICS, ApiKey.DELETE_TOPICS, ApiKey.CREATE_PARTITIONS, ApiKey.INCREMENTAL_ALTER_CONFIGS,
    ApiKey.ALTER_CONFIGS, ApiKey.ALTER_PARTITION_REASSIGNMENTS, ApiKey.LIST_PARTITION_REASSIGNMENTS,
    ApiKey.ELECT_LEADERS, ApiKey.ALTER_CLIENT_QUOTAS,
    ApiKey.ALTER_USER_SCRAM_CREDENTIALS, ApiKey.CREATE_ACLS, ApiKey.DELETE_ACLS, ApiKey.DESCRIBE_QUORUM,
})
_CLIENT: ContextVar[Any] = ContextVar("kraft_forwarded_client", default=None)


async def as_client(ctx: Any, handling: Awaitable[Any]) -> Any:
    """Run a handler of a FORWARDED_APIS request (the server wraps it): what it sends the controller meanwhile
    goes in an Envelope naming `ctx`'s principal and address. Tasks it starts inherit it (auto-creation)."""
    token = _CLIENT.set(ctx)
    try:
        return await handling
    finally:
        _CLIENT.reset(token)


async def send_to_controller(channel: ControllerChannel, build: Any, api_key: int) -> Any:
    """`build(version)` to the controller: in an Envelope for the client whose request is being handled (as
    Kafka's ForwardingManager), else as the broker's own request."""
    ctx = _CLIENT.get()
    wait_s = channel.timeout_s  # while the quorum elects a new active controller, as Kafka's forwarding waits
    if ctx is None:
        return await channel.send(build, api_key, wait_s=wait_s)
    principal_type, _, name = ctx.principal.partition(":")
    return await channel.send_enveloped(
        build, api_key, principal=serialize_principal(principal_type, name), client_address=address_bytes(
            ctx.client_host), client_id=ctx.client_id, correlation_id=ctx.correlation_id, wait_s=wait_s)


class KRaftElections:
    """ElectLeaders sent to the controller (what the ElectLeaders handler calls as `preferred_election`)."""

    def __init__(self, kraft: KRaftBroker) -> None:
        self.kraft = kraft

    async def elect_leaders(self, tps: list[Any], election_type: int) -> dict[Any, int | ErrorCode]:
        """Per partition: the leader to wait for in our metadata (the preferred replica), or an ErrorCode
        (NONE for an unclean election, whose leader only the controller knows)."""
        channel = self.kraft.channel
        assert channel is not None
        Req = request_class(ApiKey.ELECT_LEADERS)
        by_topic: dict[str, list[int]] = {}
        for tp in tps:
            by_topic.setdefault(tp.topic, []).append(tp.partition)

        def build(v: int) -> Any:
            fields: dict[str, Any] = dict(timeout_ms=30000, topic_partitions=[
                Req.TopicPartitions(topic=t, partitions=ps) for t, ps in by_topic.items()])
            if v >= 1:
                fields["election_type"] = election_type
            return Req[v](**fields)

        try:
            resp = await send_to_controller(channel, build, ApiKey.ELECT_LEADERS)
        except ControllerUnavailable:
            return dict.fromkeys(tps, ErrorCode.REQUEST_TIMED_OUT)
        cache = self.kraft.server.metadata_cache
        out: dict[Any, int | ErrorCode] = {}
        by_key = {(tp.topic, tp.partition): tp for tp in tps}
        for r in resp.replica_election_results:
            for p in r.partition_result:
                tp = by_key.get((r.topic, p.partition_id))
                if tp is None:
                    continue
                error = ErrorCode(p.error_code)
                pm = cache.partition(r.topic, p.partition_id)
                if error == ErrorCode.NONE and election_type == 0 and pm is not None and pm.replicas:
                    out[tp] = pm.replicas[0]
                else:
                    out[tp] = error
        return out


class KRaftAdmin:
    """The admin entry points a KRaft broker serves by asking the controller."""

    def __init__(self, kraft: KRaftBroker) -> None:
        self.kraft = kraft
        self._auto_creating: dict[str, asyncio.Task] = {}

    async def shutdown(self) -> None:
        for task in list(self._auto_creating.values()):
            task.cancel()
        await asyncio.gather(*self._auto_creating.values(), return_exceptions=True)

    def _topic_ready(self, name: str) -> bool:
        tm = self.kraft.server.metadata_cache.topics.get(name)
        return tm is not None and bool(tm.partitions) and all(p.leader >= 0 for p in tm.partitions.values())

    async def create_topics(self, topics: list[NewTopic], *, validate_only: bool, timeout_ms: int
                            ) -> dict[str, TopicResult]:
        channel = self.kraft.channel
        assert channel is not None
        Req = request_class(ApiKey.CREATE_TOPICS)

        def build(v: int) -> Any:
            T = Req.CreatableTopic
            return Req[v](timeout_ms=timeout_ms, validate_only=validate_only, topics=[T(
                name=t.name, num_partitions=t.num_partitions if not t.assignment else -1,
                replication_factor=t.replication_factor if not t.assignment else -1,
                assignments=[T.CreatableReplicaAssignment(partition_index=p, broker_ids=list(b))
                             for p, b in sorted(t.assignment.items())],
                configs=[T.CreatableTopicConfig(name=k, value=val) for k, val in t.configs.items()])
                for t in topics])

        try:
            resp = await send_to_controller(channel, build, ApiKey.CREATE_TOPICS)
        except ControllerUnavailable as e:
            return {t.name: TopicResult(ErrorCode.REQUEST_TIMED_OUT, f"controller not reachable: {e}") for t in topics}
        results: dict[str, TopicResult] = {}
        for r in resp.topics:
            results[r.name] = TopicResult(
                ErrorCode(r.error_code), r.error_message, getattr(r, "topic_id", None),
                getattr(r, "num_partitions", -1), getattr(r, "replication_factor", -1),
                {t.name: t.configs for t in topics}.get(r.name, {}))
        created = [n for n, r in results.items() if r.error == ErrorCode.NONE]
        if created and not validate_only:
            deadline = time.monotonic() + max(timeout_ms, 0) / 1000
            while not all(self._topic_ready(n) for n in created):
                if time.monotonic() >= deadline:
                    for n in created:
                        if not self._topic_ready(n):
                            results[n] = TopicResult(ErrorCode.REQUEST_TIMED_OUT,
                                                     "Topic creation did not complete in time")
                    break
                self.kraft.metadata_changed.clear()
                try:
                    async with asyncio.timeout(min(0.1, deadline - time.monotonic())):
                        await self.kraft.metadata_changed.wait()
                except TimeoutError:
                    pass
        for n in created:
            tm = self.kraft.server.metadata_cache.topics.get(n)
            if tm is not None and results[n].error == ErrorCode.NONE:
                results[n].topic_id = tm.topic_id
                results[n].num_partitions = len(tm.partitions)
                results[n].replication_factor = len(next(iter(tm.partitions.values())).replicas)
        return results

    async def _wait(self, ready: Any, timeout_ms: int) -> bool:
        """Until `ready()` holds in our published metadata, or `timeout_ms` passes."""
        deadline = time.monotonic() + max(timeout_ms, 0) / 1000
        while not ready():
            if time.monotonic() >= deadline:
                return False
            self.kraft.metadata_changed.clear()
            try:
                async with asyncio.timeout(min(0.1, max(deadline - time.monotonic(), 0.001))):
                    await self.kraft.metadata_changed.wait()
            except TimeoutError:
                pass
        return True

    async def _send(self, build: Any, api_key: int) -> Any:
        channel = self.kraft.channel
        assert channel is not None
        return await send_to_controller(channel, build, api_key)

    async def delete_topics(self, names: list[str], timeout_ms: int) -> dict[str, tuple[ErrorCode, str | None]]:
        """DeleteTopics to the controller; answered once the topics are gone from our metadata."""
        Req = request_class(ApiKey.DELETE_TOPICS)

        def build(v: int) -> Any:
            if v >= 6:
                return Req[v](timeout_ms=timeout_ms, topics=[Req.DeleteTopicState(name=n) for n in names])
            return Req[v](timeout_ms=timeout_ms, topic_names=list(names))

        try:
            resp = await self._send(build, ApiKey.DELETE_TOPICS)
        except ControllerUnavailable as e:
            return {n: (ErrorCode.REQUEST_TIMED_OUT, f"controller not reachable: {e}") for n in names}
        results = {r.name: (ErrorCode(r.error_code), getattr(r, "error_message", None)) for r in resp.responses}
        deleted = [n for n, (e, _) in results.items() if e == ErrorCode.NONE]
        cache = self.kraft.server.metadata_cache
        if deleted and not await self._wait(lambda: not any(n in cache.topics for n in deleted), timeout_ms):
            for n in deleted:
                if n in cache.topics:
                    results[n] = (ErrorCode.REQUEST_TIMED_OUT, None)
        return results

    async def create_partitions(self, topic: str, count: int, assignment: list[list[int]] | None,
                                validate_only: bool, timeout_ms: int, max_new: int = MAX_RECORDS_PER_USER_OP
                                ) -> tuple[ErrorCode, str | None]:
        """CreatePartitions to the controller; answered once the new partitions have leaders here. The request's
        bound on new partitions (`max_new`, broker.controller.limits) is checked here too, against the partitions
        this broker's metadata shows, since each topic goes on to the controller in a request of its own."""
        known = self.kraft.server.metadata_cache.topics.get(topic)
        if known is not None and count - len(known.partitions) > max_new:
            return ErrorCode.UNKNOWN_SERVER_ERROR, None
        Req = request_class(ApiKey.CREATE_PARTITIONS)
        T = Req.CreatePartitionsTopic

        def build(v: int) -> Any:
            assignments = None if assignment is None else [
                T.CreatePartitionsAssignment(broker_ids=list(a)) for a in assignment]
            return Req[v](topics=[T(name=topic, count=count, assignments=assignments)], timeout_ms=timeout_ms,
                          validate_only=validate_only)

        early = await self._send_one(build, ApiKey.CREATE_PARTITIONS, lambda resp: resp.results[0], validate_only)
        if early is not None:
            return early
        cache = self.kraft.server.metadata_cache

        def ready() -> bool:
            tm = cache.topics.get(topic)
            return tm is not None and len(tm.partitions) >= count and all(p.leader >= 0 for p in tm.partitions.values())
        if not await self._wait(ready, timeout_ms):
            return ErrorCode.REQUEST_TIMED_OUT, None
        return ErrorCode.NONE, None

    async def alter_topic_configs(self, topic: str, configs: dict[str, str], validate_only: bool
                                  ) -> tuple[ErrorCode, str | None]:
        """The topic's overrides become `configs`: IncrementalAlterConfigs to the controller, SET for what
        changes and DELETE for what goes; answered once our metadata has them."""
        current = dict(self.kraft.server.topic_configs.overrides(topic))
        Req = request_class(ApiKey.INCREMENTAL_ALTER_CONFIGS)
        R = Req.AlterConfigsResource
        ops = [R.AlterableConfig(name=k, config_operation=0, value=v) for k, v in configs.items()
               if current.get(k) != v]
        ops += [R.AlterableConfig(name=k, config_operation=1, value=None) for k in current if k not in configs]

        def build(v: int) -> Any:
            return Req[v](resources=[R(resource_type=2, resource_name=topic, configs=ops)],
                          validate_only=validate_only)

        early = await self._send_one(build, ApiKey.INCREMENTAL_ALTER_CONFIGS, lambda resp: resp.responses[0],
                                     validate_only)
        if early is not None:
            return early
        overrides = self.kraft.server.topic_configs
        await self._wait(lambda: dict(overrides.overrides(topic)) == dict(configs), 30000)
        return ErrorCode.NONE, None

    async def _send_one(self, build: Any, api_key: int, result_of: Any, validate_only: bool
                        ) -> tuple[ErrorCode, str | None] | None:
        """A one-resource request to the controller: its (error, message) when it failed, only validated, or
        the controller was unreachable (REQUEST_TIMED_OUT); None when the controller applied it."""
        try:
            resp = await self._send(build, api_key)
        except ControllerUnavailable as e:
            return ErrorCode.REQUEST_TIMED_OUT, f"controller not reachable: {e}"
        r = result_of(resp)
        error = ErrorCode(r.error_code)
        if error != ErrorCode.NONE or validate_only:
            return error, r.error_message
        return None

    async def alter_partition_reassignments(self, reassignments: Mapping[Any, tuple[int, ...] | None]
                                            ) -> dict[Any, tuple[ErrorCode, str | None]] | None:
        """AlterPartitionReassignments to the controller (the AlterPartitionReassignments handler's
        `controller.alter_partition_reassignments`): each partition's (error, message) as the controller answered
        it, once it recorded the reassignment's first step; None (the handler's NOT_CONTROLLER, which clients
        retry) when the controller is unreachable or answers a top-level error."""
        Req = request_class(ApiKey.ALTER_PARTITION_REASSIGNMENTS)
        T = Req.ReassignableTopic
        by_topic: dict[str, list[Any]] = {}
        for tp, replicas in reassignments.items():
            by_topic.setdefault(tp.topic, []).append(T.ReassignablePartition(
                partition_index=tp.partition, replicas=None if replicas is None else list(replicas)))

        def build(v: int) -> Any:
            return Req[v](timeout_ms=30000, topics=[T(name=t, partitions=ps) for t, ps in by_topic.items()])

        try:
            resp = await self._send(build, ApiKey.ALTER_PARTITION_REASSIGNMENTS)
        except ControllerUnavailable:
            return None
        if resp.error_code != ErrorCode.NONE:
            return None
        by_key = {(tp.topic, tp.partition): tp for tp in reassignments}
        return {by_key[(t.name, p.partition_index)]: (ErrorCode(p.error_code), p.error_message)
                for t in resp.responses for p in t.partitions if (t.name, p.partition_index) in by_key}

    async def list_partition_reassignments(self, tps: list[Any] | None
                                           ) -> dict[Any, tuple[list[int], list[int], list[int]]] | None:
        """ListPartitionReassignments to the controller: (replicas, adding, removing) of each partition being
        reassigned (of those named, or all); None when the controller is unreachable or refuses."""
        from storage import TopicPartition

        Req = request_class(ApiKey.LIST_PARTITION_REASSIGNMENTS)
        topics = None
        if tps is not None:
            by_topic: dict[str, list[int]] = {}
            for tp in tps:
                by_topic.setdefault(tp.topic, []).append(tp.partition)
            topics = [Req.ListPartitionReassignmentsTopics(name=t, partition_indexes=ps) for t, ps in by_topic.items()]

        try:
            resp = await self._send(lambda v: Req[v](timeout_ms=30000, topics=topics),
                                    ApiKey.LIST_PARTITION_REASSIGNMENTS)
        except ControllerUnavailable:
            return None
        if resp.error_code != ErrorCode.NONE:
            return None
        return {TopicPartition(t.name, p.partition_index): (list(p.replicas), list(p.adding_replicas),
                                                            list(p.removing_replicas))
                for t in resp.topics for p in t.partitions}

    async def forward(self, request: Any) -> Any:
        """The client's request sent on to the controller as it came, in an Envelope with the client's principal
        (Kafka's ForwardingManager; the client was authorized here too), at the best version the controller and
        we share, and the controller's answer at the client's version. None when the controller cannot be
        reached: the handler answers REQUEST_TIMED_OUT, as Kafka's forwarding does."""
        key = request.API_KEY
        Req = request_class(key)
        values = {name: getattr(request, name) for name in request.fields}
        try:
            resp = await self._send(lambda v: Req[v](**values), key)
        except ControllerUnavailable as e:
            log.warning("%s not sent to the controller: %s", ApiKey(key).name, e)
            return None
        Resp = response_class(key)[request.API_VERSION]
        return Resp(**{name: getattr(resp, name) for name in resp.fields if name in Resp.fields})

    def broker_configs(self, entity: str) -> dict[str, str]:
        """A dynamic broker config set from the metadata image ("<default>" or a broker id), usable entries
        only, as DynamicBrokerConfig.persisted reads the store's."""
        from broker.config.dynamic import DEFAULT_ENTITY, from_persistent
        from broker.kraft.security_sync import CONFIG_RESOURCE_BROKER

        name = "" if entity == DEFAULT_ENTITY else entity
        stored = dict(self.kraft.loader.image.configs.config(CONFIG_RESOURCE_BROKER, name))
        return from_persistent(stored, name != "", "the cluster default" if name == "" else f"broker {name}")

    async def alter_broker_configs(self, entity: str, props: Mapping[str, str], validate_only: bool
                                   ) -> tuple[ErrorCode, str | None]:
        """A dynamic broker config set ("" the cluster default, else a broker id) becomes `props`:
        IncrementalAlterConfigs of the BROKER resource to the controller, SET for what changes and DELETE for
        what goes; answered once our metadata has it."""
        from broker.kraft.security_sync import CONFIG_RESOURCE_BROKER

        return await self.alter_resource_configs(CONFIG_RESOURCE_BROKER, entity, props, validate_only)

    async def alter_resource_configs(self, resource_type: int, entity: str, props: Mapping[str, str],
                                     validate_only: bool) -> tuple[ErrorCode, str | None]:
        """A config resource's set becomes `props` on the controller (ConfigRecords): the BROKER resource above,
        CLIENT_METRICS subscriptions (broker/controller/client_metrics_configs.py)."""
        configs = self.kraft.loader.image.configs
        current = dict(configs.config(resource_type, entity))
        Req = request_class(ApiKey.INCREMENTAL_ALTER_CONFIGS)
        R = Req.AlterConfigsResource
        ops = [R.AlterableConfig(name=k, config_operation=0, value=v) for k, v in props.items()
               if current.get(k) != v]
        ops += [R.AlterableConfig(name=k, config_operation=1, value=None) for k in current if k not in props]

        def build(v: int) -> Any:
            return Req[v](resources=[R(resource_type=resource_type, resource_name=entity, configs=ops)],
                          validate_only=validate_only)

        early = await self._send_one(build, ApiKey.INCREMENTAL_ALTER_CONFIGS, lambda resp: resp.responses[0],
                                     validate_only)
        if early is not None:
            return early
        await self._wait(lambda: dict(self.kraft.loader.image.configs.config(resource_type, entity))
                         == dict(props), 30000)
        return ErrorCode.NONE, None

    def auto_create_topic(self, name: str, client: Any = None) -> None:
        """CreateTopics for a topic a client's Metadata request named; in an Envelope as that client (Kafka's
        AutoTopicCreationManager with a request context) when `client` is given."""
        if name in self._auto_creating:
            return
        creating = self.create_topics([NewTopic(name)], validate_only=False, timeout_ms=30000)
        task = asyncio.get_running_loop().create_task(creating if client is None else as_client(client, creating))
        self._auto_creating[name] = task
        task.add_done_callback(lambda _: self._auto_creating.pop(name, None))

    async def ensure_internal_topic(self, name: str, partitions: int, replication_factor: int,
                                    configs: Mapping[str, str]) -> None:
        if name in self.kraft.server.metadata_cache.topics:
            return
        alive = len(self.kraft.server.metadata_cache.brokers)
        rf = max(1, min(replication_factor, alive))
        await self.create_topics([NewTopic(name, partitions, rf, configs=dict(configs))], validate_only=False,
                                 timeout_ms=30000)

"""What every request handler gets and shares.

Authorization (Kafka's AuthHelper) lives on the request context, so handlers ask one question in one way:
`ctx.authorize(op, resource_type, name)`, `ctx.authorize_cluster(op)`, `ctx.filter_authorized(...)`,
`ctx.authorized_operations(...)`. With no authorizer configured (`authorizer.class.name` empty) each is a
single attribute test that allows everything, so unsecured brokers answer exactly as before.

A handler module names its API (`API_KEY`), the versions it serves (`MIN_VERSION`, `MAX_VERSION`) and a
`handle(ctx, request)` returning the response object, `None` (no response: acks=0 produce) or an
awaitable of either. ApiVersions is derived from these modules, so it never claims a version nobody
implemented.
"""

from __future__ import annotations

import time
import types
from collections.abc import Coroutine, Generator, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from broker.security.acl import ANONYMOUS, CLUSTER_NAME, SUPPORTED_OPERATIONS, AclOperation, ResourceType
from broker.security.quotas import REQUEST_PERCENTAGE, MutationQuota
from protocol import response_class
from storage import TopicPartition

if TYPE_CHECKING:
    from broker.controller.config_admin import ConfigAdminServer
    from broker.controller.controller import ControllerServer
    from broker.coordinator.group.service import GroupService
    from broker.coordinator.share.service import ShareCoordinatorService
    from broker.coordinator.transaction.service import TransactionService
    from broker.metadata.metadata_cache import BrokerEndpoint
    from broker.network.socket_server import Connection
    from broker.security.authorizer import AclAuthorizer
    from broker.security.quotas import ClientQuotas
    from broker.server.fetch_session import FetchSessionCache
    from broker.server.log_dir_mover import ReplicaAlterLogDirsManager
    from broker.share.manager import ShareServer

    class _CalledByRoomsBelow(ControllerServer, ConfigAdminServer, ShareServer, Protocol):
        pass
else:
    # At run time HandlerServer is a Protocol of its own: inheriting the three protocols would import the
    # controller's, config admin's and share-partition leaders' modules with every handler (issue 35: start-up
    # imports only what a start uses). Type checkers see the full protocol; tests/broker/test_rooms.py checks
    # KafkaServer against each of the three as well.
    class _CalledByRoomsBelow(Protocol):
        pass


# Kafka's cluster actions (ApiKeys.clusterAction): inter-broker requests, outside client quotas.
_CLUSTER_ACTIONS = frozenset({4, 5, 6, 7, 27, 56, 67, 83, 84, 85, 86, 87})  # LeaderAndIsr, StopReplica,
# UpdateMetadata, ControlledShutdown, WriteTxnMarkers, AlterPartition, AllocateProducerIds, the share-group state RPCs


async def timed_steps(awaitable: Any, ctx: RequestContext) -> Any:
    """Await `awaitable`, adding the time of each of its steps on the loop to `ctx.handler_ns` (not the waits
    between them: a fetch parked in the purgatory uses no handler time, as in Kafka)."""
    if not isinstance(awaitable, Coroutine):
        return await awaitable  # a future: nothing of ours runs until it is done
    return await _steps(awaitable, ctx)


@types.coroutine
def _steps(coro: Coroutine[Any, Any, Any], ctx: RequestContext) -> Generator[Any, Any, Any]:
    value: Any = None
    error: BaseException | None = None
    while True:
        start = time.perf_counter_ns()
        try:
            yielded = coro.send(value) if error is None else coro.throw(error)
        except StopIteration as stop:
            ctx.handler_ns += time.perf_counter_ns() - start
            return stop.value
        ctx.handler_ns += time.perf_counter_ns() - start
        try:
            value, error = (yield yielded), None
        except GeneratorExit:
            coro.close()
            raise
        except BaseException as e:  # noqa: BLE001 - handed to the handler, as awaiting it directly would
            value, error = None, e


class HandlerServer(_CalledByRoomsBelow, Protocol):
    """The broker as its request handlers see it: the services they call (KafkaServer is the one implementation;
    Kafka's KafkaApis is given the same services). Handlers pass it on as what the rooms below them ask for: a
    ControllerServer, a ConfigAdminServer, a ShareServer."""

    authorizer: AclAuthorizer | None
    quotas: ClientQuotas
    fetch_sessions: FetchSessionCache
    log_dir_mover: ReplicaAlterLogDirsManager
    group_coordinator: GroupService
    transaction_coordinator: TransactionService
    share_coordinator: ShareCoordinatorService

    def is_broker_epoch_stale(self, broker_epoch: int) -> bool: ...

    def auto_create_topics(self, names: list[str], ctx: RequestContext | None = None) -> None: ...


@dataclass(slots=True)
class RequestContext:
    server: HandlerServer
    connection: Connection | None
    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None
    handler_ns: int = 0  # event-loop time this request used so far (Kafka's request-handler time)
    quota_exempt: bool = False  # a replica's fetch: outside client quotas, as in Kafka
    # The handler's work is done and what it returned only waits for the answer (broker.network.socket_server.Deferred):
    # the connection may go on with its next request.
    deferred: bool = False
    timer: Any = None  # broker.metrics.broker_metrics.RequestTimer while metrics are kept

    @property
    def listener(self) -> str | None:
        """The listener the request came in on (None for requests made inside the broker)."""
        return self.connection.server.listener_name if self.connection is not None else None

    @property
    def client_host(self) -> str:
        return self.connection.peer[0] if self.connection is not None else "127.0.0.1"

    # ---------------------------------------------------------------- quotas (Kafka's ClientQuotaManager)
    def record_quota(self, quota: str, value: float, *, unrecord_if_throttled: bool = False) -> int:
        """Record `value` against this client's `quota` (broker.security.quotas) and return the throttle time
        in ms; a throttled connection is muted that long (KIP-219). `unrecord_if_throttled`: the bytes will
        not be sent after all (a throttled fetch answers empty, as Kafka)."""
        quotas = self.server.quotas
        if not quotas.quotas:
            return 0
        user, client_id = self.principal.partition(":")[2], self.client_id or ""
        throttle_ms = quotas.record(quota, user, client_id, value)
        if throttle_ms and unrecord_if_throttled:
            quotas.record(quota, user, client_id, -value)
        if throttle_ms and self.connection is not None:
            self.connection.throttle(throttle_ms / 1000)
        return throttle_ms

    def mutation_quota(self, strict_since: int) -> MutationQuota:
        """This client's controller mutation quota for this request (strict from version `strict_since`)."""
        return self.server.quotas.mutation_quota(self.principal.partition(":")[2], self.client_id or "",
                                                 self.api_version >= strict_since)

    def throttled(self, quota: MutationQuota, response: Any) -> Any:
        """`response` with the mutation quota's throttle in throttle_time_ms, the connection muted that long."""
        if quota.throttle_ms:
            response.throttle_time_ms = max(response.throttle_time_ms or 0, quota.throttle_ms)
            if self.connection is not None:
                self.connection.throttle(quota.throttle_ms / 1000)
        return response

    def record_request_time(self, response: Any) -> None:
        """Kafka's request quota (`request_percentage`, of one thread): the loop time the request used, taken
        as it is answered; a throttle goes into the response's throttle_time_ms and mutes the connection.
        Inter-broker requests and replicas' fetches are exempt, as in Kafka."""
        if not self.server.quotas.quotas or self.quota_exempt or self.api_key in _CLUSTER_ACTIONS:
            return
        throttle_ms = self.record_quota(REQUEST_PERCENTAGE, self.handler_ns * 100 / 1e9)
        if throttle_ms and hasattr(response, "throttle_time_ms"):
            response.throttle_time_ms = max(response.throttle_time_ms or 0, throttle_ms)

    # ---------------------------------------------------------------- authorization (Kafka's AuthHelper)
    @property
    def principal(self) -> str:
        """The principal the connection acts as ("User:<name>"); Kafka's User:ANONYMOUS for PLAINTEXT and
        unauthenticated connections."""
        return self.connection.principal if self.connection is not None else ANONYMOUS

    def authorize(self, operation: AclOperation, resource_type: ResourceType, name: str) -> bool:
        authorizer = self.server.authorizer
        return authorizer is None or authorizer.authorize(self.principal, self.client_host, operation,
                                                          resource_type, name)

    def authorize_cluster(self, operation: AclOperation) -> bool:
        return self.authorize(operation, ResourceType.CLUSTER, CLUSTER_NAME)

    def filter_authorized(self, operation: AclOperation, resource_type: ResourceType,
                          names: Iterable[str]) -> set[str]:
        """The names (each once) the principal may do `operation` on."""
        authorizer = self.server.authorizer
        if authorizer is None:
            return set(names)
        principal, host = self.principal, self.client_host
        return {n for n in set(names) if authorizer.authorize(principal, host, operation, resource_type, n)}

    def authorize_by_resource_type(self, operation: AclOperation, resource_type: ResourceType) -> bool:
        authorizer = self.server.authorizer
        return authorizer is None or authorizer.authorize_by_resource_type(self.principal, self.client_host,
                                                                           operation, resource_type)

    def authorized_operations(self, resource_type: ResourceType, name: str) -> set[int]:
        """Kafka's authorized_operations bit set for a resource (every supported one without an authorizer)."""
        authorizer = self.server.authorizer
        if authorizer is None:
            return {int(op) for op in SUPPORTED_OPERATIONS[resource_type]}
        return authorizer.authorized_operations(self.principal, self.client_host, resource_type, name)


def response_for(request: Any, **fields: Any) -> Any:
    """The response message of `request`'s API at the request's version."""
    return response_class(request.API_KEY)[request.API_VERSION](**fields)


def response_type(request: Any) -> Any:
    """The response class (for its nested data classes, e.g. `.TopicProduceResponse`)."""
    return response_class(request.API_KEY)


def current_leader(ctx: RequestContext, tp: TopicPartition) -> tuple[int, int, BrokerEndpoint | None]:
    """Kafka's getCurrentLeader for KIP-951 hints: (leader id, leader epoch, the leader's endpoint if it is a
    live broker), from this broker's partition state when it hosts the partition (leader -1 if it knows none),
    else from the metadata cache, else (-1, -1, None). Produce (v10+) and Fetch (v16+) share it."""
    server = ctx.server
    partition = server.replica_manager.partitions.get(tp)
    if partition is not None:
        leader_id = partition.leader_id if partition.leader_id is not None else -1
        leader_epoch = partition.leader_epoch
    else:
        pm = server.metadata_cache.partition(tp.topic, tp.partition)
        leader_id, leader_epoch = (pm.leader, pm.leader_epoch) if pm is not None else (-1, -1)
    endpoint = server.metadata_cache.listed_brokers(ctx.listener).get(leader_id)
    return leader_id, leader_epoch, endpoint

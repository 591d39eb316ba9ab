"""What every request handler gets and shares.

A handler module names its API (`API_KEY`), the versions it serves (`MIN_VERSION`, `MAX_VERSION`) and a
`handle(ctx, request)` returning the response object, `None` (no response: acks=0 produce) or an
awaitable of either. ApiVersions is derived from these modules, so it never claims a version nobody
implemented.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from protocol import response_class
from storage import TopicPartition

if TYPE_CHECKING:
    from broker.metadata_cache import BrokerEndpoint
    from broker.network import Connection
    from broker.server import KafkaServer


@dataclass(slots=True)
class RequestContext:
    server: KafkaServer
    connection: Connection | None
    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None

    @property
    def client_host(self) -> str:
        return self.connection.peer[0] if self.connection is not None else "127.0.0.1"


def response_for(request: Any, **fields: Any) -> Any:
    """The response message of `request`'s API at the request's version."""
    return response_class(request.API_KEY)[request.API_VERSION](**fields)


def response_type(request: Any) -> Any:
    """The response class (for its nested data classes, e.g. `.TopicProduceResponse`)."""
    return response_class(request.API_KEY)


def current_leader(ctx: RequestContext, tp: TopicPartition) -> tuple[int, int, BrokerEndpoint | None]:
    """Kafka's getCurrentLeader for KIP-951 hints: (leader id, leader epoch, the leader's endpoint if it is a
    live broker), from this broker's partition state when it hosts the partition, else from the metadata cache,
    else (-1, -1, None)."""
    server = ctx.server
    partition = server.replica_manager.partitions.get(tp)
    if partition is not None and partition.leader_id is not None:
        leader_id, leader_epoch = partition.leader_id, partition.leader_epoch
    else:
        pm = server.metadata_cache.partition(tp.topic, tp.partition)
        leader_id, leader_epoch = (pm.leader, pm.leader_epoch) if pm is not None else (-1, -1)
    endpoint = server.metadata_cache.listed_brokers().get(leader_id)
    return leader_id, leader_epoch, endpoint

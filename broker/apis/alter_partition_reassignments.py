"""AlterPartitionReassignments (key 45), version 0 (KIP-455).

Starts, replaces or cancels (replicas null) the reassignment of each named partition on the active controller
(`broker.controller.reassignment`: adding replicas catch up and join the ISR, then the target becomes the
assignment and the removed replicas are stopped and deleted). The answer comes once each reassignment has
started, not when it completes (ListPartitionReassignments follows it), as Kafka's.
Errors: NOT_CONTROLLER (top level) on a broker that is not the active controller; per partition
INVALID_REPLICA_ASSIGNMENT (empty target, a repeated or negative broker id, an added broker not alive, with
Kafka's message), NO_REASSIGNMENT_IN_PROGRESS (cancelling a partition not being reassigned),
UNKNOWN_TOPIC_OR_PARTITION ("The partition does not exist."), UNKNOWN_SERVER_ERROR (a failed store write).
In KRaft mode (`process.roles=broker`) the request goes on to the controller quorum (broker/kraft/admin.py) and
its per-partition answers pass through; a controller that cannot be reached is NOT_CONTROLLER (clients retry).
`timeout_ms` is not needed: the controller answers once the reassignment is recorded, as Kafka's ZooKeeper
controller does.
With an authorizer (Kafka): ALTER on the cluster, else CLUSTER_AUTHORIZATION_FAILED.
"""

from __future__ import annotations

from typing import Any

from broker.apis.base import RequestContext, response_for, response_type
from broker.security.acl import AclOperation
from protocol.errors import ErrorCode
from storage import TopicPartition

API_KEY = 45
MIN_VERSION = 0
MAX_VERSION = 0
ERRORS: tuple[ErrorCode, ...] = (
    ErrorCode.NOT_CONTROLLER, ErrorCode.INVALID_REPLICA_ASSIGNMENT,
    ErrorCode.NO_REASSIGNMENT_IN_PROGRESS, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
    ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
)


async def handle(ctx: RequestContext, request: Any) -> Any:
    if not ctx.authorize_cluster(AclOperation.ALTER):
        return response_for(request, throttle_time_ms=0, error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
                            error_message=None, responses=[])
    controller = ctx.server.controller
    reassignments: dict[TopicPartition, tuple[int, ...] | None] = {
        TopicPartition(t.name, p.partition_index): None if p.replicas is None else tuple(p.replicas)
        for t in request.topics for p in t.partitions}
    results = await controller.alter_partition_reassignments(reassignments) if controller is not None else None
    if results is None:
        return response_for(request, throttle_time_ms=0, error_code=ErrorCode.NOT_CONTROLLER,
                            error_message="This is not the correct controller for this cluster.", responses=[])
    Resp = response_type(request)
    TopicResp = Resp.ReassignableTopicResponse
    by_topic: dict[str, list[Any]] = {}
    for tp, (error, message) in results.items():
        by_topic.setdefault(tp.topic, []).append(TopicResp.ReassignablePartitionResponse(
            partition_index=tp.partition, error_code=error, error_message=message))
    return response_for(request, throttle_time_ms=0, error_code=ErrorCode.NONE, error_message=None,
                        responses=[TopicResp(name=name, partitions=parts) for name, parts in by_topic.items()])

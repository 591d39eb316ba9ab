"""ListPartitionReassignments (key 46), version 0 (KIP-455).

The partitions being reassigned (all of them when `topics` is null, else those named that are), each with its
replicas (the union of original and target while it runs), adding and removing replicas, from the active
controller. Partitions named but not being reassigned are left out, as Kafka does.
Errors: NOT_CONTROLLER (top level) on a broker that is not the active controller. In KRaft mode the request goes
on to the controller quorum and its answer passes through (NOT_CONTROLLER when it cannot be reached).
With an authorizer (Kafka): DESCRIBE on the cluster, else CLUSTER_AUTHORIZATION_FAILED.
"""

from __future__ import annotations

from typing import Any

from broker.apis.base import RequestContext, response_for, response_type
from broker.security.acl import AclOperation
from protocol.errors import ErrorCode
from storage import TopicPartition

API_KEY = 46
MIN_VERSION = 0
MAX_VERSION = 0
ERRORS: tuple[ErrorCode, ...] = (
    ErrorCode.NOT_CONTROLLER,
    ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
)


async def handle(ctx: RequestContext, request: Any) -> Any:
    if not ctx.authorize_cluster(AclOperation.DESCRIBE):
        return response_for(request, throttle_time_ms=0, error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
                            error_message=None, topics=[])
    controller = ctx.server.controller
    tps = None if request.topics is None else [
        TopicPartition(t.name, p) for t in request.topics for p in t.partition_indexes]
    ongoing = await controller.list_partition_reassignments(tps) if controller is not None else None
    if ongoing is None:
        return response_for(request, throttle_time_ms=0, error_code=ErrorCode.NOT_CONTROLLER,
                            error_message="This is not the correct controller for this cluster.", topics=[])
    TopicOut = response_type(request).OngoingTopicReassignment
    by_topic: dict[str, list[Any]] = {}
    for tp, (replicas, adding, removing) in ongoing.items():
        by_topic.setdefault(tp.topic, []).append(TopicOut.OngoingPartitionReassignment(
            partition_index=tp.partition, replicas=list(replicas), adding_replicas=list(adding),
            removing_replicas=list(removing)))
    return response_for(request, throttle_time_ms=0, error_code=ErrorCode.NONE, error_message=None,
                        topics=[TopicOut(name=name, partitions=parts) for name, parts in by_topic.items()])

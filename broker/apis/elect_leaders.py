"""ElectLeaders (key 43), versions 0–2 — preferred or unclean leader election on request
(kafka-leader-election.sh, the admin clients' elect_leaders).

Kafka's admin client sends it to the controller. The controller elects (broker/controller/preferred_election.py,
per-partition errors as Kafka's); v0 always asks for preferred elections, v1+ names the type. Like Kafka's
DelayedElectLeader, the answer waits (up to the request's timeout) until this broker's metadata shows each
elected leader, else that partition answers REQUEST_TIMED_OUT. With no partitions named (null), every
partition is a candidate and those answering ELECTION_NOT_NEEDED are left out of the answer. Any broker that is
not the controller answers NOT_CONTROLLER for each partition. Not in `ERRORS`, as no test can hold the state
they need: INVALID_TOPIC_EXCEPTION (a topic the controller is deleting at that moment) and REQUEST_TIMED_OUT
(an elected leader this broker's metadata has not heard of within the timeout).
With an authorizer (Kafka): ALTER on the cluster, else CLUSTER_AUTHORIZATION_FAILED (v1+ also at the top).
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from broker.apis.base import RequestContext, response_for, response_type
from broker.controller.preferred_election import PREFERRED
from broker.security.acl import AclOperation
from protocol.errors import ErrorCode
from storage import TopicPartition

API_KEY = 43
MIN_VERSION = 0
MAX_VERSION = 2
ERRORS: tuple[ErrorCode, ...] = (
    ErrorCode.NOT_CONTROLLER, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode.ELECTION_NOT_NEEDED,
    ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE, ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE,
    ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
)

# Kafka's messages for these answers (its ApiError texts, else the error's default message).
_MESSAGES = {
    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION: "The partition does not exist.",
    ErrorCode.INVALID_TOPIC_EXCEPTION: "The topic is being deleted",
    ErrorCode.REQUEST_TIMED_OUT: "The request timed out.",
    ErrorCode.NOT_CONTROLLER: "This is not the correct controller for this cluster.",
    ErrorCode.ELECTION_NOT_NEEDED: "Leader election not needed for topic partition.",
}
_STRATEGIES = {
    ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE: "PreferredReplicaPartitionLeaderElectionStrategy",
    ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE: "OfflinePartitionLeaderElectionStrategy(true)",
}


async def handle(ctx: RequestContext, request: Any) -> Any:
    server = ctx.server
    cache = server.metadata_cache
    election_type = request.election_type if request.API_VERSION >= 1 else PREFERRED
    every_partition = request.topic_partitions is None
    if every_partition:
        tps = [TopicPartition(t, p) for t, tm in cache.topics.items() for p in sorted(tm.partitions)]
    else:
        tps = [TopicPartition(t.topic, p) for t in request.topic_partitions for p in t.partitions]
    controller = server.controller
    if not ctx.authorize_cluster(AclOperation.ALTER):
        results: dict[TopicPartition, int | ErrorCode] = dict.fromkeys(tps, ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
    elif controller is None or not controller.active:
        results = dict.fromkeys(tps, ErrorCode.NOT_CONTROLLER)
    else:
        results = await controller.preferred_election.elect_leaders(tps, election_type)
    # Kafka's DelayedElectLeader: answer once the elected leaders are in this broker's metadata.
    deadline = time.monotonic() + max(0, request.timeout_ms) / 1000
    while True:
        waiting = [tp for tp, r in results.items() if not isinstance(r, ErrorCode) and
                   (pm := cache.partition(tp.topic, tp.partition)) is not None and pm.leader != r]
        if not waiting or time.monotonic() >= deadline:
            break
        await asyncio.sleep(0.02)
    errors: dict[TopicPartition, ErrorCode] = {
        tp: r if isinstance(r, ErrorCode) else ErrorCode.REQUEST_TIMED_OUT if tp in waiting else ErrorCode.NONE
        for tp, r in results.items()}
    if every_partition:
        errors = {tp: e for tp, e in errors.items() if e != ErrorCode.ELECTION_NOT_NEEDED}
    R = response_type(request).ReplicaElectionResult
    by_topic: dict[str, list] = {}
    for tp, e in errors.items():
        by_topic.setdefault(tp.topic, []).append(R.PartitionResult(
            partition_id=tp.partition, error_code=e,
            error_message=_message(tp, e)))
    fields: dict[str, Any] = dict(throttle_time_ms=0, replica_election_results=[
        R(topic=t, partition_result=ps) for t, ps in by_topic.items()])
    if request.API_VERSION >= 1:
        fields["error_code"] = ErrorCode.NONE if ctx.authorize_cluster(AclOperation.ALTER) \
            else ErrorCode.CLUSTER_AUTHORIZATION_FAILED
    return response_for(request, **fields)


def _message(tp: TopicPartition, error: ErrorCode) -> str | None:
    if error == ErrorCode.NONE:
        return None
    strategy = _STRATEGIES.get(error)
    if strategy is not None:
        return f"Failed to elect leader for partition {tp.topic}-{tp.partition} under strategy {strategy}"
    return _MESSAGES.get(error, error.name)

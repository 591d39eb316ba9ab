"""StopReplica (key 5), versions 0–4 — from the controller (ZooKeeper mode).

Stops replicating the listed partitions (fetchers removed, delayed requests answered) and, when asked (topic
deletion, reassignment), deletes their logs. Stale controller epochs: STALE_CONTROLLER_EPOCH; an older broker
epoch than this broker's registration: STALE_BROKER_EPOCH; a log that cannot be deleted (an I/O failure in its
log dir): KAFKA_STORAGE_ERROR for that partition.
Gaps: Kafka answers FENCED_LEADER_EPOCH for a partition whose leader epoch in the request is older than the
one held; every partition here is stopped whatever its epoch.
With an authorizer: CLUSTER_ACTION on the cluster (brokers and the controller only), else
CLUSTER_AUTHORIZATION_FAILED, as Kafka.
"""

from __future__ import annotations

from typing import Any

from broker.apis.base import RequestContext, response_for, response_type
from broker.controller.requests import parse_stop_replica
from broker.kraft import zk_apis
from broker.security.acl import AclOperation
from protocol.errors import ErrorCode

API_KEY = 5
MIN_VERSION = 0
MAX_VERSION = 4
ERRORS: tuple[ErrorCode, ...] = (
    ErrorCode.STALE_BROKER_EPOCH, ErrorCode.STALE_CONTROLLER_EPOCH, ErrorCode.KAFKA_STORAGE_ERROR,
    ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
)


def handle(ctx: RequestContext, request: Any) -> Any:
    if zk_apis.refused(ctx):  # not enabled on a KRaft broker (broker/kraft/zk_apis.py)
        return None
    server = ctx.server
    if not ctx.authorize_cluster(AclOperation.CLUSTER_ACTION):
        return response_for(request, error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED, partition_errors=[])
    if server.is_broker_epoch_stale(request.broker_epoch):
        return response_for(request, error_code=ErrorCode.STALE_BROKER_EPOCH, partition_errors=[])
    if request.controller_epoch < server.replica_manager.controller_epoch:
        return response_for(request, error_code=ErrorCode.STALE_CONTROLLER_EPOCH, partition_errors=[])
    entries = parse_stop_replica(request)
    errors = {}
    for delete in (False, True):
        tps = [tp for tp, d in entries if d == delete]
        if tps:
            errors.update(server.apply_stop_replica(request.controller_id, request.controller_epoch, tps, delete))
    Resp = response_type(request)
    return response_for(request, error_code=0, partition_errors=[
        Resp.StopReplicaPartitionError(topic_name=tp.topic, partition_index=tp.partition, error_code=e)
        for tp, e in errors.items()])

"""LeaderAndIsr (key 4), versions 0–7 — from the controller (ZooKeeper mode).

`ReplicaManager.become_leader_or_follower`: a request with a controller epoch older than the last one seen is
rejected (STALE_CONTROLLER_EPOCH for all its partitions); partitions whose leader epoch is not newer than the
one held are skipped (STALE_CONTROLLER_EPOCH, except a topic id handed over at the same epoch); the rest become
leaders (fetchers stopped, remote replicas reset, HW maybe advanced) or followers (fetchers started toward the
new leader, which truncate by leader epoch first). A request stamped with an older broker epoch than this
broker's registration (KIP-380) is refused whole with STALE_BROKER_EPOCH (-1, from a controller without broker
epochs, is accepted). Per-partition errors in the v0–4 (by name) or v5+ (by topic id) layout:
STALE_CONTROLLER_EPOCH (also for a leader epoch not newer than the one held, as Kafka),
UNKNOWN_TOPIC_OR_PARTITION when this broker is not among the replicas, KAFKA_STORAGE_ERROR when the log cannot
be created in its log dir, INCONSISTENT_TOPIC_ID (checked first, as Kafka) when the log this broker holds has
another topic id than the request's (a topic deleted and created again while this broker was away): the
partition is left as it is and not served.
With an authorizer: CLUSTER_ACTION on the cluster (brokers and the controller only), else
CLUSTER_AUTHORIZATION_FAILED, as Kafka.
"""

from __future__ import annotations

import logging
from typing import Any

from broker.apis.base import RequestContext, response_for, response_type
from broker.controller.requests import parse_leader_and_isr
from broker.kraft import zk_apis
from broker.security.acl import AclOperation
from protocol.errors import ErrorCode

log = logging.getLogger("broker.state_change")

API_KEY = 4
MIN_VERSION = 0
MAX_VERSION = 7
ERRORS: tuple[ErrorCode, ...] = (
    ErrorCode.STALE_BROKER_EPOCH, ErrorCode.STALE_CONTROLLER_EPOCH, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
    ErrorCode.KAFKA_STORAGE_ERROR, ErrorCode.CLUSTER_AUTHORIZATION_FAILED, ErrorCode.INCONSISTENT_TOPIC_ID,
)


def handle(ctx: RequestContext, request: Any) -> Any:
    if zk_apis.refused(ctx):  # not enabled on a KRaft broker (broker/kraft/zk_apis.py)
        return None
    states, topic_ids, leaders = parse_leader_and_isr(request)
    Resp = response_type(request)
    if not ctx.authorize_cluster(AclOperation.CLUSTER_ACTION):
        top = ErrorCode.CLUSTER_AUTHORIZATION_FAILED
        errors = dict.fromkeys(states, top)
    elif ctx.server.is_broker_epoch_stale(request.broker_epoch):
        top = ErrorCode.STALE_BROKER_EPOCH
        errors = dict.fromkeys(states, top)
    else:
        log.info("LeaderAndIsr from controller %d (epoch %d) for %d partitions", request.controller_id,
                 request.controller_epoch, len(states))
        errors = ctx.server.apply_leader_and_isr(request.controller_id, request.controller_epoch, states,
                                                 topic_ids, leaders)
        top = ErrorCode.NONE
    if errors and all(e == ErrorCode.STALE_CONTROLLER_EPOCH for e in errors.values()) and \
            request.controller_epoch < ctx.server.replica_manager.controller_epoch:
        top = ErrorCode.STALE_CONTROLLER_EPOCH
    PE = Resp.LeaderAndIsrPartitionError
    if request.API_VERSION < 5:
        return response_for(request, error_code=top, partition_errors=[
            PE(topic_name=tp.topic, partition_index=tp.partition, error_code=e) for tp, e in errors.items()])
    by_topic: dict[str, list] = {}
    for tp, e in errors.items():
        by_topic.setdefault(tp.topic, []).append(PE(partition_index=tp.partition, error_code=e))
    return response_for(request, error_code=top, topics=[
        Resp.LeaderAndIsrTopicError(topic_id=topic_ids.get(t), partition_errors=ps) for t, ps in by_topic.items()])

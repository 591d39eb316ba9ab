"""AlterPartition (key 56), versions 0–3 — a partition leader proposes a new ISR to the controller (KIP-497).

Served by the active controller (broker/controller/alter_partition.py judges each partition with Kafka's rules
and writes the state); any other broker answers NOT_CONTROLLER. Topics by name (v0–1) or id (v2+); the ISR
as broker ids (v0–2) or ids with broker epochs (v3, whose epochs ZooKeeper-mode Kafka does not check either).
Errors: NOT_CONTROLLER and STALE_BROKER_EPOCH for the request; per partition UNKNOWN_TOPIC_ID (v2+),
UNKNOWN_TOPIC_OR_PARTITION, NOT_CONTROLLER (epochs newer than the controller's), FENCED_LEADER_EPOCH,
INVALID_UPDATE_VERSION, INVALID_REQUEST, INELIGIBLE_REPLICA (OPERATION_NOT_ATTEMPTED before v2), as the
controller judges them.
With an authorizer: CLUSTER_ACTION on the cluster (brokers and the controller only), else
CLUSTER_AUTHORIZATION_FAILED, as Kafka.
"""

from __future__ import annotations

from typing import Any

from broker.apis.base import RequestContext, response_for, response_type
from broker.controller.alter_partition import IsrProposal
from broker.kraft import zk_apis
from broker.metadata import LeaderAndIsr
from broker.security.acl import AclOperation
from protocol.errors import ErrorCode

API_KEY = 56
MIN_VERSION = 0
MAX_VERSION = 3
ERRORS: tuple[ErrorCode, ...] = (
    ErrorCode.NOT_CONTROLLER, ErrorCode.STALE_BROKER_EPOCH, ErrorCode.UNKNOWN_TOPIC_ID,
    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode.FENCED_LEADER_EPOCH, ErrorCode.INVALID_UPDATE_VERSION,
    ErrorCode.INVALID_REQUEST, ErrorCode.INELIGIBLE_REPLICA, ErrorCode.OPERATION_NOT_ATTEMPTED,
    ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
)


async def handle(ctx: RequestContext, request: Any) -> Any:
    if zk_apis.refused(ctx):  # not enabled on a KRaft broker (broker/kraft/zk_apis.py)
        return None
    v = request.API_VERSION
    if not ctx.authorize_cluster(AclOperation.CLUSTER_ACTION):
        return response_for(request, throttle_time_ms=0, error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED, topics=[])
    controller = ctx.server.controller
    if controller is None or not controller.active:
        return response_for(request, throttle_time_ms=0, error_code=ErrorCode.NOT_CONTROLLER, topics=[])
    proposals = []
    for t in request.topics:
        for p in t.partitions:
            isr = [b.broker_id for b in p.new_isr_with_epochs] if v >= 3 else list(p.new_isr)
            proposals.append(IsrProposal(t.topic_id if v >= 2 else t.topic_name, p.partition_index, p.leader_epoch,
                                         tuple(isr), p.leader_recovery_state if v >= 1 else 0, p.partition_epoch))
    top, results = await controller.alter_partition_service.alter(request.broker_id, request.broker_epoch, v,
                                                                  proposals)
    Resp = response_type(request)
    T = Resp.TopicData
    by_topic: dict[Any, list] = {}
    for proposal, _, outcome in results:
        if isinstance(outcome, LeaderAndIsr):
            part = T.PartitionData(partition_index=proposal.partition, error_code=0, leader_id=outcome.leader,
                                   leader_epoch=outcome.leader_epoch, isr=list(outcome.isr),
                                   leader_recovery_state=outcome.leader_recovery_state,
                                   partition_epoch=outcome.partition_epoch)
        else:
            part = T.PartitionData(partition_index=proposal.partition, error_code=outcome, leader_id=-1,
                                   leader_epoch=-1, isr=[], leader_recovery_state=0, partition_epoch=-1)
        by_topic.setdefault(proposal.topic, []).append(part)
    topics = [T(topic_id=k, partitions=ps) if v >= 2 else T(topic_name=k, partitions=ps) for k, ps in by_topic.items()]
    return response_for(request, throttle_time_ms=0, error_code=top, topics=topics)

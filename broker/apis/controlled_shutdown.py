"""ControlledShutdown (key 7), versions 0–3 — a broker asks the controller to move leadership away.

Served by the active controller: partitions the broker leads get a new leader from the rest of the
ISR, the broker leaves every ISR it is in, LeaderAndIsr/UpdateMetadata go out; the answer lists the
partitions that could not be moved (no other in-sync replica). A broker that is not the controller
answers NOT_CONTROLLER, as Kafka does; a request carrying an older broker epoch than the broker's current
registration, STALE_BROKER_EPOCH.
With an authorizer: CLUSTER_ACTION on the cluster (brokers and the controller only), else
CLUSTER_AUTHORIZATION_FAILED, as Kafka.
"""

from __future__ import annotations

from typing import Any

from broker.apis.base import RequestContext, response_for, response_type
from broker.controller.controller import StaleBrokerEpoch
from broker.kraft import zk_apis
from broker.security.acl import AclOperation
from protocol.errors import ErrorCode

API_KEY = 7
MIN_VERSION = 0
MAX_VERSION = 3
ERRORS: tuple[ErrorCode, ...] = (ErrorCode.STALE_BROKER_EPOCH, ErrorCode.NOT_CONTROLLER,
                                 ErrorCode.CLUSTER_AUTHORIZATION_FAILED)


async def handle(ctx: RequestContext, request: Any) -> Any:
    if zk_apis.refused(ctx):  # not enabled on a KRaft broker (broker/kraft/zk_apis.py)
        return None
    if not ctx.authorize_cluster(AclOperation.CLUSTER_ACTION):
        return response_for(request, error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED, remaining_partitions=[])
    controller = ctx.server.controller
    if controller is None or not controller.active:
        return response_for(request, error_code=ErrorCode.NOT_CONTROLLER, remaining_partitions=[])
    try:
        remaining = await controller.handle_controlled_shutdown(request.broker_id, request.broker_epoch)
    except StaleBrokerEpoch:
        return response_for(request, error_code=ErrorCode.STALE_BROKER_EPOCH, remaining_partitions=[])
    Resp = response_type(request)
    return response_for(request, error_code=0, remaining_partitions=[
        Resp.RemainingPartition(topic_name=tp.topic, partition_index=tp.partition) for tp in remaining])

"""UpdateMetadata (key 6), versions 0–8 — from the controller (ZooKeeper mode).

Replaces this broker's view of live brokers and of the listed partitions (leader, leader epoch, ISR,
replicas, offline replicas, topic ids v7+); a leader of -2 marks a deleted topic. Requests carrying an
older controller epoch than the last one seen are refused with STALE_CONTROLLER_EPOCH, those with an older
broker epoch than this broker's registration with STALE_BROKER_EPOCH.
With an authorizer: CLUSTER_ACTION on the cluster (brokers and the controller only), else
CLUSTER_AUTHORIZATION_FAILED, as Kafka.
"""

from __future__ import annotations

import logging
from typing import Any

from broker.apis.base import RequestContext, response_for
from broker.controller.requests import parse_update_metadata
from broker.kraft import zk_apis
from broker.security.acl import AclOperation
from protocol.errors import ErrorCode

log = logging.getLogger("broker.state_change")

API_KEY = 6
MIN_VERSION = 0
MAX_VERSION = 8
ERRORS: tuple[ErrorCode, ...] = (ErrorCode.STALE_BROKER_EPOCH, ErrorCode.STALE_CONTROLLER_EPOCH,
                                 ErrorCode.CLUSTER_AUTHORIZATION_FAILED)


def handle(ctx: RequestContext, request: Any) -> Any:
    if zk_apis.refused(ctx):  # not enabled on a KRaft broker (broker/kraft/zk_apis.py)
        return None
    if not ctx.authorize_cluster(AclOperation.CLUSTER_ACTION):
        return response_for(request, error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
    if ctx.server.is_broker_epoch_stale(request.broker_epoch):
        return response_for(request, error_code=ErrorCode.STALE_BROKER_EPOCH)
    brokers, partitions = parse_update_metadata(request, ctx.server.config.inter_broker_listener_name)
    log.info("UpdateMetadata from controller %d (epoch %d): live brokers %s, %d partitions", request.controller_id,
             request.controller_epoch, sorted(b.broker_id for b in brokers), len(partitions))
    ok = ctx.server.apply_update_metadata(request.controller_id, request.controller_epoch, brokers, partitions)
    return response_for(request, error_code=ErrorCode.NONE if ok else ErrorCode.STALE_CONTROLLER_EPOCH)

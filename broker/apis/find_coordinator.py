"""FindCoordinator (key 10), versions 0–6.

Group keys (key_type 0) map to the leader of `__consumer_offsets` partition
abs(hashCode(group_id)) % offsets.topic.num.partitions, as in Kafka; the topic is created on first use,
and until its partition has a leader the answer is COORDINATOR_NOT_AVAILABLE (clients retry). v4+
batches several keys (`coordinator_keys`). Transaction keys (key_type 1) map the same way to the leader of
`__transaction_state` partition abs(hashCode(transactional_id)) % transaction.state.log.num.partitions, the
topic also created on first use. Unknown key types: INVALID_REQUEST. An empty group id or transactional id is
placed like any other, as Kafka 3.7 does (the group or transaction APIs then refuse it).
With an authorizer, as Kafka: a group key needs DESCRIBE on the
group (GROUP_AUTHORIZATION_FAILED), a transaction key DESCRIBE on the transactional id
(TRANSACTIONAL_ID_AUTHORIZATION_FAILED).
"""

from __future__ import annotations

from typing import Any

from broker.apis.base import RequestContext, response_for, response_type
from broker.coordinator.group.service import GROUP_METADATA_TOPIC
from broker.coordinator.transaction.state_manager import TRANSACTION_STATE_TOPIC
from broker.security.acl import AclOperation, ResourceType
from protocol.errors import ErrorCode

API_KEY = 10
MIN_VERSION = 0
MAX_VERSION = 6
ERRORS: tuple[ErrorCode, ...] = (
    ErrorCode.INVALID_REQUEST, ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.GROUP_AUTHORIZATION_FAILED, ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
)

GROUP = 0
TRANSACTION = 1


def _lookup(ctx: RequestContext, key: str, key_type: int) -> tuple[ErrorCode, int, str, int]:
    server = ctx.server
    if key_type not in (GROUP, TRANSACTION):
        return ErrorCode.INVALID_REQUEST, -1, "", -1
    if server.authorizer is not None:
        if key_type == GROUP and not ctx.authorize(AclOperation.DESCRIBE, ResourceType.GROUP, key):
            return ErrorCode.GROUP_AUTHORIZATION_FAILED, -1, "", -1
        if key_type == TRANSACTION and not ctx.authorize(AclOperation.DESCRIBE, ResourceType.TRANSACTIONAL_ID, key):
            return ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, -1, "", -1
    if key_type == GROUP:
        groups = server.group_coordinator
        if not groups.offsets_topic_ready():
            groups.ensure_offsets_topic()
            return ErrorCode.COORDINATOR_NOT_AVAILABLE, -1, "", -1
        pm = server.metadata_cache.partition(GROUP_METADATA_TOPIC, groups.partition_for(key))
    else:
        txns = server.transaction_coordinator
        if not txns.topic_ready():
            txns.ensure_topic()
            return ErrorCode.COORDINATOR_NOT_AVAILABLE, -1, "", -1
        pm = server.metadata_cache.partition(TRANSACTION_STATE_TOPIC, txns.partition_for(key))
    if pm is None or pm.leader < 0:
        return ErrorCode.COORDINATOR_NOT_AVAILABLE, -1, "", -1
    ep = server.metadata_cache.alive_broker(pm.leader)
    ep = ep.on_listener(ctx.listener) if ep is not None else None
    if ep is None:
        return ErrorCode.COORDINATOR_NOT_AVAILABLE, -1, "", -1
    return ErrorCode.NONE, ep.broker_id, ep.host, ep.port


def handle(ctx: RequestContext, request: Any) -> Any:
    v = request.API_VERSION
    key_type = request.key_type if v >= 1 else GROUP
    if v < 4:
        err, node, host, port = _lookup(ctx, request.key, key_type)
        return response_for(request, throttle_time_ms=0, error_code=err,
                            error_message=None if err == ErrorCode.NONE else err.name,
                            node_id=node, host=host, port=port)
    Resp = response_type(request)
    coordinators = []
    for key in request.coordinator_keys:
        err, node, host, port = _lookup(ctx, key, key_type)
        coordinators.append(Resp.Coordinator(key=key, node_id=node, host=host, port=port, error_code=err,
                                             error_message=None if err == ErrorCode.NONE else err.name))
    return response_for(request, throttle_time_ms=0, coordinators=coordinators)

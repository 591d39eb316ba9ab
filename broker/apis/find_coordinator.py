"""FindCoordinator (key 10), versions 0–6.

Group keys (key_type 0) map to the leader of `__consumer_offsets` partition
abs(hashCode(group_id)) % offsets.topic.num.partitions, as in Kafka; the topic is created on first use,
and until its partition has a leader the answer is COORDINATOR_NOT_AVAILABLE (clients retry). v4+
batches several keys (`coordinator_keys`). Transaction keys (key_type 1) map the same way to the leader of
`__transaction_state` partition abs(hashCode(transactional_id)) % transaction.state.log.num.partitions, the
topic also created on first use. Share keys (key_type 2, KIP-932, v6 only: INVALID_REQUEST before) are
"groupId:topicId:partition" (INVALID_REQUEST unless three parts, a non-blank group, a base64 topic id and an
integer partition) and map to the leader of `__share_group_state` partition
abs(hashCode(key)) % share.coordinator.state.topic.num.partitions, the topic created on first use as well.
Unknown key types: INVALID_REQUEST. An empty group id or transactional id is
placed like any other, as Kafka 3.7 does (the group or transaction APIs then refuse it).
With an authorizer, as Kafka: a group key needs DESCRIBE on the
group (GROUP_AUTHORIZATION_FAILED), a transaction key DESCRIBE on the transactional id
(TRANSACTIONAL_ID_AUTHORIZATION_FAILED), a share key CLUSTER_ACTION on the cluster, as only brokers ask
(CLUSTER_AUTHORIZATION_FAILED).
"""

from __future__ import annotations

import re
from typing import Any

from broker.apis.base import RequestContext, response_for, response_type
from broker.coordinator.group.service import GROUP_METADATA_TOPIC
from broker.coordinator.share.records import ShareKey, parse_topic_id
from broker.coordinator.share.state import SHARE_GROUP_STATE_TOPIC
from broker.coordinator.transaction.state_manager import TRANSACTION_STATE_TOPIC
from broker.metadata.metadata_cache import PartitionMetadata
from broker.security.acl import AclOperation, ResourceType
from protocol.errors import ErrorCode

API_KEY = 10
MIN_VERSION = 0
MAX_VERSION = 6
ERRORS: tuple[ErrorCode, ...] = (
    ErrorCode.INVALID_REQUEST, ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.GROUP_AUTHORIZATION_FAILED, ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
    ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
)

GROUP = 0
TRANSACTION = 1
SHARE = 2
_JAVA_INT = re.compile(r"[+-]?[0-9]+")  # what Integer.parseInt takes (Python's int() takes more)


def share_key(key: str) -> ShareKey | None:
    """A share coordinator key parsed as Kafka's SharePartitionKey.validate accepts it, else None."""
    parts = key.split(":")
    while len(parts) > 1 and parts[-1] == "":  # as Java's String.split drops trailing empty strings
        parts.pop()
    if len(parts) != 3 or not parts[0].strip():
        return None
    if not _JAVA_INT.fullmatch(parts[2]) or not -(1 << 31) <= int(parts[2]) < (1 << 31):
        return None
    try:
        return ShareKey(parts[0].strip(), parse_topic_id(parts[1]), int(parts[2]))
    except ValueError:
        return None


def _lookup(ctx: RequestContext, key: str, key_type: int, version: int) -> tuple[ErrorCode, int, str, int]:
    server = ctx.server
    if key_type not in (GROUP, TRANSACTION, SHARE) or (key_type == SHARE and version < 6):
        return ErrorCode.INVALID_REQUEST, -1, "", -1
    if key_type == SHARE:
        if not ctx.authorize_cluster(AclOperation.CLUSTER_ACTION):
            return ErrorCode.CLUSTER_AUTHORIZATION_FAILED, -1, "", -1
        parsed = share_key(key)
        if parsed is None:
            return ErrorCode.INVALID_REQUEST, -1, "", -1
        shares = server.share_coordinator
        if not shares.topic_ready():
            shares.ensure_topic()
            return ErrorCode.COORDINATOR_NOT_AVAILABLE, -1, "", -1
        return _leader(ctx, server.metadata_cache.partition(SHARE_GROUP_STATE_TOPIC, shares.partition_for(parsed)))
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
    return _leader(ctx, pm)


def _leader(ctx: RequestContext, pm: PartitionMetadata | None) -> tuple[ErrorCode, int, str, int]:
    server = ctx.server
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
        err, node, host, port = _lookup(ctx, request.key, key_type, v)
        return response_for(request, throttle_time_ms=0, error_code=err,
                            error_message=None if err == ErrorCode.NONE else err.name,
                            node_id=node, host=host, port=port)
    Resp = response_type(request)
    coordinators = []
    for key in request.coordinator_keys:
        err, node, host, port = _lookup(ctx, key, key_type, v)
        coordinators.append(Resp.Coordinator(key=key, node_id=node, host=host, port=port, error_code=err,
                                             error_message=None if err == ErrorCode.NONE else err.name))
    return response_for(request, throttle_time_ms=0, coordinators=coordinators)

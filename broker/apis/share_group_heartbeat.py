"""ShareGroupHeartbeat (key 76), version 1 — KIP-932 share groups (Kafka 4.1 removed the early-access v0).

A share-group member's one request: joining (epoch 0, with its own member id and its subscribed topic names),
heartbeating with its member epoch, leaving (epoch -1). The coordinator assigns with the share-group simple
assignor (a partition may be shared by several members); the answer carries the member's epoch, the heartbeat
interval (`group.share.heartbeat.interval.ms`) and its assignment on joining or when it changed. Sessions last
`group.share.session.timeout.ms`; at most `group.share.max.size` members.
Errors, as Kafka 4.1: INVALID_REQUEST (no group or member id, an empty rack, no subscription on joining, an
epoch below -1); NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE as every group API;
GROUP_ID_NOT_FOUND (the id belongs to a classic or consumer group, or a member heartbeats to a group that does
not exist), GROUP_MAX_SIZE_REACHED, UNKNOWN_MEMBER_ID, FENCED_MEMBER_EPOCH.
With an authorizer: READ on the group, else GROUP_AUTHORIZATION_FAILED; DESCRIBE on every subscribed topic,
else TOPIC_AUTHORIZATION_FAILED.
Gaps: the group lives in the coordinator's memory (broker/coordinator/group/share_requests.py), not yet in
`__consumer_offsets`; `group.share.*` dynamic group configs are not read.
"""

from __future__ import annotations

from typing import Any

from broker.apis.base import RequestContext, response_for, response_type
from broker.security.acl import AclOperation, ResourceType
from protocol.errors import ErrorCode

API_KEY = 76
MIN_VERSION = 1
MAX_VERSION = 1
ERRORS: tuple[ErrorCode, ...] = (
    ErrorCode.INVALID_REQUEST, ErrorCode.NOT_COORDINATOR, ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
    ErrorCode.COORDINATOR_NOT_AVAILABLE, ErrorCode.GROUP_ID_NOT_FOUND, ErrorCode.GROUP_MAX_SIZE_REACHED,
    ErrorCode.UNKNOWN_MEMBER_ID, ErrorCode.FENCED_MEMBER_EPOCH,
    ErrorCode.GROUP_AUTHORIZATION_FAILED, ErrorCode.TOPIC_AUTHORIZATION_FAILED,
)


async def handle(ctx: RequestContext, request: Any) -> Any:
    refusal = _refusal(ctx, request)
    if refusal:
        return response_for(request, throttle_time_ms=0, error_code=refusal, member_epoch=0,
                            heartbeat_interval_ms=0)
    coordinator = ctx.server.group_coordinator.coordinator
    result = await coordinator.share_group_heartbeat(
        request.group_id, request.member_id or "", request.member_epoch, rack_id=request.rack_id,
        subscribed_topic_names=(None if request.subscribed_topic_names is None
                                else list(request.subscribed_topic_names)),
        client_id=ctx.client_id or "", client_host=f"/{ctx.client_host}")
    assignment = None
    if result.assignment is not None:
        cls = response_type(request).Assignment
        assignment = cls(topic_partitions=[
            cls.TopicPartitions(topic_id=tid, partitions=sorted(parts))
            for tid, parts in sorted(result.assignment.items(), key=lambda kv: str(kv[0])) if parts])
    return response_for(request, throttle_time_ms=0, error_code=result.error_code,
                        error_message=result.error_message, member_id=result.member_id,
                        member_epoch=result.member_epoch, heartbeat_interval_ms=result.heartbeat_interval_ms,
                        assignment=assignment)


def _refusal(ctx: RequestContext, request: Any) -> int:
    if ctx.server.authorizer is None:
        return ErrorCode.NONE
    if not ctx.authorize(AclOperation.READ, ResourceType.GROUP, request.group_id):
        return ErrorCode.GROUP_AUTHORIZATION_FAILED
    names = set(request.subscribed_topic_names or [])
    if names and len(ctx.filter_authorized(AclOperation.DESCRIBE, ResourceType.TOPIC, names)) < len(names):
        return ErrorCode.TOPIC_AUTHORIZATION_FAILED
    return ErrorCode.NONE

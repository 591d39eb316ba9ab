"""OffsetFetch (key 9), versions 0–9.

A group's committed offsets (with leader epoch v5+ and metadata) for the given partitions, or all of
them (null topics, v2+); unknown partitions answer offset -1. v8+ asks for several groups at once.
`require_stable` (v7+, KIP-447): a partition with a transactional commit still waiting for its
transaction's marker answers UNSTABLE_OFFSET_COMMIT (offset -1); without it the last committed offset.
Errors (per group from v8, for the request in v2-v7, per partition in v0-v1): INVALID_GROUP_ID,
NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS and COORDINATOR_NOT_AVAILABLE, as every group API.
A KIP-848 consumer group checks the member id and epoch a member sends (v9+, Kafka 3.9's
ConsumerGroup.validateOffsetFetch): UNKNOWN_MEMBER_ID, STALE_MEMBER_EPOCH; none given (the admin client) passes.
With an authorizer (Kafka): DESCRIBE on the group (else GROUP_AUTHORIZATION_FAILED) and on each topic:
named topics answer TOPIC_AUTHORIZATION_FAILED, and are left out when all topics are asked for.
"""

from __future__ import annotations

from typing import Any

from broker.apis.base import RequestContext
from broker.coordinator.group import api as group_api
from broker.security.acl import AclOperation, ResourceType
from protocol.errors import ErrorCode

API_KEY = 9
MIN_VERSION = 0
MAX_VERSION = 9
ERRORS: tuple[ErrorCode, ...] = (
    ErrorCode.INVALID_GROUP_ID, ErrorCode.NOT_COORDINATOR, ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
    ErrorCode.COORDINATOR_NOT_AVAILABLE, ErrorCode.UNSTABLE_OFFSET_COMMIT,
    ErrorCode.UNKNOWN_MEMBER_ID, ErrorCode.STALE_MEMBER_EPOCH,
    ErrorCode.GROUP_AUTHORIZATION_FAILED, ErrorCode.TOPIC_AUTHORIZATION_FAILED,
)


async def handle(ctx: RequestContext, request: Any) -> Any:
    coordinator = ctx.server.group_coordinator.coordinator
    if ctx.server.authorizer is None:
        return await group_api.offset_fetch(coordinator, request, request.API_VERSION)
    # Kafka: DESCRIBE on the group, then DESCRIBE on each topic.
    return await group_api.offset_fetch(
        coordinator, request, request.API_VERSION,
        lambda group: ErrorCode.NONE if ctx.authorize(AclOperation.DESCRIBE, ResourceType.GROUP, group)
        else ErrorCode.GROUP_AUTHORIZATION_FAILED,
        lambda topic: ErrorCode.NONE if ctx.authorize(AclOperation.DESCRIBE, ResourceType.TOPIC, topic)
        else ErrorCode.TOPIC_AUTHORIZATION_FAILED)

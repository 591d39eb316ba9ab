"""OffsetCommit (key 8), versions 0–9.

Commits offsets (with leader epoch v6+ and metadata) for a group, checked against its generation and
member (ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID, REBALANCE_IN_PROGRESS, FENCED_INSTANCE_ID v7+);
simple consumers commit with generation -1 and an empty member id. Stored in `__consumer_offsets`
and acknowledged once committed there. Metadata over `offset.metadata.max.bytes`:
OFFSET_METADATA_TOO_LARGE. v2–v4 `retention_time_ms` is honoured. A partition the broker's metadata does not
know (unknown topic or partition index): UNKNOWN_TOPIC_OR_PARTITION, checked before the group, in every
version, as Kafka 3.7 does. As every group API: INVALID_GROUP_ID (a group id too long to store),
NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE; REBALANCE_IN_PROGRESS for a member
between JoinGroup and SyncGroup; a commit too large for `__consumer_offsets`: INVALID_COMMIT_OFFSET_SIZE.
A KIP-848 consumer group (Kafka 3.9's ConsumerGroup.validateOffsetCommit): a member commits with its member id
and member epoch (v9+): UNKNOWN_MEMBER_ID, STALE_MEMBER_EPOCH for another epoch, UNSUPPORTED_VERSION for a
member's commit below v9; an empty consumer group takes commits with epoch -1. A classic member of a consumer
group commits with its generation (its member epoch) in any version: ILLEGAL_GENERATION for another one.
With an authorizer (Kafka): READ on the group (else every partition GROUP_AUTHORIZATION_FAILED) and
READ on each topic (else TOPIC_AUTHORIZATION_FAILED).
"""

from __future__ import annotations

from typing import Any

from broker.apis.base import RequestContext
from broker.coordinator.group import api as group_api
from broker.security.acl import AclOperation, ResourceType
from protocol.errors import ErrorCode

API_KEY = 8
MIN_VERSION = 0
MAX_VERSION = 9
ERRORS: tuple[ErrorCode, ...] = (
    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode.INVALID_GROUP_ID, ErrorCode.NOT_COORDINATOR,
    ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, ErrorCode.COORDINATOR_NOT_AVAILABLE, ErrorCode.ILLEGAL_GENERATION,
    ErrorCode.UNKNOWN_MEMBER_ID, ErrorCode.FENCED_INSTANCE_ID, ErrorCode.REBALANCE_IN_PROGRESS,
    ErrorCode.OFFSET_METADATA_TOO_LARGE, ErrorCode.INVALID_COMMIT_OFFSET_SIZE,
    ErrorCode.STALE_MEMBER_EPOCH, ErrorCode.UNSUPPORTED_VERSION,
    ErrorCode.GROUP_AUTHORIZATION_FAILED, ErrorCode.TOPIC_AUTHORIZATION_FAILED,
)


async def handle(ctx: RequestContext, request: Any) -> Any:
    coordinator = ctx.server.group_coordinator.coordinator
    cache = ctx.server.metadata_cache
    refused = _refusal(ctx, request)
    return await group_api.offset_commit(coordinator, request, request.API_VERSION,
                                         lambda topic, partition: cache.partition(topic, partition) is not None,
                                         refused)


def _refusal(ctx: RequestContext, request: Any) -> group_api.TopicRefusal:
    """Kafka's checks: READ on the group (else every partition GROUP_AUTHORIZATION_FAILED), then READ on
    each topic (else its partitions TOPIC_AUTHORIZATION_FAILED)."""
    if ctx.server.authorizer is None:
        return lambda topic: ErrorCode.NONE
    if not ctx.authorize(AclOperation.READ, ResourceType.GROUP, request.group_id):
        return lambda topic: ErrorCode.GROUP_AUTHORIZATION_FAILED
    allowed = ctx.filter_authorized(AclOperation.READ, ResourceType.TOPIC, (t.name for t in request.topics or []))
    return lambda topic: ErrorCode.NONE if topic in allowed else ErrorCode.TOPIC_AUTHORIZATION_FAILED

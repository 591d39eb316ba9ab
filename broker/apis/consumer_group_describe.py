"""ConsumerGroupDescribe (key 69), version 0 — KIP-848 consumer groups.

Per group: state (Empty, Assigning, Reconciling, Stable), group epoch, target assignment epoch, the assignor
in use, and each member's ids, rack, epoch, client, subscription, current and target assignment (topic ids
with their names). Per group errors, as Kafka: INVALID_GROUP_ID (an empty id), NOT_COORDINATOR,
COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE, GROUP_ID_NOT_FOUND (no group, or a classic one).
With an authorizer: DESCRIBE on each group, else GROUP_AUTHORIZATION_FAILED for it; then, as Kafka 4.0
(KAFKA-18813), DESCRIBE on every topic named in a member's current or target assignment (not its
subscription), else the group is answered TOPIC_AUTHORIZATION_FAILED with Kafka's message and nothing else
(no members, epochs, state or operations), so the topics stay hidden; other groups of the request are
unaffected. Authorized operations (when asked) are the principal's.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from broker.apis.base import RequestContext
from broker.coordinator.group import api as group_api
from broker.security.acl import AclOperation, ResourceType
from protocol.errors import ErrorCode

API_KEY = 69
MIN_VERSION = 0
MAX_VERSION = 0
ERRORS: tuple[ErrorCode, ...] = (
    ErrorCode.INVALID_GROUP_ID, ErrorCode.NOT_COORDINATOR, ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
    ErrorCode.COORDINATOR_NOT_AVAILABLE, ErrorCode.GROUP_ID_NOT_FOUND,
    ErrorCode.GROUP_AUTHORIZATION_FAILED, ErrorCode.TOPIC_AUTHORIZATION_FAILED,
)

# Kafka's message for a group hidden because of its topics (shared with ShareGroupDescribe).
TOPICS_DENIED_MESSAGE = "The group has described topic(s) that the client is not authorized to describe."


async def handle(ctx: RequestContext, request: Any) -> Any:
    coordinator = ctx.server.group_coordinator.coordinator
    response = await group_api.consumer_group_describe(
        coordinator, request, request.API_VERSION,
        lambda group: ErrorCode.NONE if ctx.authorize(AclOperation.DESCRIBE, ResourceType.GROUP, group)
        else ErrorCode.GROUP_AUTHORIZATION_FAILED,
        lambda group: ctx.authorized_operations(ResourceType.GROUP, group))
    if ctx.server.authorizer is not None:
        response.groups = [hide_if_topics_denied(ctx, group, (
            tp.topic_name for m in group.members
            for assignment in (m.assignment, m.target_assignment) for tp in assignment.topic_partitions))
            for group in response.groups]
    return response


def hide_if_topics_denied(ctx: RequestContext, group: Any, topics: Iterable[str]) -> Any:
    """`group`, or, when the principal may not DESCRIBE one of `topics`, a TOPIC_AUTHORIZATION_FAILED
    group in its place. Checked per group: denying one group's topics must not hide another group."""
    names = set(topics)
    if group.error_code != ErrorCode.NONE or ctx.filter_authorized(
            AclOperation.DESCRIBE, ResourceType.TOPIC, names) == names:
        return group
    return type(group)(error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED, error_message=TOPICS_DENIED_MESSAGE,
                       group_id=group.group_id, members=[])

"""ShareGroupDescribe (key 77), version 1 — KIP-932 share groups (Kafka 4.1; v0 was 4.0's early access).

Per group: state (Empty or Stable), group epoch, assignment epoch, the assignor ("simple"), and each member's
id, rack, epoch, client id and host, subscribed topic names and assignment (topic ids with their names).
Per group errors, as Kafka: INVALID_GROUP_ID (an empty id), NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS,
COORDINATOR_NOT_AVAILABLE, GROUP_ID_NOT_FOUND (no share group of that id).
With an authorizer: DESCRIBE on each group, else GROUP_AUTHORIZATION_FAILED for it; then, as Kafka 4.1
(KAFKA-18817), DESCRIBE on every topic named in a member's assignment (not its subscription), else the group
is answered TOPIC_AUTHORIZATION_FAILED with Kafka's message and nothing else (no members, epochs, state or
operations); other groups of the request are unaffected. Authorized operations (when asked) are the
principal's.
"""

from __future__ import annotations

import uuid
from typing import Any

from broker.apis.base import RequestContext, response_for, response_type
from broker.apis.consumer_group_describe import hide_if_topics_denied
from broker.security.acl import AclOperation, ResourceType
from protocol.errors import ErrorCode

API_KEY = 77
MIN_VERSION = 1
MAX_VERSION = 1
ERRORS: tuple[ErrorCode, ...] = (
    ErrorCode.INVALID_GROUP_ID, ErrorCode.NOT_COORDINATOR, ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
    ErrorCode.COORDINATOR_NOT_AVAILABLE, ErrorCode.GROUP_ID_NOT_FOUND,
    ErrorCode.GROUP_AUTHORIZATION_FAILED, ErrorCode.TOPIC_AUTHORIZATION_FAILED,
)


async def handle(ctx: RequestContext, request: Any) -> Any:
    coordinator = ctx.server.group_coordinator.coordinator
    Resp = response_type(request)
    Group = Resp.DescribedGroup
    Member = Group.Member
    Assignment = Member.Assignment
    names = coordinator.topics_image.name_of
    ids = list(request.group_ids or [])
    refused = {g for g in ids if not ctx.authorize(AclOperation.DESCRIBE, ResourceType.GROUP, g)}
    described = {g: (code, group) for g, code, group in
                 await coordinator.share_group_describe([g for g in ids if g not in refused])}
    groups = []
    for group_id in ids:
        code, group = (ErrorCode.GROUP_AUTHORIZATION_FAILED, None) if group_id in refused else described[group_id]
        if group is None:
            message = f"Group {group_id} not found." if code == ErrorCode.GROUP_ID_NOT_FOUND else None
            groups.append(Group(error_code=code, error_message=message, group_id=group_id, group_state="",
                                group_epoch=0, assignment_epoch=0, assignor_name="", members=[]))
            continue
        members = [Member(
            member_id=m.member_id, rack_id=m.rack_id, member_epoch=m.member_epoch, client_id=m.client_id,
            client_host=m.client_host, subscribed_topic_names=list(m.subscribed_topic_names),
            assignment=Assignment(topic_partitions=_topics(m.assigned, Assignment.TopicPartitions, names)))
            for m in group.members.values()]
        ops = -(2**31)
        if request.include_authorized_operations:
            ops = sum(1 << op for op in ctx.authorized_operations(ResourceType.GROUP, group_id))
        groups.append(Group(error_code=ErrorCode.NONE, group_id=group_id, group_state=group.state,
                            group_epoch=group.group_epoch, assignment_epoch=group.assignment_epoch,
                            assignor_name="simple", members=members, authorized_operations=ops))
    if ctx.server.authorizer is not None:
        groups = [hide_if_topics_denied(ctx, group, (
            tp.topic_name for m in group.members for tp in m.assignment.topic_partitions)) for group in groups]
    return response_for(request, throttle_time_ms=0, groups=groups)


def _topics(assignment: dict[uuid.UUID, frozenset[int]], cls: Any, names: Any) -> list[Any]:
    return [cls(topic_id=tid, topic_name=names(tid) or "", partitions=sorted(parts))
            for tid, parts in sorted(assignment.items(), key=lambda kv: str(kv[0])) if parts]

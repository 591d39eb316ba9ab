"""AlterShareGroupOffsets (key 91), version 0 — KIP-932's reset of share-partition start offsets (Kafka 4.1;
`kafka-share-groups.sh --reset-offsets`, Admin.alterShareGroupOffsets).

The group coordinator records the partitions as initializing, initializes their share-partition state with the
new start offsets through the persister and records them as initialized (broker/coordinator/group/
share_offsets.py); what this broker's share-partition leaders held for them is dropped, so the next ShareFetch
reads the new state. As Kafka 4.2+, a share group that does not exist yet is created, empty, with that state:
an admin may set where a group starts before any consumer joins it.
Errors: top level INVALID_GROUP_ID (an empty group id), NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS,
COORDINATOR_NOT_AVAILABLE, GROUP_ID_NOT_FOUND (the id is a classic or consumer group's), NON_EMPTY_GROUP (members
remain), GROUP_AUTHORIZATION_FAILED (READ on the group, with an authorizer); per partition
TOPIC_AUTHORIZATION_FAILED (READ on the topic), UNKNOWN_TOPIC_OR_PARTITION (an unknown topic, no topic id, or a
partition beyond its count), or the persister's error.
A share-partition leader on another broker reads the new state once the group's last share session there has
ended (broker/share/manager.py).
Gaps: one where share sessions of the empty group remain open keeps what it holds until its next state write is
fenced.
"""

from __future__ import annotations

import uuid
from typing import Any

from broker.apis.base import RequestContext, response_for, response_type
from broker.coordinator.group.share_offsets import alter_share_group_offsets
from broker.security.acl import AclOperation, ResourceType
from broker.share.manager import share_partition_manager
from protocol.errors import ErrorCode
from storage import TopicPartition

API_KEY = 91
MIN_VERSION = 0
MAX_VERSION = 0
ERRORS: tuple[ErrorCode, ...] = (
    ErrorCode.INVALID_GROUP_ID, ErrorCode.NOT_COORDINATOR, ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
    ErrorCode.COORDINATOR_NOT_AVAILABLE, ErrorCode.GROUP_ID_NOT_FOUND, ErrorCode.NON_EMPTY_GROUP,
    ErrorCode.GROUP_AUTHORIZATION_FAILED, ErrorCode.TOPIC_AUTHORIZATION_FAILED, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
)
_ZERO = uuid.UUID(int=0)


async def handle(ctx: RequestContext, request: Any) -> Any:
    Topic = response_type(request).AlterShareGroupOffsetsResponseTopic
    Partition = Topic.AlterShareGroupOffsetsResponsePartition
    group_id = request.group_id
    if not ctx.authorize(AclOperation.READ, ResourceType.GROUP, group_id):
        return response_for(request, throttle_time_ms=0, error_code=ErrorCode.GROUP_AUTHORIZATION_FAILED,
                            responses=[])
    denied, asked = [], []
    for t in request.topics or []:
        rows = [(p.partition_index, p.start_offset) for p in t.partitions or []]
        if ctx.authorize(AclOperation.READ, ResourceType.TOPIC, t.topic_name):
            asked.append((t.topic_name, rows))
        else:
            denied.append(Topic(topic_name=t.topic_name, topic_id=_ZERO, partitions=[Partition(
                partition_index=p, error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED) for p, _ in rows]))
    coordinator = ctx.server.group_coordinator.coordinator
    error, message, results = await alter_share_group_offsets(coordinator, group_id, asked)
    if error != ErrorCode.NONE:
        return response_for(request, throttle_time_ms=0, error_code=error, error_message=message, responses=[])
    manager = share_partition_manager(ctx.server)
    manager.forget(group_id, [TopicPartition(name, p) for name, tid, rows in results if tid is not None
                              for p, code, _ in rows if code == ErrorCode.NONE])
    topics = [Topic(topic_name=name, topic_id=tid or _ZERO, partitions=[
        Partition(partition_index=p, error_code=code, error_message=msg) for p, code, msg in rows])
        for name, tid, rows in results]
    return response_for(request, throttle_time_ms=0, error_code=0, responses=[*topics, *denied])

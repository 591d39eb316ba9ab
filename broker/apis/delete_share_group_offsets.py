"""DeleteShareGroupOffsets (key 92), version 0 — KIP-932's deletion of a share group's state for whole topics
(Kafka 4.1; `kafka-share-groups.sh --delete-offsets`, Admin.deleteShareGroupOffsets).

The group coordinator moves the topics from initialized to deleting, deletes their partitions' state through
the persister and forgets them (broker/coordinator/group/share_offsets.py); what this broker's share-partition
leaders held for them is dropped.
Errors: top level INVALID_GROUP_ID (an empty group id, as Kafka 4.2+), NOT_COORDINATOR,
COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE, GROUP_ID_NOT_FOUND (no share group of that id: none at
all, or a classic or consumer group's), NON_EMPTY_GROUP (members remain),
GROUP_AUTHORIZATION_FAILED (DELETE on the group, with an authorizer); per topic TOPIC_AUTHORIZATION_FAILED
(READ on the topic), UNKNOWN_TOPIC_OR_PARTITION (an unknown topic, or one the group has no state for; neither
answered with a topic id, as Kafka), or the persister's error.
"""

from __future__ import annotations

import uuid
from typing import Any

from broker.apis.base import RequestContext, response_for, response_type
from broker.coordinator.group.share_offsets import delete_share_group_offsets
from broker.security.acl import AclOperation, ResourceType
from broker.share.manager import share_partition_manager
from protocol.errors import ErrorCode

API_KEY = 92
MIN_VERSION = 0
MAX_VERSION = 0
ERRORS: tuple[ErrorCode, ...] = (
    ErrorCode.INVALID_GROUP_ID, ErrorCode.NOT_COORDINATOR, ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
    ErrorCode.COORDINATOR_NOT_AVAILABLE, ErrorCode.GROUP_ID_NOT_FOUND, ErrorCode.NON_EMPTY_GROUP,
    ErrorCode.GROUP_AUTHORIZATION_FAILED, ErrorCode.TOPIC_AUTHORIZATION_FAILED, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
)
_ZERO = uuid.UUID(int=0)


async def handle(ctx: RequestContext, request: Any) -> Any:
    Topic = response_type(request).DeleteShareGroupOffsetsResponseTopic
    group_id = request.group_id
    if not ctx.authorize(AclOperation.DELETE, ResourceType.GROUP, group_id):
        return response_for(request, throttle_time_ms=0, error_code=ErrorCode.GROUP_AUTHORIZATION_FAILED,
                            responses=[])
    names = [t.topic_name for t in request.topics or []]
    allowed = [n for n in names if ctx.authorize(AclOperation.READ, ResourceType.TOPIC, n)]
    denied = [Topic(topic_name=n, topic_id=_ZERO, error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED)
              for n in names if n not in allowed]
    coordinator = ctx.server.group_coordinator.coordinator
    error, message, results = await delete_share_group_offsets(coordinator, group_id, allowed)
    if error != ErrorCode.NONE:
        return response_for(request, throttle_time_ms=0, error_code=error, error_message=message, responses=[])
    manager = share_partition_manager(ctx.server)
    manager.forget(group_id, [tp for name, tid, code, _ in results if tid is not None and code == ErrorCode.NONE
                              for tp in manager.partitions_of(group_id, name)])
    topics = [Topic(topic_name=name, topic_id=tid or _ZERO, error_code=code, error_message=msg)
              for name, tid, code, msg in results]
    return response_for(request, throttle_time_ms=0, error_code=0, responses=[*topics, *denied])

"""OffsetDelete: every code of `broker.apis.offset_delete.ERRORS`, over a real socket with our codec."""

from __future__ import annotations

from typing import Any

from broker.apis import offset_delete
from protocol import ApiKey, request_class
from protocol.errors import ErrorCode

from .acl_support import DENIED_TOPIC, denied, partial
from .group_support import Member, coordinator_ready, loading, not_coordinator, shut_down, subscription
from .support import Brokers, Producer, error_path_test

Req = request_class(ApiKey.OFFSET_DELETE)
T = Req.OffsetDeleteRequestTopic
TOPIC = "offset-delete-plain"


def send(b: Brokers, group: str, port: int | None = None) -> Any:
    if port is None:
        coordinator_ready(b, b.single.port, group or "any")  # an empty id is refused before any coordinator
    return b.call(Req[0](group_id=group, topics=[T(name=TOPIC, partitions=[
        T.OffsetDeleteRequestPartition(partition_index=0)])]), port)


PRODUCERS: dict[ErrorCode, Producer] = {
    ErrorCode.INVALID_GROUP_ID: lambda b: send(b, ""),
    ErrorCode.NOT_COORDINATOR: lambda b: send(b, "offset-delete-any", port=not_coordinator(b)),
    ErrorCode.COORDINATOR_LOAD_IN_PROGRESS: lambda b: send(b, "offset-delete-loading",
                                                           port=loading(b, "offset-delete-loading")),
    ErrorCode.COORDINATOR_NOT_AVAILABLE: lambda b: send(b, "offset-delete-any", port=shut_down(b)),
    ErrorCode.GROUP_ID_NOT_FOUND: lambda b: send(b, "offset-delete-never-existed"),
    ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC: lambda b: send(
        b, Member.join(b, "offset-delete-subscribed", metadata=subscription(TOPIC)).group),
    ErrorCode.NON_EMPTY_GROUP: lambda b: send(
        b, Member.join(b, "offset-delete-connect", protocol_type="connect").group),
}

def delete_denied_topic(b: Brokers) -> Any:
    """A group with committed offsets (so it exists), asked to delete those of a topic it may not READ."""
    port = partial(b)
    group, topic = "offset-delete-acl", b.topic("offset-delete-acl-topic", port=port)
    coordinator_ready(b, port, group)
    C = request_class(ApiKey.OFFSET_COMMIT)
    committed = b.call(C[9](group_id=group, generation_id_or_member_epoch=-1, member_id="", group_instance_id=None,
                            topics=[C.OffsetCommitRequestTopic(name=topic, partitions=[
                                C.OffsetCommitRequestTopic.OffsetCommitRequestPartition(
                                    partition_index=0, committed_offset=1, committed_metadata="")])]), port)
    assert committed.topics[0].partitions[0].error_code == ErrorCode.NONE, committed
    return b.call(Req[0](group_id=group, topics=[T(name=DENIED_TOPIC, partitions=[
        T.OffsetDeleteRequestPartition(partition_index=0)])]), port)

PRODUCERS.update({
    ErrorCode.GROUP_AUTHORIZATION_FAILED: lambda b: send(b, "offset-delete-denied", denied(b)),
    ErrorCode.TOPIC_AUTHORIZATION_FAILED: delete_denied_topic,
})

test_errors = error_path_test(offset_delete, PRODUCERS)

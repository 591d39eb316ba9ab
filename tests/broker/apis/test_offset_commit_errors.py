"""OffsetCommit: every code of `broker.apis.offset_commit.ERRORS`, over a real socket with our codec."""

from __future__ import annotations

from typing import Any

from broker.apis import offset_commit
from protocol import ApiKey, request_class
from protocol.errors import ErrorCode

from .acl_support import DENIED_TOPIC, denied, partial
from .group_support import (
    ConsumerMember,
    Member,
    coordinator_ready,
    loading,
    not_coordinator,
    shut_down,
    small_offsets_topic,
)
from .support import Brokers, Producer, error_path_test

Req = request_class(ApiKey.OFFSET_COMMIT)
Topic = Req.OffsetCommitRequestTopic
TOPIC = "offset-commit-plain"


def send(b: Brokers, group: str, *, member_id: str = "", generation: int = -1, instance: str | None = None,
         topic: str = TOPIC, metadata: str = "", port: int | None = None, version: int = 9) -> Any:
    b.topic(TOPIC, port=port)
    if port is None:
        coordinator_ready(b, b.single.port, group)
    return b.call(Req[version](group_id=group, generation_id_or_member_epoch=generation, member_id=member_id,
                         group_instance_id=instance, topics=[Topic(name=topic, partitions=[
                             Topic.OffsetCommitRequestPartition(partition_index=0, committed_offset=1,
                                                                committed_metadata=metadata)])]), port)


def between_join_and_sync(b: Brokers) -> Any:
    member = Member.join(b, "commit-completing", sync=False)
    return send(b, member.group, member_id=member.member_id, generation=member.generation)


def too_large_to_store(b: Brokers) -> Any:
    # 3000 bytes of metadata (under offset.metadata.max.bytes) make the commit's record too large
    return send(b, "commit-large", metadata="m" * 3000, port=small_offsets_topic(b))


PRODUCERS: dict[ErrorCode, Producer] = {
    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION: lambda b: send(b, "commit-any", topic="offset-commit-missing"),
    ErrorCode.INVALID_GROUP_ID: lambda b: send(b, "g" * 40000),
    ErrorCode.NOT_COORDINATOR: lambda b: send(b, "commit-any", port=not_coordinator(b)),
    ErrorCode.COORDINATOR_LOAD_IN_PROGRESS: lambda b: send(b, "commit-loading", port=loading(b, "commit-loading")),
    ErrorCode.COORDINATOR_NOT_AVAILABLE: lambda b: send(b, "commit-any", port=shut_down(b)),
    ErrorCode.ILLEGAL_GENERATION: lambda b: send(b, "commit-never-joined", member_id="m", generation=3),
    ErrorCode.UNKNOWN_MEMBER_ID: lambda b: send(b, Member.join(b, "commit-unknown").group, member_id="nobody",
                                                generation=1),
    ErrorCode.FENCED_INSTANCE_ID: lambda b: send(b, Member.join(b, "commit-static", instance="static-1").group,
                                                 member_id="someone-else", generation=1, instance="static-1"),
    ErrorCode.REBALANCE_IN_PROGRESS: between_join_and_sync,
    ErrorCode.OFFSET_METADATA_TOO_LARGE: lambda b: send(b, "commit-metadata", metadata="m" * 5000),
    ErrorCode.INVALID_COMMIT_OFFSET_SIZE: too_large_to_store,
    # KIP-848 consumer group members
    ErrorCode.STALE_MEMBER_EPOCH: lambda b: send(b, (m := ConsumerMember.join(b, "commit-cg-stale")).group,
                                                 member_id=m.member_id, generation=m.epoch + 1),
    ErrorCode.UNSUPPORTED_VERSION: lambda b: send(b, (m := ConsumerMember.join(b, "commit-cg-v8")).group,
                                                  member_id=m.member_id, generation=m.epoch, version=8),
}

def commit_raw(b: Brokers, port: int, topic: str) -> Any:
    """An OffsetCommit to a broker with the authorizer (the harness cannot create topics on a denying one)."""
    return b.call(Req[9](group_id="commit-acl", generation_id_or_member_epoch=-1, member_id="", group_instance_id=None,
                         topics=[Topic(name=topic, partitions=[Topic.OffsetCommitRequestPartition(
                             partition_index=0, committed_offset=1, committed_metadata="")])]), port)

PRODUCERS.update({
    ErrorCode.GROUP_AUTHORIZATION_FAILED: lambda b: commit_raw(b, denied(b), "commit-denied"),
    ErrorCode.TOPIC_AUTHORIZATION_FAILED: lambda b: commit_raw(b, partial(b), DENIED_TOPIC),
})

test_errors = error_path_test(offset_commit, PRODUCERS)

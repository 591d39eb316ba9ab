"""AlterShareGroupOffsets: every code of `broker.apis.alter_share_group_offsets.ERRORS`, over a real socket
with our codec."""

from __future__ import annotations

from typing import Any

from broker.apis import alter_share_group_offsets
from protocol import ApiKey, request_class
from protocol.errors import ErrorCode

from .acl_support import denied
from .group_support import Member, coordinator_ready, loading, not_coordinator, shut_down
from .share_support import read_denied_topic
from .support import Brokers, Producer, error_path_test
from .test_describe_share_group_offsets_errors import share_group

Req = request_class(ApiKey.ALTER_SHARE_GROUP_OFFSETS)
Heartbeat = request_class(ApiKey.SHARE_GROUP_HEARTBEAT)


def alter(b: Brokers, group: str, topic: str = "any", port: int | None = None) -> Any:
    T = Req.AlterShareGroupOffsetsRequestTopic
    return b.call(Req[0](group_id=group, topics=[T(topic_name=topic, partitions=[
        T.AlterShareGroupOffsetsRequestPartition(partition_index=0, start_offset=0)])]), port)


def empty_share_group(b: Brokers, group: str, port: int | None = None) -> str:
    share_group(b, group, port)
    resp = b.call(Heartbeat[1](group_id=group, member_id="m1", member_epoch=-1), port)
    assert resp.error_code == ErrorCode.NONE, resp
    return group


def topic_denied(b: Brokers) -> Any:
    port, _ = read_denied_topic(b)
    return alter(b, empty_share_group(b, "asgo-acl", port), "share-read-denied", port)


PRODUCERS: dict[ErrorCode, Producer] = {
    ErrorCode.INVALID_GROUP_ID: lambda b: alter(b, ""),
    ErrorCode.NOT_COORDINATOR: lambda b: alter(b, "asgo-any", port=not_coordinator(b)),
    ErrorCode.COORDINATOR_LOAD_IN_PROGRESS: lambda b: alter(b, "asgo-loading", port=loading(b, "asgo-loading")),
    ErrorCode.COORDINATOR_NOT_AVAILABLE: lambda b: alter(b, "asgo-any", port=shut_down(b)),
    # A missing group is created (Kafka 4.2+); a classic group's id is not a share group's.
    ErrorCode.GROUP_ID_NOT_FOUND: lambda b: alter(b, Member.join(b, "asgo-classic").group),
    ErrorCode.NON_EMPTY_GROUP: lambda b: alter(b, share_group(b, "asgo-busy")),
    ErrorCode.GROUP_AUTHORIZATION_FAILED: lambda b: alter(b, "asgo-denied", port=denied(b)),
    ErrorCode.TOPIC_AUTHORIZATION_FAILED: topic_denied,
    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION: lambda b: (coordinator_ready(b, b.single.port, "asgo-unknown"),
                                                     alter(b, "asgo-unknown", "no-such-topic"))[1],
}

test_errors = error_path_test(alter_share_group_offsets, PRODUCERS)

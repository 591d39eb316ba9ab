"""OffsetDelete: every code of `broker.apis.offset_delete.ERRORS`, over a real socket with our codec."""

from __future__ import annotations

from typing import Any

from broker.apis import offset_delete
from protocol import ApiKey, request_class
from protocol.errors import ErrorCode

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

test_errors = error_path_test(offset_delete, PRODUCERS)

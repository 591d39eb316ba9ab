"""DeleteTopics: every code of `broker.apis.delete_topics.ERRORS`, over a real socket with our codec."""

from __future__ import annotations

import uuid
from typing import Any

from broker.apis import delete_topics
from protocol import ApiKey, request_class
from protocol.errors import ErrorCode

from .acl_support import denied
from .quota_support import mutation_quota_used_up
from .support import Brokers, Producer, error_path_test

Req = request_class(ApiKey.DELETE_TOPICS)


def send(b: Brokers, name: str | None, *, topic_id: uuid.UUID | None = None, timeout_ms: int = 30000,
         port: int | None = None) -> Any:
    return b.call(Req[6](topics=[Req.DeleteTopicState(name=name, topic_id=topic_id or uuid.UUID(int=0))],
                         timeout_ms=timeout_ms), port)


def deletion_disabled(b: Brokers) -> Any:
    other = b.other(delete_topic_enable="false")
    b.topic("delete-kept", port=other.port)
    return send(b, "delete-kept", port=other.port)


def throttled(b: Brokers) -> Any:
    port = mutation_quota_used_up(b)
    b.topic("delete-throttled", port=port)  # CreateTopics v4: permissive, created all the same
    return send(b, "delete-throttled", port=port)


PRODUCERS: dict[ErrorCode, Producer] = {
    ErrorCode.THROTTLING_QUOTA_EXCEEDED: throttled,
    ErrorCode.NOT_CONTROLLER: lambda b: send(b, "delete-elsewhere", port=b.not_controller_port()),
    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION: lambda b: send(b, "delete-missing"),
    ErrorCode.UNKNOWN_TOPIC_ID: lambda b: send(b, None, topic_id=uuid.uuid4()),
    ErrorCode.TOPIC_DELETION_DISABLED: deletion_disabled,
    ErrorCode.REQUEST_TIMED_OUT: lambda b: send(b, b.topic("delete-no-wait"), timeout_ms=0),
}

PRODUCERS.update({
    ErrorCode.TOPIC_AUTHORIZATION_FAILED: lambda b: send(b, "delete-denied", port=denied(b)),
})

test_errors = error_path_test(delete_topics, PRODUCERS)

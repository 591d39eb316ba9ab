"""Metadata: every code of `broker.apis.metadata.ERRORS`, over a real socket with our codec."""

from __future__ import annotations

import uuid
from typing import Any

from broker.apis import metadata
from protocol import ApiKey, request_class
from protocol.errors import ErrorCode
from tests.e2e.support import wait_until

from .acl_support import denied
from .support import WAITS_FOR_2, Brokers, Producer, error_path_test

Req = request_class(ApiKey.METADATA)


def send(b: Brokers, name: str | None, *, version: int = 12, auto_create: bool = False,
         topic_id: uuid.UUID | None = None, port: int | None = None) -> Any:
    return b.call(Req[version](topics=[Req.MetadataRequestTopic(name=name, topic_id=topic_id or uuid.UUID(int=0))],
                               allow_auto_topic_creation=auto_create), port)


def replica_not_available(b: Brokers) -> Any:
    # v0 lists only live replicas: with broker 2 dead (and not yet unlisted from the replicas) it says so
    b.broker_2_killed()
    port = b.cluster.ports[0]
    wait_until(lambda: 2 not in {br.node_id for br in send(b, WAITS_FOR_2, port=port).brokers}, 60,
               "broker 0 to stop listing the dead broker 2")
    return send(b, WAITS_FOR_2, version=0, port=port)


PRODUCERS: dict[ErrorCode, Producer] = {
    ErrorCode.INVALID_TOPIC_EXCEPTION: lambda b: send(b, "bad topic!"),
    ErrorCode.LEADER_NOT_AVAILABLE: lambda b: send(b, "metadata-auto-created", auto_create=True),
    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION: lambda b: send(b, "metadata-missing"),
    ErrorCode.UNKNOWN_TOPIC_ID: lambda b: send(b, None, topic_id=uuid.uuid4()),
    ErrorCode.REPLICA_NOT_AVAILABLE: replica_not_available,
}

PRODUCERS.update({
    ErrorCode.TOPIC_AUTHORIZATION_FAILED: lambda b: send(b, "metadata-denied", port=denied(b)),
})

test_errors = error_path_test(metadata, PRODUCERS)

"""ShareFetch: every code of `broker.apis.share_fetch.ERRORS`, over a real socket with our codec."""

from __future__ import annotations

import uuid
from typing import Any

from broker.apis import share_fetch
from protocol.errors import ErrorCode

from .acl_support import denied
from .share_support import connection, fenced_state_epoch, fetch, persister_failure, read_denied_topic, topic_id
from .support import Brokers, Producer, error_path_test


def bad_epoch(b: Brokers) -> Any:
    with connection(b) as s:
        assert fetch(b, "sf-epoch", "m1", 0, sock=s).error_code == ErrorCode.NONE
        return fetch(b, "sf-epoch", "m1", 5, sock=s)


def topic_denied(b: Brokers) -> Any:
    port, tid = read_denied_topic(b)
    return fetch(b, "sf-acl", "m1", 0, [(tid, 0)], port=port)


def unknown_partition(b: Brokers) -> Any:
    tid = topic_id(b, b.topic("sf-one-partition"))
    return fetch(b, "sf-unknown-partition", "m1", 0, [(tid, 7)])


def not_leader(b: Brokers) -> Any:
    name = b.led_by_other("share-fetch-on-1")
    port = b.cluster.ports[0]
    return fetch(b, "sf-not-leader", "m1", 0, [(topic_id(b, name, port), 0)], port=port)


def record_state(b: Brokers) -> Any:
    tid = topic_id(b, b.topic("sf-state"))
    with connection(b) as s:
        assert fetch(b, "sf-state", "m1", 0, [(tid, 0)], sock=s).error_code == ErrorCode.NONE
        return fetch(b, "sf-state", "m1", 1, [(tid, 0)], acks=[(0, 0, [1])], sock=s)


PRODUCERS: dict[ErrorCode, Producer] = {
    ErrorCode.INVALID_REQUEST: lambda b: fetch(b, "sf-invalid", "", 0),
    ErrorCode.SHARE_SESSION_NOT_FOUND: lambda b: fetch(b, "sf-no-session", "m1", 3),
    ErrorCode.INVALID_SHARE_SESSION_EPOCH: bad_epoch,
    ErrorCode.GROUP_AUTHORIZATION_FAILED: lambda b: fetch(b, "sf-denied", "m1", 0, port=denied(b)),
    ErrorCode.TOPIC_AUTHORIZATION_FAILED: topic_denied,
    ErrorCode.UNKNOWN_TOPIC_ID: lambda b: fetch(b, "sf-unknown-id", "m1", 0, [(uuid.uuid4(), 0)]),
    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION: unknown_partition,
    ErrorCode.NOT_LEADER_OR_FOLLOWER: not_leader,
    ErrorCode.INVALID_RECORD_STATE: record_state,
    ErrorCode.FENCED_STATE_EPOCH: lambda b: fenced_state_epoch(
        b, "sf-fenced", lambda s, tid: fetch(b, "sf-fenced", "m1", 2, [(tid, 0)], acks=[(0, 0, [1])], sock=s)),
    ErrorCode.COORDINATOR_NOT_AVAILABLE: lambda b: persister_failure(
        b, "sf-no-coordinator", "coordinator", lambda s, tid: fetch(
            b, "sf-no-coordinator", "m1", 2, [(tid, 0)], acks=[(0, 0, [1])], sock=s)),
    ErrorCode.UNKNOWN_SERVER_ERROR: lambda b: persister_failure(
        b, "sf-state-deleted", "deleted", lambda s, tid: fetch(
            b, "sf-state-deleted", "m1", 2, [(tid, 0)], acks=[(0, 0, [1])], sock=s)),
}

test_errors = error_path_test(share_fetch, PRODUCERS)

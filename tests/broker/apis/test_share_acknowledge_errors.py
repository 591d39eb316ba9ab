"""ShareAcknowledge: every code of `broker.apis.share_acknowledge.ERRORS`, over a real socket with our codec."""

from __future__ import annotations

import socket
import uuid
from typing import Any

from broker.apis import share_acknowledge
from protocol.errors import ErrorCode

from .acl_support import denied
from .share_support import (
    acknowledge,
    connection,
    fenced_state_epoch,
    fetch,
    persister_failure,
    read_denied_topic,
    topic_id,
)
from .support import Brokers, Producer, error_path_test


def session(b: Brokers, group: str, port: int | None = None) -> socket.socket:
    """A connection with member m1's share session of `group` open on it."""
    s = connection(b, port)
    assert fetch(b, group, "m1", 0, port=port, sock=s).error_code == ErrorCode.NONE
    return s


def topic_denied(b: Brokers) -> Any:
    port, tid = read_denied_topic(b)
    with session(b, "sa-acl", port) as s:
        return acknowledge(b, "sa-acl", "m1", 1, [(tid, 0)], port=port, sock=s)


def unknown_partition(b: Brokers) -> Any:
    tid = topic_id(b, b.topic("sa-one-partition"))
    with session(b, "sa-unknown-partition") as s:
        return acknowledge(b, "sa-unknown-partition", "m1", 1, [(tid, 7)], sock=s)


def not_leader(b: Brokers) -> Any:
    name = b.led_by_other("share-ack-on-1")
    port = b.cluster.ports[0]
    with session(b, "sa-not-leader", port) as s:
        return acknowledge(b, "sa-not-leader", "m1", 1, [(topic_id(b, name, port), 0)], port=port, sock=s)


def record_state(b: Brokers) -> Any:
    tid = topic_id(b, b.topic("sa-state"))
    with session(b, "sa-state") as s:
        return acknowledge(b, "sa-state", "m1", 1, [(tid, 0)], acks=[(0, 0, [1])], sock=s)


def bad_epoch(b: Brokers) -> Any:
    with session(b, "sa-epoch") as s:
        return acknowledge(b, "sa-epoch", "m1", 0, sock=s)


def unknown_id(b: Brokers) -> Any:
    with session(b, "sa-unknown-id") as s:
        return acknowledge(b, "sa-unknown-id", "m1", 1, [(uuid.uuid4(), 0)], sock=s)


PRODUCERS: dict[ErrorCode, Producer] = {
    ErrorCode.INVALID_REQUEST: lambda b: acknowledge(b, "sa-invalid", "", 1),
    ErrorCode.SHARE_SESSION_NOT_FOUND: lambda b: acknowledge(b, "sa-no-session", "m1", 3),
    ErrorCode.INVALID_SHARE_SESSION_EPOCH: bad_epoch,
    ErrorCode.GROUP_AUTHORIZATION_FAILED: lambda b: acknowledge(b, "sa-denied", "m1", 1, port=denied(b)),
    ErrorCode.TOPIC_AUTHORIZATION_FAILED: topic_denied,
    ErrorCode.UNKNOWN_TOPIC_ID: unknown_id,
    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION: unknown_partition,
    ErrorCode.NOT_LEADER_OR_FOLLOWER: not_leader,
    ErrorCode.INVALID_RECORD_STATE: record_state,
    ErrorCode.FENCED_STATE_EPOCH: lambda b: fenced_state_epoch(
        b, "sa-fenced", lambda s, tid: acknowledge(b, "sa-fenced", "m1", 2, [(tid, 0)], acks=[(0, 0, [1])], sock=s)),
    ErrorCode.COORDINATOR_NOT_AVAILABLE: lambda b: persister_failure(
        b, "sa-no-coordinator", "coordinator", lambda s, tid: acknowledge(
            b, "sa-no-coordinator", "m1", 2, [(tid, 0)], acks=[(0, 0, [1])], sock=s)),
    ErrorCode.UNKNOWN_SERVER_ERROR: lambda b: persister_failure(
        b, "sa-state-deleted", "deleted", lambda s, tid: acknowledge(
            b, "sa-state-deleted", "m1", 2, [(tid, 0)], acks=[(0, 0, [1])], sock=s)),
}

test_errors = error_path_test(share_acknowledge, PRODUCERS)

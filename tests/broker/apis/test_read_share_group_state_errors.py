"""ReadShareGroupState: every code of `broker.apis.read_share_group_state.ERRORS`, over a real socket with our
codec, as a share-partition leader's persister sends it to the share coordinator."""

from __future__ import annotations

from typing import Any

from broker.apis import read_share_group_state
from protocol.errors import ErrorCode

from .share_state_support import (
    build_initialize,
    build_read,
    code,
    common_producers,
    live_topic,
    on_gone_topic,
    single_ready,
)
from .support import Brokers, Producer, error_path_test


def older_leader_epoch(b: Brokers) -> Any:
    tid = live_topic(b, "share-read-fenced")
    port = single_ready(b)
    assert code(b.call(build_initialize("read-fenced", tid, 0), port)) == ErrorCode.NONE
    assert code(b.call(build_read("read-fenced", tid, 0, leader_epoch=5), port)) == ErrorCode.NONE
    return b.call(build_read("read-fenced", tid, 0, leader_epoch=4), port)


PRODUCERS: dict[ErrorCode, Producer] = {
    **common_producers(build_read, "read-group"),
    ErrorCode.FENCED_LEADER_EPOCH: older_leader_epoch,
    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION: lambda b: on_gone_topic(b, "read-gone", build_read),
}

test_errors = error_path_test(read_share_group_state, PRODUCERS)


def test_uninitialized_is_an_invalid_request(brokers: Brokers) -> None:
    """As Kafka 4.x: reading a share partition never initialized is INVALID_REQUEST, with a message saying so."""
    tid = live_topic(brokers, "share-read-uninitialized")
    answer = brokers.call(build_read("read-nothing", tid, 0), single_ready(brokers))
    assert code(answer) == ErrorCode.INVALID_REQUEST
    assert "never initialized" in answer.results[0].partitions[0].error_message

"""WriteShareGroupState: every code of `broker.apis.write_share_group_state.ERRORS`, over a real socket with our
codec, as a share-partition leader's persister sends it to the share coordinator."""

from __future__ import annotations

from typing import Any

from broker.apis import write_share_group_state
from protocol.errors import ErrorCode

from .share_state_support import (
    build_initialize,
    build_read,
    build_write,
    code,
    common_producers,
    live_topic,
    on_gone_topic,
    single_ready,
)
from .support import Brokers, Producer, error_path_test


def older_leader_epoch(b: Brokers) -> Any:
    tid = live_topic(b, "share-write-leader")
    port = single_ready(b)
    assert code(b.call(build_initialize("write-leader", tid, 0), port)) == ErrorCode.NONE
    assert code(b.call(build_read("write-leader", tid, 0, leader_epoch=3), port)) == ErrorCode.NONE
    return b.call(build_write("write-leader", tid, 0, leader_epoch=2), port)


def older_state_epoch(b: Brokers) -> Any:
    tid = live_topic(b, "share-write-state")
    port = single_ready(b)
    assert code(b.call(build_initialize("write-state", tid, 0, state_epoch=3), port)) == ErrorCode.NONE
    return b.call(build_write("write-state", tid, 0, state_epoch=2), port)


PRODUCERS: dict[ErrorCode, Producer] = {
    **common_producers(build_write, "write-group"),
    ErrorCode.FENCED_LEADER_EPOCH: older_leader_epoch,
    ErrorCode.FENCED_STATE_EPOCH: older_state_epoch,
    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION: lambda b: on_gone_topic(b, "write-gone", build_write),
}

test_errors = error_path_test(write_share_group_state, PRODUCERS)

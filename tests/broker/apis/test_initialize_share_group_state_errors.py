"""InitializeShareGroupState: every code of `broker.apis.initialize_share_group_state.ERRORS`, over a real
socket with our codec, as a broker's persister sends it to the share coordinator."""

from __future__ import annotations

from typing import Any

from broker.apis import initialize_share_group_state
from protocol.errors import ErrorCode

from .share_state_support import build_initialize, code, common_producers, live_topic, single_ready
from .support import Brokers, Producer, error_path_test


def older_state_epoch(b: Brokers) -> Any:
    tid = live_topic(b, "share-init-fenced")
    assert code(b.call(build_initialize("init-fenced", tid, 0, state_epoch=5), single_ready(b))) == ErrorCode.NONE
    return b.call(build_initialize("init-fenced", tid, 0, state_epoch=4))


PRODUCERS: dict[ErrorCode, Producer] = {
    **common_producers(build_initialize, "init-group"),
    ErrorCode.FENCED_STATE_EPOCH: older_state_epoch,
    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION: lambda b: b.call(
        build_initialize("init-group", live_topic(b, "share-any"), 7), single_ready(b)),
}

test_errors = error_path_test(initialize_share_group_state, PRODUCERS)

"""ReadShareGroupStateSummary: every code of `broker.apis.read_share_group_state_summary.ERRORS`, over a real
socket with our codec, as a broker's persister sends it to the share coordinator."""

from __future__ import annotations

from broker.apis import read_share_group_state_summary
from protocol.errors import ErrorCode

from .share_state_support import build_summary, common_producers, live_topic, single_ready
from .support import Producer, error_path_test

PRODUCERS: dict[ErrorCode, Producer] = {
    **common_producers(build_summary, "summary-group"),
    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION: lambda b: b.call(
        build_summary("summary-group", live_topic(b, "share-any"), 9), single_ready(b)),
}

test_errors = error_path_test(read_share_group_state_summary, PRODUCERS)

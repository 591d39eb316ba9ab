"""DeleteShareGroupState: every code of `broker.apis.delete_share_group_state.ERRORS`, over a real socket with
our codec, as a broker's persister sends it to the share coordinator."""

from __future__ import annotations

from broker.apis import delete_share_group_state
from protocol.errors import ErrorCode

from .share_state_support import ANY_TOPIC, build_delete, common_producers, single_ready
from .support import Producer, error_path_test

PRODUCERS: dict[ErrorCode, Producer] = {
    **common_producers(build_delete, "delete-group"),
    # the metadata is checked before the state: any unknown topic id
    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION: lambda b: b.call(build_delete("delete-group", ANY_TOPIC, 0), single_ready(b)),
}

test_errors = error_path_test(delete_share_group_state, PRODUCERS)

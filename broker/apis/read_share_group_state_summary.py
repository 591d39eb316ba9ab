"""ReadShareGroupStateSummary (key 87), versions 0–1: a broker (the group coordinator describing share-group
offsets, through its persister) reads a share partition's state epoch, leader epoch and start offset
(KIP-932; Kafka 4.x), and from v1 (Kafka 4.2, KIP-1226) its DeliveryCompleteCount: the offsets at or after
the start offset already acknowledged or archived (-1 without state).

Each partition is served by this broker's share coordinator (broker/coordinator/share/state.py), without writing
anything: a share partition without state answers start offset -1, state epoch 0 and leader epoch 0 (Kafka's
uninitialized defaults). INVALID_REQUEST for a negative partition; UNKNOWN_TOPIC_OR_PARTITION when the topic id
or partition is not in the metadata; NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE as
the other state RPCs. The request's leader epoch is not checked (as Kafka 4.x). No topics, a topic without
partitions or an empty group id: an answer without results. CLUSTER_ACTION on the cluster is required, else
CLUSTER_AUTHORIZATION_FAILED. `answer` serves a request without the authorization check (this broker's own
persister).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from broker.apis import share_state_common as common
from broker.apis.base import RequestContext, response_for
from broker.coordinator.share.persister import RecordState
from broker.coordinator.share.records import ShareKey
from protocol.errors import ErrorCode

if TYPE_CHECKING:
    from broker.apis.base import HandlerServer

API_KEY = 87
MIN_VERSION = 0
MAX_VERSION = 1
ERRORS: tuple[ErrorCode, ...] = common.ERRORS


def handle(ctx: RequestContext, request: Any) -> Any:
    return common.serve(ctx, request, answer)


async def answer(server: HandlerServer, request: Any) -> Any:
    if common.malformed(request):
        return response_for(request, results=[])
    state = server.share_coordinator.state

    async def op(key: ShareKey, p: Any) -> Any:
        return state.read_summary(key)

    def fields(value: Any) -> dict[str, Any]:
        if value is None:
            return {}
        return {"state_epoch": value.state_epoch, "leader_epoch": value.leader_epoch,
                "start_offset": value.start_offset, "delivery_complete_count": delivery_complete_count(value)}

    return common.build(request, await common.each_partition(request, op), fields)


def delivery_complete_count(value: Any) -> int:
    """Kafka 4.2's deliveryCompleteCount of a stored state: its offsets at or after the start offset in the
    ACKNOWLEDGED or ARCHIVED state; -1 for a share partition without state."""
    if value.start_offset < 0:
        return -1
    return sum(max(0, b.last_offset - max(b.first_offset, value.start_offset) + 1)
               for b in value.state_batches if b.delivery_state in (RecordState.ACKNOWLEDGED, RecordState.ARCHIVED))

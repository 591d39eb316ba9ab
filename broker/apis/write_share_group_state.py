"""WriteShareGroupState (key 85), versions 0–1: a share-partition leader persists a change of a share partition's
state (acknowledgements, releases, a new start offset) with its share coordinator (KIP-932; Kafka 4.x).

Each partition is served by this broker's share coordinator (broker/coordinator/share/state.py): the request's
state batches are merged into the current state, written as a ShareUpdate, or as a ShareSnapshot of the whole
merged state once share.coordinator.snapshot.update.records.per.snapshot updates followed the last snapshot, and
answered once acknowledged (acks=all). INVALID_REQUEST before the share partition is initialized or for a
negative partition; FENCED_LEADER_EPOCH for a leader epoch (not -1) older than the one kept; FENCED_STATE_EPOCH
for a state epoch (not -1) older than the one kept; UNKNOWN_TOPIC_OR_PARTITION when the topic id or partition is
not in the metadata; NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE as the other state
RPCs. No topics, a topic without partitions or an empty group id: an answer without results. CLUSTER_ACTION on the
cluster is required, else CLUSTER_AUTHORIZATION_FAILED. `answer` serves a request without the authorization check
(this broker's own persister). v1 (Kafka 4.2, KIP-1226) carries the leader's DeliveryCompleteCount: accepted and
not stored, the share coordinator counts it from the batches it keeps (ReadShareGroupStateSummary v1).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from broker.apis import share_state_common as common
from broker.apis.base import RequestContext, response_for
from broker.coordinator.share.persister import PersisterStateBatch
from broker.coordinator.share.records import ShareKey
from protocol.errors import ErrorCode

if TYPE_CHECKING:
    from broker.apis.base import HandlerServer

API_KEY = 85
MIN_VERSION = 0
MAX_VERSION = 1
ERRORS: tuple[ErrorCode, ...] = common.ERRORS + (ErrorCode.FENCED_LEADER_EPOCH, ErrorCode.FENCED_STATE_EPOCH)


def handle(ctx: RequestContext, request: Any) -> Any:
    return common.serve(ctx, request, answer)


async def answer(server: HandlerServer, request: Any) -> Any:
    if common.malformed(request):
        return response_for(request, results=[])
    state = server.share_coordinator.state

    async def op(key: ShareKey, p: Any) -> None:
        await state.write(key, p.state_epoch, p.leader_epoch, p.start_offset,
                          [PersisterStateBatch(b.first_offset, b.last_offset, b.delivery_state, b.delivery_count)
                           for b in p.state_batches])

    return common.build(request, await common.each_partition(request, op), lambda value: {})

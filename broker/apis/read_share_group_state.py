"""ReadShareGroupState (key 84), version 0: a share-partition leader reads the persisted state of a share
partition from its share coordinator when it starts serving it (KIP-932; Kafka 4.x).

Each partition is served by this broker's share coordinator (broker/coordinator/share/state.py): its state epoch,
start offset and in-flight state batches. A leader epoch newer than the one kept (not -1) is recorded first
(a ShareUpdate or ShareSnapshot with no batches), so an older leader is fenced from then on. INVALID_REQUEST for
a share partition never initialized or a negative partition; FENCED_LEADER_EPOCH for a leader epoch older than the
one kept (-1 included); UNKNOWN_TOPIC_OR_PARTITION when the topic id or partition is not in the metadata;
NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE as the other state RPCs. No topics, a
topic without partitions or an empty group id: an answer without results. CLUSTER_ACTION on the cluster is
required, else CLUSTER_AUTHORIZATION_FAILED. `answer` serves a request without the authorization check (this
broker's own persister).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from broker.apis import share_state_common as common
from broker.apis.base import RequestContext, response_for, response_type
from broker.coordinator.share.records import ShareKey
from protocol.errors import ErrorCode

if TYPE_CHECKING:
    from broker.apis.base import HandlerServer

API_KEY = 84
MIN_VERSION = 0
MAX_VERSION = 0
ERRORS: tuple[ErrorCode, ...] = common.ERRORS + (ErrorCode.FENCED_LEADER_EPOCH,)


def handle(ctx: RequestContext, request: Any) -> Any:
    return common.serve(ctx, request, answer)


async def answer(server: HandlerServer, request: Any) -> Any:
    if common.malformed(request):
        return response_for(request, results=[])
    state = server.share_coordinator.state
    Batch = response_type(request).ReadStateResult.PartitionResult.StateBatch

    async def op(key: ShareKey, p: Any) -> Any:
        return await state.read(key, p.leader_epoch)

    def fields(value: Any) -> dict[str, Any]:
        if value is None:
            return {}
        return {"state_epoch": value.state_epoch, "start_offset": value.start_offset,
                "state_batches": [Batch(first_offset=b.first_offset, last_offset=b.last_offset,
                                        delivery_state=b.delivery_state, delivery_count=b.delivery_count)
                                  for b in value.state_batches]}

    return common.build(request, await common.each_partition(request, op), fields)

"""InitializeShareGroupState (key 83), version 0: a broker (the group coordinator of a share group, through its
persister) asks the share coordinator to start a share partition's state afresh (KIP-932; Kafka 4.x).

Each partition is served by this broker's share coordinator (broker/coordinator/share/state.py): a ShareSnapshot
with the request's state epoch and start offset, no in-flight batches, leader epoch 0, the snapshot epoch one
past the previous one. FENCED_STATE_EPOCH when the state epoch (not -1) is older than the one kept;
UNKNOWN_TOPIC_OR_PARTITION when the topic id or partition is not in the metadata; INVALID_REQUEST for a negative
partition; NOT_COORDINATOR when this broker does not lead the partition's `__share_group_state` partition,
COORDINATOR_LOAD_IN_PROGRESS while it loads, COORDINATOR_NOT_AVAILABLE once the coordinator shut down or when the
write is not acknowledged (too few replicas in sync, timed out). No topics, a topic without partitions or an
empty group id: an answer without results, as Kafka. CLUSTER_ACTION on the cluster is required (brokers only),
else CLUSTER_AUTHORIZATION_FAILED for every partition. `answer` serves a request without the authorization
check: this broker's own persister calls it in-process.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from broker.apis import share_state_common as common
from broker.apis.base import RequestContext, response_for
from broker.coordinator.share.records import ShareKey
from protocol.errors import ErrorCode

if TYPE_CHECKING:
    from broker.apis.base import HandlerServer

API_KEY = 83
MIN_VERSION = 0
MAX_VERSION = 0
ERRORS: tuple[ErrorCode, ...] = common.ERRORS + (ErrorCode.FENCED_STATE_EPOCH,)


def handle(ctx: RequestContext, request: Any) -> Any:
    return common.serve(ctx, request, answer)


async def answer(server: HandlerServer, request: Any) -> Any:
    if common.malformed(request):
        return response_for(request, results=[])
    state = server.share_coordinator.state

    async def op(key: ShareKey, p: Any) -> None:
        await state.initialize(key, p.state_epoch, p.start_offset)

    return common.build(request, await common.each_partition(request, op), lambda value: {})

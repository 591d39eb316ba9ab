"""DeleteShareGroupState (key 86), version 0: a broker (the group coordinator deleting a share group or its
offsets, through its persister) asks the share coordinator to forget share partitions (KIP-932; Kafka 4.x).

Each partition is served by this broker's share coordinator (broker/coordinator/share/state.py): a tombstone
under the share partition's ShareSnapshot key when it has state, nothing when it has none (success both ways).
INVALID_REQUEST for a negative partition; UNKNOWN_TOPIC_OR_PARTITION when the topic id or partition is not in the
metadata (as Kafka: the state of a deleted topic is not deleted this way); NOT_COORDINATOR,
COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE as the other state RPCs. No topics, a topic without
partitions or an empty group id: an answer without results. CLUSTER_ACTION on the cluster is required, else
CLUSTER_AUTHORIZATION_FAILED. `answer` serves a request without the authorization check (this broker's own
persister).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from broker.apis import share_state_common as common
from broker.apis.base import RequestContext, response_for
from broker.coordinator.share.records import ShareKey
from protocol.errors import ErrorCode

if TYPE_CHECKING:
    from broker.apis.base import HandlerServer

API_KEY = 86
MIN_VERSION = 0
MAX_VERSION = 0
ERRORS: tuple[ErrorCode, ...] = common.ERRORS


def handle(ctx: RequestContext, request: Any) -> Any:
    return common.serve(ctx, request, answer)


async def answer(server: HandlerServer, request: Any) -> Any:
    if common.malformed(request):
        return response_for(request, results=[])
    state = server.share_coordinator.state

    async def op(key: ShareKey, p: Any) -> None:
        await state.delete(key)

    return common.build(request, await common.each_partition(request, op), lambda value: {})

"""ShareAcknowledge (key 79), versions 1–2 — KIP-932 share groups (Kafka 4.1; v2 Kafka 4.2).

Acknowledges records a member acquired through ShareFetch, in its share session: the request carries the
session's next epoch (epoch 0 cannot open a session: INVALID_SHARE_SESSION_EPOCH), or -1 to close the
session after applying the acknowledgements (the member's remaining acquired records are released). Types:
1 accept, 2 release (redelivered; archived once the delivery-count limit is reached), 3 reject (archived),
0 gap. The new state is written through the persister before the answer.
Errors: top level INVALID_REQUEST (no group or member id), SHARE_SESSION_NOT_FOUND,
INVALID_SHARE_SESSION_EPOCH, GROUP_AUTHORIZATION_FAILED (READ on the group); per partition UNKNOWN_TOPIC_ID,
UNKNOWN_TOPIC_OR_PARTITION, NOT_LEADER_OR_FOLLOWER (with the current leader), TOPIC_AUTHORIZATION_FAILED,
INVALID_RECORD_STATE (offsets this member has not acquired), INVALID_REQUEST (a malformed batch),
FENCED_STATE_EPOCH (the state was reset meanwhile), or another persister error as Kafka's SharePartition maps
them: COORDINATOR_NOT_AVAILABLE (the share coordinator cannot be reached, after the persister's retries),
UNKNOWN_SERVER_ERROR (any other, e.g. the state deleted under the leader).
v2 (Kafka 4.2, KIP-1222): IsRenewAck allows the type 4, Renew (the record's acquisition lock restarts, it stays
the member's; without IsRenewAck a malformed batch, INVALID_REQUEST), and the answer carries
AcquisitionLockTimeoutMs.
"""

from __future__ import annotations

from typing import Any

from broker.apis.base import RequestContext, response_for, response_type
from broker.apis.share_support import acknowledge, acknowledgements, leader_hint, resolve
from broker.security.acl import AclOperation, ResourceType
from broker.share.manager import FINAL_EPOCH, INITIAL_EPOCH, ShareError, share_partition_manager
from protocol.errors import ErrorCode

API_KEY = 79
MIN_VERSION = 1
MAX_VERSION = 2
ERRORS: tuple[ErrorCode, ...] = (
    ErrorCode.INVALID_REQUEST, ErrorCode.SHARE_SESSION_NOT_FOUND, ErrorCode.INVALID_SHARE_SESSION_EPOCH,
    ErrorCode.GROUP_AUTHORIZATION_FAILED, ErrorCode.TOPIC_AUTHORIZATION_FAILED, ErrorCode.UNKNOWN_TOPIC_ID,
    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.INVALID_RECORD_STATE,
    ErrorCode.FENCED_STATE_EPOCH, ErrorCode.COORDINATOR_NOT_AVAILABLE, ErrorCode.UNKNOWN_SERVER_ERROR,
)


def _error(request: Any, code: int, message: str | None = None) -> Any:
    return response_for(request, throttle_time_ms=0, error_code=code, error_message=message, responses=[],
                        node_endpoints=[])


async def handle(ctx: RequestContext, request: Any) -> Any:
    group_id, member_id, epoch = request.group_id, request.member_id, request.share_session_epoch
    if not group_id or not member_id:
        return _error(request, ErrorCode.INVALID_REQUEST, "GroupId and MemberId must be set.")
    if not ctx.authorize(AclOperation.READ, ResourceType.GROUP, group_id):
        return _error(request, ErrorCode.GROUP_AUTHORIZATION_FAILED)
    if epoch == INITIAL_EPOCH:
        return _error(request, ErrorCode.INVALID_SHARE_SESSION_EPOCH, "ShareAcknowledge cannot open a session.")
    manager = share_partition_manager(ctx.server)
    try:
        session = manager.session(group_id, member_id, epoch)
    except ShareError as e:
        return _error(request, e.code, str(e) or None)
    known, refused = resolve(ctx, request.topics)
    renew = request.API_VERSION >= 2 and bool(request.is_renew_ack)
    codes = await acknowledge(manager, group_id, member_id, acknowledgements(request.topics, known), known, renew)
    for tp in known:
        codes.setdefault(tp, ErrorCode.NONE)
    if epoch == FINAL_EPOCH:
        await manager.close_session(session)
    Resp = response_type(request)
    TopicResp = Resp.ShareAcknowledgeTopicResponse
    Part = TopicResp.PartitionData
    endpoints: dict[int, Any] = {}
    by_topic: dict[Any, list] = {}
    for tp, code in codes.items():
        by_topic.setdefault(known[tp], []).append(Part(
            partition_index=tp.partition, error_code=code,
            current_leader=leader_hint(ctx, tp, code, Part, endpoints, Resp.NodeEndpoint)))
    for (tid, index), code in refused.items():
        by_topic.setdefault(tid, []).append(Part(partition_index=index, error_code=code,
                                                 current_leader=Part.LeaderIdAndEpoch(leader_id=-1, leader_epoch=-1)))
    return response_for(request, throttle_time_ms=0, error_code=ErrorCode.NONE,
                        acquisition_lock_timeout_ms=manager.lock_duration_ms(group_id),
                        responses=[TopicResp(topic_id=tid, partitions=parts) for tid, parts in by_topic.items()],
                        node_endpoints=[endpoints[n] for n in sorted(endpoints)])

"""ShareFetch (key 78), versions 1–2 — KIP-932 share groups (Kafka 4.1; v0 was 4.0's early access; v2 Kafka 4.2).

A share-group member reads from a partition leader through its share session (broker/share/manager.py):
epoch 0 opens the session (acknowledgements not allowed: INVALID_REQUEST), each next request carries the
session's next epoch, -1 closes it (acknowledgements applied, nothing fetched, the member's acquired records
released; so does closing the connection that opened it, as Kafka 4.1). Acknowledgements piggy-backed
on the request (1 accept, 2 release, 3 reject, 0 gap) are applied
and persisted first (AcknowledgeErrorCode per partition), then records are acquired for the member from every
partition of the session, up to MaxRecords in all (whole batches), each acquisition locked for
`group.share.record.lock.duration.ms` (AcquisitionLockTimeoutMs) and counted; the answer carries the log
batches and the AcquiredRecords ranges with their delivery counts. With nothing to acquire the request waits
up to MaxWaitMs. A record delivered `group.share.delivery.count.limit` times and released again is archived.
Errors: top level INVALID_REQUEST (no group or member id, acknowledgements when opening a session),
SHARE_SESSION_NOT_FOUND, INVALID_SHARE_SESSION_EPOCH, GROUP_AUTHORIZATION_FAILED (READ on the group, with an
authorizer); per partition UNKNOWN_TOPIC_ID (also for a session partition whose topic was deleted, even if
recreated under its name: it leaves the session, as Kafka's sessions keyed by topic id),
UNKNOWN_TOPIC_OR_PARTITION, NOT_LEADER_OR_FOLLOWER (with the current leader and its endpoint),
TOPIC_AUTHORIZATION_FAILED (READ on the topic), and as AcknowledgeErrorCode INVALID_RECORD_STATE (offsets not
acquired by this member) and INVALID_REQUEST (a malformed acknowledgement batch), FENCED_STATE_EPOCH (the state was
reset meanwhile: the leader reloads it), or another persister error as Kafka's SharePartition maps them:
COORDINATOR_NOT_AVAILABLE (the share coordinator cannot be reached, after the persister's retries),
UNKNOWN_SERVER_ERROR (any other, e.g. the state deleted under the leader).
v2 (Kafka 4.2): ShareAcquireMode 0 (batch-optimized, v1's behaviour) or 1 (record-limit: never more than
MaxRecords records, batches split; KIP-1206), other modes INVALID_REQUEST; IsRenewAck (KIP-1222) allows the
acknowledge type 4, Renew, which restarts the record's acquisition lock and keeps it the member's: such a
request fetches nothing and must have MaxWaitMs, MinBytes, MaxBytes and MaxRecords 0 (else INVALID_REQUEST).
A Renew without IsRenewAck (and in v1) is a malformed batch (AcknowledgeErrorCode INVALID_REQUEST).
Gaps: MinBytes is taken as one record.
"""

from __future__ import annotations

from typing import Any

from broker.apis.base import RequestContext, response_for, response_type
from broker.apis.share_support import acknowledge, acknowledgements, has_acknowledgements, leader_hint, resolve
from broker.security.acl import AclOperation, ResourceType
from broker.share.manager import FINAL_EPOCH, INITIAL_EPOCH, FetchedPartition, ShareError, share_partition_manager
from protocol.errors import ErrorCode

_BATCH_OPTIMIZED, _RECORD_LIMIT = 0, 1  # Kafka 4.2's ShareAcquireMode

API_KEY = 78
MIN_VERSION = 1
MAX_VERSION = 2
ERRORS: tuple[ErrorCode, ...] = (
    ErrorCode.INVALID_REQUEST, ErrorCode.SHARE_SESSION_NOT_FOUND, ErrorCode.INVALID_SHARE_SESSION_EPOCH,
    ErrorCode.GROUP_AUTHORIZATION_FAILED, ErrorCode.TOPIC_AUTHORIZATION_FAILED, ErrorCode.UNKNOWN_TOPIC_ID,
    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.INVALID_RECORD_STATE,
    ErrorCode.FENCED_STATE_EPOCH, ErrorCode.COORDINATOR_NOT_AVAILABLE, ErrorCode.UNKNOWN_SERVER_ERROR,
)


def _error(ctx: RequestContext, request: Any, code: int, message: str | None = None) -> Any:
    return response_for(request, throttle_time_ms=0, error_code=code, error_message=message,
                        acquisition_lock_timeout_ms=0, responses=[], node_endpoints=[])


async def handle(ctx: RequestContext, request: Any) -> Any:
    group_id, member_id, epoch = request.group_id, request.member_id, request.share_session_epoch
    if not group_id or not member_id:
        return _error(ctx, request, ErrorCode.INVALID_REQUEST, "GroupId and MemberId must be set.")
    if not ctx.authorize(AclOperation.READ, ResourceType.GROUP, group_id):
        return _error(ctx, request, ErrorCode.GROUP_AUTHORIZATION_FAILED)
    if epoch == INITIAL_EPOCH and has_acknowledgements(request.topics):
        return _error(ctx, request, ErrorCode.INVALID_REQUEST, "Acknowledgements cannot open a share session.")
    renew = request.API_VERSION >= 2 and bool(request.is_renew_ack)
    record_limit = request.API_VERSION >= 2 and request.share_acquire_mode == _RECORD_LIMIT
    if request.API_VERSION >= 2 and request.share_acquire_mode not in (_BATCH_OPTIMIZED, _RECORD_LIMIT):
        return _error(ctx, request, ErrorCode.INVALID_REQUEST, f"Unknown ShareAcquireMode "
                      f"{request.share_acquire_mode}.")
    if renew and (request.max_wait_ms, request.min_bytes, request.max_bytes, request.max_records) != (0, 0, 0, 0):
        return _error(ctx, request, ErrorCode.INVALID_REQUEST, "A renew acknowledgement fetches nothing: MaxWaitMs, "
                      "MinBytes, MaxBytes and MaxRecords must be 0.")
    manager = share_partition_manager(ctx.server)
    try:
        session = (await manager.open_session(group_id, member_id, ctx.connection) if epoch == INITIAL_EPOCH
                   else manager.session(group_id, member_id, epoch))
    except ShareError as e:
        return _error(ctx, request, e.code, str(e) or None)
    known, refused = resolve(ctx, request.topics)
    forgotten, _ = resolve(ctx, request.forgotten_topics_data)
    ack_codes = await acknowledge(manager, group_id, member_id, acknowledgements(request.topics, known), known,
                                  renew)
    fetched: dict[Any, FetchedPartition] = {}
    if epoch == FINAL_EPOCH:
        await manager.close_session(session)
    else:
        for tp in forgotten:
            session.partitions.pop(tp, None)
        session.partitions.update(known)
        # A partition the session holds under a topic id that is gone (the topic deleted, perhaps recreated
        # under its name with a new id): UNKNOWN_TOPIC_ID and out of the session, as Kafka's sessions keyed by
        # topic id answer it. Fetching it by name would acquire the new topic's records for a member that
        # cannot take them under the old id: they would come back at a higher delivery count.
        cache = ctx.server.metadata_cache
        for tp, tid in list(session.partitions.items()):
            if cache.topic_id(tp.topic) != tid:
                del session.partitions[tp]
                refused[(tid, tp.partition)] = ErrorCode.UNKNOWN_TOPIC_ID
        fetched = await manager.fetch(group_id, member_id, list(session.partitions.items()),
                                      request.max_records, request.max_bytes, request.max_wait_ms, record_limit)
        # Partitions that gave records go to the back, so MaxRecords does not always favour the first ones.
        for tp in [tp for tp, r in fetched.items() if r.acquired and tp in session.partitions]:
            session.partitions[tp] = session.partitions.pop(tp)
    return _response(ctx, request, known, refused, ack_codes, fetched, manager.lock_duration_ms(group_id),
                     full=epoch == INITIAL_EPOCH)


def _response(ctx: RequestContext, request: Any, known: dict, refused: dict, ack_codes: dict, fetched: dict,
              lock_ms: int, *, full: bool) -> Any:
    Resp = response_type(request)
    TopicResp = Resp.ShareFetchableTopicResponse
    Part = TopicResp.PartitionData
    cache = ctx.server.metadata_cache
    endpoints: dict[int, Any] = {}
    by_topic: dict[Any, list] = {}
    for tp in list(dict.fromkeys([*fetched, *ack_codes, *(known if full else [])])):
        result = fetched.get(tp, FetchedPartition())
        ack = ack_codes.get(tp, ErrorCode.NONE)
        if not full and tp not in ack_codes and not result.acquired and result.error == ErrorCode.NONE:
            continue
        tid = known.get(tp) or cache.topic_id(tp.topic)
        by_topic.setdefault(tid, []).append(Part(
            partition_index=tp.partition, error_code=result.error, acknowledge_error_code=ack,
            current_leader=leader_hint(ctx, tp, result.error, Part, endpoints, Resp.NodeEndpoint),
            records=result.records,
            acquired_records=[Part.AcquiredRecords(first_offset=r.first_offset, last_offset=r.last_offset,
                                                   delivery_count=r.delivery_count) for r in result.acquired]))
    for (tid, index), code in refused.items():
        by_topic.setdefault(tid, []).append(Part(
            partition_index=index, error_code=code, acknowledge_error_code=code,
            current_leader=Part.LeaderIdAndEpoch(leader_id=-1, leader_epoch=-1), records=b"", acquired_records=[]))
    return response_for(request, throttle_time_ms=0, error_code=ErrorCode.NONE, acquisition_lock_timeout_ms=lock_ms,
                        responses=[TopicResp(topic_id=tid, partitions=parts) for tid, parts in by_topic.items()],
                        node_endpoints=[endpoints[n] for n in sorted(endpoints)])

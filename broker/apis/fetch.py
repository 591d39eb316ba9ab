"""Fetch (key 1), versions 0–18.

Consumers (replica_id -1) read from partition leaders up to the high watermark (read_uncommitted) or the
last stable offset (read_committed, v4+: with the aborted transactions that overlap the records returned,
so the client drops their records; every v4+ answer carries the LSO); followers
(replica_id >= 0, or ReplicaState from v15) read up to the log end offset, and their fetch offset
updates the leader's view of them (ISR, HW). Data leaves as file slices that the server `sendfile`s:
nothing is copied or decoded, except for v0–v3 clients whose batches are down-converted to magic 0/1.
`min_bytes`/`max_wait_ms` park the request in the fetch purgatory (DelayedFetch). `max_bytes` and each
partition's max bytes are soft limits: the first batch is always returned whole (v3+), as in Kafka.
Incremental fetch sessions (KIP-227, v7+), topic ids (v13+, UNKNOWN_TOPIC_ID), diverging epochs for
followers (v12+), current-leader hints on NOT_LEADER_OR_FOLLOWER / FENCED_LEADER_EPOCH with the leader's
endpoint in node_endpoints (v16+, as Kafka: not below, though the field exists from v12). v18 (Kafka 4.1-IV1's
replica fetcher) is v17 with the fetcher's high watermark in a tagged field, which only KRaft's Raft layer reads.
Fetch from the closest replica (KIP-392, v11+): a consumer may fetch from a follower, which serves up to its
own high watermark; on the leader, with `replica.selector.class` set, a consumer's `rack_id` may be answered
with a `preferred_read_replica` (Kafka's RackAwareReplicaSelector: an in-sync follower in that rack) and no
records, at once.
Authorization (with an authorizer), as Kafka: a follower needs CLUSTER_ACTION on the cluster, a consumer READ
on each topic; partitions refused answer TOPIC_AUTHORIZATION_FAILED and are not read.
Errors: per partition UNKNOWN_TOPIC_OR_PARTITION, UNKNOWN_TOPIC_ID (v13+), NOT_LEADER_OR_FOLLOWER,
FENCED_LEADER_EPOCH / UNKNOWN_LEADER_EPOCH (v9+), OFFSET_OUT_OF_RANGE, INCONSISTENT_TOPIC_ID (v13+: the
topic id names a partition whose log here has another id, as Kafka's readFromLog); for the whole request
FETCH_SESSION_ID_NOT_FOUND, INVALID_FETCH_SESSION_EPOCH, FETCH_SESSION_TOPIC_ID_ERROR (an incremental request
naming topics by id in a session opened by name, or the reverse: v13 is the line).
"""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

from broker.apis.base import RequestContext, current_leader, response_for, response_type
from broker.cluster.partition import FETCH_HIGH_WATERMARK, FETCH_LOG_END, FETCH_TXN_COMMITTED
from broker.security.acl import AclOperation, ResourceType
from broker.security.quotas import CONSUMER_BYTE_RATE
from broker.server.delayed_fetch import ClientMetadata, FetchParams, FetchPartitionData, PartitionFetchInfo
from broker.server.fetch_session import (
    FINAL_EPOCH,
    INITIAL_EPOCH,
    CachedPartition,
    FetchSessionError,
    next_epoch,
)
from protocol import RecordsRef
from protocol.errors import ErrorCode
from protocol.legacy import down_convert
from storage import TopicPartition

API_KEY = 1
MIN_VERSION = 0
MAX_VERSION = 18
ERRORS: tuple[ErrorCode, ...] = (
    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode.UNKNOWN_TOPIC_ID, ErrorCode.NOT_LEADER_OR_FOLLOWER,
    ErrorCode.FENCED_LEADER_EPOCH, ErrorCode.UNKNOWN_LEADER_EPOCH, ErrorCode.OFFSET_OUT_OF_RANGE,
    ErrorCode.FETCH_SESSION_ID_NOT_FOUND, ErrorCode.INVALID_FETCH_SESSION_EPOCH, ErrorCode.TOPIC_AUTHORIZATION_FAILED,
    ErrorCode.FETCH_SESSION_TOPIC_ID_ERROR, ErrorCode.INCONSISTENT_TOPIC_ID,
)

ZERO_UUID = uuid.UUID(int=0)
NO_LIMIT = 2**31 - 1


def handle(ctx: RequestContext, request: Any) -> Any:
    server = ctx.server
    v = request.API_VERSION
    cache = server.metadata_cache
    if v >= 15:
        # v15+ moved the replica id into the tagged ReplicaState field; consumers leave it out.
        replica_id = request.replica_state.replica_id if request.replica_state is not None else -1
        # A KRaft broker keeps the broker epoch a follower fetches with (Kafka 3.7+, KIP-903): ISR eligibility.
        note_epoch = getattr(getattr(server, "controller", None), "note_follower_epoch", None)
        if replica_id >= 0 and note_epoch is not None:
            note_epoch(replica_id, request.replica_state.replica_epoch)
    else:
        replica_id = request.replica_id
    if replica_id >= 0:
        isolation = FETCH_LOG_END
    elif v >= 4 and request.isolation_level == 1:
        isolation = FETCH_TXN_COMMITTED
    else:
        isolation = FETCH_HIGH_WATERMARK

    # The partitions this request names, with their topic ids (v13+ names topics by id only).
    requested: list[tuple[TopicPartition, CachedPartition]] = []
    unresolved: list[tuple[tuple[uuid.UUID, int], CachedPartition]] = []
    for topic in request.topics:
        name, tid = (cache.topic_name(topic.topic_id), topic.topic_id) if v >= 13 else (topic.topic, None)
        for p in topic.partitions:
            cp = CachedPartition(
                fetch_offset=p.fetch_offset,
                max_bytes=p.partition_max_bytes,
                current_leader_epoch=p.current_leader_epoch if v >= 9 else -1,
                last_fetched_epoch=p.last_fetched_epoch if v >= 12 else -1,
                log_start_offset=p.log_start_offset if v >= 5 else -1,
                topic_id=tid)
            if name is None:
                unresolved.append(((topic.topic_id, p.partition), cp))
            else:
                requested.append((TopicPartition(name, p.partition), cp))
    unknown_ids = [key for key, _ in unresolved]

    sessions = server.fetch_sessions
    session = None
    incremental = False
    if v >= 7:
        sid, epoch = request.session_id, request.session_epoch
        try:
            if epoch > INITIAL_EPOCH:
                session = sessions.get(sid, epoch, v >= 13)
                incremental = True
                for tp, cp in requested:
                    old = session.partitions.get(tp)
                    if old is not None:
                        cp.high_watermark, cp.last_stable_offset = old.high_watermark, old.last_stable_offset
                        cp.log_start_offset = cp.log_start_offset if cp.log_start_offset >= 0 else \
                            old.log_start_offset
                    session.partitions[tp] = cp
                    if cp.topic_id is not None:
                        session.unresolved.pop((cp.topic_id, tp.partition), None)
                session.unresolved.update(unresolved)
                for ft in request.forgotten_topics_data or []:
                    session.forget(ft.topic if v < 13 else None, ft.topic_id if v >= 13 else None,
                                   ft.partitions)
            else:
                if sid:
                    sessions.remove(sid)
                if epoch == INITIAL_EPOCH:
                    session = sessions.new_session(v >= 13)
                    if session is not None:
                        session.partitions = dict(requested)
                        session.unresolved = dict(unresolved)
        except FetchSessionError as e:
            return response_for(request, throttle_time_ms=0, error_code=e.code, session_id=0, responses=[])
        if epoch == FINAL_EPOCH:
            session = None
    if session is not None and session.unresolved:
        unknown_ids = session.resolve(cache.topic_name)
    fetch_list = list(session.partitions.items()) if session is not None else requested

    # KIP-392: a consumer's Fetch v11+ carries its rack; with it, it may read from followers.
    client_metadata = ClientMetadata(request.rack_id or "", ctx.client_id, ctx.client_host) \
        if v >= 11 and replica_id < 0 else None
    params = FetchParams(
        replica_id=replica_id, max_wait_ms=request.max_wait_ms, min_bytes=request.min_bytes,
        max_bytes=request.max_bytes if v >= 3 else NO_LIMIT, isolation=isolation,
        hard_max_bytes_limit=v < 3, client_metadata=client_metadata)
    to_read = fetch_list
    refused: list[tuple[TopicPartition, FetchPartitionData]] = []
    if server.authorizer is not None:
        to_read, refused = _authorized(ctx, replica_id, fetch_list)
    infos = [(tp, PartitionFetchInfo(cp.fetch_offset, cp.max_bytes, cp.current_leader_epoch,
                                     cp.log_start_offset, cp.last_fetched_epoch, cp.topic_id)) for tp, cp in to_read]
    result = server.replica_manager.fetch_messages(params, infos)

    ctx.quota_exempt = replica_id >= 0

    def build(results: list[tuple[TopicPartition, FetchPartitionData]]) -> Any:
        if server.metrics is not None:  # Kafka's BrokerTopicMetrics
            server.metrics.record_fetch(results, replica_id >= 0)
        if replica_id < 0 and (throttle_ms := ctx.record_quota(
                CONSUMER_BYTE_RATE, sum(d.size for _, d in results), unrecord_if_throttled=True)):
            # Over its quota: Kafka answers a consumer with no data (the session untouched) and mutes it.
            return response_for(request, throttle_time_ms=throttle_ms, error_code=ErrorCode.NONE,
                                session_id=session.session_id if session is not None else 0, responses=[])
        return _response(ctx, request, session, incremental, dict(fetch_list), refused + results, unknown_ids)

    if isinstance(result, asyncio.Future):
        async def wait() -> Any:
            return build(await result)
        return wait()
    return build(result)


_Requested = list[tuple[TopicPartition, CachedPartition]]


def _authorized(ctx: RequestContext, replica_id: int, fetch_list: _Requested
                ) -> tuple[_Requested, list[tuple[TopicPartition, FetchPartitionData]]]:
    """(the partitions to read, those refused with TOPIC_AUTHORIZATION_FAILED), as Kafka's handleFetchRequest:
    a follower needs CLUSTER_ACTION, a consumer READ on each topic."""
    if replica_id >= 0:
        allowed = {tp.topic for tp, _ in fetch_list} if ctx.authorize_cluster(AclOperation.CLUSTER_ACTION) else set()
    else:
        allowed = ctx.filter_authorized(AclOperation.READ, ResourceType.TOPIC, (tp.topic for tp, _ in fetch_list))
    refused = [(tp, FetchPartitionData(ErrorCode.TOPIC_AUTHORIZATION_FAILED)) for tp, _ in fetch_list
               if tp.topic not in allowed]
    return [(tp, cp) for tp, cp in fetch_list if tp.topic in allowed], refused


def _response(ctx: RequestContext, request: Any, session: Any, incremental: bool,
              cached: dict[TopicPartition, CachedPartition],
              results: list[tuple[TopicPartition, FetchPartitionData]],
              unknown_ids: list[tuple[uuid.UUID, int]]) -> Any:
    v = request.API_VERSION
    Resp = response_type(request)
    TopicResp = Resp.FetchableTopicResponse
    PartData = TopicResp.PartitionData
    cache = ctx.server.metadata_cache
    node_endpoints: dict[int, Any] = {}
    by_topic: dict[str, list] = {}
    rotate = []
    for tp, data in results:
        cp = cached[tp]
        has_data = data.records is not None and data.size > 0
        include = cp.maybe_update_response(data.high_watermark, data.last_stable_offset, data.log_start_offset,
                                           has_data or data.error != ErrorCode.NONE
                                           or data.diverging_epoch is not None or data.preferred_read_replica >= 0)
        if has_data:
            rotate.append(tp)
        if incremental and not include:
            continue
        fields: dict[str, Any] = dict(
            partition_index=tp.partition, error_code=data.error, high_watermark=data.high_watermark,
            last_stable_offset=data.last_stable_offset, log_start_offset=data.log_start_offset,
            aborted_transactions=_aborted(PartData, data.aborted_transactions) if v >= 4 else [],
            preferred_read_replica=data.preferred_read_replica,
            records=_records(v, data))
        if data.diverging_epoch is not None:
            fields["diverging_epoch"] = PartData.EpochEndOffset(epoch=data.diverging_epoch[0],
                                                                end_offset=data.diverging_epoch[1])
        if v >= 16 and data.error in (ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.FENCED_LEADER_EPOCH):
            # Kafka sends the hint only from v16, with the leader's endpoint when it is a live broker: below
            # that a client (kafka-python at v12) would route to a leader its metadata may not list yet.
            # Computed when the answer is built (after any wait in the purgatory), as Produce's hint is.
            leader_id, leader_epoch, leader = current_leader(ctx, tp)
            fields["current_leader"] = PartData.LeaderIdAndEpoch(leader_id=leader_id, leader_epoch=leader_epoch)
            if leader is not None:
                node_endpoints[leader_id] = Resp.NodeEndpoint(node_id=leader_id, host=leader.host,
                                                              port=leader.port, rack=leader.rack)
        by_topic.setdefault(tp.topic, []).append(PartData(**fields))
    if session is not None:
        for tp in rotate:
            session.partitions[tp] = session.partitions.pop(tp)
        session.epoch = next_epoch(session.epoch if incremental else 0)
    topics = [TopicResp(topic=name, topic_id=cache.topic_id(name) or ZERO_UUID, partitions=parts)
              for name, parts in by_topic.items()]
    unknown: dict[uuid.UUID, list] = {}
    for tid, p in unknown_ids:
        unknown.setdefault(tid, []).append(PartData(
            partition_index=p, error_code=ErrorCode.UNKNOWN_TOPIC_ID, high_watermark=-1,
            last_stable_offset=-1, log_start_offset=-1, records=b""))
    topics.extend(TopicResp(topic="", topic_id=tid, partitions=parts) for tid, parts in unknown.items())
    extra = {"node_endpoints": [node_endpoints[n] for n in sorted(node_endpoints)]} if v >= 16 else {}
    return response_for(request, throttle_time_ms=0, error_code=0,
                        session_id=session.session_id if session is not None else 0, responses=topics, **extra)


def _aborted(PartData: Any, aborted: list | None) -> list | None:
    """Kafka's AbortedTransaction entries (producer id, first offset); null for read_uncommitted."""
    if aborted is None:
        return None
    return [PartData.AbortedTransaction(producer_id=txn.producer_id, first_offset=txn.first_offset)
            for txn in aborted]


def _records(version: int, data: FetchPartitionData) -> Any:
    if data.records is None or data.size == 0:
        return b""
    if version < 4:
        # Pre-v2 clients understand only magic 0 (Fetch v0–v1) or magic 1 (v2–v3): down-convert, as Kafka does.
        return down_convert(data.records.read(), 0 if version < 2 else 1)  # type: ignore[attr-defined]
    return RecordsRef(length=data.size, source=data.records)

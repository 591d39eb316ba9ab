"""Group APIs from decoded Kafka requests to Kafka responses: the body of each group handler.

Contract: one coroutine per API. Each takes the `GroupCoordinator`, the request as decoded by
kafka-python's message classes (`kafka.protocol.consumer`, `kafka.protocol.admin`,
`kafka.protocol.metadata`) and the request's api version, and returns the response message object of the
same version, ready for `.encode()` (throttle_time_ms 0). A handler module under `broker/apis/` only
decodes, calls one of these and encodes. Nothing here raises for client input; unsupported combinations
become Kafka error codes.

The versions served are stated by each handler module (`MIN_VERSION`/`MAX_VERSION`), which ApiVersions
reads. Versions that name topics by topic ID (OffsetCommit v10, OffsetFetch v10) are not served.

`client_host` for JoinGroup is the peer address in Kafka's form, e.g. "/127.0.0.1".
Authorization is decided by the handler (the request context's helpers) and passed in as `Refusals`: the
group's error (GROUP_AUTHORIZATION_FAILED) and, per topic, TOPIC_AUTHORIZATION_FAILED; without an authorizer
nothing is refused and the answers are as before.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from broker.coordinator.group.coordinator import GroupCoordinator
from broker.coordinator.group.errors import GroupErrorCode as E
from broker.coordinator.group.results import FetchedOffset, LeaveMember, OffsetCommitEntry, OffsetFetchResult
from protocol import messages
from storage.values import TopicPartition

if TYPE_CHECKING:
    from kafka.protocol.admin import (
        DeleteGroupsRequest,
        DeleteGroupsResponse,
        DescribeGroupsRequest,
        DescribeGroupsResponse,
        ListGroupsRequest,
        ListGroupsResponse,
    )
    from kafka.protocol.consumer import (
        HeartbeatRequest,
        HeartbeatResponse,
        JoinGroupRequest,
        JoinGroupResponse,
        LeaveGroupRequest,
        LeaveGroupResponse,
        OffsetCommitRequest,
        OffsetCommitResponse,
        OffsetDeleteRequest,
        OffsetDeleteResponse,
        OffsetFetchRequest,
        OffsetFetchResponse,
        SyncGroupRequest,
        SyncGroupResponse,
    )
    from kafka.protocol.metadata import FindCoordinatorRequest, FindCoordinatorResponse

# Kafka's AclOperation codes a group supports (READ, DELETE, DESCRIBE): all granted unless the handler says otherwise.
_GROUP_AUTHORIZED_OPERATIONS = frozenset({3, 6, 8})

TopicRefusal = Callable[[str], int]
"""Per topic, the error a partition of it is answered with instead of reaching the group (0: none)."""


def _no_refusal(topic: str) -> int:
    return E.NONE


CoordinatorNode = tuple[int, str, int]
"""(node_id, host, port) of the broker leading a __consumer_offsets partition."""


def find_coordinator(coordinator: GroupCoordinator, request: FindCoordinatorRequest, version: int,
                     leader_of: Callable[[int], CoordinatorNode | None]) -> FindCoordinatorResponse:
    """FindCoordinator for group keys; `leader_of(partition)` gives the leader of that partition of
    __consumer_offsets, or None when there is none yet (COORDINATOR_NOT_AVAILABLE, the client retries).
    Transaction and share keys answer COORDINATOR_NOT_AVAILABLE: we run no such coordinator."""
    key_type = getattr(request, "key_type", 0) or 0
    keys = list(request.coordinator_keys or []) if version >= 4 else [request.key]

    def lookup(key: str) -> tuple[int, int, str, int]:
        if key_type != 0:
            return E.COORDINATOR_NOT_AVAILABLE, -1, "", -1
        if key is None or key == "":
            return E.INVALID_GROUP_ID, -1, "", -1
        node = leader_of(coordinator.partition_for(key))
        if node is None:
            return E.COORDINATOR_NOT_AVAILABLE, -1, "", -1
        return E.NONE, node[0], node[1], node[2]

    if version >= 4:
        item = messages.FindCoordinatorResponse.Coordinator
        coordinators = []
        for key in keys:
            code, node_id, host, port = lookup(key)
            coordinators.append(item(key=key, node_id=node_id, host=host, port=port, error_code=code,
                                     error_message=None))
        return messages.FindCoordinatorResponse(version=version, throttle_time_ms=0, coordinators=coordinators)
    code, node_id, host, port = lookup(keys[0])
    return messages.FindCoordinatorResponse(version=version, throttle_time_ms=0, error_code=code, error_message=None,
                                            node_id=node_id, host=host, port=port)


async def join_group(coordinator: GroupCoordinator, request: JoinGroupRequest, version: int,
                     client_id: str, client_host: str) -> JoinGroupResponse:
    result = await coordinator.join_group(
        request.group_id, request.member_id or "", request.group_instance_id if version >= 5 else None,
        client_id or "", client_host, request.rebalance_timeout_ms if version >= 1 else -1,
        request.session_timeout_ms, request.protocol_type or "",
        [(p.name, p.metadata) for p in request.protocols or []], api_version=version)
    member = messages.JoinGroupResponse.JoinGroupResponseMember
    return messages.JoinGroupResponse(
        version=version, throttle_time_ms=0, error_code=result.error_code,
        generation_id=result.generation_id, protocol_type=result.protocol_type,
        # ProtocolName is nullable only from v7.
        protocol_name=result.protocol_name if version >= 7 else (result.protocol_name or ""),
        leader=result.leader, skip_assignment=result.skip_assignment, member_id=result.member_id,
        members=[member(member_id=m.member_id, group_instance_id=m.group_instance_id, metadata=m.metadata)
                 for m in result.members])


async def sync_group(coordinator: GroupCoordinator, request: SyncGroupRequest,
                     version: int) -> SyncGroupResponse:
    result = await coordinator.sync_group(
        request.group_id, request.generation_id, request.member_id,
        request.group_instance_id if version >= 3 else None,
        request.protocol_type if version >= 5 else None, request.protocol_name if version >= 5 else None,
        [(a.member_id, a.assignment) for a in request.assignments or []])
    return messages.SyncGroupResponse(version=version, throttle_time_ms=0, error_code=result.error_code,
                                      protocol_type=result.protocol_type, protocol_name=result.protocol_name,
                                      assignment=result.assignment)


async def heartbeat(coordinator: GroupCoordinator, request: HeartbeatRequest,
                    version: int) -> HeartbeatResponse:
    code = await coordinator.heartbeat(request.group_id, request.member_id,
                                       request.group_instance_id if version >= 3 else None,
                                       request.generation_id)
    return messages.HeartbeatResponse(version=version, throttle_time_ms=0, error_code=code)


async def leave_group(coordinator: GroupCoordinator, request: LeaveGroupRequest,
                      version: int) -> LeaveGroupResponse:
    if version >= 3:
        leaving = [LeaveMember(m.member_id or "", m.group_instance_id) for m in request.members or []]
    else:
        leaving = [LeaveMember(request.member_id or "")]
    result = await coordinator.leave_group(request.group_id, leaving)
    if version < 3:
        # One member: its outcome is the request's outcome.
        code = result.error_code
        if code == E.NONE and result.members:
            code = result.members[0].error_code
        return messages.LeaveGroupResponse(version=version, throttle_time_ms=0, error_code=code)
    item = messages.LeaveGroupResponse.MemberResponse
    return messages.LeaveGroupResponse(
        version=version, throttle_time_ms=0, error_code=result.error_code,
        members=[item(member_id=m.member_id, group_instance_id=m.group_instance_id, error_code=m.error_code)
                 for m in result.members])


async def offset_commit(coordinator: GroupCoordinator, request: OffsetCommitRequest, version: int,
                        partition_exists: Callable[[str, int], bool] = lambda topic, partition: True,
                        refused: TopicRefusal = _no_refusal) -> OffsetCommitResponse:
    """Partitions that do not exist (`partition_exists`, the broker's metadata) answer
    UNKNOWN_TOPIC_OR_PARTITION without reaching the group, as Kafka's handleOffsetCommitRequest (every
    version); when none exists the group is not asked at all."""
    entries = []
    results: dict[TopicPartition, int] = {}
    for topic in request.topics or []:
        refusal = refused(topic.name)
        for p in topic.partitions or []:
            if refusal:
                results[TopicPartition(topic.name, p.partition_index)] = refusal
                continue
            if not partition_exists(topic.name, p.partition_index):
                results[TopicPartition(topic.name, p.partition_index)] = E.UNKNOWN_TOPIC_OR_PARTITION
                continue
            entries.append(OffsetCommitEntry(
                topic.name, p.partition_index, p.committed_offset,
                p.committed_leader_epoch if version >= 6 else -1, p.committed_metadata))
    generation = request.generation_id_or_member_epoch if version >= 1 else -1
    member_id = request.member_id if version >= 1 else ""
    retention = request.retention_time_ms if 2 <= version <= 4 else -1
    if entries:
        results.update(await coordinator.commit_offsets(
            request.group_id, member_id or "", request.group_instance_id if version >= 7 else None,
            generation, entries, retention_time_ms=retention, api_version=version))
    topic_cls = messages.OffsetCommitResponse.OffsetCommitResponseTopic
    part_cls = topic_cls.OffsetCommitResponsePartition
    topics = []
    for topic in request.topics or []:
        topics.append(topic_cls(name=topic.name, partitions=[
            part_cls(partition_index=p.partition_index,
                     error_code=results[TopicPartition(topic.name, p.partition_index)])
            for p in topic.partitions or []]))
    return messages.OffsetCommitResponse(version=version, throttle_time_ms=0, topics=topics)


async def offset_fetch(coordinator: GroupCoordinator, request: OffsetFetchRequest, version: int,
                       group_refused: Callable[[str], int] = _no_refusal,
                       refused: TopicRefusal = _no_refusal) -> OffsetFetchResponse:
    """`group_refused(group)`: the group's error instead of its offsets; `refused(topic)`: a named topic's
    partitions answer that error, and when all topics are asked for, refused topics are left out (Kafka)."""
    require_stable = bool(request.require_stable) if version >= 7 else False
    if version >= 8:
        group_cls = messages.OffsetFetchResponse.OffsetFetchResponseGroup
        topic_cls = group_cls.OffsetFetchResponseTopics
        part_cls = topic_cls.OffsetFetchResponsePartitions
        groups = []
        for g in request.groups or []:
            group_error = group_refused(g.group_id)
            if group_error:
                groups.append(group_cls(group_id=g.group_id, error_code=group_error, topics=[]))
                continue
            wanted = (None if g.topics is None
                      else [(t.name, p) for t in g.topics for p in t.partition_indexes or []])
            member = (g.member_id, g.member_epoch) if version >= 9 else (None, -1)
            result = _refuse_fetched(await coordinator.fetch_offsets(
                g.group_id, _allowed(wanted, refused), require_stable, *member), wanted, refused)
            groups.append(group_cls(group_id=g.group_id, error_code=result.error_code,
                                    topics=_fetched_topics(result.partitions, topic_cls, part_cls)))
        return messages.OffsetFetchResponse(version=version, throttle_time_ms=0, groups=groups)

    topic_cls = messages.OffsetFetchResponse.OffsetFetchResponseTopic
    part_cls = topic_cls.OffsetFetchResponsePartition
    wanted = (None if request.topics is None
              else [(t.name, p) for t in request.topics for p in t.partition_indexes or []])
    group_error = group_refused(request.group_id)
    if group_error:
        result = OffsetFetchResult(group_error, [])
    else:
        result = _refuse_fetched(await coordinator.fetch_offsets(
            request.group_id, _allowed(wanted, refused), require_stable), wanted, refused)
    if result.error_code != E.NONE:
        if version >= 2:
            return messages.OffsetFetchResponse(version=version, throttle_time_ms=0, topics=[],
                                                error_code=result.error_code)
        # v0-1 have no group-level error: every requested partition carries it.
        failed = [FetchedOffset(t, p, -1, -1, "", result.error_code) for t, p in wanted or []]
        result = OffsetFetchResult(E.NONE, failed)
    return messages.OffsetFetchResponse(version=version, throttle_time_ms=0, error_code=E.NONE,
                                        topics=_fetched_topics(result.partitions, topic_cls, part_cls))


def _allowed(wanted: list[tuple[str, int]] | None, refused: TopicRefusal) -> list[tuple[str, int]] | None:
    return None if wanted is None else [(t, p) for t, p in wanted if not refused(t)]


def _refuse_fetched(result: OffsetFetchResult, wanted: list[tuple[str, int]] | None,
                    refused: TopicRefusal) -> OffsetFetchResult:
    """The group's answer with refused topics: named ones answered with their error in the request's order,
    unnamed ones (all topics asked for) left out."""
    if refused is _no_refusal or result.error_code != E.NONE:
        return result
    if wanted is None:
        return OffsetFetchResult(result.error_code, [f for f in result.partitions if not refused(f.topic)])
    found = {(f.topic, f.partition): f for f in result.partitions}
    partitions = [found.get((t, p)) or FetchedOffset(t, p, -1, -1, "", refused(t)) for t, p in wanted]
    return OffsetFetchResult(result.error_code, partitions)


def _fetched_topics(partitions: list[FetchedOffset], topic_cls: type, part_cls: type) -> list[object]:
    by_topic: dict[str, list[object]] = {}
    for f in partitions:
        by_topic.setdefault(f.topic, []).append(part_cls(
            partition_index=f.partition, committed_offset=f.offset, committed_leader_epoch=f.leader_epoch,
            metadata=f.metadata, error_code=f.error_code))
    return [topic_cls(name=name, partitions=parts) for name, parts in by_topic.items()]


async def offset_delete(coordinator: GroupCoordinator, request: OffsetDeleteRequest, version: int,
                        refused: TopicRefusal = _no_refusal) -> OffsetDeleteResponse:
    wanted = [(t.name, p.partition_index) for t in request.topics or [] for p in t.partitions or []
              if not refused(t.name)]
    result = await coordinator.delete_offsets(request.group_id, wanted)
    for t in request.topics or []:
        if refusal := refused(t.name):
            result.partitions.update((TopicPartition(t.name, p.partition_index), refusal) for p in t.partitions or [])
    topic_cls = messages.OffsetDeleteResponse.OffsetDeleteResponseTopic
    part_cls = topic_cls.OffsetDeleteResponsePartition
    topics = []
    if result.error_code == E.NONE:
        for t in request.topics or []:
            topics.append(topic_cls(name=t.name, partitions=[
                part_cls(partition_index=p.partition_index,
                         error_code=result.partitions[TopicPartition(t.name, p.partition_index)])
                for p in t.partitions or []]))
    return messages.OffsetDeleteResponse(version=version, error_code=result.error_code, throttle_time_ms=0,
                                         topics=topics)


async def describe_groups(coordinator: GroupCoordinator, request: DescribeGroupsRequest, version: int,
                          group_refused: Callable[[str], int] = _no_refusal,
                          operations: Callable[[str], set[int]] = lambda group: set(_GROUP_AUTHORIZED_OPERATIONS)
                          ) -> DescribeGroupsResponse:
    """`group_refused(group)`: an error answered instead of the group (Kafka's DESCRIBE check);
    `operations(group)`: its authorized operations (v3+, when asked for)."""
    include_ops = version >= 3 and bool(request.include_authorized_operations)
    names = list(request.groups or [])
    refusals = {g: code for g in names if (code := group_refused(g))}
    described = {d.group_id: d for d in await coordinator.describe_groups([g for g in names if g not in refusals])}
    group_cls = messages.DescribeGroupsResponse.DescribedGroup
    member_cls = group_cls.DescribedGroupMember
    groups = [
        group_cls(error_code=d.error_code, error_message=None, group_id=d.group_id, group_state=d.group_state,
                  protocol_type=d.protocol_type, protocol_data=d.protocol_data,
                  members=[member_cls(member_id=m.member_id, group_instance_id=m.group_instance_id,
                                      client_id=m.client_id, client_host=m.client_host,
                                      member_metadata=m.member_metadata,
                                      member_assignment=m.member_assignment)
                           for m in d.members],
                  authorized_operations=operations(d.group_id) if include_ops else None)
        if (d := described.get(g)) is not None else
        group_cls(error_code=refusals[g], error_message=None, group_id=g, group_state="", protocol_type="",
                  protocol_data="", members=[], authorized_operations=None)
        for g in names]
    return messages.DescribeGroupsResponse(version=version, throttle_time_ms=0, groups=groups)


async def list_groups(coordinator: GroupCoordinator, request: ListGroupsRequest,
                      version: int) -> ListGroupsResponse:
    states = list(request.states_filter or []) if version >= 4 else None
    types = list(request.types_filter or []) if version >= 5 else None
    result = await coordinator.list_groups(states, types)
    item = messages.ListGroupsResponse.ListedGroup
    return messages.ListGroupsResponse(
        version=version, throttle_time_ms=0, error_code=result.error_code,
        groups=[item(group_id=g.group_id, protocol_type=g.protocol_type, group_state=g.group_state,
                     group_type=g.group_type) for g in result.groups])


async def delete_groups(coordinator: GroupCoordinator, request: DeleteGroupsRequest, version: int,
                        group_refused: Callable[[str], int] = _no_refusal) -> DeleteGroupsResponse:
    names = list(request.groups_names or [])
    refusals = {g: code for g in names if (code := group_refused(g))}
    results = await coordinator.delete_groups([g for g in names if g not in refusals]) if len(refusals) < len(names) \
        else {}
    results.update(refusals)
    item = messages.DeleteGroupsResponse.DeletableGroupResult
    return messages.DeleteGroupsResponse(
        version=version, throttle_time_ms=0,
        results=[item(group_id=name, error_code=results.get(name, E.GROUP_ID_NOT_FOUND)) for name in names])


# ---------------------------------------------------------------- KIP-848 consumer groups
def _assignment_topics(assignment: Mapping[uuid.UUID, frozenset[int]], topic_cls: type,
                       names: Callable[[uuid.UUID], str | None] | None = None) -> list[object]:
    out = []
    for topic_id, parts in sorted(assignment.items(), key=lambda item: str(item[0])):
        fields: dict[str, object] = {"topic_id": topic_id, "partitions": sorted(parts)}
        if names is not None:
            fields["topic_name"] = names(topic_id) or ""
        out.append(topic_cls(**fields))
    return out


async def consumer_group_heartbeat(coordinator: GroupCoordinator, request: Any, version: int, client_id: str,
                                   client_host: str,
                                   describable: Callable[[set[str]], set[str]] = set) -> Any:
    """ConsumerGroupHeartbeat v0-1 (KIP-848); `client_host` in Kafka's form, e.g. "/127.0.0.1";
    `describable(names)`: those the member may DESCRIBE (regex resolution keeps only them), default all."""
    owned = (None if request.topic_partitions is None
             else [(t.topic_id, list(t.partitions or [])) for t in request.topic_partitions])
    result = await coordinator.consumer_group_heartbeat(
        request.group_id, request.member_id or "", request.member_epoch, instance_id=request.instance_id,
        rack_id=request.rack_id, rebalance_timeout_ms=request.rebalance_timeout_ms,
        subscribed_topic_names=(None if request.subscribed_topic_names is None
                                else list(request.subscribed_topic_names)),
        subscribed_topic_regex=request.subscribed_topic_regex if version >= 1 else None,
        server_assignor=request.server_assignor, owned=owned, api_version=version, client_id=client_id,
        client_host=client_host, describable=describable)
    response = messages.ConsumerGroupHeartbeatResponse
    assignment = None
    if result.assignment is not None:
        assignment = response.Assignment(topic_partitions=_assignment_topics(
            result.assignment, response.Assignment.TopicPartitions))
    return response(version=version, throttle_time_ms=0, error_code=result.error_code,
                    error_message=result.error_message, member_id=result.member_id,
                    member_epoch=result.member_epoch, heartbeat_interval_ms=result.heartbeat_interval_ms,
                    assignment=assignment)


async def consumer_group_describe(coordinator: GroupCoordinator, request: Any, version: int,
                                  group_refused: Callable[[str], int] = _no_refusal,
                                  operations: Callable[[str], set[int]] | None = None) -> Any:
    """ConsumerGroupDescribe v0: epochs, assignor, and each member's subscription, current and target
    assignment (topics named from the broker's metadata). `operations(group)`: its authorized operations,
    when asked for."""
    response = messages.ConsumerGroupDescribeResponse
    group_cls = response.DescribedGroup
    member_cls = group_cls.Member
    assignment_cls = member_cls.Assignment
    names = coordinator.topics_image.name_of
    ids = list(request.group_ids or [])
    refusals = {g: code for g in ids if (code := group_refused(g))}
    described = {g: (code, group) for g, code, group in
                 await coordinator.consumer_group_describe([g for g in ids if g not in refusals])}
    groups = []
    for group_id in ids:
        code, group = (refusals[group_id], None) if group_id in refusals else described[group_id]
        if group is None:
            message = None
            if code == E.GROUP_ID_NOT_FOUND:  # Kafka's messages
                known = coordinator.group(group_id) is not None
                message = f"Group {group_id} is not a consumer group." if known else f"Group {group_id} not found."
            groups.append(group_cls(error_code=code, error_message=message, group_id=group_id, group_state="",
                                    group_epoch=0, assignment_epoch=0, assignor_name="", members=[]))
            continue
        members = [member_cls(
            member_id=m.member_id, instance_id=m.instance_id, rack_id=m.rack_id, member_epoch=m.member_epoch,
            client_id=m.client_id, client_host=m.client_host,
            subscribed_topic_names=list(m.subscribed_topic_names),
            subscribed_topic_regex=m.subscribed_topic_regex,
            assignment=assignment_cls(topic_partitions=_assignment_topics(
                m.assigned, assignment_cls.TopicPartitions, names)),
            target_assignment=assignment_cls(topic_partitions=_assignment_topics(
                group.target_assignment.get(m.member_id, {}), assignment_cls.TopicPartitions, names)))
            for m in group.members.values()]
        ops = -(2**31)
        if request.include_authorized_operations:
            allowed = operations(group_id) if operations is not None else set(_GROUP_AUTHORIZED_OPERATIONS)
            ops = sum(1 << op for op in allowed)
        groups.append(group_cls(error_code=E.NONE, group_id=group_id, group_state=group.state.value,
                                group_epoch=group.group_epoch, assignment_epoch=group.assignment_epoch,
                                assignor_name=coordinator.consumer_group_assignor(group), members=members,
                                authorized_operations=ops))
    return response(version=version, throttle_time_ms=0, groups=groups)

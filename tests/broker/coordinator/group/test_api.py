"""broker.coordinator.group.api: requests encoded and decoded by kafka-python, answered, responses decoded again."""

from __future__ import annotations

from typing import Any

import pytest
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

from broker.coordinator.group import GroupCoordinator, api
from broker.coordinator.group import GroupErrorCode as E
from tests.broker.coordinator.group.harness import OffsetsLog, run, subscription


def wire(request_cls: Any, version: int, **fields: Any) -> Any:
    """Encode with kafka-python as a client would, decode as the broker does."""
    return request_cls[version].decode(request_cls[version](**fields).encode())


def back(response: Any, response_cls: Any, version: int) -> Any:
    return response_cls[version].decode(response.encode())


async def join_v(c: GroupCoordinator, version: int, member_id: str = "", instance: str | None = None) -> Any:
    protocol = JoinGroupRequest.JoinGroupRequestProtocol(name="range", metadata=subscription("t"))
    fields: dict[str, Any] = dict(group_id="g", session_timeout_ms=10000, member_id=member_id,
                                  protocol_type="consumer", protocols=[protocol])
    if version >= 1:
        fields["rebalance_timeout_ms"] = 1000
    if version >= 5:
        fields["group_instance_id"] = instance
    request = wire(JoinGroupRequest, version, **fields)
    response = await api.join_group(c, request, version, "cli", "/127.0.0.1")
    return back(response, JoinGroupResponse, version)


@pytest.mark.parametrize("version", [0, 3, 4, 5, 6, 7, 9])
def test_join_sync_heartbeat_leave_across_versions(version: int) -> None:
    async def scenario() -> None:
        c = OffsetsLog().new_coordinator()
        joined = await join_v(c, version)
        if version >= 4:
            assert joined.error_code == E.MEMBER_ID_REQUIRED
            joined = await join_v(c, version, joined.member_id)
        assert (joined.error_code, joined.generation_id, joined.leader) == (E.NONE, 1, joined.member_id)
        assert joined.protocol_name == "range"
        assert [(m.member_id, m.metadata) for m in joined.members] == [(joined.member_id, subscription("t"))]
        if version >= 7:
            assert joined.protocol_type == "consumer"

        sync_version = min(version, 5)
        fields: dict[str, Any] = dict(group_id="g", generation_id=1, member_id=joined.member_id,
                                      assignments=[SyncGroupRequest.SyncGroupRequestAssignment(
                                          member_id=joined.member_id, assignment=b"asg")])
        if sync_version >= 5:
            fields.update(protocol_type="consumer", protocol_name="range")
        synced = back(await api.sync_group(c, wire(SyncGroupRequest, sync_version, **fields), sync_version),
                      SyncGroupResponse, sync_version)
        assert (synced.error_code, synced.assignment) == (E.NONE, b"asg")

        hb_version = min(version, 4)
        hb = back(await api.heartbeat(c, wire(HeartbeatRequest, hb_version, group_id="g", generation_id=1,
                                                    member_id=joined.member_id), hb_version),
                  HeartbeatResponse, hb_version)
        assert hb.error_code == E.NONE

        leave_version = min(version, 5)
        if leave_version >= 3:
            identity = LeaveGroupRequest.MemberIdentity(member_id=joined.member_id, group_instance_id=None)
            request = wire(LeaveGroupRequest, leave_version, group_id="g", members=[identity])
        else:
            request = wire(LeaveGroupRequest, leave_version, group_id="g", member_id=joined.member_id)
        left = back(await api.leave_group(c, request, leave_version), LeaveGroupResponse, leave_version)
        assert left.error_code == E.NONE
        if leave_version >= 3:
            assert [(m.member_id, m.error_code) for m in left.members] == [(joined.member_id, E.NONE)]
        again = back(await api.leave_group(c, request, leave_version), LeaveGroupResponse, leave_version)
        if leave_version >= 3:
            assert again.members[0].error_code == E.UNKNOWN_MEMBER_ID
        else:
            assert again.error_code == E.UNKNOWN_MEMBER_ID
    run(scenario)


def test_static_member_join_v5_through_the_wire() -> None:
    async def scenario() -> None:
        c = OffsetsLog().new_coordinator()
        joined = await join_v(c, 5, instance="inst-1")
        assert joined.error_code == E.NONE and joined.members[0].group_instance_id == "inst-1"
    run(scenario)


@pytest.mark.parametrize("version", [2, 5, 7, 8, 9])
def test_offset_commit_and_fetch_across_versions(version: int) -> None:
    async def scenario() -> None:
        c = OffsetsLog().new_coordinator()
        part = OffsetCommitRequest.OffsetCommitRequestTopic.OffsetCommitRequestPartition
        topic = OffsetCommitRequest.OffsetCommitRequestTopic
        partitions = [
            part(partition_index=0, committed_offset=10, committed_leader_epoch=4, committed_metadata="meta"),
            part(partition_index=1, committed_offset=11, committed_metadata=None)]
        fields: dict[str, Any] = dict(group_id="simple", generation_id_or_member_epoch=-1, member_id="",
                                      topics=[topic(name="t", partitions=partitions)])
        if 2 <= version <= 4:
            fields["retention_time_ms"] = -1
        committed = back(await api.offset_commit(c, wire(OffsetCommitRequest, version, **fields), version),
                         OffsetCommitResponse, version)
        got = [(t.name, [(p.partition_index, p.error_code) for p in t.partitions]) for t in committed.topics]
        assert got == [("t", [(0, E.NONE), (1, E.NONE)])]

        if version >= 8:
            g = OffsetFetchRequest.OffsetFetchRequestGroup
            gt = g.OffsetFetchRequestTopics
            request = wire(OffsetFetchRequest, version, groups=[
                g(group_id="simple", topics=[gt(name="t", partition_indexes=[0, 1, 2])]),
                g(group_id="simple", topics=None),
                g(group_id="", topics=None)], require_stable=False)
            fetched = back(await api.offset_fetch(c, request, version), OffsetFetchResponse, version)
            first, everything, empty = fetched.groups
            parts = [(p.partition_index, p.committed_offset, p.committed_leader_epoch, p.metadata)
                     for p in first.topics[0].partitions]
            assert sorted(p.partition_index for p in everything.topics[0].partitions) == [0, 1]
            assert (empty.error_code, empty.topics) == (E.NONE, [])
        else:
            t = OffsetFetchRequest.OffsetFetchRequestTopic
            request = wire(OffsetFetchRequest, version, group_id="simple",
                           topics=[t(name="t", partition_indexes=[0, 1, 2])])
            fetched = back(await api.offset_fetch(c, request, version), OffsetFetchResponse, version)
            assert fetched.error_code == E.NONE
            parts = [(p.partition_index, p.committed_offset, p.committed_leader_epoch, p.metadata)
                     for p in fetched.topics[0].partitions]
        epoch = 4 if version >= 6 else -1
        assert parts == [(0, 10, epoch, "meta"), (1, 11, -1, ""), (2, -1, -1, "")]
    run(scenario)


def test_offset_fetch_v1_repeats_group_errors_per_partition() -> None:
    async def scenario() -> None:
        c = OffsetsLog().new_coordinator()
        c.manager.unload_partition(c.partition_for("g"))
        t = OffsetFetchRequest.OffsetFetchRequestTopic
        request = wire(OffsetFetchRequest, 1, group_id="g", topics=[t(name="t", partition_indexes=[0])])
        fetched = back(await api.offset_fetch(c, request, 1), OffsetFetchResponse, 1)
        assert fetched.topics[0].partitions[0].error_code == E.NOT_COORDINATOR
        request = wire(OffsetFetchRequest, 5, group_id="g", topics=[t(name="t", partition_indexes=[0])])
        fetched = back(await api.offset_fetch(c, request, 5), OffsetFetchResponse, 5)
        assert (fetched.error_code, fetched.topics) == (E.NOT_COORDINATOR, [])
    run(scenario)


def test_admin_apis_through_the_wire() -> None:
    async def scenario() -> None:
        c = OffsetsLog().new_coordinator()
        joined = await join_v(c, 3)
        assert joined.error_code == E.NONE
        part = OffsetCommitRequest.OffsetCommitRequestTopic.OffsetCommitRequestPartition
        topic = OffsetCommitRequest.OffsetCommitRequestTopic
        commit = wire(OffsetCommitRequest, 8, group_id="idle", generation_id_or_member_epoch=-1, member_id="",
                      topics=[topic(name="t", partitions=[part(partition_index=0, committed_offset=1)])])
        await api.offset_commit(c, commit, 8)

        for version in (0, 3, 5):
            fields: dict[str, Any] = {"groups": ["g", "idle", "unknown"]}
            if version >= 3:
                fields["include_authorized_operations"] = version == 5
            request = wire(DescribeGroupsRequest, version, **fields)
            described = back(await api.describe_groups(c, request, version), DescribeGroupsResponse, version)
            states = [(d.group_id, d.group_state, len(d.members)) for d in described.groups]
            assert states == [("g", "CompletingRebalance", 1), ("idle", "Empty", 0), ("unknown", "Dead", 0)]
            if version == 5:
                assert described.groups[0].authorized_operations == {3, 6, 8}
            elif version == 3:
                assert described.groups[0].authorized_operations is None

        for version, fields in ((0, {}), (4, {"states_filter": ["Empty"]}),
                                (5, {"states_filter": [], "types_filter": ["classic"]})):
            listed = back(await api.list_groups(c, wire(ListGroupsRequest, version, **fields), version),
                          ListGroupsResponse, version)
            got = sorted(g.group_id for g in listed.groups)
            assert got == (["idle"] if version == 4 else ["g", "idle"])

        tp = OffsetDeleteRequest.OffsetDeleteRequestTopic
        tpp = tp.OffsetDeleteRequestPartition
        deleted = back(await api.offset_delete(c, wire(OffsetDeleteRequest, 0, group_id="idle", topics=[
            tp(name="t", partitions=[tpp(partition_index=0)])]), 0), OffsetDeleteResponse, 0)
        assert deleted.error_code == E.NONE and deleted.topics[0].partitions[0].error_code == E.NONE
        request = wire(OffsetDeleteRequest, 0, group_id="nope", topics=[])
        missing = back(await api.offset_delete(c, request, 0), OffsetDeleteResponse, 0)
        assert missing.error_code == E.GROUP_ID_NOT_FOUND

        for version in (0, 2):
            request = wire(DeleteGroupsRequest, version, groups_names=["g", "zz"])
            result = back(await api.delete_groups(c, request, version), DeleteGroupsResponse, version)
            assert [(r.group_id, r.error_code) for r in result.results] == [
                ("g", E.NON_EMPTY_GROUP), ("zz", E.GROUP_ID_NOT_FOUND)]
    run(scenario)


@pytest.mark.parametrize("version", [0, 1, 3, 4, 6])
def test_find_coordinator(version: int) -> None:
    async def scenario() -> None:
        c = OffsetsLog().new_coordinator()
        seen: list[int] = []

        def leader_of(partition: int) -> tuple[int, str, int] | None:
            seen.append(partition)
            return (1, "127.0.0.1", 9092) if partition != c.partition_for("leaderless") else None

        if version >= 4:
            request = wire(FindCoordinatorRequest, version, key_type=0, coordinator_keys=["g", "leaderless"])
        elif version >= 1:
            request = wire(FindCoordinatorRequest, version, key="g", key_type=0)
        else:
            request = wire(FindCoordinatorRequest, version, key="g")
        response = api.find_coordinator(c, request, version, leader_of)
        response = back(response, FindCoordinatorResponse, version)
        assert seen[0] == c.partition_for("g")
        if version >= 4:
            assert [(x.key, x.error_code, x.node_id, x.host, x.port) for x in response.coordinators] == [
                ("g", E.NONE, 1, "127.0.0.1", 9092), ("leaderless", E.COORDINATOR_NOT_AVAILABLE, -1, "", -1)]
        else:
            assert (response.error_code, response.node_id, response.host, response.port) == \
                (E.NONE, 1, "127.0.0.1", 9092)
    run(scenario)

"""DescribeGroups, ListGroups, DeleteGroups."""

from __future__ import annotations

from broker.coordinator.group import GroupErrorCode as E
from broker.coordinator.group import LeaveMember, OffsetCommitEntry
from broker.coordinator.group.schema import decode_key
from tests.broker.coordinator.group.harness import OffsetsLog, join, join_and_sync_all, run, subscription


def test_describe_stable_and_rebalancing_and_unknown_groups() -> None:
    async def scenario() -> None:
        c = OffsetsLog().new_coordinator()
        joins, syncs = await join_and_sync_all(c, "g", ["", ""], topics=("a", "b"))
        [described, unknown] = await c.describe_groups(["g", "nope"])
        assert (described.error_code, described.group_state, described.protocol_type,
                described.protocol_data) == (E.NONE, "Stable", "consumer", "range")
        assert {m.member_id: (m.client_id, m.client_host, m.member_metadata, m.member_assignment)
                for m in described.members} == {
            j.member_id: ("client", "/127.0.0.1", subscription("a", "b"), s.assignment)
            for j, s in zip(joins, syncs, strict=True)}
        assert (unknown.error_code, unknown.group_state, unknown.members) == (E.NONE, "Dead", [])
        c.manager.unload_partition(c.partition_for("elsewhere"))
        [moved] = await c.describe_groups(["elsewhere"])
        assert (moved.error_code, moved.group_state) == (E.NOT_COORDINATOR, "")

        await c.leave_group("g", [LeaveMember(joins[0].member_id)])
        [rebalancing] = await c.describe_groups(["g"])
        assert (rebalancing.group_state, rebalancing.protocol_data) == ("PreparingRebalance", "")
        assert [(m.member_id, m.member_metadata, m.member_assignment) for m in rebalancing.members] == [
            (joins[1].member_id, b"", b"")]
    run(scenario)


def test_list_groups_with_state_filter() -> None:
    async def scenario() -> None:
        c = OffsetsLog().new_coordinator()
        await join_and_sync_all(c, "stable-group", [""])
        await c.commit_offsets("empty-group", "", None, -1, [OffsetCommitEntry("t", 0, 1)])
        listed = await c.list_groups()
        assert listed.error_code == E.NONE
        assert sorted((g.group_id, g.protocol_type, g.group_state) for g in listed.groups) == [
            ("empty-group", "", "Empty"), ("stable-group", "consumer", "Stable")]
        only_stable = await c.list_groups(["stable"])
        assert [g.group_id for g in only_stable.groups] == ["stable-group"]
        assert [g.group_id for g in (await c.list_groups(["Empty", "Dead"])).groups] == ["empty-group"]
        assert len((await c.list_groups(None, ["classic"])).groups) == 2
        assert (await c.list_groups(None, ["consumer"])).groups == []
        c.manager.begin_loading(49)
        assert (await c.list_groups()).error_code == E.COORDINATOR_LOAD_IN_PROGRESS
        c.shutdown()
        assert (await c.list_groups()).error_code == E.COORDINATOR_NOT_AVAILABLE
    run(scenario)


def test_delete_groups() -> None:
    async def scenario() -> None:
        log = OffsetsLog()
        c = log.new_coordinator()
        joins, _ = await join_and_sync_all(c, "busy", [""])
        await c.commit_offsets("idle", "", None, -1,
                               [OffsetCommitEntry("t", 0, 1), OffsetCommitEntry("t", 1, 2)])
        result = await c.delete_groups(["busy", "idle", "missing"])
        assert result == {"busy": E.NON_EMPTY_GROUP, "idle": E.NONE, "missing": E.GROUP_ID_NOT_FOUND}
        assert c.group("idle") is None
        assert (await c.fetch_offsets("idle", [("t", 0)])).partitions[0].offset == -1
        assert await c.delete_groups(["idle"]) == {"idle": E.GROUP_ID_NOT_FOUND}
        # Tombstones for both offsets and the group were written.
        tombstones = [decode_key(k) for k, v in log.partitions[c.partition_for("idle")] if v is None]
        assert len(tombstones) == 3

        await c.leave_group("busy", [LeaveMember(joins[0].member_id)])
        assert await c.delete_groups(["busy"]) == {"busy": E.NONE}
        # A deleted group's id can be used again from scratch.
        fresh = await join(c, "busy", version=3)
        assert fresh.generation_id == 1
    run(scenario)

"""JoinGroup / SyncGroup / Heartbeat / LeaveGroup: generations, rebalances, timeouts, static members."""

from __future__ import annotations

import asyncio
from dataclasses import replace

from broker.coordinator.group import GroupErrorCode as E
from broker.coordinator.group import GroupState, LeaveMember, OffsetCommitEntry
from storage.values import TopicPartition
from tests.broker.coordinator.group.harness import (
    TEST_CONFIG,
    OffsetsLog,
    join,
    join_and_sync_all,
    join_fully,
    run,
    subscription,
    sync,
)


def test_single_member_join_sync_heartbeat() -> None:
    async def scenario() -> None:
        log = OffsetsLog()
        c = log.new_coordinator()
        first = await join(c, "g1", client_id="cli")
        assert first.error_code == E.MEMBER_ID_REQUIRED
        assert first.member_id.startswith("cli-")
        assert c.group("g1").state is GroupState.EMPTY  # a pending member does not start a rebalance

        joined = await join(c, "g1", first.member_id, client_id="cli")
        assert joined.error_code == E.NONE
        assert joined.member_id == first.member_id == joined.leader
        assert joined.generation_id == 1
        assert joined.protocol_type == "consumer" and joined.protocol_name == "range"
        assert [(m.member_id, m.metadata) for m in joined.members] == [(joined.member_id, subscription("t"))]

        synced = await sync(c, "g1", joined, {joined.member_id: b"mine"})
        assert (synced.error_code, synced.assignment) == (E.NONE, b"mine")
        assert synced.protocol_name == "range"
        assert c.group("g1").state is GroupState.STABLE
        assert await c.heartbeat("g1", joined.member_id, None, 1) == E.NONE
        # The assignment was stored in __consumer_offsets before SyncGroup answered.
        assert sum(len(v) for v in log.partitions.values()) == 1
    run(scenario)


def test_three_members_share_one_generation_and_get_their_assignments() -> None:
    async def scenario() -> None:
        c = OffsetsLog().new_coordinator()
        joins, syncs = await join_and_sync_all(c, "g3", ["", "", ""])
        assert {j.error_code for j in joins} == {E.NONE}
        assert {j.generation_id for j in joins} == {1}
        leaders = [j for j in joins if j.member_id == j.leader]
        assert len(leaders) == 1 and len(leaders[0].members) == 3
        assert all(j.members == [] for j in joins if j is not leaders[0])
        assert len({j.member_id for j in joins}) == 3
        expected = {m.member_id: f"assignment-{i}".encode() for i, m in enumerate(leaders[0].members)}
        assert {j.member_id: s.assignment for j, s in zip(joins, syncs, strict=True)} == expected
        for j in joins:
            assert await c.heartbeat("g3", j.member_id, None, 1) == E.NONE
    run(scenario)


def test_member_leaves_and_another_joins_each_causing_a_rebalance() -> None:
    async def scenario() -> None:
        c = OffsetsLog().new_coordinator()
        joins, _ = await join_and_sync_all(c, "g", ["", "", ""])
        ids = [j.member_id for j in joins]

        leave = await c.leave_group("g", [LeaveMember(ids[0])])
        assert leave.error_code == E.NONE and leave.members[0].error_code == E.NONE
        assert c.group("g").state is GroupState.PREPARING_REBALANCE
        assert await c.heartbeat("g", ids[1], None, 1) == E.REBALANCE_IN_PROGRESS
        assert await c.heartbeat("g", ids[0], None, 1) == E.UNKNOWN_MEMBER_ID

        joins2, syncs2 = await join_and_sync_all(c, "g", ids[1:])
        assert {j.generation_id for j in joins2} == {2}
        assert sorted(j.member_id for j in joins2) == sorted(ids[1:])
        assert all(s.error_code == E.NONE and s.assignment for s in syncs2)

        # A new member's join puts the group into a rebalance the others notice through heartbeats.
        newcomer = asyncio.ensure_future(join_fully(c, "g"))
        await asyncio.sleep(0.05)
        assert await c.heartbeat("g", ids[1], None, 2) == E.REBALANCE_IN_PROGRESS
        assert (await c.sync_group("g", 2, ids[1], None, "consumer", "range", [])).error_code == \
            E.REBALANCE_IN_PROGRESS
        rejoin = await asyncio.gather(*(join_fully(c, "g", mid) for mid in ids[1:]))
        joined_new = await newcomer
        everyone = [*rejoin, joined_new]
        assert {j.generation_id for j in everyone} == {3}
        assert len({j.member_id for j in everyone}) == 3
        assert c.group("g").state is GroupState.COMPLETING_REBALANCE
        assert await c.heartbeat("g", ids[1], None, 2) == E.ILLEGAL_GENERATION
    run(scenario)


def test_session_expiry_removes_a_silent_member() -> None:
    async def scenario() -> None:
        c = OffsetsLog().new_coordinator()
        joins, _ = await join_and_sync_all(c, "g", ["", ""], session_ms=300)
        alive, silent = joins[0].member_id, joins[1].member_id
        for _ in range(6):
            await asyncio.sleep(0.1)
            code = await c.heartbeat("g", alive, None, 1)
            if code != E.NONE:
                break
        assert code == E.REBALANCE_IN_PROGRESS
        assert not c.group("g").has(silent)
        rejoined = await join_fully(c, "g", alive, session_ms=300)
        assert (rejoined.error_code, rejoined.generation_id, rejoined.leader) == (E.NONE, 2, alive)
        assert [m.member_id for m in rejoined.members] == [alive]
    run(scenario)


def test_member_that_does_not_rejoin_is_dropped_after_the_rebalance_timeout() -> None:
    async def scenario() -> None:
        c = OffsetsLog().new_coordinator()
        joins, _ = await join_and_sync_all(c, "g", ["", ""], rebalance_ms=300)
        a, b = joins[0].member_id, joins[1].member_id
        loop = asyncio.get_running_loop()
        started = loop.time()
        # a rejoins (a rebalance starts); b keeps heartbeating but never rejoins.
        rejoin = asyncio.ensure_future(join(c, "g", a, rebalance_ms=300))
        await asyncio.sleep(0.05)
        assert await c.heartbeat("g", b, None, 1) == E.REBALANCE_IN_PROGRESS
        result = await rejoin
        assert 0.25 <= loop.time() - started < 2.0
        assert (result.error_code, result.generation_id, [m.member_id for m in result.members]) == \
            (E.NONE, 2, [a])
        assert await c.heartbeat("g", b, None, 1) == E.UNKNOWN_MEMBER_ID
    run(scenario)


def test_pending_sync_expiry_removes_member_that_never_synced() -> None:
    async def scenario() -> None:
        c = OffsetsLog().new_coordinator()
        joins = await asyncio.gather(join_fully(c, "g", rebalance_ms=200),
                                     join_fully(c, "g", rebalance_ms=200))
        leader = next(j for j in joins if j.member_id == j.leader)
        follower = next(j for j in joins if j is not leader)
        synced = await sync(c, "g", leader, {leader.member_id: b"x", follower.member_id: b"y"})
        assert synced.assignment == b"x"
        await asyncio.sleep(0.35)  # the follower never sends SyncGroup
        assert not c.group("g").has(follower.member_id)
        assert c.group("g").state is GroupState.PREPARING_REBALANCE
    run(scenario)


def test_initial_rebalance_delay_gathers_members_into_the_first_generation() -> None:
    async def scenario() -> None:
        config = replace(TEST_CONFIG, group_initial_rebalance_delay_ms=200)
        c = OffsetsLog().new_coordinator(config)
        first = asyncio.ensure_future(join(c, "g", version=3))
        await asyncio.sleep(0.1)
        assert not first.done()
        second = await join(c, "g", version=3)
        assert (await first).generation_id == second.generation_id == 1
        assert len((await first).members or second.members) == 2
    run(scenario)


def test_static_member_restart_keeps_assignment_without_rebalance() -> None:
    async def scenario() -> None:
        log = OffsetsLog()
        c = log.new_coordinator()
        joins = await asyncio.gather(join_fully(c, "g", instance_id="i-a"),
                                     join_fully(c, "g", instance_id="i-b"))
        by_instance = dict(zip(["i-a", "i-b"], joins, strict=True))
        leader = next(j for j in joins if j.member_id == j.leader)
        assignments = {by_instance["i-a"].member_id: b"for-a", by_instance["i-b"].member_id: b"for-b"}
        await asyncio.gather(*(sync(c, "g", j, assignments if j is leader else None, instance_id=i)
                               for i, j in by_instance.items()))
        follower_instance = "i-a" if by_instance["i-b"] is leader else "i-b"
        old = by_instance[follower_instance]

        # The follower restarts: no member id, same group.instance.id (no MEMBER_ID_REQUIRED for it).
        restarted = await join(c, "g", instance_id=follower_instance)
        assert restarted.error_code == E.NONE
        assert restarted.member_id != old.member_id and restarted.generation_id == 1
        assert restarted.member_id.startswith(f"{follower_instance}-")
        assert restarted.leader == leader.member_id and restarted.members == []
        assert c.group("g").state is GroupState.STABLE
        synced = await sync(c, "g", restarted, instance_id=follower_instance)
        assert synced.assignment == assignments[old.member_id]
        assert await c.heartbeat("g", leader.member_id, None, 1) == E.NONE
        # The old incarnation is fenced.
        assert await c.heartbeat("g", old.member_id, follower_instance, 1) == E.FENCED_INSTANCE_ID
        assert (await join(c, "g", old.member_id, instance_id=follower_instance)).error_code == \
            E.FENCED_INSTANCE_ID

        # The leader restarts: before KIP-814 it is told the old leader id so it does not reassign;
        # with JoinGroup v9 it learns it leads and that it must skip the assignment.
        leader_instance = "i-b" if follower_instance == "i-a" else "i-a"
        v5 = await join(c, "g", instance_id=leader_instance, version=5)
        assert v5.leader == leader.member_id != v5.member_id and not v5.skip_assignment
        v9 = await join(c, "g", instance_id=leader_instance, version=9)
        assert v9.leader == v9.member_id and v9.skip_assignment and len(v9.members) == 2
        assert c.group("g").generation_id == 1 and c.group("g").state is GroupState.STABLE
    run(scenario)


def test_static_member_rejoin_while_completing_rebalance_triggers_new_rebalance() -> None:
    async def scenario() -> None:
        c = OffsetsLog().new_coordinator()
        a = await join_fully(c, "g", instance_id="i-a")
        assert c.group("g").state is GroupState.COMPLETING_REBALANCE
        again = await join(c, "g", instance_id="i-a")
        assert again.error_code == E.NONE and again.generation_id == 2
        # The first incarnation's SyncGroup is fenced.
        assert (await sync(c, "g", a, instance_id="i-a")).error_code == E.FENCED_INSTANCE_ID
    run(scenario)


def test_member_id_required_pending_member_expires() -> None:
    async def scenario() -> None:
        c = OffsetsLog().new_coordinator()
        pending = await join(c, "g", session_ms=100)
        assert pending.error_code == E.MEMBER_ID_REQUIRED
        assert pending.member_id in c.group("g").pending_members
        await asyncio.sleep(0.2)
        assert pending.member_id not in c.group("g").pending_members
        # Joining with an expired pending id is an unknown member.
        assert (await join(c, "g", pending.member_id)).error_code == E.UNKNOWN_MEMBER_ID
        # JoinGroup v0-3 clients are admitted directly.
        old_client = await join(c, "g", version=3)
        assert old_client.error_code == E.NONE and old_client.generation_id == 1
    run(scenario)


def test_pending_member_blocks_rebalance_completion_until_it_joins() -> None:
    async def scenario() -> None:
        c = OffsetsLog().new_coordinator()
        joins, _ = await join_and_sync_all(c, "g", [""])
        a = joins[0].member_id
        pending = await join(c, "g")
        assert pending.error_code == E.MEMBER_ID_REQUIRED
        rejoin_a = asyncio.ensure_future(join(c, "g", a))
        await asyncio.sleep(0.05)
        assert not rejoin_a.done()  # the pending member is expected
        b = await join(c, "g", pending.member_id)
        assert (await rejoin_a).generation_id == b.generation_id == 2
    run(scenario)


def test_error_codes_for_bad_member_generation_and_protocol() -> None:
    async def scenario() -> None:
        c = OffsetsLog().new_coordinator()
        joins, _ = await join_and_sync_all(c, "g", [""])
        m = joins[0].member_id
        assert await c.heartbeat("g", m, None, 7) == E.ILLEGAL_GENERATION
        assert await c.heartbeat("g", "nobody", None, 1) == E.UNKNOWN_MEMBER_ID
        assert await c.heartbeat("nogroup", m, None, 1) == E.UNKNOWN_MEMBER_ID
        assert (await c.sync_group("g", 9, m, None, None, None, [])).error_code == E.ILLEGAL_GENERATION
        assert (await c.sync_group("g", 1, "nobody", None, None, None, [])).error_code == E.UNKNOWN_MEMBER_ID
        assert (await c.sync_group("g", 1, m, None, "connect", None, [])).error_code == \
            E.INCONSISTENT_GROUP_PROTOCOL
        assert (await join(c, "g", "nobody")).error_code == E.UNKNOWN_MEMBER_ID
        assert (await join(c, "fresh", "made-up-id")).error_code == E.UNKNOWN_MEMBER_ID
        assert (await join(c, "g", protocol_type="connect")).error_code == E.INCONSISTENT_GROUP_PROTOCOL
        assert (await join(c, "g", protocols=[("sticky", b"")])).error_code == E.INCONSISTENT_GROUP_PROTOCOL
        assert (await join(c, "g", session_ms=5)).error_code == E.INVALID_SESSION_TIMEOUT
        assert (await join(c, "g", session_ms=60001)).error_code == E.INVALID_SESSION_TIMEOUT
        assert (await join(c, "")).error_code == E.INVALID_GROUP_ID
        leave = await c.leave_group("g", [LeaveMember("nobody"), LeaveMember(m)])
        assert [r.error_code for r in leave.members] == [E.UNKNOWN_MEMBER_ID, E.NONE]
        unknown_group = await c.leave_group("nogroup", [LeaveMember("x")])
        assert unknown_group.members[0].error_code == E.UNKNOWN_MEMBER_ID
    run(scenario)


def test_protocol_selection_by_vote() -> None:
    async def scenario() -> None:
        c = OffsetsLog().new_coordinator()
        prefs = [
            [("range", b"r1"), ("roundrobin", b"rr1")],
            [("roundrobin", b"rr2"), ("range", b"r2")],
            [("roundrobin", b"rr3"), ("sticky", b"s3"), ("range", b"r3")],
        ]
        joins = await asyncio.gather(*(join_fully(c, "g", protocols=p) for p in prefs))
        assert {j.protocol_name for j in joins} == {"roundrobin"}
        leader = next(j for j in joins if j.members)
        assert sorted(m.metadata for m in leader.members) == [b"rr1", b"rr2", b"rr3"]
    run(scenario)


def test_group_max_size() -> None:
    async def scenario() -> None:
        c = OffsetsLog().new_coordinator(replace(TEST_CONFIG, group_max_size=2))
        joins, _ = await join_and_sync_all(c, "g", ["", ""])
        assert (await join_fully(c, "g")).error_code == E.GROUP_MAX_SIZE_REACHED
        assert c.group("g").size == 2 and c.group("g").state is GroupState.STABLE
        assert await asyncio.gather(*(c.heartbeat("g", j.member_id, None, 1) for j in joins)) == [E.NONE] * 2
    run(scenario)


def test_static_leave_by_instance_id_and_fencing() -> None:
    async def scenario() -> None:
        c = OffsetsLog().new_coordinator()
        joins = await asyncio.gather(join(c, "g", instance_id="static-1"),
                                     join(c, "g", instance_id="static-2"))
        assert [j.error_code for j in joins] == [E.NONE, E.NONE]
        fenced = await c.leave_group("g", [LeaveMember("wrong-id", "static-1")])
        assert fenced.members[0].error_code == E.FENCED_INSTANCE_ID
        assert c.group("g").has(joins[0].member_id)
        by_instance = await c.leave_group("g", [LeaveMember("", "static-1"), LeaveMember("", "static-3")])
        assert [r.error_code for r in by_instance.members] == [E.NONE, E.UNKNOWN_MEMBER_ID]
        assert set(c.group("g").static_members) == {"static-2"}
        assert c.group("g").state is GroupState.PREPARING_REBALANCE
    run(scenario)


def test_unload_answers_waiting_members_and_then_not_coordinator() -> None:
    async def scenario() -> None:
        c = OffsetsLog().new_coordinator(replace(TEST_CONFIG, group_initial_rebalance_delay_ms=300))
        waiting = asyncio.ensure_future(join(c, "g", version=3))
        await asyncio.sleep(0.02)
        assert not waiting.done()
        partition = c.partition_for("g")
        c.manager.unload_partition(partition)
        assert (await waiting).error_code == E.NOT_COORDINATOR
        assert (await join(c, "g")).error_code == E.NOT_COORDINATOR
        c.manager.begin_loading(partition)
        assert (await join(c, "g")).error_code == E.COORDINATOR_LOAD_IN_PROGRESS
        assert await c.heartbeat("g", "m", None, 1) == E.NONE
        assert (await c.sync_group("g", 1, "m", None, None, None, [])).error_code == E.REBALANCE_IN_PROGRESS
        c.manager.on_partition_loaded(partition)
        assert (await join(c, "g", version=3)).error_code == E.NONE
        c.shutdown()
        assert (await join(c, "g")).error_code == E.COORDINATOR_NOT_AVAILABLE
    run(scenario)


def test_cancelled_join_caller_does_not_break_the_rebalance() -> None:
    async def scenario() -> None:
        c = OffsetsLog().new_coordinator()
        a = asyncio.ensure_future(join(c, "g", version=3))
        b = asyncio.ensure_future(join(c, "g", version=3))
        await asyncio.sleep(0)
        a.cancel()  # its connection went away
        result = await b
        assert result.error_code == E.NONE and result.generation_id == 1
        assert c.group("g").size == 2
    run(scenario)


def test_superseded_join_is_answered_and_heartbeat_while_completing() -> None:
    async def scenario() -> None:
        c = OffsetsLog().new_coordinator()
        joins, _ = await join_and_sync_all(c, "g", ["", ""])
        a, b = joins[0].member_id, joins[1].member_id
        first = asyncio.ensure_future(join(c, "g", a))
        await asyncio.sleep(0.01)
        second = asyncio.ensure_future(join(c, "g", a))
        # The first request is answered at once, so its connection's response queue keeps moving.
        assert (await first).error_code == E.REBALANCE_IN_PROGRESS
        rejoined_b = await join(c, "g", b)
        assert (await second).generation_id == rejoined_b.generation_id == 2
        assert c.group("g").state is GroupState.COMPLETING_REBALANCE
        assert await c.heartbeat("g", b, None, 2) == E.NONE
    run(scenario)


def test_leader_leaving_during_sync_fails_waiting_followers() -> None:
    async def scenario() -> None:
        c = OffsetsLog().new_coordinator()
        joins = await asyncio.gather(join_fully(c, "g"), join_fully(c, "g"))
        leader = next(j for j in joins if j.members)
        follower = next(j for j in joins if not j.members)
        waiting = asyncio.ensure_future(sync(c, "g", follower))
        await asyncio.sleep(0.01)
        assert not waiting.done()
        await c.leave_group("g", [LeaveMember(leader.member_id)])
        assert (await waiting).error_code == E.REBALANCE_IN_PROGRESS
        rejoined = await join(c, "g", follower.member_id)
        assert (rejoined.generation_id, rejoined.leader) == (2, follower.member_id)
    run(scenario)


def test_fenced_static_member_cannot_commit() -> None:
    async def scenario() -> None:
        c = OffsetsLog().new_coordinator()
        old = await join(c, "g", instance_id="inst")
        await sync(c, "g", old, {old.member_id: b"a"}, instance_id="inst")
        new = await join(c, "g", instance_id="inst")
        assert new.member_id != old.member_id
        entry = [OffsetCommitEntry("t", 0, 5)]
        assert await c.commit_offsets("g", old.member_id, "inst", 1, entry) == {
            TopicPartition("t", 0): E.FENCED_INSTANCE_ID}
        assert await c.commit_offsets("g", new.member_id, "inst", 1, entry) == {
            TopicPartition("t", 0): E.NONE}
    run(scenario)


def test_strings_too_long_for_consumer_offsets_records_are_refused() -> None:
    async def scenario() -> None:
        c = OffsetsLog().new_coordinator()
        huge = "x" * 40000
        assert (await join(c, huge)).error_code == E.INVALID_GROUP_ID
        assert (await join(c, "g", client_id=huge)).error_code == E.INVALID_REQUEST
        assert (await join(c, "g", instance_id=huge)).error_code == E.INVALID_REQUEST
        entries = [OffsetCommitEntry(huge, 0, 1), OffsetCommitEntry("t", 0, 1)]
        commit = await c.commit_offsets("g", "", None, -1, entries)
        assert commit == {TopicPartition(huge, 0): E.INVALID_REQUEST, TopicPartition("t", 0): E.NONE}
        assert (await c.describe_groups([huge]))[0].error_code == E.INVALID_GROUP_ID
    run(scenario)

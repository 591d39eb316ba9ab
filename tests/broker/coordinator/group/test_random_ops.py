"""Random interleavings of group operations: nothing hangs, no exception escapes, invariants hold."""

from __future__ import annotations

import asyncio
import random
from dataclasses import replace

import pytest

from broker.coordinator.group import GroupCoordinator, GroupState, LeaveMember, OffsetCommitEntry
from tests.broker.coordinator.group.harness import TEST_CONFIG, OffsetsLog, join, run, sync


def check_invariants(c: GroupCoordinator) -> None:
    for group_id in ("g", "h"):
        g = c.group(group_id)
        if g is None:
            continue
        assert g.state is not GroupState.DEAD
        if g.members:
            assert g.leader_id in g.members
        else:
            assert g.state in (GroupState.EMPTY, GroupState.PREPARING_REBALANCE)
        assert set(g.static_members.values()) <= set(g.members)
        for instance, member_id in g.static_members.items():
            assert g.members[member_id].group_instance_id == instance
        assert g.pending_sync_members <= set(g.members)
        if g.state is GroupState.STABLE:
            assert g.protocol_name is not None


@pytest.mark.parametrize("seed", range(6))
def test_random_operations(seed: int) -> None:
    async def scenario() -> None:
        rnd = random.Random(seed)
        log = OffsetsLog()
        config = replace(TEST_CONFIG, group_initial_rebalance_delay_ms=rnd.choice([0, 20]))
        c = log.new_coordinator(config)
        known: dict[str, dict[str, int]] = {"g": {}, "h": {}}  # member id -> generation it last saw
        tasks: list[asyncio.Task[object]] = []

        async def do_join(group_id: str, member_id: str, instance: str | None) -> None:
            r = await join(c, group_id, member_id, instance_id=instance, session_ms=rnd.choice([150, 400]),
                           rebalance_ms=rnd.choice([100, 300]), version=rnd.choice([3, 5, 9]))
            if r.member_id and r.error_code == 0:
                known[group_id][r.member_id] = r.generation_id
                if r.member_id == r.leader and r.members and rnd.random() < 0.8:
                    assignment = {m.member_id: b"a" for m in r.members}
                    await sync(c, group_id, r, assignment, instance_id=instance)
                elif rnd.random() < 0.8:
                    await sync(c, group_id, r, instance_id=instance)
            elif r.member_id and r.error_code == 79:
                known[group_id][r.member_id] = -1

        for _ in range(120):
            group_id = rnd.choice(["g", "h"])
            members = list(known[group_id])
            op = rnd.random()
            member_id = rnd.choice(members) if members and rnd.random() < 0.7 else ""
            instance = rnd.choice([None, None, "i1", "i2"])
            generation = known[group_id].get(member_id, -1)
            if op < 0.35:
                tasks.append(asyncio.ensure_future(do_join(group_id, member_id, instance)))
            elif op < 0.55:
                tasks.append(asyncio.ensure_future(c.heartbeat(group_id, member_id, None, generation)))
            elif op < 0.65:
                tasks.append(asyncio.ensure_future(c.leave_group(group_id, [LeaveMember(member_id, instance)])))
            elif op < 0.8:
                tasks.append(asyncio.ensure_future(c.commit_offsets(
                    group_id, member_id, None, generation, [OffsetCommitEntry("t", rnd.randrange(3), 5)])))
            elif op < 0.85:
                tasks.append(asyncio.ensure_future(c.delete_groups([group_id])))
            elif op < 0.9:
                tasks.append(asyncio.ensure_future(c.fetch_offsets(group_id, None)))
            else:
                tasks.append(asyncio.ensure_future(c.describe_groups([group_id])))
            await asyncio.sleep(rnd.choice([0, 0, 0.001, 0.01, 0.03]))
            check_invariants(c)

        # Everything finishes within the longest timeouts involved (rebalance + session).
        done, pending = await asyncio.wait(tasks, timeout=3)
        assert not pending, f"{len(pending)} requests never answered"
        for t in done:
            assert t.exception() is None, repr(t.exception())
        check_invariants(c)
        c.shutdown()
        # Whatever was stored loads back.
        reloaded = log.new_coordinator(config)
        check_invariants(reloaded)
        reloaded.shutdown()
    run(scenario, timeout=20)

"""OffsetCommit / OffsetFetch / OffsetDelete, persistence in __consumer_offsets and reload."""

from __future__ import annotations

import asyncio
from dataclasses import replace

from broker.coordinator.group import GroupCoordinator, GroupState, LeaveMember, OffsetCommitEntry
from broker.coordinator.group import GroupErrorCode as E
from broker.coordinator.group.schema import (
    OffsetCommitKey,
    decode_group_metadata_value,
    decode_key,
    decode_offset_commit_value,
)
from storage.values import TopicPartition
from tests.broker.coordinator.group.harness import (
    TEST_CONFIG,
    AppendFailed,
    OffsetsLog,
    join,
    join_and_sync_all,
    join_fully,
    run,
    subscription,
    sync,
)


def entries(*specs: tuple[str, int, int, str]) -> list[OffsetCommitEntry]:
    return [OffsetCommitEntry(t, p, o, leader_epoch=p + 1, metadata=m) for t, p, o, m in specs]


async def committed(c: GroupCoordinator, group_id: str, *tps: tuple[str, int]) -> list[int]:
    return [f.offset for f in (await c.fetch_offsets(group_id, list(tps))).partitions]


def test_member_commit_and_fetch_round_trip_metadata() -> None:
    async def scenario() -> None:
        c = OffsetsLog().new_coordinator()
        joins, _ = await join_and_sync_all(c, "g", [""])
        m = joins[0].member_id
        result = await c.commit_offsets("g", m, None, 1, entries(("t", 0, 10, "first"), ("t", 1, 20, "ü")))
        assert result == {TopicPartition("t", 0): E.NONE, TopicPartition("t", 1): E.NONE}
        fetched = await c.fetch_offsets("g", [("t", 1), ("t", 0), ("t", 5), ("other", 0)])
        assert fetched.error_code == E.NONE
        assert [(f.topic, f.partition, f.offset, f.leader_epoch, f.metadata, f.error_code)
                for f in fetched.partitions] == [
            ("t", 1, 20, 2, "ü", E.NONE), ("t", 0, 10, 1, "first", E.NONE),
            ("t", 5, -1, -1, "", E.NONE), ("other", 0, -1, -1, "", E.NONE)]
        everything = await c.fetch_offsets("g", None)
        assert sorted((f.topic, f.partition, f.offset) for f in everything.partitions) == [
            ("t", 0, 10), ("t", 1, 20)]
        # A later commit overwrites.
        await c.commit_offsets("g", m, None, 1, entries(("t", 0, 11, "")))
        assert (await c.fetch_offsets("g", [("t", 0)])).partitions[0].offset == 11
        assert (await c.fetch_offsets("unknown-group", [("t", 0)])).partitions[0].offset == -1
        assert (await c.fetch_offsets("unknown-group", None)).partitions == []
    run(scenario)


def test_commit_validation() -> None:
    async def scenario() -> None:
        c = OffsetsLog().new_coordinator()
        joins, _ = await join_and_sync_all(c, "g", [""])
        m = joins[0].member_id
        one = entries(("t", 0, 1, ""))
        tp = TopicPartition("t", 0)
        assert await c.commit_offsets("g", m, None, 2, one) == {tp: E.ILLEGAL_GENERATION}
        assert await c.commit_offsets("g", "stranger", None, 1, one) == {tp: E.UNKNOWN_MEMBER_ID}
        # Without group management the commit is refused while the group has members.
        assert await c.commit_offsets("g", "", None, -1, one) == {tp: E.UNKNOWN_MEMBER_ID}
        # A generation for a group that does not exist.
        assert await c.commit_offsets("gone", "x", None, 3, one) == {tp: E.ILLEGAL_GENERATION}
        too_big = [OffsetCommitEntry("t", 0, 5, metadata="x" * 4097), OffsetCommitEntry("t", 1, 6)]
        assert await c.commit_offsets("g", m, None, 1, too_big) == {
            tp: E.OFFSET_METADATA_TOO_LARGE, TopicPartition("t", 1): E.NONE}
        assert (await c.fetch_offsets("g", [("t", 0)])).partitions[0].offset == -1
    run(scenario)


def test_simple_consumer_commit_creates_an_empty_group() -> None:
    async def scenario() -> None:
        log = OffsetsLog()
        c = log.new_coordinator()
        result = await c.commit_offsets("standalone", "", None, -1, entries(("t", 3, 99, "m")))
        assert result == {TopicPartition("t", 3): E.NONE}
        assert c.group("standalone").state is GroupState.EMPTY
        assert (await c.fetch_offsets("standalone", [("t", 3)])).partitions[0].offset == 99
        # Only an offset record was written; no group metadata record.
        records = log.partitions[c.partition_for("standalone")]
        assert [type(decode_key(k)) for k, _ in records] == [OffsetCommitKey]
    run(scenario)


def test_commit_during_completing_rebalance_is_rebalance_in_progress() -> None:
    async def scenario() -> None:
        c = OffsetsLog().new_coordinator()
        joins, _ = await join_and_sync_all(c, "g", [""])
        m = joins[0].member_id
        rejoined = await join(c, "g", m)  # the leader rejoins: generation 2, not yet synced
        assert c.group("g").state is GroupState.COMPLETING_REBALANCE
        assert await c.commit_offsets("g", m, None, rejoined.generation_id, entries(("t", 0, 1, ""))) == {
            TopicPartition("t", 0): E.REBALANCE_IN_PROGRESS}
    run(scenario)


def test_append_failures_map_to_kafka_errors_and_store_nothing() -> None:
    async def scenario() -> None:
        log = OffsetsLog()
        c = log.new_coordinator()
        tp = TopicPartition("t", 0)
        cases = [(AppendFailed(E.NOT_LEADER_OR_FOLLOWER), E.NOT_COORDINATOR),
                 (AppendFailed(E.NOT_ENOUGH_REPLICAS), E.COORDINATOR_NOT_AVAILABLE),
                 (AppendFailed(E.REQUEST_TIMED_OUT), E.COORDINATOR_NOT_AVAILABLE),
                 (AppendFailed(E.MESSAGE_TOO_LARGE), E.INVALID_COMMIT_OFFSET_SIZE),
                 (OSError("disk gone"), E.COORDINATOR_NOT_AVAILABLE)]
        for exc, expected in cases:
            log.fail_with = exc
            assert await c.commit_offsets("s", "", None, -1, entries(("t", 0, 1, ""))) == {tp: expected}
        assert (await c.fetch_offsets("s", [("t", 0)])).partitions[0].offset == -1

        # A failed store of the leader's assignment: everyone waiting in SyncGroup hears the error.
        log.fail_with = None
        joins = await asyncio.gather(join_fully(c, "g"), join_fully(c, "g"))
        leader = next(j for j in joins if j.members)
        follower = next(j for j in joins if not j.members)
        follower_sync = asyncio.ensure_future(sync(c, "g", follower))
        await asyncio.sleep(0.01)
        log.fail_with = AppendFailed(E.NOT_LEADER_OR_FOLLOWER)
        leader_sync = await sync(c, "g", leader, {leader.member_id: b"a", follower.member_id: b"b"})
        assert leader_sync.error_code == E.NOT_COORDINATOR
        assert (await follower_sync).error_code == E.NOT_COORDINATOR
        assert c.group("g").state is GroupState.PREPARING_REBALANCE
    run(scenario)


def test_commit_answers_only_after_the_append_completes() -> None:
    async def scenario() -> None:
        log = OffsetsLog()
        log.append_delay_s = 0.1
        c = log.new_coordinator()
        commit = asyncio.ensure_future(c.commit_offsets("s", "", None, -1, entries(("t", 0, 7, ""))))
        await asyncio.sleep(0.03)
        assert not commit.done()
        assert (await c.fetch_offsets("s", [("t", 0)])).partitions[0].offset == -1
        assert await commit == {TopicPartition("t", 0): E.NONE}
        assert (await c.fetch_offsets("s", [("t", 0)])).partitions[0].offset == 7
    run(scenario)


def test_records_are_kafka_formatted() -> None:
    async def scenario() -> None:
        log = OffsetsLog()
        c = log.new_coordinator(clock_ms=lambda: 1_700_000_000_000)
        joins, _ = await join_and_sync_all(c, "g", [""], topics=("orders",))
        m = joins[0].member_id
        await c.commit_offsets("g", m, None, 1, entries(("orders", 0, 5, "md")))
        await c.commit_offsets("g", m, None, 1, entries(("orders", 1, 6, "")), retention_time_ms=1000)
        records = log.partitions[c.partition_for("g")]
        assert [k[:2] for k, _ in records] == [b"\x00\x02", b"\x00\x01", b"\x00\x01"]
        group_value = decode_group_metadata_value(records[0][1])
        assert records[0][1][:2] == b"\x00\x03"
        gv = group_value
        assert (gv.protocol_type, gv.generation, gv.protocol, gv.leader) == ("consumer", 1, "range", m)
        [member] = group_value.members
        assert (member.member_id, member.client_id, member.subscription, member.assignment) == \
            (m, "client", subscription("orders"), b"assignment-0")
        assert member.session_timeout == 10000 and member.rebalance_timeout == 2000
        assert records[1][1][:2] == b"\x00\x03" and records[2][1][:2] == b"\x00\x01"
        v = decode_offset_commit_value(records[2][1])
        assert (v.offset, v.commit_timestamp, v.expire_timestamp) == (6, 1_700_000_000_000, 1_700_000_001_000)
    run(scenario)


def test_reload_reproduces_offsets_and_group_state() -> None:
    async def scenario() -> None:
        log = OffsetsLog()
        c1 = log.new_coordinator()
        joins, syncs = await join_and_sync_all(c1, "g", ["", ""], instance_id=None)
        leader = next(j for j in joins if j.members)
        await c1.commit_offsets("g", leader.member_id, None, 1,
                                entries(("t", 0, 100, "a"), ("t", 1, 200, "b"), ("u", 0, 5, "")))
        await c1.commit_offsets("solo", "", None, -1, entries(("t", 2, 3, "s")))
        assert (await c1.delete_offsets("solo", [("t", 2)])).partitions == {TopicPartition("t", 2): E.NONE}
        await c1.commit_offsets("empty-later", "", None, -1, entries(("t", 0, 1, "")))
        await c1.commit_offsets("deleted", "", None, -1, entries(("t", 0, 1, "")))
        assert await c1.delete_groups(["deleted"]) == {"deleted": E.NONE}
        c1.shutdown()

        c2 = log.new_coordinator()
        g = c2.group("g")
        assert g is not None and g.state is GroupState.STABLE
        assert (g.generation_id, g.protocol_type, g.protocol_name, g.leader_id) == \
            (1, "consumer", "range", leader.member_id)
        assert {m.member_id: m.assignment for m in g.members.values()} == {
            j.member_id: s.assignment for j, s in zip(joins, syncs, strict=True)}
        fetched = await c2.fetch_offsets("g", None)
        got = sorted((f.topic, f.partition, f.offset, f.leader_epoch, f.metadata) for f in fetched.partitions)
        assert got == [("t", 0, 100, 1, "a"), ("t", 1, 200, 2, "b"), ("u", 0, 5, 1, "")]
        assert c2.group("solo") is None  # its only offset was deleted
        assert c2.group("deleted") is None
        assert c2.group("empty-later").state is GroupState.EMPTY

        # The reloaded members go on heartbeating in their generation; commits keep working.
        for j in joins:
            assert await c2.heartbeat("g", j.member_id, None, 1) == E.NONE
        assert await c2.commit_offsets("g", leader.member_id, None, 1, entries(("t", 0, 101, ""))) == {
            TopicPartition("t", 0): E.NONE}
        c2.shutdown()

        c3 = log.new_coordinator()
        assert (await c3.fetch_offsets("g", [("t", 0)])).partitions[0].offset == 101
        c3.shutdown()
    run(scenario)


def test_reloaded_members_that_never_come_back_expire() -> None:
    async def scenario() -> None:
        log = OffsetsLog()
        c1 = log.new_coordinator()
        await join_and_sync_all(c1, "g", [""], session_ms=150)
        c1.shutdown()
        c2 = log.new_coordinator()
        assert c2.group("g").size == 1
        await asyncio.sleep(0.3)
        # Session expired -> rebalance -> nobody left -> Empty generation 2, stored.
        assert c2.group("g").state is GroupState.EMPTY and c2.group("g").generation_id == 2
        await c2.manager.wait_background()  # the Empty generation is stored in the background
        c2.shutdown()
        c3 = log.new_coordinator()
        assert c3.group("g").state is GroupState.EMPTY and c3.group("g").generation_id == 2
    run(scenario)


def test_load_skips_foreign_and_corrupt_records_and_applies_tombstones_in_order() -> None:
    async def scenario() -> None:
        log = OffsetsLog()
        c1 = log.new_coordinator()
        await c1.commit_offsets("g", "", None, -1, entries(("t", 0, 1, "")))
        partition = c1.partition_for("g")
        key, value = log.partitions[partition][0]
        c1.shutdown()
        records = [
            (b"\x00\x03\x00\x01g", b"kip-848 record"),  # another coordinator's record: ignored
            (b"\x00\x01\x00", b"garbage"),  # corrupt key: skipped
            (key, value),
            (key, None),  # tombstone
            (key, value[:-3]),  # corrupt value: skipped, the tombstone stands
        ]
        c2 = OffsetsLog().new_coordinator()
        c2.manager.begin_loading(partition)
        assert (await c2.fetch_offsets("g", None)).error_code == E.COORDINATOR_LOAD_IN_PROGRESS
        c2.manager.load_partition(partition, records[:2])
        c2.manager.load_partition(partition, records[2:])
        c2.manager.on_partition_loaded(partition)
        assert c2.group("g") is None
        assert (await c2.fetch_offsets("g", [("t", 0)])).partitions[0].offset == -1
    run(scenario)


def test_delete_offsets_rules() -> None:
    async def scenario() -> None:
        c = OffsetsLog().new_coordinator()
        joins, _ = await join_and_sync_all(c, "g", [""], topics=("subscribed",))
        m = joins[0].member_id
        await c.commit_offsets("g", m, None, 1, entries(("subscribed", 0, 1, ""), ("old", 0, 2, "")))
        result = await c.delete_offsets("g", [("subscribed", 0), ("old", 0), ("never", 0)])
        assert result.error_code == E.NONE
        assert result.partitions == {TopicPartition("subscribed", 0): E.GROUP_SUBSCRIBED_TO_TOPIC,
                                     TopicPartition("old", 0): E.NONE, TopicPartition("never", 0): E.NONE}
        assert await committed(c, "g", ("subscribed", 0), ("old", 0)) == [1, -1]
        assert (await c.delete_offsets("missing", [("t", 0)])).error_code == E.GROUP_ID_NOT_FOUND

        # Once the group is Empty, any offset may go; the last one takes the group with it.
        await c.leave_group("g", [LeaveMember(m)])
        assert c.group("g").state is GroupState.EMPTY
        assert (await c.delete_offsets("g", [("subscribed", 0)])).partitions == {
            TopicPartition("subscribed", 0): E.NONE}
        assert c.group("g") is None

        # A non-consumer protocol with members: NON_EMPTY_GROUP.
        await join(c, "connect-group", protocol_type="connect", version=3)
        assert (await c.delete_offsets("connect-group", [("t", 0)])).error_code == E.NON_EMPTY_GROUP
    run(scenario)


def test_offset_expiry_for_empty_groups_and_explicit_retention() -> None:
    async def scenario() -> None:
        now = [1_000_000]
        log = OffsetsLog()
        config = replace(TEST_CONFIG, offsets_retention_ms=10_000)
        c = log.new_coordinator(config, clock_ms=lambda: now[0])
        await c.commit_offsets("idle", "", None, -1, entries(("t", 0, 1, "")))
        joins, _ = await join_and_sync_all(c, "active", [""])
        m = joins[0].member_id
        await c.commit_offsets("active", m, None, 1, entries(("t", 0, 5, "")), retention_time_ms=500)
        await c.commit_offsets("active", m, None, 1, entries(("t", 1, 6, "")))
        now[0] += 600
        assert await c.manager.expire_offsets() == 1  # active's t-0 had an explicit 500 ms retention
        assert await committed(c, "active", ("t", 0), ("t", 1)) == [-1, 6]
        now[0] += 10_000
        assert await c.manager.expire_offsets() == 1  # idle's offset; the Stable group's subscribed offset stays
        assert c.group("idle") is None
        assert (await c.fetch_offsets("active", [("t", 1)])).partitions[0].offset == 6
        c.shutdown()
        reloaded = log.new_coordinator(config, clock_ms=lambda: now[0])
        assert reloaded.group("idle") is None
        reloaded.shutdown()
    run(scenario)


def test_offsets_of_deleted_partitions_are_removed() -> None:
    async def scenario() -> None:
        log = OffsetsLog()
        c = log.new_coordinator()
        joins, _ = await join_and_sync_all(c, "member-group", [""])
        m = joins[0].member_id
        await c.commit_offsets("member-group", m, None, 1, entries(("gone", 0, 1, ""), ("kept", 0, 2, "")))
        await c.commit_offsets("only-gone", "", None, -1, entries(("gone", 0, 3, ""), ("gone", 1, 4, "")))
        assert await c.manager.delete_offsets_of_partitions([("gone", 0), ("gone", 1), ("never-committed", 0)]) == 3
        assert await committed(c, "member-group", ("gone", 0), ("kept", 0)) == [-1, 2]
        assert c.group("only-gone") is None
        c.shutdown()
        reloaded = log.new_coordinator()
        assert reloaded.group("only-gone") is None
        assert await committed(reloaded, "member-group", ("gone", 0), ("kept", 0)) == [-1, 2]
    run(scenario)


def test_group_over_capacity_after_reload_rebalances_down_to_max_size() -> None:
    async def scenario() -> None:
        log = OffsetsLog()
        c1 = log.new_coordinator()
        joins, _ = await join_and_sync_all(c1, "g", ["", "", ""])
        c1.shutdown()
        c2 = log.new_coordinator(replace(TEST_CONFIG, group_max_size=2))
        assert c2.group("g").state is GroupState.PREPARING_REBALANCE
        results = await asyncio.gather(*(join(c2, "g", j.member_id) for j in joins))
        assert sorted(r.error_code for r in results) == [E.NONE, E.NONE, E.GROUP_MAX_SIZE_REACHED]
        assert c2.group("g").size == 2
    run(scenario)

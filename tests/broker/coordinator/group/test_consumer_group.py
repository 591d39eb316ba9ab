"""KIP-848 consumer groups, below the wire: the assignors (uniform, range), the reconciliation rules (revoke
before assign, unreleased partitions, epochs) and the coordinator's heartbeat state machine with an
in-memory topics image and `__consumer_offsets`."""

from __future__ import annotations

import asyncio
import dataclasses
import random
import uuid
from typing import Any

import pytest

from broker.coordinator.group import GroupCoordinatorConfig, OffsetCommitEntry
from broker.coordinator.group.assignors import AssignmentMember, assignor_name, range_assign, uniform_assign
from broker.coordinator.group.consumer_group import (
    ConsumerGroup,
    ConsumerGroupMember,
    MemberState,
    reconcile,
)
from broker.coordinator.group.errors import GroupErrorCode as E
from storage.values import TopicPartition

from .harness import OffsetsLog, run

T1, T2 = uuid.UUID(int=1), uuid.UUID(int=2)


def owners(assignment: dict[str, Any]) -> dict[tuple[uuid.UUID, int], list[str]]:
    out: dict[tuple[uuid.UUID, int], list[str]] = {}
    for member, a in assignment.items():
        for topic_id, parts in a.items():
            for p in parts:
                out.setdefault((topic_id, p), []).append(member)
    return out


def count(a: Any) -> int:
    return sum(len(ps) for ps in a.values())


# ---------------------------------------------------------------- assignors
def test_range_gives_contiguous_ranges_in_member_order_extra_partitions_first() -> None:
    members = {m: AssignmentMember(None, frozenset({T1})) for m in ("b", "a", "c")}
    out = range_assign(members, {T1: 7}, {})
    assert out == {"a": {T1: frozenset({0, 1, 2})}, "b": {T1: frozenset({3, 4})}, "c": {T1: frozenset({5, 6})}}


def test_range_puts_static_members_first_by_instance_id() -> None:
    members = {"a": AssignmentMember(None, frozenset({T1})), "z": AssignmentMember("i1", frozenset({T1}))}
    assert range_assign(members, {T1: 4}, {}) == {"z": {T1: frozenset({0, 1})}, "a": {T1: frozenset({2, 3})}}


def test_range_per_topic_only_among_its_subscribers() -> None:
    members = {"a": AssignmentMember(None, frozenset({T1})), "b": AssignmentMember(None, frozenset({T1, T2}))}
    out = range_assign(members, {T1: 2, T2: 3}, {})
    assert out == {"a": {T1: frozenset({0})}, "b": {T1: frozenset({1}), T2: frozenset({0, 1, 2})}}


def test_uniform_homogeneous_is_balanced_and_sticky() -> None:
    two = {m: AssignmentMember(None, frozenset({T1, T2})) for m in ("a", "b")}
    first = uniform_assign(two, {T1: 4, T2: 2}, {})
    assert sorted(map(count, first.values())) == [3, 3]
    three = {**two, "c": AssignmentMember(None, frozenset({T1, T2}))}
    second = uniform_assign(three, {T1: 4, T2: 2}, first)
    assert sorted(map(count, second.values())) == [2, 2, 2]
    for m in ("a", "b"):  # the old members only lose partitions, and just enough of them
        assert owners({m: second[m]}).keys() <= owners({m: first[m]}).keys()
    assert all(len(v) == 1 for v in owners(second).values()) and len(owners(second)) == 6


def test_uniform_heterogeneous_respects_subscriptions_and_balances() -> None:
    members = {"a": AssignmentMember(None, frozenset({T1})), "b": AssignmentMember(None, frozenset({T1, T2})),
               "c": AssignmentMember(None, frozenset({T2}))}
    out = uniform_assign(members, {T1: 4, T2: 4}, {})
    assert all(len(v) == 1 for v in owners(out).values()) and len(owners(out)) == 8
    assert T2 not in out["a"] and T1 not in out["c"]
    assert sorted(map(count, out.values())) == [2, 3, 3]


@pytest.mark.parametrize("seed", range(20))
@pytest.mark.parametrize("assign", [uniform_assign, range_assign], ids=["uniform", "range"])
def test_every_partition_of_a_subscribed_topic_goes_to_exactly_one_subscriber(seed: int, assign: Any) -> None:
    rnd = random.Random(seed)
    topics = {uuid.UUID(int=i + 1): rnd.randint(1, 9) for i in range(rnd.randint(1, 4))}
    members = {f"m{i}": AssignmentMember(rnd.choice([None, f"i{i}"]),
                                         frozenset(rnd.sample(sorted(topics), rnd.randint(1, len(topics)))))
               for i in range(rnd.randint(1, 6))}
    previous = assign(members, topics, {})
    members.pop(next(iter(members)))
    if not members:
        return
    out = assign(members, topics, previous)
    assert set(out) == set(members)
    found = owners(out)
    wanted = {(t, p) for t, n in topics.items() for p in range(n) if any(t in m.topics for m in members.values())}
    assert set(found) == wanted and all(len(v) == 1 for v in found.values())
    assert all(t in members[m].topics for (t, _), ms in found.items() for m in ms)


def test_assignor_names_read_kafkas_class_names() -> None:
    assert assignor_name("org.apache.kafka.coordinator.group.assignor.RangeAssignor") == "range"
    assert assignor_name("uniform") == "uniform" and assignor_name("sticky") is None


# ---------------------------------------------------------------- reconciliation
def free(topic_id: uuid.UUID, partition: int) -> int:
    return -1


def test_a_new_member_gets_its_target_at_the_target_epoch() -> None:
    member = reconcile(ConsumerGroupMember("m"), 3, {T1: frozenset({0, 1})}, free, [])
    assert (member.member_epoch, member.previous_member_epoch, member.state) == (3, 0, MemberState.STABLE)
    assert member.assigned == {T1: frozenset({0, 1})}


def test_revoke_before_assign() -> None:
    member = ConsumerGroupMember("m", member_epoch=1, assigned={T1: frozenset({0, 1, 2})})
    target = {T1: frozenset({0, 1, 3})}
    revoking = reconcile(member, 2, target, free, [(T1, [0, 1, 2])])
    assert revoking.state is MemberState.UNREVOKED_PARTITIONS and revoking.member_epoch == 1
    assert revoking.assigned == {T1: frozenset({0, 1})} and revoking.pending_revocation == {T1: frozenset({2})}
    # Still reporting partition 2, or not reporting at all: no progress.
    assert reconcile(revoking, 2, target, free, [(T1, [0, 1, 2])]) is revoking
    assert reconcile(revoking, 2, target, free, None) is revoking
    done = reconcile(revoking, 2, target, free, [(T1, [0, 1])])
    assert (done.state, done.member_epoch, done.previous_member_epoch) == (MemberState.STABLE, 2, 1)
    assert done.assigned == {T1: frozenset({0, 1, 3})} and not done.pending_revocation


def test_a_partition_still_held_elsewhere_is_withheld_until_released() -> None:
    member = ConsumerGroupMember("m", member_epoch=1, assigned={T1: frozenset({0})})
    held = {(T1, 1): 1}
    waiting = reconcile(member, 2, {T1: frozenset({0, 1})}, lambda t, p: held.get((t, p), -1), [(T1, [0])])
    assert (waiting.state, waiting.member_epoch, waiting.assigned) == (
        MemberState.UNRELEASED_PARTITIONS, 2, {T1: frozenset({0})})
    held.clear()
    done = reconcile(waiting, 2, {T1: frozenset({0, 1})}, lambda t, p: held.get((t, p), -1), [(T1, [0])])
    assert (done.state, done.assigned) == (MemberState.STABLE, {T1: frozenset({0, 1})})


def test_group_state_and_partition_epochs() -> None:
    group = ConsumerGroup("g")
    assert group.state.value == "Empty"
    group.group_epoch = 1
    group.update_member(ConsumerGroupMember("a", member_epoch=0))
    assert group.state.value == "Assigning"
    group.assignment_epoch = 1
    assert group.state.value == "Reconciling"
    group.update_member(ConsumerGroupMember("a", member_epoch=1, assigned={T1: frozenset({0})}))
    assert group.state.value == "Stable" and group.partition_epoch(T1, 0) == 1
    group.remove_member("a")
    assert group.partition_epoch(T1, 0) == -1 and group.state.value == "Empty"


# ---------------------------------------------------------------- the coordinator's heartbeat
@dataclasses.dataclass
class Topics:
    topics: dict[str, tuple[uuid.UUID, int]]

    def topic(self, name: str) -> tuple[uuid.UUID, int] | None:
        return self.topics.get(name)

    def names(self) -> list[str]:
        return list(self.topics)

    def name_of(self, topic_id: uuid.UUID) -> str | None:
        return next((n for n, (t, _) in self.topics.items() if t == topic_id), None)


def coordinator(topics: Topics, **config: Any) -> Any:
    log = OffsetsLog()
    c = log.new_coordinator(GroupCoordinatorConfig(offsets_topic_num_partitions=1, group_initial_rebalance_delay_ms=0,
                                                   **config))
    c.topics_image = topics
    return c


def join(c: Any, member: str, topics: list[str], **kw: Any) -> Any:
    return c.consumer_group_heartbeat("g", member, 0, rebalance_timeout_ms=1000, subscribed_topic_names=topics,
                                      owned=[], **kw)


def test_heartbeats_rebalance_two_members_revoke_first() -> None:
    topics = Topics({"t": (T1, 4)})

    async def scenario() -> None:
        c = coordinator(topics)
        a = await join(c, "a", ["t"])
        assert (a.error_code, a.member_epoch, a.assignment) == (E.NONE, 1, {T1: frozenset(range(4))})
        b = await join(c, "b", ["t"])
        # b's partitions are still a's: it waits at epoch 2 with nothing.
        assert (b.member_epoch, b.assignment) == (2, {})
        a2 = await c.consumer_group_heartbeat("g", "a", 1, owned=[(T1, [0, 1, 2, 3])])
        assert a2.member_epoch == 1 and count(a2.assignment) == 2  # revoke two, keep the epoch
        a3 = await c.consumer_group_heartbeat("g", "a", 1, owned=[(T1, sorted(a2.assignment[T1]))])
        assert a3.member_epoch == 2 and a3.assignment is None
        b2 = await c.consumer_group_heartbeat("g", "b", 2, owned=[])
        assert count(b2.assignment) == 2 and not b2.assignment[T1] & a2.assignment[T1]
        assert c.group("g").consumer.state.value == "Stable"
        # Fenced epochs: ahead, or behind without being the previous epoch with a subset.
        assert (await c.consumer_group_heartbeat("g", "b", 3, owned=[])).error_code == E.FENCED_MEMBER_EPOCH
        assert (await c.consumer_group_heartbeat("g", "a", 0, rebalance_timeout_ms=1000, subscribed_topic_names=["t"],
                                                 owned=[])).error_code == E.FENCED_MEMBER_EPOCH
        # The previous epoch with a subset of the partitions: a lost response, accepted.
        again = await c.consumer_group_heartbeat("g", "a", 1, owned=[(T1, sorted(a2.assignment[T1]))])
        assert again.error_code == E.NONE and again.member_epoch == 2
        left = await c.consumer_group_heartbeat("g", "b", -1)
        assert (left.error_code, left.member_epoch) == (E.NONE, -1)
        assert c.group("g").consumer.group_epoch == 3
        a4 = await c.consumer_group_heartbeat("g", "a", 2, owned=[(T1, sorted(a2.assignment[T1]))])
        assert a4.member_epoch == 3 and a4.assignment == {T1: frozenset(range(4))}
    run(scenario)


def test_more_partitions_bump_the_group_epoch_and_reassign() -> None:
    topics = Topics({"t": (T1, 2)})

    async def scenario() -> None:
        c = coordinator(topics)
        await join(c, "a", ["t"])
        topics.topics["t"] = (T1, 3)
        hb = await c.consumer_group_heartbeat("g", "a", 1, owned=[(T1, [0, 1])])
        assert (hb.member_epoch, hb.assignment) == (2, {T1: frozenset({0, 1, 2})})
        topics.topics["u"] = (T2, 1)
        regex = await c.consumer_group_heartbeat("g", "b", 0, rebalance_timeout_ms=1000, subscribed_topic_regex="u|v",
                                                 owned=[])
        assert regex.assignment == {T2: frozenset({0})}
    run(scenario)


def test_static_member_leaves_temporarily_and_its_instance_rejoins() -> None:
    topics = Topics({"t": (T1, 2)})

    async def scenario() -> None:
        c = coordinator(topics)
        await join(c, "a1", ["t"], instance_id="i")
        assert (await join(c, "a2", ["t"], instance_id="i")).error_code == E.UNRELEASED_INSTANCE_ID
        left = await c.consumer_group_heartbeat("g", "a1", -2, instance_id="i")
        assert (left.error_code, left.member_epoch) == (E.NONE, -2)
        back = await join(c, "a2", ["t"], instance_id="i")
        assert back.error_code == E.NONE and back.assignment == {T1: frozenset({0, 1})}
        assert set(c.group("g").consumer.members) == {"a2"}
        fenced = await c.consumer_group_heartbeat("g", "a1", 1, instance_id="i", owned=[])
        assert fenced.error_code == E.FENCED_INSTANCE_ID
    run(scenario)


def test_session_timeout_fences_a_silent_member() -> None:
    topics = Topics({"t": (T1, 2)})

    async def scenario() -> None:
        c = coordinator(topics, consumer_group_session_timeout_ms=100)
        await join(c, "a", ["t"])
        await asyncio.sleep(0.3)
        group = c.group("g").consumer
        assert group.members == {} and group.group_epoch == 2
        assert (await c.consumer_group_heartbeat("g", "a", 1, owned=[])).error_code == E.UNKNOWN_MEMBER_ID
    run(scenario)


# ---------------------------------------------------------------- next to the classic APIs
def test_offsets_and_classic_apis_for_a_consumer_group() -> None:
    topics = Topics({"t": (T1, 2), "other": (T2, 1)})

    async def scenario() -> None:
        c = coordinator(topics)
        a = await join(c, "a", ["t"])
        entry = [OffsetCommitEntry("t", 0, 5)]
        tp = TopicPartition("t", 0)
        assert await c.commit_offsets("g", "a", None, a.member_epoch, entry) == {tp: E.NONE}
        assert await c.commit_offsets("g", "a", None, a.member_epoch + 1, entry) == {tp: E.STALE_MEMBER_EPOCH}
        assert await c.commit_offsets("g", "a", None, a.member_epoch, entry, api_version=8) == {
            tp: E.UNSUPPORTED_VERSION}
        assert await c.commit_offsets("g", "", None, -1, entry) == {tp: E.UNKNOWN_MEMBER_ID}
        fetched = await c.fetch_offsets("g", [("t", 0)], member_id="a", member_epoch=a.member_epoch)
        assert (fetched.error_code, fetched.partitions[0].offset) == (E.NONE, 5)
        assert (await c.fetch_offsets("g", None, member_id="a", member_epoch=0)).error_code == E.STALE_MEMBER_EPOCH
        assert (await c.fetch_offsets("g", None)).error_code == E.NONE  # the admin client: no member
        # Classic APIs: a classic member of another protocol type cannot join (migration.py has the classic
        # members of consumer groups), DescribeGroups answers Dead, ListGroups shows the type.
        joined = await c.join_group("g", "", None, "classic", "/h", 1000, 10000, "connect", [("range", b"")],
                                    api_version=5)
        assert joined.error_code == E.INCONSISTENT_GROUP_PROTOCOL
        described = (await c.describe_groups(["g"]))[0]
        assert (described.error_code, described.group_state, described.members) == (E.NONE, "Dead", [])
        listed = (await c.list_groups(None, ["consumer"])).groups
        assert [(g.group_id, g.protocol_type, g.group_state, g.group_type) for g in listed] == [
            ("g", "consumer", "Stable", "consumer")]
        assert (await c.list_groups(None, ["classic"])).groups == []
        assert await c.delete_groups(["g"]) == {"g": E.NON_EMPTY_GROUP}
        deleted = await c.delete_offsets("g", [("t", 0), ("other", 0)])
        assert deleted.partitions == {tp: E.GROUP_SUBSCRIBED_TO_TOPIC, TopicPartition("other", 0): E.NONE}
        # Once the last member left: an Empty consumer group, commits with epoch -1 pass, and it can go.
        await c.consumer_group_heartbeat("g", "a", -1)
        assert (await c.list_groups(["empty"], None)).groups[0].group_type == "consumer"
        assert await c.commit_offsets("g", "", None, -1, entry) == {tp: E.NONE}
        assert await c.delete_groups(["g"]) == {"g": E.NONE}
        assert c.group("g") is None
    run(scenario)


def test_an_empty_classic_group_becomes_a_consumer_group_and_back() -> None:
    topics = Topics({"t": (T1, 1)})

    async def scenario() -> None:
        c = coordinator(topics)
        tp = TopicPartition("t", 0)
        assert await c.commit_offsets("g", "", None, -1, [OffsetCommitEntry("t", 0, 7)]) == {tp: E.NONE}
        a = await join(c, "a", ["t"])
        assert a.error_code == E.NONE and c.group("g").consumer is not None
        assert (await c.fetch_offsets("g", [("t", 0)])).partitions[0].offset == 7  # its offsets kept
        await c.consumer_group_heartbeat("g", "a", -1)
        joined = await c.join_group("g", "", None, "classic", "/h", 1000, 10000, "consumer", [("range", b"")],
                                    api_version=3)
        assert joined.error_code == E.NONE and c.group("g").consumer is None
        refused = await join(c, "b", ["t"])
        assert refused.error_code == E.GROUP_ID_NOT_FOUND  # a classic group with members
    run(scenario)


def test_rebalance_timeout_fences_a_member_that_does_not_revoke() -> None:
    topics = Topics({"t": (T1, 2)})

    async def scenario() -> None:
        c = coordinator(topics)
        await c.consumer_group_heartbeat("g", "a", 0, rebalance_timeout_ms=100, subscribed_topic_names=["t"], owned=[])
        await join(c, "b", ["t"])
        revoking = await c.consumer_group_heartbeat("g", "a", 1, owned=[(T1, [0, 1])])
        assert revoking.member_epoch == 1 and count(revoking.assignment) == 1
        await asyncio.sleep(0.3)  # a never confirms the revocation
        assert set(c.group("g").consumer.members) == {"b"}
        b = await c.consumer_group_heartbeat("g", "b", 2, owned=[])
        assert b.assignment == {T1: frozenset({0, 1})}
    run(scenario)


# ---------------------------------------------------------------- persistence in __consumer_offsets
def test_a_consumer_group_is_stored_and_loaded_back() -> None:
    topics = Topics({"t": (T1, 4)})
    log = OffsetsLog()
    config = GroupCoordinatorConfig(offsets_topic_num_partitions=1)

    async def scenario() -> None:
        c = log.new_coordinator(config)
        c.topics_image = topics
        await c.consumer_group_heartbeat("g", "a", 0, rebalance_timeout_ms=1000, subscribed_topic_names=["t"],
                                         owned=[], server_assignor="range", rack_id="r1", instance_id="i-a")
        b = await join(c, "b", ["t"])
        a = await c.consumer_group_heartbeat("g", "a", 1, instance_id="i-a", owned=[(T1, [0, 1, 2, 3])])
        assert a.member_epoch == 1 and count(a.assignment) == 2  # revoking two
        before = c.group("g").consumer
        c.shutdown()

        again = log.new_coordinator(config)
        again.topics_image = topics
        loaded = again.group("g").consumer
        assert (loaded.group_epoch, loaded.assignment_epoch) == (before.group_epoch, before.assignment_epoch)
        assert loaded.members == before.members and loaded.target_assignment == before.target_assignment
        assert loaded.subscription_metadata == before.subscription_metadata
        assert loaded.static_members == {"i-a": "a"} and loaded.preferred_server_assignor() == "range"
        assert loaded.partition_epochs == before.partition_epochs
        # The members carry on where they were.
        kept = [(T1, sorted(a.assignment[T1]))]
        done = await again.consumer_group_heartbeat("g", "a", 1, instance_id="i-a", owned=kept)
        assert done.member_epoch == 2
        b2 = await again.consumer_group_heartbeat("g", "b", b.member_epoch, owned=[])
        assert b2.error_code == E.NONE and count(b2.assignment) == 2
        # A member that left is gone after a reload too; a deleted group leaves nothing behind.
        await again.consumer_group_heartbeat("g", "b", b2.member_epoch, owned=[])
        await again.consumer_group_heartbeat("g", "b", -1)
        await again.consumer_group_heartbeat("g", "a", -1, instance_id="i-a")
        assert await again.delete_groups(["g"]) == {"g": E.NONE}
        again.shutdown()
        third = log.new_coordinator(config)
        assert third.group("g") is None
        third.shutdown()
    run(scenario)


def test_version_0_members_get_an_id_from_the_coordinator() -> None:
    async def scenario() -> None:
        c = coordinator(Topics({"t": (T1, 1)}))
        joined = await c.consumer_group_heartbeat("g", "", 0, rebalance_timeout_ms=1000, subscribed_topic_names=["t"],
                                                  owned=[], api_version=0)
        assert joined.error_code == E.NONE and len(joined.member_id) == 22
        assert joined.assignment == {T1: frozenset({0})}
        refused = await c.consumer_group_heartbeat("g", "", 0, rebalance_timeout_ms=1000,
                                                   subscribed_topic_names=["t"], owned=[], api_version=1)
        assert refused.error_code == E.INVALID_REQUEST  # v1: the member names itself
    run(scenario)


def test_transactional_commits_of_a_consumer_group_member() -> None:
    async def scenario() -> None:
        c = coordinator(Topics({"t": (T1, 1)}))
        a = await join(c, "a", ["t"])
        entry = [OffsetCommitEntry("t", 0, 3)]
        tp = TopicPartition("t", 0)
        stale = await c.commit_txn_offsets("g", 1, 0, "a", None, a.member_epoch + 1, entry)
        assert stale == {tp: E.ILLEGAL_GENERATION}
        assert await c.commit_txn_offsets("g", 1, 0, "nobody", None, a.member_epoch, entry) == {tp: E.UNKNOWN_MEMBER_ID}
    run(scenario)


# ---------------------------------------------------------------- random membership changes
@pytest.mark.parametrize("seed", range(12))
def test_random_joins_leaves_and_heartbeats_never_assign_a_partition_twice(seed: int) -> None:
    """Simulated members heartbeat as a KIP-848 client does (reporting what they own, applying each assignment
    they receive); whatever joins, leaves, fencing and topic growth happen, no partition is ever owned by two
    members, and once everyone heartbeats a few times the group is Stable with every partition owned."""
    rnd = random.Random(seed)
    topics = Topics({"t": (T1, 6), "u": (T2, 3)})

    async def scenario() -> None:
        c = coordinator(topics, consumer_group_session_timeout_ms=60000)
        owned: dict[str, dict[uuid.UUID, frozenset[int]]] = {}
        epochs: dict[str, int] = {}
        serial = 0

        async def beat(m: str) -> None:
            report = [(t, sorted(ps)) for t, ps in owned[m].items() if ps]
            hb = await c.consumer_group_heartbeat("g", m, epochs[m], owned=report)
            if hb.error_code != E.NONE:  # fenced: the client drops everything and rejoins
                assert hb.error_code in (E.FENCED_MEMBER_EPOCH, E.UNKNOWN_MEMBER_ID), hb
                del owned[m], epochs[m]
                return
            epochs[m] = hb.member_epoch
            if hb.assignment is not None:
                owned[m] = dict(hb.assignment)

        def check_disjoint() -> None:
            seen: set[tuple[uuid.UUID, int]] = set()
            for parts in owned.values():
                for t, ps in parts.items():
                    for p in ps:
                        assert (t, p) not in seen, f"{(t, p)} owned twice: {owned}"
                        seen.add((t, p))

        for _ in range(150):
            action = rnd.random()
            if action < 0.15 or not owned:
                serial += 1
                m = f"m{serial}"
                hb = await c.consumer_group_heartbeat("g", m, 0, rebalance_timeout_ms=60000,
                                                      subscribed_topic_names=rnd.choice([["t"], ["t", "u"]]), owned=[])
                assert hb.error_code == E.NONE, hb
                owned[m], epochs[m] = dict(hb.assignment or {}), hb.member_epoch
            elif action < 0.25:
                m = rnd.choice(sorted(owned))
                assert (await c.consumer_group_heartbeat("g", m, -1)).error_code == E.NONE
                del owned[m], epochs[m]
            elif action < 0.28:
                name = rnd.choice(["t", "u"])
                topic_id, n = topics.topics[name]
                topics.topics[name] = (topic_id, n + 1)
            else:
                await beat(rnd.choice(sorted(owned)))
            check_disjoint()
        for _ in range(6):
            for m in sorted(owned):
                await beat(m)
                check_disjoint()
        group = c.group("g").consumer
        assert group.state.value == "Stable"
        everything = {(t, p) for t, n in topics.topics.values() for p in range(n)}
        subscribed = {t for m in group.members.values() for name in m.subscribed_topic_names
                      for t in [topics.topics[name][0]]}
        assert {(t, p) for parts in owned.values() for t, ps in parts.items() for p in ps} == {
            (t, p) for t, p in everything if t in subscribed}
    run(scenario)

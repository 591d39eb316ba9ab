"""Classic and KIP-848 consumer groups side by side, below the wire: online upgrade and downgrade with members
(`group.consumer.migration.policy`), classic members inside a consumer group, the error codes where
migration is not allowed, and the converted groups surviving a coordinator restart."""

from __future__ import annotations

import asyncio
import struct
import uuid
from typing import Any

from broker.coordinator.group import GroupCoordinatorConfig, GroupState, LeaveMember, OffsetCommitEntry
from broker.coordinator.group.consumer_group import ClassicMemberMetadata, ConsumerGroupMember
from broker.coordinator.group.consumer_protocol import decode_assignment, encode_assignment
from broker.coordinator.group.consumer_records import (
    ConsumerGroupReplay,
    decode_consumer_key,
    group_epoch_record,
    member_metadata_record,
)
from broker.coordinator.group.errors import GroupErrorCode as E
from storage.values import TopicPartition

from .harness import OffsetsLog, run

T1 = uuid.UUID(int=1)


class Topics:
    def __init__(self, topics: dict[str, tuple[uuid.UUID, int]]) -> None:
        self.topics = topics

    def topic(self, name: str) -> tuple[uuid.UUID, int] | None:
        return self.topics.get(name)

    def names(self) -> list[str]:
        return list(self.topics)

    def name_of(self, topic_id: uuid.UUID) -> str | None:
        return next((n for n, (t, _) in self.topics.items() if t == topic_id), None)


TOPICS = Topics({"t": (T1, 4)})


def subscription_v1(topics: list[str], owned: dict[str, list[int]] | None = None) -> bytes:
    """ConsumerProtocolSubscription v1: topics, no user data, owned partitions."""
    out = [struct.pack(">hi", 1, len(topics))]
    for topic in topics:
        out.append(struct.pack(">h", len(topic)) + topic.encode())
    out.append(struct.pack(">i", -1))
    owned = owned or {}
    out.append(struct.pack(">i", len(owned)))
    for topic, parts in owned.items():
        out.append(struct.pack(">h", len(topic)) + topic.encode() + struct.pack(">i", len(parts)))
        out.extend(struct.pack(">i", p) for p in parts)
    return b"".join(out)


def new_coordinator(log: OffsetsLog | None = None, **config: Any) -> Any:
    log = log or OffsetsLog()
    c = log.new_coordinator(GroupCoordinatorConfig(
        offsets_topic_num_partitions=1, group_initial_rebalance_delay_ms=0, group_min_session_timeout_ms=10,
        consumer_group_heartbeat_interval_ms=100, **config))
    c.topics_image = TOPICS
    c.log = log
    return c


async def classic_join(c: Any, member_id: str = "", owned: dict[str, list[int]] | None = None,
                       protocol_type: str = "consumer", protocols: list[str] | None = None,
                       instance_id: str | None = None, version: int = 5) -> Any:
    meta = subscription_v1(["t"], owned)
    joined = await c.join_group("g", member_id, instance_id, "classic", "/127.0.0.1", 5000, 10000, protocol_type,
                                [(p, meta) for p in protocols or ["range"]], api_version=version)
    if joined.error_code == E.MEMBER_ID_REQUIRED and not member_id:
        return await classic_join(c, joined.member_id, owned, protocol_type, protocols, instance_id, version)
    return joined


async def classic_sync(c: Any, joined: Any, assignments: dict[str, bytes] | None = None) -> Any:
    return await c.sync_group("g", joined.generation_id, joined.member_id, None, joined.protocol_type,
                              joined.protocol_name, list((assignments or {}).items()))


def assigned(sync_result: Any) -> list[int]:
    return sorted(p for _, parts in decode_assignment(sync_result.assignment) for p in parts)


async def stable_classic_group(c: Any) -> tuple[Any, Any]:
    """Two classic members, partitions 0-1 and 2-3, generation 1."""
    a, b = await asyncio.gather(classic_join(c), classic_join(c))
    leader = a if a.member_id == a.leader else b
    plan = {a.member_id: encode_assignment([("t", [0, 1])], 1), b.member_id: encode_assignment([("t", [2, 3])], 1)}
    await asyncio.gather(classic_sync(c, a, plan if a is leader else None),
                         classic_sync(c, b, plan if b is leader else None))
    assert c.group("g").is_in(GroupState.STABLE) and c.group("g").generation_id == 1
    return a, b


def heartbeat(c: Any, member: str, epoch: int, **kw: Any) -> Any:
    if epoch == 0:
        kw.setdefault("rebalance_timeout_ms", 5000)
        kw.setdefault("subscribed_topic_names", ["t"])
        kw.setdefault("owned", [])
    return c.consumer_group_heartbeat("g", member, epoch, **kw)


# ---------------------------------------------------------------- upgrade
def test_a_classic_group_is_upgraded_by_its_first_consumer_protocol_member_and_reconciles_by_rejoins() -> None:
    async def scenario() -> None:
        c = new_coordinator()
        a, b = await stable_classic_group(c)
        await c.commit_offsets("g", a.member_id, None, 1, [OffsetCommitEntry("t", 0, 42)])
        x = await heartbeat(c, "x", 0)
        group = c.group("g").consumer
        assert x.error_code == E.NONE and group is not None
        # The classic members came over at epoch 1 with their partitions; x waits for released ones.
        assert (group.group_epoch, x.member_epoch, x.assignment) == (2, 2, {})
        assert group.members[a.member_id].assigned == {T1: frozenset({0, 1})}
        assert group.members[a.member_id].classic == ClassicMemberMetadata(
            10000, (("range", subscription_v1(["t"])),))
        assert (await c.fetch_offsets("g", [("t", 0)])).partitions[0].offset == 42
        # The classic members are told to rejoin; a cooperative one revokes first (it reports what it owns).
        assert await c.heartbeat("g", a.member_id, None, 1) == E.REBALANCE_IN_PROGRESS
        a2 = await classic_join(c, a.member_id, owned={"t": [0, 1]})
        target_a = group.target_assignment[a.member_id][T1]
        if target_a != frozenset({0, 1}):
            assert a2.generation_id == 1  # still revoking: the generation stays until it rejoins without them
            synced = await classic_sync(c, a2)
            assert assigned(synced) == sorted(target_a & {0, 1})
            a2 = await classic_join(c, a.member_id, owned={"t": assigned(synced)})
        assert a2.generation_id == 2 and a2.leader == "" and a2.protocol_name == "range"
        assert await c.heartbeat("g", a.member_id, None, 2) in (E.NONE, E.REBALANCE_IN_PROGRESS)
        # An eager member owns nothing when it rejoins: it goes straight to its target.
        b2 = await classic_join(c, b.member_id)
        assert b2.generation_id == 2
        assert assigned(await classic_sync(c, b2)) == sorted(group.members[b.member_id].assigned[T1])
        x2 = await heartbeat(c, "x", 2, owned=[])
        assert x2.assignment and sum(map(len, x2.assignment.values())) == 1
        owners = [p for m in group.members.values() for p in m.assigned.get(T1, ())]
        assert sorted(owners) == [0, 1, 2, 3]
        # Commits of a classic member carry its generation: a stale one is ILLEGAL_GENERATION (any version).
        tp = TopicPartition("t", 0)
        assert await c.commit_offsets("g", b.member_id, None, 1, [OffsetCommitEntry("t", 0, 1)]) == {
            tp: E.ILLEGAL_GENERATION}
        assert await c.commit_offsets("g", b.member_id, None, 2, [OffsetCommitEntry("t", 0, 43)],
                                      api_version=8) == {tp: E.NONE}
        # A restarted coordinator loads the consumer group with its classic members.
        reloaded = new_coordinator(c.log)
        again = reloaded.group("g").consumer
        assert again.members.keys() == group.members.keys() and again.group_epoch == 2
        assert again.members[b.member_id].classic == group.members[b.member_id].classic
        assert reloaded.group("g").members == {} and (await reloaded.fetch_offsets("g", [("t", 0)])).partitions[
            0].offset == 43
    run(scenario)


def test_a_waiting_rebalance_ends_with_rebalance_in_progress_when_the_group_is_upgraded() -> None:
    async def scenario() -> None:
        c = new_coordinator()
        a, b = await stable_classic_group(c)
        pending = asyncio.ensure_future(classic_join(c, a.member_id))  # a rebalance starts, b has not rejoined
        await asyncio.sleep(0.05)
        assert (await heartbeat(c, "x", 0)).error_code == E.NONE
        assert (await pending).error_code == E.REBALANCE_IN_PROGRESS
        assert c.group("g").consumer is not None and c.group("g").members == {}
    run(scenario)


def test_upgrade_refused_with_group_id_not_found() -> None:
    async def scenario() -> None:
        for config, protocol_type in (({"consumer_group_migration_policy": "disabled"}, "consumer"),
                                      ({"consumer_group_migration_policy": "downgrade"}, "consumer"),
                                      ({"consumer_group_max_size": 1}, "consumer"),
                                      ({}, "connect")):
            c = new_coordinator(**config)
            a, b = await asyncio.gather(classic_join(c, protocol_type=protocol_type),
                                        classic_join(c, protocol_type=protocol_type))
            x = await heartbeat(c, "x", 0)
            assert (x.error_code, x.error_message) == (E.GROUP_ID_NOT_FOUND, "Group g is not a consumer group."), config
            assert c.group("g").consumer is None and c.group("g").size == 2
        # A malformed embedded subscription cannot be converted either.
        c = new_coordinator()
        await c.join_group("g", "", "i", "classic", "/h", 5000, 10000, "consumer", [("range", b"\x00")],
                           api_version=5)
        assert (await heartbeat(c, "x", 0)).error_code == E.GROUP_ID_NOT_FOUND
        assert c.group("g").consumer is None
    run(scenario)


# ---------------------------------------------------------------- classic members of a consumer group
def test_classic_requests_to_a_consumer_group_and_their_errors() -> None:
    async def scenario() -> None:
        c = new_coordinator(consumer_group_max_size=3)
        assert (await heartbeat(c, "x", 0)).member_epoch == 1
        # A classic member joins a consumer group whatever the migration policy; v4+ first asks for a member id.
        first = await c.join_group(
            "g", "", None, "classic", "/h", 5000, 10000, "consumer", [("range", subscription_v1(["t"]))],
            api_version=5)
        assert first.error_code == E.MEMBER_ID_REQUIRED and first.member_id
        a = await classic_join(c, first.member_id, protocols=["range", "roundrobin"])
        assert (a.error_code, a.generation_id, a.protocol_type, a.protocol_name) == (E.NONE, 2, "consumer", "range")
        # Protocols: the type must be "consumer", and one protocol shared with every classic member.
        assert (await classic_join(c, protocol_type="connect")).error_code == E.INCONSISTENT_GROUP_PROTOCOL
        assert (await classic_join(c, protocols=["sticky"])).error_code == E.INCONSISTENT_GROUP_PROTOCOL
        b = await classic_join(c, protocols=["roundrobin"])
        assert b.error_code == E.NONE
        assert (await classic_join(c)).error_code == E.GROUP_MAX_SIZE_REACHED
        assert (await heartbeat(c, "y", 0)).error_code == E.GROUP_MAX_SIZE_REACHED
        # Heartbeat, SyncGroup, LeaveGroup: the member must exist and use the classic protocol.
        assert await c.heartbeat("g", "nobody", None, 2) == E.UNKNOWN_MEMBER_ID
        assert await c.heartbeat("g", "x", None, 1) == E.UNKNOWN_MEMBER_ID
        assert await c.heartbeat("g", a.member_id, None, 7) == E.ILLEGAL_GENERATION
        assert (await c.sync_group("g", 7, a.member_id, None, "consumer", "range", [])).error_code == \
            E.ILLEGAL_GENERATION
        assert (await c.sync_group("g", a.generation_id, a.member_id, None, "consumer", "roundrobin",
                                   [])).error_code == E.INCONSISTENT_GROUP_PROTOCOL
        # a is behind the group epoch b's join bumped: SyncGroup and Heartbeat say rebalance.
        assert (await classic_sync(c, a)).error_code == E.REBALANCE_IN_PROGRESS
        assert await c.heartbeat("g", a.member_id, None, a.generation_id) == E.REBALANCE_IN_PROGRESS
        left = await c.leave_group("g", [LeaveMember("x"), LeaveMember(b.member_id)])
        assert [m.error_code for m in left.members] == [E.UNKNOWN_MEMBER_ID, E.NONE]
        assert b.member_id not in c.group("g").consumer.members
    run(scenario)


def test_classic_static_member_of_a_consumer_group_is_fenced_by_another_id() -> None:
    async def scenario() -> None:
        c = new_coordinator()
        await heartbeat(c, "x", 0)
        s = await classic_join(c, instance_id="i")
        assert s.error_code == E.NONE
        assert await c.heartbeat("g", "other", "i", s.generation_id) == E.FENCED_INSTANCE_ID
        assert (await classic_join(c, "other", instance_id="i")).error_code == E.FENCED_INSTANCE_ID
        # A rejoin without a member id replaces the instance's member, keeping its place.
        s2 = await classic_join(c, instance_id="i")
        assert s2.member_id != s.member_id and c.group("g").consumer.static_member("i").member_id == s2.member_id
        left = await c.leave_group("g", [LeaveMember("", "i")])
        assert [m.error_code for m in left.members] == [E.NONE]
    run(scenario)


def test_a_classic_member_that_does_not_rejoin_or_sync_in_time_is_fenced() -> None:
    async def scenario() -> None:
        c = new_coordinator()
        await heartbeat(c, "x", 0)
        a = await c.join_group("g", "a", None, "classic", "/h", 100, 10000, "consumer",
                               [("range", subscription_v1(["t"]))], api_version=5)
        assert a.error_code == E.NONE
        await asyncio.sleep(0.3)  # no SyncGroup within its rebalance timeout
        assert "a" not in c.group("g").consumer.members
    run(scenario)


# ---------------------------------------------------------------- downgrade
def test_the_last_consumer_protocol_member_leaving_downgrades_the_group() -> None:
    async def scenario() -> None:
        c = new_coordinator()
        await heartbeat(c, "x", 0)
        a = await classic_join(c)
        b = await classic_join(c)
        group = c.group("g").consumer
        epoch = group.group_epoch
        targets = {m: group.target_assignment[m] for m in (a.member_id, b.member_id)}
        left = await heartbeat(c, "x", -1)
        assert left.error_code == E.NONE
        entry = c.group("g")
        assert entry.consumer is None and entry.protocol_type == "consumer" and entry.generation_id == epoch
        assert entry.is_in(GroupState.PREPARING_REBALANCE) and set(entry.members) == {a.member_id, b.member_id}
        assert {m: {T1: frozenset(p for _, ps in decode_assignment(entry.members[m].assignment) for p in ps)}
                if entry.members[m].assignment and decode_assignment(entry.members[m].assignment) else {}
                for m in entry.members} == {m: dict(t) for m, t in targets.items()}
        # The classic protocol takes over: the members hear of the rebalance and rejoin a classic group.
        assert await c.heartbeat("g", a.member_id, None, epoch) == E.REBALANCE_IN_PROGRESS
        a2, b2 = await asyncio.gather(classic_join(c, a.member_id), classic_join(c, b.member_id))
        assert a2.generation_id == b2.generation_id == epoch + 1 and {a2.leader} <= {a.member_id, b.member_id}
        # The downgrade was stored: a restarted coordinator has the classic group.
        reloaded = new_coordinator(c.log)
        assert reloaded.group("g").consumer is None and set(reloaded.group("g").members) == {a.member_id, b.member_id}
        # A consumer-protocol member upgrades it again.
        assert (await heartbeat(reloaded, "y", 0)).error_code == E.NONE
        assert reloaded.group("g").consumer is not None
    run(scenario)


def test_no_downgrade_when_the_policy_forbids_it_or_a_consumer_member_stays() -> None:
    async def scenario() -> None:
        c = new_coordinator(consumer_group_migration_policy="upgrade")
        await heartbeat(c, "x", 0)
        await heartbeat(c, "y", 0)
        a = await classic_join(c)
        await heartbeat(c, "x", -1)
        assert c.group("g").consumer is not None  # y still speaks the consumer protocol
        await heartbeat(c, "y", -1)
        group = c.group("g").consumer
        assert group is not None and list(group.members) == [a.member_id]  # downgrades are disabled
        # The classic member leaving last leaves an Empty consumer group.
        await c.leave_group("g", [LeaveMember(a.member_id)])
        assert c.group("g").consumer is not None and c.group("g").consumer.members == {}
    run(scenario)


def test_classic_member_metadata_record_round_trip() -> None:
    member = ConsumerGroupMember("m", client_id="c", subscribed_topic_names=("t",),
                                 classic=ClassicMemberMetadata(45000, (("range", b"\x00\x01"), ("rr", b""))))
    key, value = member_metadata_record("g", member)
    assert value is not None
    # Tagged field 0 after the untagged fields: one tag, tag 0, then the struct behind a presence byte.
    plain_key, plain = member_metadata_record("g", ConsumerGroupMember("m", client_id="c",
                                                                       subscribed_topic_names=("t",)))
    assert value.startswith(plain[:-1]) and value[len(plain) - 1:len(plain) + 1] == b"\x01\x00"
    replay = ConsumerGroupReplay()
    for k, v in (group_epoch_record("g", 1), (key, value)):
        decoded = decode_consumer_key(k)
        assert decoded is not None
        replay.replay(decoded, v)
    assert replay.build()["g"].members["m"].classic == member.classic


def test_classic_members_of_a_consumer_group_have_their_own_session_and_join_timeouts() -> None:
    async def scenario() -> None:
        c = new_coordinator()
        await heartbeat(c, "x", 0)
        slow = await c.join_group("g", "r", None, "classic", "/h", 200, 10000, "consumer",
                                  [("range", subscription_v1(["t"]))], api_version=5)
        await classic_sync(c, slow)
        short = await c.join_group("g", "s", None, "classic", "/h", 5000, 150, "consumer",
                                   [("range", subscription_v1(["t"]))], api_version=5)
        assert await c.heartbeat("g", "r", None, slow.generation_id) == E.REBALANCE_IN_PROGRESS  # s joined since
        await asyncio.sleep(0.4)
        # s never heartbeated within its 150 ms session; r never rejoined within its 200 ms rebalance timeout.
        assert set(c.group("g").consumer.members) == {"x"} and short.error_code == E.NONE
    run(scenario)


def test_a_join_that_cannot_be_stored_answers_the_append_error() -> None:
    async def scenario() -> None:
        from .harness import AppendFailed
        c = new_coordinator()
        await heartbeat(c, "x", 0)
        c.log.fail_with = AppendFailed(E.NOT_LEADER_OR_FOLLOWER)
        failed = await c.join_group("g", "m", None, "classic", "/h", 5000, 100, "consumer",
                                    [("range", subscription_v1(["t"]))], api_version=5)
        assert failed.error_code == E.NOT_COORDINATOR
        c.log.fail_with = None
        await asyncio.sleep(0.3)  # its session still ends
        assert "m" not in c.group("g").consumer.members
    run(scenario)


def test_a_classic_static_member_replacing_the_last_consumer_protocol_one_downgrades_the_group() -> None:
    async def scenario() -> None:
        c = new_coordinator()
        assert (await heartbeat(c, "x", 0, instance_id="i")).error_code == E.NONE
        a = await classic_join(c)
        # The instance "i" comes back speaking the classic protocol (a client switched to group.protocol=classic).
        s = await classic_join(c, instance_id="i")
        assert s.error_code == E.NONE
        entry = c.group("g")
        assert entry.consumer is None and entry.is_in(GroupState.PREPARING_REBALANCE)
        assert set(entry.members) == {a.member_id, s.member_id} and entry.static_member_id("i") == s.member_id
        assert set(new_coordinator(c.log).group("g").members) == {a.member_id, s.member_id}
    run(scenario)


def test_the_embedded_consumer_protocol_is_read_and_written_as_kafka_lays_it_out() -> None:
    import pytest

    from broker.coordinator.group.consumer_protocol import decode_subscription, subscription_version
    from broker.coordinator.group.schema import SchemaError

    v1 = decode_subscription(subscription_v1(["a", "b"], {"a": [0, 2]}))
    assert (v1.topics, v1.user_data, v1.owned_partitions, v1.generation_id, v1.rack_id) == (
        ("a", "b"), None, (("a", (0, 2)),), -1, None)
    v3 = subscription_v1(["a"]).replace(b"\x00\x01", b"\x00\x03", 1) + struct.pack(">i", 7) + struct.pack(
        ">h", 2) + b"r1"
    parsed = decode_subscription(v3)
    assert (parsed.generation_id, parsed.rack_id, subscription_version(v3)) == (7, "r1", 3)
    assert decode_assignment(encode_assignment([("t", [3, 1])], 3)) == (("t", (1, 3)),)
    assert encode_assignment([], 9)[:2] == b"\x00\x03"  # newer versions are answered at 3
    for bad in (b"\x00", b"\x00\x00\x7f\xff\xff\xff", subscription_v1(["a"])[:-3]):
        with pytest.raises(SchemaError):
            decode_subscription(bad)

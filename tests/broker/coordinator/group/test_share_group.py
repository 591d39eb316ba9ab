"""Share groups in the group coordinator: the simple assignor's rules."""

from __future__ import annotations

import uuid

from broker.coordinator.group.share_group import simple_assign

T1, T2 = uuid.UUID(int=1), uuid.UUID(int=2)


def test_more_partitions_than_members_spreads_each_partition_once() -> None:
    out = simple_assign({"a": frozenset({T1}), "b": frozenset({T1})}, {T1: 5}, {})
    assert sorted(len(out[m][T1]) for m in out) == [2, 3]
    assert out["a"][T1] | out["b"][T1] == frozenset(range(5)) and not out["a"][T1] & out["b"][T1]


def test_more_members_than_partitions_shares_partitions() -> None:
    members = {m: frozenset({T1}) for m in "abcd"}
    out = simple_assign(members, {T1: 2}, {})
    assert all(len(out[m][T1]) == 1 for m in members)
    owners = [next(iter(out[m][T1])) for m in members]
    assert sorted(owners) == [0, 0, 1, 1]


def test_sticky_and_subscription_aware() -> None:
    first = simple_assign({"a": frozenset({T1}), "b": frozenset({T1})}, {T1: 4}, {})
    again = simple_assign({"a": frozenset({T1}), "b": frozenset({T1}), "c": frozenset({T2})}, {T1: 4, T2: 1}, first)
    assert again["a"][T1] == first["a"][T1] and again["b"][T1] == first["b"][T1]
    assert again["c"] == {T2: frozenset({0})}


def test_share_records_replay_into_the_group() -> None:
    from broker.coordinator.group import share_records as r
    from broker.coordinator.group.share_group import ShareGroupMember

    a = ShareGroupMember("a", member_epoch=3, previous_member_epoch=2, rack_id="r1", client_id="c",
                         client_host="/h", subscribed_topic_names=("t",), assigned={T1: frozenset({0, 1})})
    b = ShareGroupMember("b", member_epoch=3, subscribed_topic_names=("t",), assigned={T1: frozenset({2})})
    records = [r.member_metadata_record("g", a), r.member_metadata_record("g", b),
               r.partition_metadata_record("g", {"t": (T1, 3)}), r.group_epoch_record("g", 3),
               r.target_member_record("g", "a", a.assigned), r.target_member_record("g", "b", b.assigned),
               r.target_epoch_record("g", 3), r.current_assignment_record("g", a), r.current_assignment_record("g", b),
               *r.member_tombstones("g", "b"), r.group_epoch_record("g", 4),
               *r.member_tombstones("gone", "x"), r.group_epoch_record("gone", 1),
               (r.group_epoch_record("gone", 1)[0], None)]
    replay = r.ShareGroupReplay()
    for key, value in records:
        decoded = r.decode_share_key(key)
        assert decoded is not None
        replay.replay(decoded, value)
    groups = replay.build()
    assert list(groups) == ["g"]
    g = groups["g"]
    assert (g.group_epoch, g.assignment_epoch, g.subscription_metadata) == (4, 3, {"t": (T1, 3)})
    assert list(g.members) == ["a"] and g.members["a"] == a
    assert g.target_assignment == {"a": a.assigned}
    assert r.decode_share_key(b"\x00\x03\x00\x01g") is None  # a consumer group's key

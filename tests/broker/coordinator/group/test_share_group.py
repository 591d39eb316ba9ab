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

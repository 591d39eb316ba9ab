"""Rack-aware replica placement (Kafka's AdminUtils.assignReplicasToBrokersRackAware), checked on the
properties Kafka's own rack-aware tests check: every partition spread over min(RF, racks) racks, leaders and
replicas balanced over the brokers, and the rack-alternated broker order."""

from __future__ import annotations

from collections import Counter

import pytest

from broker.metadata import AdminOperationError
from broker.metadata.assignment import (
    assign_additional_partitions,
    assign_replicas_to_brokers,
    rack_alternated_brokers,
)

RACKS = {0: "rack1", 1: "rack3", 2: "rack3", 3: "rack2", 4: "rack2", 5: "rack1"}


def test_rack_alternated_broker_list() -> None:
    assert rack_alternated_brokers(RACKS) == [0, 3, 1, 5, 4, 2]
    assert rack_alternated_brokers({0: "a", 1: "a", 2: "a", 3: "b"}) == [0, 3, 1, 2]


@pytest.mark.parametrize(("partitions", "rf", "start"), [(6, 3, 2), (12, 2, 0), (6, 3, -1), (7, 5, 1)])
def test_each_partition_spans_as_many_racks_as_it_can(partitions: int, rf: int, start: int) -> None:
    assignment = assign_replicas_to_brokers(partitions, rf, RACKS, start_index=start, racks=RACKS)
    assert sorted(assignment) == list(range(partitions))
    for replicas in assignment.values():
        assert len(replicas) == rf and len(set(replicas)) == rf
        assert len({RACKS[b] for b in replicas}) == min(rf, 3)


def test_leaders_and_replicas_are_balanced_when_partitions_fill_the_brokers() -> None:
    assignment = assign_replicas_to_brokers(6, 3, RACKS, start_index=2, racks=RACKS)
    assert set(Counter(r[0] for r in assignment.values()).values()) == {1}
    assert set(Counter(b for r in assignment.values() for b in r).values()) == {3}
    assert assignment[0][0] == rack_alternated_brokers(RACKS)[2]  # the fixed start index into that order


def test_a_small_placement_worked_by_hand() -> None:
    # Order [0, 1, 2, 3] (racks a, b, a, b); shift 0 scaled by 2 racks: p0 = [0, 0+1], p1 = [1, 1+1].
    assert assign_replicas_to_brokers(2, 2, [0, 1, 2, 3], start_index=0,
                                      racks={0: "a", 1: "b", 2: "a", 3: "b"}) == {0: [0, 1], 1: [1, 2]}


def test_some_brokers_without_a_rack_is_an_error() -> None:
    with pytest.raises(AdminOperationError, match="Not all brokers have rack information"):
        assign_replicas_to_brokers(1, 1, [0, 1], racks={0: "a", 1: None})


def test_without_racks_the_rack_unaware_placement_is_kept() -> None:
    assert assign_replicas_to_brokers(3, 2, [0, 1, 2], start_index=0, replica_shift=0, racks={0: None}) == \
        assign_replicas_to_brokers(3, 2, [0, 1, 2], start_index=0, replica_shift=0)


def test_added_partitions_are_rack_aware_too() -> None:
    existing = assign_replicas_to_brokers(3, 3, RACKS, start_index=0, racks=RACKS)
    added = assign_additional_partitions(existing, 9, RACKS, racks=RACKS)
    assert sorted(added) == list(range(3, 9))
    assert all(len({RACKS[b] for b in r}) == 3 for r in added.values())

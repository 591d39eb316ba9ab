"""Replica placement matches Kafka's AdminUtils.assignReplicasToBrokersRackUnaware on worked examples."""

from __future__ import annotations

import random
from collections import Counter

import pytest

from broker.metadata.assignment import (
    assign_additional_partitions,
    assign_replicas_to_brokers,
    validate_manual_assignment,
)
from broker.metadata.types import (
    InvalidPartitionsError,
    InvalidReplicaAssignmentError,
    InvalidReplicationFactorError,
)


def test_kafka_documented_example_five_brokers_ten_partitions():
    # The table in AdminUtils' doc comment (start index 0, shift 0):
    # broker-0  broker-1  broker-2  broker-3  broker-4
    # p0        p1        p2        p3        p4       (1st replica)
    # p5        p6        p7        p8        p9       (1st replica)
    # p4        p0        p1        p2        p3       (2nd replica)
    # p8        p9        p5        p6        p7       (2nd replica)
    # p3        p4        p0        p1        p2       (3rd replica)
    # p7        p8        p9        p5        p6       (3rd replica)
    assignment = assign_replicas_to_brokers(10, 3, [0, 1, 2, 3, 4], start_index=0)
    assert assignment == {
        0: [0, 1, 2],
        1: [1, 2, 3],
        2: [2, 3, 4],
        3: [3, 4, 0],
        4: [4, 0, 1],
        5: [0, 2, 3],
        6: [1, 3, 4],
        7: [2, 4, 0],
        8: [3, 0, 1],
        9: [4, 1, 2],
    }


def test_broker_ids_are_sorted_and_used_by_id_not_position():
    # Same shape as above with arbitrary ids given out of order.
    assignment = assign_replicas_to_brokers(3, 2, [30, 10, 20], start_index=1, replica_shift=0)
    # sorted brokers [10, 20, 30]; p0 first index 1 -> 20, second at shift 1 -> 30
    assert assignment == {0: [20, 30], 1: [30, 10], 2: [10, 20]}


def test_start_index_and_shift_are_independent_when_given():
    assignment = assign_replicas_to_brokers(4, 3, [1, 2, 3, 4], start_index=2, replica_shift=1)
    # n=4: p0 first=(0+2)%4=2 -> broker 3; shifts 1+(1+0)%3=2 -> idx 0 -> 1, 1+(1+1)%3=3 -> idx 1 -> 2
    assert assignment[0] == [3, 1, 2]
    assert assignment[1] == [4, 2, 3]


def test_every_partition_has_distinct_replicas_and_leaders_spread_evenly():
    rng = random.Random(7)
    brokers = [1, 2, 3, 4, 5, 6]
    assignment = assign_replicas_to_brokers(60, 3, brokers, rng=rng)
    assert sorted(assignment) == list(range(60))
    for replicas in assignment.values():
        assert len(set(replicas)) == 3
    leaders = Counter(replicas[0] for replicas in assignment.values())
    assert set(leaders.values()) == {10}
    all_replicas = Counter(b for replicas in assignment.values() for b in replicas)
    assert set(all_replicas.values()) == {30}


def test_random_start_depends_on_rng():
    placements = {
        tuple(assign_replicas_to_brokers(1, 1, [1, 2, 3, 4, 5], rng=random.Random(seed))[0]) for seed in range(40)
    }
    assert len(placements) > 1


@pytest.mark.parametrize(
    ("partitions", "factor", "brokers", "error"),
    [
        (0, 1, [1], InvalidPartitionsError),
        (1, 0, [1], InvalidReplicationFactorError),
        (1, 4, [1, 2, 3], InvalidReplicationFactorError),
        (1, 1, [], InvalidReplicationFactorError),
    ],
)
def test_invalid_requests_raise_kafka_errors(partitions, factor, brokers, error):
    with pytest.raises(error):
        assign_replicas_to_brokers(partitions, factor, brokers)


def test_additional_partitions_continue_round_robin_from_partition_zero_leader():
    existing = assign_replicas_to_brokers(5, 3, [0, 1, 2, 3, 4], start_index=0)
    added = assign_additional_partitions({p: existing[p] for p in range(5)}, 10, [0, 1, 2, 3, 4])
    # Kafka: start index = position of partition 0's leader (0), start partition id = 5
    assert added == {
        p: existing_full
        for p, existing_full in assign_replicas_to_brokers(10, 3, [0, 1, 2, 3, 4], start_index=0).items()
        if p >= 5
    }
    with pytest.raises(InvalidPartitionsError):
        assign_additional_partitions(existing, 5, [0, 1, 2, 3, 4])


def test_manual_assignment_validation():
    validate_manual_assignment({0: [1, 2], 1: [2, 3]}, [1, 2, 3])
    for bad in ({}, {1: [1]}, {0: [1, 1]}, {0: [1], 1: [1, 2]}, {0: [9]}):
        with pytest.raises(InvalidReplicaAssignmentError):
            validate_manual_assignment(bad, [1, 2, 3])

"""Replica placement for new topics and partitions, as Kafka's AdminUtils does it.

Contract: pure functions. `assign_replicas_to_brokers` is AdminUtils.assignReplicasToBrokers. Without racks
(assignReplicasToBrokersRackUnaware): brokers sorted by id; partition p's first replica is
broker[(p + start_index) % n]; the other replicas follow at a shift `1 + (replica_shift + j) % (n - 1)` from
the first, and the shift grows by one each time the partitions wrap around the broker list, so followers
spread evenly. `start_index` and `replica_shift` are random unless given (tests and CreatePartitions pass
them). When every broker has a rack (`racks`; assignReplicasToBrokersRackAware): the same walk over the
brokers listed rack by rack in turn (racks sorted, each rack's brokers by id), the follower shift scaled by
the number of racks, and a broker skipped while a rack without a replica (or a broker without one) remains,
so a partition's replicas spread over as many racks as it can.

Errors: InvalidPartitionsError (partitions < 1), InvalidReplicationFactorError (factor < 1 or
greater than the number of live brokers), as Kafka's INVALID_PARTITIONS / INVALID_REPLICATION_FACTOR;
AdminOperationError when only some brokers have a rack.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Iterator, Mapping, Sequence

from broker.metadata.types import (
    AdminOperationError,
    InvalidPartitionsError,
    InvalidReplicaAssignmentError,
    InvalidReplicationFactorError,
)


def _replica_index(first_index: int, replica_shift: int, j: int, n_brokers: int) -> int:
    shift = 1 + (replica_shift + j) % (n_brokers - 1)
    return (first_index + shift) % n_brokers


def assign_replicas_to_brokers(
    partitions: int,
    replication_factor: int,
    brokers: Iterable[int],
    *,
    start_index: int | None = None,
    replica_shift: int | None = None,
    start_partition_id: int = 0,
    rng: random.Random | None = None,
    racks: Mapping[int, str | None] | None = None,
) -> dict[int, list[int]]:
    """Partition id -> replica list (the first replica is the preferred leader)."""
    broker_list = sorted(set(brokers))
    if partitions <= 0:
        raise InvalidPartitionsError("Number of partitions must be larger than 0.")
    if replication_factor <= 0:
        raise InvalidReplicationFactorError("Replication factor must be larger than 0.")
    if replication_factor > len(broker_list):
        raise InvalidReplicationFactorError(
            f"Replication factor: {replication_factor} larger than available brokers: {len(broker_list)}."
        )
    chooser = rng or random.Random()
    rack_of = {b: (racks or {}).get(b) for b in broker_list}
    if any(rack_of.values()):
        if not all(rack_of.values()):
            raise AdminOperationError("Not all brokers have rack information for replica rack aware assignment.")
        return _assign_rack_aware(partitions, replication_factor, {b: str(r) for b, r in rack_of.items()},
                                  start_index, start_partition_id, chooser)
    n = len(broker_list)
    first_start = start_index if start_index is not None and start_index >= 0 else chooser.randrange(n)
    shift = (
        replica_shift
        if replica_shift is not None and replica_shift >= 0
        else (start_index if start_index is not None and start_index >= 0 else chooser.randrange(n))
    )
    result: dict[int, list[int]] = {}
    for partition_id, first, replica_shift_now in _walk(partitions, n, first_start, shift, start_partition_id):
        result[partition_id] = [broker_list[first]] + [
            broker_list[_replica_index(first, replica_shift_now, j, n)] for j in range(replication_factor - 1)]
    return result


def _walk(partitions: int, n_brokers: int, start: int, shift: int, start_partition_id: int
          ) -> Iterator[tuple[int, int, int]]:
    """(partition id, index of its first replica, follower shift) for each new partition: the first replicas go
    round the broker list from `start`, and the shift grows by one each time the partitions wrap around it."""
    partition_id = max(0, start_partition_id)
    for _ in range(partitions):
        if partition_id > 0 and partition_id % n_brokers == 0:
            shift += 1
        yield partition_id, (partition_id + start) % n_brokers, shift
        partition_id += 1


def rack_alternated_brokers(rack_of: Mapping[int, str]) -> list[int]:
    """Kafka's getRackAlternatedBrokerList: one broker of each rack in turn (racks sorted, brokers by id)."""
    by_rack: dict[str, list[int]] = {}
    for broker, rack in sorted(rack_of.items()):
        by_rack.setdefault(rack, []).append(broker)
    queues = [by_rack[r] for r in sorted(by_rack)]
    out: list[int] = []
    depth = 0
    while len(out) < len(rack_of):
        out.extend(q[depth] for q in queues if depth < len(q))
        depth += 1
    return out


def _assign_rack_aware(partitions: int, replication_factor: int, rack_of: Mapping[int, str],
                       fixed_start_index: int | None, start_partition_id: int, chooser: random.Random
                       ) -> dict[int, list[int]]:
    arranged = rack_alternated_brokers(rack_of)
    n = len(arranged)
    n_racks = len(set(rack_of.values()))
    fixed = fixed_start_index if fixed_start_index is not None and fixed_start_index >= 0 else None
    start = fixed if fixed is not None else chooser.randrange(n)
    shift = fixed if fixed is not None else chooser.randrange(n)
    result: dict[int, list[int]] = {}
    for partition_id, first, shift_now in _walk(partitions, n, start, shift, start_partition_id):
        leader = arranged[first]
        replicas = [leader]
        racks_used = {rack_of[leader]}
        k = 0
        for _j in range(replication_factor - 1):
            while True:
                broker = arranged[_replica_index(first, shift_now * n_racks, k, n)]
                rack = rack_of[broker]
                k += 1
                # Skip a broker whose rack already has a replica while some rack has none, and a broker
                # that already has one while some broker has none.
                if (rack not in racks_used or len(racks_used) == n_racks) and \
                        (broker not in replicas or len(replicas) == n):
                    replicas.append(broker)
                    racks_used.add(rack)
                    break
        result[partition_id] = replicas
    return result


def assign_additional_partitions(
    existing: Mapping[int, Sequence[int]],
    new_partition_count: int,
    brokers: Iterable[int],
    *,
    rng: random.Random | None = None,
    racks: Mapping[int, str | None] | None = None,
) -> dict[int, list[int]]:
    """Replicas for partitions len(existing)..new_partition_count-1 (CreatePartitions).

    As Kafka's AdminZkClient does: same replication factor as partition 0, and the start index is
    where partition 0's first replica sits in the sorted broker list, so placement continues the
    topic's existing round-robin.
    """
    current = len(existing)
    if new_partition_count <= current:
        raise InvalidPartitionsError(
            f"Topic currently has {current} partitions, {new_partition_count} would not be an increase."
        )
    if 0 not in existing or not existing[0]:
        raise InvalidReplicaAssignmentError("existing assignment has no partition 0")
    broker_list = sorted(set(brokers))
    first_leader = existing[0][0]
    start = next((i for i, b in enumerate(broker_list) if b >= first_leader), 0)
    return assign_replicas_to_brokers(
        new_partition_count - current,
        len(existing[0]),
        broker_list,
        start_index=start,
        start_partition_id=current,
        rng=rng,
        racks=racks,
    )


def validate_manual_assignment(assignment: Mapping[int, Sequence[int]], live_brokers: Iterable[int]) -> None:
    """A CreateTopics manual assignment: partitions 0..n-1, one replication factor, distinct live brokers."""
    live = set(live_brokers)
    if not assignment:
        raise InvalidReplicaAssignmentError("empty assignment")
    if sorted(assignment) != list(range(len(assignment))):
        raise InvalidReplicaAssignmentError("partitions must be numbered consecutively from 0")
    factors = {len(replicas) for replicas in assignment.values()}
    if len(factors) != 1 or 0 in factors:
        raise InvalidReplicaAssignmentError("all partitions must have the same non-zero replication factor")
    for partition, replicas in assignment.items():
        if len(set(replicas)) != len(replicas):
            raise InvalidReplicaAssignmentError(f"duplicate replicas for partition {partition}")
        unknown = set(replicas) - live
        if unknown:
            raise InvalidReplicaAssignmentError(f"partition {partition} assigned to unknown brokers {sorted(unknown)}")

"""Leader election: pure functions from a partition's state and the live brokers to its next state.

Contract (Kafka's Election / PartitionLeaderElectionAlgorithms, ZooKeeper mode; no I/O, no clock):
- `assignment` is the partition's replica list in assignment order (the first replica is the preferred
  leader); `live` the brokers that may lead (the caller has already removed shutting-down brokers where Kafka
  does); `controller_epoch` is stamped on every new state. A new state keeps `partition_epoch` (the store's
  version of the state znode, which the conditional write checks) and bumps `leader_epoch` when the leader
  or the ISR changes.
- The `*_leader` functions choose a leader or answer NO_LEADER; the `elect_for_*` functions build the new
  `LeaderAndIsr`, or answer None when there is nothing to change (or nobody eligible, where noted).
- Offline (a leader or ISR member is gone): the current leader stays if it is live; otherwise the first live
  replica in the ISR leads; with unclean election enabled, failing that, the first live replica at all, and
  the ISR becomes that replica alone. Dead replicas leave the ISR, except that the last ISR member is kept
  when no replica is live (Kafka keeps it so the partition comes back with it). No live candidate: the
  partition goes offline (leader NO_LEADER).
- Controlled shutdown of broker B: B leaves the ISR; if B leads, the first replica in the ISR that is live and
  not shutting down takes over; if none, nothing changes (the leader cannot move yet).
- Preferred replica: the first replica of the assignment leads again if it is live and in the ISR.
- Reassignment: the ISR shrinks to the target replicas; the leader stays if it is a live target replica,
  otherwise the first target replica that is live and in the new ISR leads.
- New partition: the first live replica leads, the live replicas are the ISR, leader epoch 0.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

from broker.metadata import LeaderAndIsr

NO_LEADER = -1
RECOVERING = 1  # LeaderRecoveryState (KIP-704); 0 is RECOVERED


# ---------------------------------------------------------------- choosing a leader
def offline_partition_leader(assignment: Sequence[int], isr: Sequence[int], live: Collection[int],
                             unclean: bool) -> int:
    """Kafka's offlinePartitionLeaderElection: first live replica (assignment order) in the ISR; with unclean
    election, failing that, the first live replica."""
    for r in assignment:
        if r in live and r in isr:
            return r
    if unclean:
        for r in assignment:
            if r in live:
                return r
    return NO_LEADER


def controlled_shutdown_leader(assignment: Sequence[int], isr: Sequence[int], live: Collection[int],
                               shutting_down: Collection[int]) -> int:
    """Kafka's controlledShutdownPartitionLeaderElection: first live replica in the ISR not shutting down."""
    return next((r for r in assignment if r in isr and r in live and r not in shutting_down), NO_LEADER)


def preferred_replica_leader(assignment: Sequence[int], isr: Sequence[int], live: Collection[int]) -> int:
    """Kafka's preferredReplicaPartitionLeaderElection: the first replica, if live and in the ISR."""
    if assignment and assignment[0] in live and assignment[0] in isr:
        return assignment[0]
    return NO_LEADER


def reassignment_leader(target: Sequence[int], isr: Sequence[int], live: Collection[int]) -> int:
    """Kafka's reassignPartitionLeaderElection: first target replica that is live and in the ISR."""
    return next((r for r in target if r in live and r in isr), NO_LEADER)


# ---------------------------------------------------------------- the next partition state
def needs_offline_election(state: LeaderAndIsr, live: Collection[int]) -> bool:
    """A partition whose leader or some ISR member is not live."""
    return state.leader not in live or any(r not in live for r in state.isr)


def elect_for_offline(state: LeaderAndIsr, assignment: Sequence[int], live: Collection[int], unclean: bool,
                      controller_epoch: int, leader_recovery: bool = False) -> LeaderAndIsr:
    """The leader stays if live, else the offline election; the ISR keeps its live members. An unclean leader
    (not in the old ISR) marks the partition RECOVERING when `leader_recovery` (KIP-704, inter.broker.protocol
    .version 3.2+); otherwise the leader recovery state is kept, as every election here keeps it."""
    new_isr = tuple(r for r in state.isr if r in live)
    leader = state.leader if state.leader in live else offline_partition_leader(assignment, state.isr, live, unclean)
    if leader != NO_LEADER and leader not in new_isr:
        new_isr = (leader,)  # unclean election: the new leader alone is in sync
    if not new_isr and state.isr:
        new_isr = state.isr[:1]  # Kafka keeps the last ISR member when no replica is live
    epoch = state.leader_epoch + 1 if leader != state.leader or new_isr != state.isr else state.leader_epoch
    recovery = RECOVERING if leader_recovery and leader != NO_LEADER and leader not in state.isr \
        else state.leader_recovery_state
    return LeaderAndIsr(leader, epoch, new_isr, controller_epoch, state.partition_epoch, recovery)


def elect_for_controlled_shutdown(state: LeaderAndIsr, assignment: Sequence[int], broker_id: int,
                                  live: Collection[int], shutting_down: Collection[int],
                                  controller_epoch: int) -> LeaderAndIsr | None:
    """The state once `broker_id` (a replica, in `shutting_down`) is out of leadership and the ISR, or None
    when nothing changes: it leads and no other replica can (the caller sees it still leading), or it neither
    leads nor is in the ISR (nor is it removed as the last ISR member of a partition it does not lead)."""
    new_isr = tuple(r for r in state.isr if r != broker_id)
    if state.leader == broker_id:
        leader = controlled_shutdown_leader(assignment, new_isr, live, shutting_down)
        if leader == NO_LEADER:
            return None
        return LeaderAndIsr(leader, state.leader_epoch + 1, new_isr, controller_epoch, state.partition_epoch,
                            state.leader_recovery_state)
    if broker_id in state.isr and new_isr:
        return LeaderAndIsr(state.leader, state.leader_epoch + 1, new_isr, controller_epoch, state.partition_epoch,
                            state.leader_recovery_state)
    return None


def elect_for_preferred_replica(state: LeaderAndIsr, assignment: Sequence[int], live: Collection[int],
                                controller_epoch: int) -> LeaderAndIsr | None:
    """The preferred replica leading, or None when it already leads or cannot."""
    preferred = preferred_replica_leader(assignment, state.isr, live)
    if preferred == NO_LEADER or preferred == state.leader:
        return None
    return LeaderAndIsr(preferred, state.leader_epoch + 1, state.isr, controller_epoch, state.partition_epoch,
                        state.leader_recovery_state)


def elect_for_reassignment(state: LeaderAndIsr, target: Sequence[int], live: Collection[int],
                           controller_epoch: int) -> LeaderAndIsr | None:
    """The state that completes a reassignment to `target` (ISR limited to it, a leader from it), or None
    while no target replica is live and in the ISR."""
    new_isr = tuple(r for r in state.isr if r in target)
    leader = state.leader
    if leader not in target or leader not in live:
        leader = reassignment_leader(target, new_isr, live)
        if leader == NO_LEADER:
            return None
    return LeaderAndIsr(leader, state.leader_epoch + 1, new_isr, controller_epoch, state.partition_epoch,
                        state.leader_recovery_state)


def new_partition_state(assignment: Sequence[int], live: Collection[int], controller_epoch: int) -> LeaderAndIsr:
    live_replicas = tuple(r for r in assignment if r in live)
    leader = live_replicas[0] if live_replicas else NO_LEADER
    return LeaderAndIsr(leader, 0, live_replicas, controller_epoch)


def drop_from_isr(state: LeaderAndIsr, dropped: Collection[int], replicas: Sequence[int], live: Collection[int],
                  controller_epoch: int) -> LeaderAndIsr:
    """The state under a new leader epoch without `dropped` in the ISR (a leader among them gives way to the
    first of `replicas` live and in the remaining ISR; the ISR keeps its last member rather than go empty)."""
    new_isr = tuple(r for r in state.isr if r not in dropped) or state.isr[:1]
    leader = state.leader
    if leader in dropped:
        leader = reassignment_leader(replicas, new_isr, live)
    return LeaderAndIsr(leader, state.leader_epoch + 1, new_isr, controller_epoch, state.partition_epoch)


def bump_leader_epoch(state: LeaderAndIsr, controller_epoch: int) -> LeaderAndIsr:
    """Same leader and ISR under a new leader epoch (a reassignment's new replicas must hear it)."""
    return LeaderAndIsr(state.leader, state.leader_epoch + 1, state.isr, controller_epoch, state.partition_epoch,
                        state.leader_recovery_state)

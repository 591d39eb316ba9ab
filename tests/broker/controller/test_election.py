"""broker.controller.election: every election kind, as pure functions (no store, no sockets)."""

from __future__ import annotations

from broker.controller.election import (
    NO_LEADER,
    bump_leader_epoch,
    controlled_shutdown_leader,
    elect_for_controlled_shutdown,
    elect_for_offline,
    elect_for_preferred_replica,
    elect_for_reassignment,
    needs_offline_election,
    new_partition_state,
    offline_partition_leader,
    preferred_replica_leader,
    reassignment_leader,
)
from broker.metadata import LeaderAndIsr

CONTROLLER_EPOCH = 7


def state(leader: int, isr: tuple[int, ...], leader_epoch: int = 4, partition_epoch: int = 11) -> LeaderAndIsr:
    return LeaderAndIsr(leader, leader_epoch, isr, 3, partition_epoch)


# ---------------------------------------------------------------- offline (and unclean)
def test_offline_leader_is_the_first_live_isr_member_in_assignment_order() -> None:
    assert offline_partition_leader([3, 2, 1], isr=[1, 2], live={1, 2}, unclean=False) == 2
    assert offline_partition_leader([3, 2, 1], isr=[1, 2], live={1}, unclean=False) == 1


def test_offline_election_of_a_dead_leader_shrinks_the_isr_and_bumps_the_epoch() -> None:
    new = elect_for_offline(state(1, (1, 2, 3)), [1, 2, 3], live={2, 3}, unclean=False,
                            controller_epoch=CONTROLLER_EPOCH)
    assert new == LeaderAndIsr(2, 5, (2, 3), CONTROLLER_EPOCH, 11)


def test_a_live_leader_stays_when_only_a_follower_died() -> None:
    current = state(2, (1, 2, 3))
    assert needs_offline_election(current, live={2, 3})
    new = elect_for_offline(current, [1, 2, 3], live={2, 3}, unclean=False, controller_epoch=CONTROLLER_EPOCH)
    assert (new.leader, new.isr, new.leader_epoch) == (2, (2, 3), 5)


def test_a_partition_whose_leader_and_isr_are_live_needs_no_election() -> None:
    assert not needs_offline_election(state(1, (1, 2)), live={1, 2, 3})
    assert needs_offline_election(state(NO_LEADER, ()), live={1, 2, 3})


def test_no_live_isr_member_without_unclean_election_leaves_the_partition_offline_with_its_last_isr_member() -> None:
    new = elect_for_offline(state(1, (1, 2)), [1, 2, 3], live={3}, unclean=False, controller_epoch=CONTROLLER_EPOCH)
    assert new == LeaderAndIsr(NO_LEADER, 5, (1,), CONTROLLER_EPOCH, 11)


def test_unclean_election_takes_a_live_replica_outside_the_isr_as_the_only_isr_member() -> None:
    assert offline_partition_leader([1, 2, 3], isr=[1], live={3, 2}, unclean=True) == 2
    new = elect_for_offline(state(1, (1,)), [1, 3, 2], live={2, 3}, unclean=True, controller_epoch=CONTROLLER_EPOCH)
    assert (new.leader, new.isr, new.leader_epoch) == (3, (3,), 5)


def test_unclean_election_prefers_a_live_isr_member() -> None:
    new = elect_for_offline(state(1, (1, 3)), [1, 2, 3], live={2, 3}, unclean=True, controller_epoch=CONTROLLER_EPOCH)
    assert (new.leader, new.isr) == (3, (3,))


def test_no_live_replica_at_all_even_with_unclean_election() -> None:
    assert offline_partition_leader([1, 2], isr=[1, 2], live=set(), unclean=True) == NO_LEADER
    new = elect_for_offline(state(1, (1, 2)), [1, 2], live=set(), unclean=True, controller_epoch=CONTROLLER_EPOCH)
    assert (new.leader, new.isr, new.leader_epoch) == (NO_LEADER, (1,), 5)


def test_an_offline_partition_that_stays_offline_keeps_its_leader_epoch() -> None:
    offline = state(NO_LEADER, (1,))
    new = elect_for_offline(offline, [1, 2], live={2}, unclean=False, controller_epoch=CONTROLLER_EPOCH)
    assert (new.leader, new.isr, new.leader_epoch, new.controller_epoch) == (NO_LEADER, (1,), 4, CONTROLLER_EPOCH)


def test_an_offline_partition_comes_back_when_its_isr_member_returns() -> None:
    new = elect_for_offline(state(NO_LEADER, (1,)), [1, 2], live={1, 2}, unclean=False,
                            controller_epoch=CONTROLLER_EPOCH)
    assert (new.leader, new.isr, new.leader_epoch) == (1, (1,), 5)


# ---------------------------------------------------------------- controlled shutdown
def test_controlled_shutdown_moves_leadership_to_the_next_isr_member_not_shutting_down() -> None:
    assert controlled_shutdown_leader([1, 2, 3], isr=[2, 3], live={1, 2, 3}, shutting_down={1, 2}) == 3
    new = elect_for_controlled_shutdown(state(1, (1, 2, 3)), [1, 2, 3], 1, live={1, 2, 3}, shutting_down={1},
                                        controller_epoch=CONTROLLER_EPOCH)
    assert new == LeaderAndIsr(2, 5, (2, 3), CONTROLLER_EPOCH, 11)


def test_controlled_shutdown_of_a_follower_takes_it_out_of_the_isr() -> None:
    new = elect_for_controlled_shutdown(state(1, (1, 2, 3)), [1, 2, 3], 3, live={1, 2, 3}, shutting_down={3},
                                        controller_epoch=CONTROLLER_EPOCH)
    assert (new.leader, new.isr, new.leader_epoch) == (1, (1, 2), 5)


def test_controlled_shutdown_of_the_only_eligible_leader_changes_nothing() -> None:
    alone = state(1, (1,))
    assert elect_for_controlled_shutdown(alone, [1, 2], 1, live={1, 2}, shutting_down={1},
                                         controller_epoch=CONTROLLER_EPOCH) is None
    # The other ISR member is dead: nobody can take over either.
    assert elect_for_controlled_shutdown(state(1, (1, 2)), [1, 2], 1, live={1}, shutting_down={1},
                                         controller_epoch=CONTROLLER_EPOCH) is None


def test_controlled_shutdown_of_a_replica_outside_the_isr_changes_nothing() -> None:
    assert elect_for_controlled_shutdown(state(1, (1, 2)), [1, 2, 3], 3, live={1, 2, 3}, shutting_down={3},
                                         controller_epoch=CONTROLLER_EPOCH) is None


# ---------------------------------------------------------------- preferred replica
def test_preferred_replica_leads_again_when_live_and_in_sync() -> None:
    assert preferred_replica_leader([2, 1], isr=[1, 2], live={1, 2}) == 2
    new = elect_for_preferred_replica(state(1, (1, 2)), [2, 1], live={1, 2}, controller_epoch=CONTROLLER_EPOCH)
    assert new == LeaderAndIsr(2, 5, (1, 2), CONTROLLER_EPOCH, 11)


def test_preferred_replica_election_changes_nothing_when_it_cannot_or_need_not() -> None:
    assert elect_for_preferred_replica(state(2, (1, 2)), [2, 1], {1, 2}, CONTROLLER_EPOCH) is None  # already leads
    assert elect_for_preferred_replica(state(1, (1,)), [2, 1], {1, 2}, CONTROLLER_EPOCH) is None  # not in sync
    assert elect_for_preferred_replica(state(1, (1, 2)), [2, 1], {1}, CONTROLLER_EPOCH) is None  # not live
    assert preferred_replica_leader([], isr=[1], live={1}) == NO_LEADER


# ---------------------------------------------------------------- reassignment
def test_reassignment_keeps_a_live_leader_in_the_target_and_limits_the_isr_to_it() -> None:
    new = elect_for_reassignment(state(2, (1, 2, 3)), target=(2, 3), live={1, 2, 3}, controller_epoch=CONTROLLER_EPOCH)
    assert new == LeaderAndIsr(2, 5, (2, 3), CONTROLLER_EPOCH, 11)


def test_reassignment_moves_leadership_into_the_target() -> None:
    assert reassignment_leader([4, 3], isr=[3, 4], live={3, 4}) == 4
    new = elect_for_reassignment(state(1, (1, 3, 4)), target=(4, 3), live={1, 3, 4}, controller_epoch=CONTROLLER_EPOCH)
    assert (new.leader, new.isr, new.leader_epoch) == (4, (3, 4), 5)
    # A target leader that died is replaced too.
    new = elect_for_reassignment(state(3, (3, 4)), target=(3, 4), live={4}, controller_epoch=CONTROLLER_EPOCH)
    assert (new.leader, new.isr) == (4, (3, 4))


def test_reassignment_waits_for_a_live_target_replica_in_the_isr() -> None:
    assert elect_for_reassignment(state(1, (1, 2)), target=(3, 4), live={1, 2, 3, 4},
                                  controller_epoch=CONTROLLER_EPOCH) is None
    assert elect_for_reassignment(state(1, (1, 3)), target=(3,), live={1}, controller_epoch=CONTROLLER_EPOCH) is None


# ---------------------------------------------------------------- new partitions, epoch bumps
def test_a_new_partition_is_led_by_its_first_live_replica_with_the_live_replicas_in_sync() -> None:
    assert new_partition_state([3, 1, 2], live={1, 2}, controller_epoch=CONTROLLER_EPOCH) == \
        LeaderAndIsr(1, 0, (1, 2), CONTROLLER_EPOCH)
    assert new_partition_state([3], live={1}, controller_epoch=CONTROLLER_EPOCH) == \
        LeaderAndIsr(NO_LEADER, 0, (), CONTROLLER_EPOCH)


def test_bump_leader_epoch_keeps_leader_isr_and_partition_epoch() -> None:
    assert bump_leader_epoch(state(1, (1, 2)), CONTROLLER_EPOCH) == LeaderAndIsr(1, 5, (1, 2), CONTROLLER_EPOCH, 11)


def test_an_unclean_leader_marks_the_partition_recovering_and_other_elections_keep_the_state() -> None:
    unclean = elect_for_offline(state(1, (1,)), [1, 2], live={2}, unclean=True, controller_epoch=CONTROLLER_EPOCH,
                                leader_recovery=True)
    assert (unclean.leader, unclean.isr, unclean.leader_recovery_state) == (2, (2,), 1)
    old_ibp = elect_for_offline(state(1, (1,)), [1, 2], live={2}, unclean=True, controller_epoch=CONTROLLER_EPOCH)
    assert old_ibp.leader_recovery_state == 0
    clean = elect_for_offline(state(1, (1, 2)), [1, 2], live={2}, unclean=True, controller_epoch=CONTROLLER_EPOCH,
                              leader_recovery=True)
    assert (clean.leader, clean.leader_recovery_state) == (2, 0)
    moved = elect_for_preferred_replica(unclean, [2, 1], live={1, 2}, controller_epoch=CONTROLLER_EPOCH)
    assert moved is None  # 2 is preferred and leads already
    recovering = LeaderAndIsr(2, 5, (1, 2), 3, 12, 1)
    moved = elect_for_preferred_replica(recovering, [1, 2], live={1, 2}, controller_epoch=CONTROLLER_EPOCH)
    assert moved is not None and (moved.leader, moved.leader_recovery_state) == (1, 1)

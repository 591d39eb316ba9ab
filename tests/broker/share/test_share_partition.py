"""SharePartition's rules (KIP-932): acquisition, acknowledgement, locks, delivery counts, the window's start,
and what is persisted and restored."""

from __future__ import annotations

from broker.coordinator.share.persister import PersisterStateBatch, RecordState, SharePartitionState
from broker.share.share_partition import AcquiredRange, SharePartition
from protocol.errors import ErrorCode


def share(start: int = 0, **kw: int) -> SharePartition:
    sp = SharePartition(start, record_lock_duration_ms=kw.pop("lock", 1000),
                        delivery_count_limit=kw.pop("limit", 3), max_in_flight=kw.pop("max_in_flight", 100))
    return sp


def test_acquires_whole_batches_and_counts_deliveries() -> None:
    sp = share()
    sp.add_fetched(0, 4)
    sp.add_fetched(5, 9)
    assert sp.acquire("a", 3, now_ms=0) == [AcquiredRange(0, 4, 1)]  # the batch stays whole
    assert sp.acquire("b", 100, now_ms=0) == [AcquiredRange(5, 9, 1)]
    assert sp.acquire("c", 100, now_ms=0) == []


def test_accepted_records_are_never_delivered_again_and_the_start_moves() -> None:
    sp = share()
    sp.add_fetched(0, 4)
    sp.acquire("a", 10, now_ms=0)
    assert sp.acknowledge("a", [(0, 4, [1])]) == ErrorCode.NONE
    assert sp.start_offset == 5 and not sp.records
    assert sp.expire_locks(10_000) is False
    assert sp.acquire("a", 10, now_ms=10_000) == []


def test_released_records_come_back_first_with_a_higher_count() -> None:
    sp = share()
    sp.add_fetched(0, 1)
    sp.add_fetched(2, 3)
    sp.acquire("a", 2, now_ms=0)
    assert sp.acknowledge("a", [(0, 1, [2, 1])]) == ErrorCode.NONE  # release 0, accept 1
    assert sp.acquire("b", 10, now_ms=0) == [AcquiredRange(0, 0, 2), AcquiredRange(2, 3, 1)]


def test_rejected_records_are_archived() -> None:
    sp = share()
    sp.add_fetched(0, 2)
    sp.acquire("a", 10, now_ms=0)
    assert sp.acknowledge("a", [(0, 2, [3])]) == ErrorCode.NONE
    assert sp.start_offset == 3
    assert sp.acquire("a", 10, now_ms=0) == []


def test_lock_expiry_releases_and_the_delivery_limit_archives() -> None:
    sp = share(limit=2)
    sp.add_fetched(0, 0)
    assert sp.acquire("a", 1, now_ms=0) == [AcquiredRange(0, 0, 1)]
    assert sp.next_deadline_ms() == 1000
    assert sp.expire_locks(999) is False
    assert sp.expire_locks(1000) is True
    assert sp.acquire("b", 1, now_ms=1000) == [AcquiredRange(0, 0, 2)]
    assert sp.expire_locks(2000) is True  # the second delivery was the last: archived
    assert sp.records == {} and sp.start_offset == 1


def test_acknowledging_what_the_member_does_not_hold_changes_nothing() -> None:
    sp = share()
    sp.add_fetched(0, 3)
    sp.acquire("a", 10, now_ms=0)
    assert sp.acknowledge("b", [(0, 0, [1])]) == ErrorCode.INVALID_RECORD_STATE
    assert sp.acknowledge("a", [(0, 1, [1]), (2, 9, [1])]) == ErrorCode.INVALID_RECORD_STATE
    assert sp.records[0].state is RecordState.ACQUIRED  # the valid first batch was not applied either
    assert sp.acknowledge("a", [(3, 2, [1])]) == ErrorCode.INVALID_REQUEST
    assert sp.acknowledge("a", [(0, 3, [1, 1])]) == ErrorCode.INVALID_REQUEST
    assert sp.acknowledge("a", [(0, 0, [9])]) == ErrorCode.INVALID_REQUEST


def test_release_member_and_control_batches() -> None:
    sp = share()
    sp.add_fetched(0, 2)
    sp.add_fetched(3, 3, deliverable=False)  # a transaction marker
    sp.add_fetched(4, 4)
    assert sp.acquire("a", 10, now_ms=0) == [AcquiredRange(0, 2, 1), AcquiredRange(4, 4, 1)]
    assert sp.release_member("a") is True
    assert sp.acquire("b", 10, now_ms=0) == [AcquiredRange(0, 2, 2), AcquiredRange(4, 4, 2)]


def test_the_window_is_bounded() -> None:
    sp = share(max_in_flight=5)
    sp.add_fetched(0, 4)
    assert not sp.can_fetch_more
    sp.acquire("a", 10, now_ms=0)
    sp.acknowledge("a", [(0, 1, [1])])
    assert sp.can_fetch_more


def test_persisted_state_and_restore() -> None:
    sp = share(10)
    sp.add_fetched(10, 15)
    sp.acquire("a", 100, now_ms=0)
    sp.acknowledge("a", [(10, 10, [1]), (11, 11, [2]), (12, 12, [3])])
    state = sp.persisted_state(state_epoch=3, leader_epoch=7)
    assert state.start_offset == 11 and state.state_epoch == 3 and state.leader_epoch == 7
    assert state.batches == [PersisterStateBatch(11, 11, RecordState.AVAILABLE, 1),
                             PersisterStateBatch(12, 12, RecordState.ARCHIVED, 1),
                             PersisterStateBatch(13, 15, RecordState.AVAILABLE, 1)]  # acquired: written available
    restored = share()
    restored.restore(state)
    assert restored.start_offset == 11 and restored.end_offset == 16
    assert restored.acquire("b", 100, now_ms=0) == [AcquiredRange(11, 11, 2), AcquiredRange(13, 15, 2)]


def test_restore_of_an_empty_state_and_log_truncation() -> None:
    sp = share()
    sp.restore(SharePartitionState(1, 42, []))
    assert (sp.start_offset, sp.end_offset) == (42, 42)
    sp.add_fetched(42, 50)
    sp.reset_start(45)
    assert sp.start_offset == 45 and min(sp.records) == 45


def test_the_kept_counts_agree_with_the_window_through_random_operations() -> None:
    """The AVAILABLE count and the lock-deadline bound are kept as states change (a fetch does not walk the
    window for them): after any sequence of fetches, acquisitions, acknowledgements, releases, expiries,
    retention moves and restores they agree with a walk of the window, which stays in offset order."""
    import random

    rng = random.Random(34)
    sp = share(limit=3)
    now = 0
    for _ in range(3000):
        op = rng.random()
        if op < 0.2:
            first = sp.end_offset + rng.choice((0, 0, 0, 2))
            sp.add_fetched(first, first + rng.randrange(5), deliverable=rng.random() > 0.1)
        elif op < 0.45:
            sp.acquire(rng.choice("ab"), rng.randrange(1, 8), now, record_limit=rng.random() < 0.5)
        elif op < 0.7:
            member = rng.choice("ab")
            held = [o for o, i in sp.records.items() if i.state is RecordState.ACQUIRED and i.member_id == member]
            if held:
                o = rng.choice(held)
                sp.acknowledge(member, [(o, o, [rng.choice((1, 2, 3, 4))])], renew_at_ms=now)
        elif op < 0.8:
            sp.release_member(rng.choice("ab"))
        elif op < 0.95:
            now += rng.randrange(400)
            sp.expire_locks(now)
        elif op < 0.98:
            sp.reset_start(sp.start_offset + rng.randrange(3))
        else:  # a new leader loads the persisted state (acquired offsets come back available)
            sp.restore(sp.persisted_state(0, 0))
        # The window's offsets, in offset order (the walks iterate the dict).
        assert list(sp.records) == sorted(sp.records)
        assert all(sp.start_offset <= o < sp.end_offset for o in sp.records)
        walked = sum(1 for i in sp.records.values() if i.state is RecordState.AVAILABLE)
        assert sp.available_count() == walked and sp.has_available() == (walked > 0)
        deadlines = [i.deadline_ms for i in sp.records.values() if i.state is RecordState.ACQUIRED]
        bound = sp.next_deadline_ms()
        if deadlines:  # a bound at or below the earliest lock (it may be stale low, never late)
            assert bound is not None and bound <= min(deadlines)
        # Nothing whose lock ran out stays acquired past an expiry pass.
        probe = now + rng.randrange(2000)
        before = {o: (i.state, i.deadline_ms) for o, i in sp.records.items()}
        if rng.random() < 0.3:
            sp.expire_locks(probe)
            now = probe
            assert not [o for o, (state, deadline) in before.items()
                        if state is RecordState.ACQUIRED and deadline <= probe and o in sp.records
                        and sp.records[o].state is RecordState.ACQUIRED]

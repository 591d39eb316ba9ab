"""Partition rules without sockets: the high watermark, ISR expansion and shrink, leader epochs, the LSO.

A real `storage.Log` in a temporary directory; the ISR updater is an in-memory stand-in for the metadata
store (a version-checked write), which is all `Partition` asks of it.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from broker.cluster.partition import EARLIEST_TIMESTAMP, LATEST_TIMESTAMP, MAX_TIMESTAMP, Partition, PartitionState
from broker.common.errors import KafkaApiError
from protocol.errors import ErrorCode
from protocol.records import build_batch
from storage import AppendOrigin, InvalidRecordError, Log, LogConfig, TopicPartition
from tests.storage.txn_support import T0, idempotent_batch, marker, txn_batch

TP = TopicPartition("t", 0)
LAG_MS = 1000


def make_partition(tmp_path: Path, local: int = 0) -> Partition:
    p = Partition(TP, local, replica_lag_time_max_ms=LAG_MS, min_insync_replicas=2)
    p.log = Log.open(tmp_path / "t-0", LogConfig())
    return p


def append(p: Partition, n: int, now: int) -> None:
    p.append_records_to_leader(memoryview(bytearray(build_batch([(b"k", b"v", [], now)] * n))), 1, now)


class Store:
    """Version-checked ISR writes, as ZooKeeper does them."""

    def __init__(self) -> None:
        self.version = 0
        self.writes: list[list[int]] = []

    async def update(self, partition: Partition, new_isr: list[int], version: int) -> tuple[list[int], int] | None:
        if version != self.version:
            return None
        self.version += 1
        self.writes.append(list(new_isr))
        return list(new_isr), self.version


def lead(p: Partition, now: int, isr: list[int] | None = None, epoch: int = 1) -> None:
    p.make_leader(PartitionState(leader=p.local_broker_id, leader_epoch=epoch, isr=isr or [0, 1, 2],
                                 replicas=[0, 1, 2]), now)


def test_high_watermark_is_min_leo_over_isr_and_never_goes_back(tmp_path: Path) -> None:
    p = make_partition(tmp_path)
    lead(p, 1000)
    append(p, 10, 1000)
    assert p.log_end_offset == 10
    assert p.high_watermark == 0  # followers' LEOs unknown yet: they hold it
    p.update_follower_fetch_state(1, 10, 0, 1001)
    assert p.high_watermark == 0  # replica 2 is in the ISR and still unknown
    assert p.update_follower_fetch_state(2, 6, 0, 1002)
    assert p.high_watermark == 6
    p.update_follower_fetch_state(2, 10, 0, 1003)
    assert p.high_watermark == 10
    # A follower that truncated and fetches from lower does not pull the HW back.
    p.update_follower_fetch_state(2, 4, 0, 1004)
    assert p.high_watermark == 10


def test_caught_up_replica_outside_isr_counts_for_the_hw(tmp_path: Path) -> None:
    p = make_partition(tmp_path)
    lead(p, 1000, isr=[0, 1])
    append(p, 10, 1000)
    p.update_follower_fetch_state(1, 10, 0, 1001)
    assert p.high_watermark == 10
    append(p, 5, 1002)
    # Replica 2 (not in the ISR) caught up recently: Kafka counts it, so the HW waits for it.
    p.update_follower_fetch_state(2, 15, 0, 1003)
    p.update_follower_fetch_state(1, 15, 0, 1004)
    assert p.high_watermark == 15


def test_follower_high_watermark_is_min_of_leo_and_leaders(tmp_path: Path) -> None:
    p = make_partition(tmp_path, local=1)
    p.make_follower(PartitionState(leader=0, leader_epoch=1, isr=[0, 1], replicas=[0, 1]))
    p.append_records_to_follower(memoryview(build_batch([(b"k", b"v", [], 0)] * 4, partition_leader_epoch=1)))
    assert p.update_follower_high_watermark(100)
    assert p.high_watermark == 4
    p.update_follower_high_watermark(3)
    assert p.high_watermark == 3


def test_follower_restarted_inside_a_batch_starts_its_log_at_the_batch(tmp_path: Path) -> None:
    """DeleteRecords put the leader's log start offset at 5, inside batch 0..9; a follower whose log restarted
    there is sent that whole batch, and takes it (restarting at 0, then following the leader's log start)."""
    p = make_partition(tmp_path, local=1)
    p.make_follower(PartitionState(leader=0, leader_epoch=1, isr=[0, 1], replicas=[0, 1]))
    p.truncate_fully_and_start_at(5)
    batch = build_batch([(b"k", b"v", [], 0)] * 10, partition_leader_epoch=1)
    assert p.append_records_to_follower(memoryview(batch)).records_count == 10
    p.follow_leader_log_start_offset(5)
    assert (p.log_start_offset, p.log_end_offset) == (5, 10)
    # Below a log that already has data, the same bytes are still a bug, not a restart.
    with pytest.raises(InvalidRecordError):
        p.append_records_to_follower(memoryview(batch))
    assert p.log_end_offset == 10


def test_stale_and_future_leader_epochs_are_refused(tmp_path: Path) -> None:
    p = make_partition(tmp_path)
    lead(p, 1000, epoch=5)
    p.check_leader_epoch(5)
    p.check_leader_epoch(-1)
    with pytest.raises(KafkaApiError) as e:
        p.check_leader_epoch(4)
    assert e.value.code == ErrorCode.FENCED_LEADER_EPOCH
    with pytest.raises(KafkaApiError) as e:
        p.check_leader_epoch(6)
    assert e.value.code == ErrorCode.UNKNOWN_LEADER_EPOCH


def test_new_leader_epoch_starts_at_the_leo(tmp_path: Path) -> None:
    p = make_partition(tmp_path)
    lead(p, 1000, epoch=1)
    append(p, 7, 1000)
    lead(p, 1001, epoch=3)
    assert p.log is not None
    assert p.log.leader_epoch_cache.entries() == [(1, 0), (3, 7)]
    assert p.leader_epoch_start_offset == 7


def test_isr_shrinks_after_lag_and_the_hw_moves_without_another_fetch(tmp_path: Path) -> None:
    async def scenario() -> None:
        p = make_partition(tmp_path)
        store = Store()
        p.isr_updater = store.update
        changes: list[list[int]] = []
        p.on_isr_change = lambda part: changes.append(list(part.isr))
        lead(p, 1000)
        append(p, 10, 1000)
        p.update_follower_fetch_state(1, 10, 0, 1100)
        p.update_follower_fetch_state(2, 3, 0, 1100)
        assert p.high_watermark == 3
        p.maybe_shrink_isr(1100 + LAG_MS // 2)
        assert p.pending_isr is None  # nobody is lagging yet
        # Replica 1 keeps fetching; replica 2 stops at offset 3.
        p.update_follower_fetch_state(1, 10, 0, 1000 + LAG_MS + 500)
        p.maybe_shrink_isr(1000 + LAG_MS + 500)
        assert p.pending_isr == [0, 1]
        assert p.isr == [0, 1, 2]  # committed ISR unchanged until the store says so
        assert p.maximal_isr == [0, 1, 2]
        await p.wait_for_isr_updates()
        assert store.writes == [[0, 1]]
        assert p.isr == [0, 1] and p.pending_isr is None and p.partition_epoch == 1
        assert p.high_watermark == 10  # moved on the commit itself
        assert changes == [[0, 1]]

    asyncio.run(scenario())


def test_isr_expands_only_at_the_hw_and_past_the_leader_epoch_start(tmp_path: Path) -> None:
    async def scenario() -> None:
        p = make_partition(tmp_path)
        store = Store()
        p.isr_updater = store.update
        lead(p, 1000, isr=[0, 1], epoch=1)
        append(p, 10, 1000)
        p.update_follower_fetch_state(1, 10, 0, 1001)
        assert p.high_watermark == 10
        lead(p, 1002, isr=[0, 1], epoch=2)  # the new epoch starts at 10
        append(p, 5, 1003)
        p.update_follower_fetch_state(2, 9, 0, 1004)  # below the HW
        await p.wait_for_isr_updates()
        assert store.writes == []
        p.update_follower_fetch_state(1, 15, 0, 1005)
        assert p.high_watermark == 15
        p.update_follower_fetch_state(2, 12, 0, 1006)  # past the epoch start but below the HW
        await p.wait_for_isr_updates()
        assert store.writes == []
        p.update_follower_fetch_state(2, 15, 0, 1007)
        await p.wait_for_isr_updates()
        assert store.writes == [[0, 1, 2]]
        assert p.isr == [0, 1, 2]

    asyncio.run(scenario())


def test_lost_isr_race_keeps_the_committed_isr(tmp_path: Path) -> None:
    async def scenario() -> None:
        p = make_partition(tmp_path)
        store = Store()
        store.version = 7  # someone else wrote the state meanwhile
        p.isr_updater = store.update
        lead(p, 1000)
        append(p, 1, 1000)
        p.maybe_shrink_isr(1000 + LAG_MS + 1)
        await p.wait_for_isr_updates()
        assert p.isr == [0, 1, 2] and p.pending_isr is None

    asyncio.run(scenario())


def test_delayed_produce_condition(tmp_path: Path) -> None:
    p = make_partition(tmp_path)
    lead(p, 1000, isr=[0, 1])
    append(p, 5, 1000)
    assert p.check_enough_replicas_reach_offset(5) == (False, ErrorCode.NONE)
    p.update_follower_fetch_state(1, 5, 0, 1001)
    assert p.check_enough_replicas_reach_offset(5) == (True, ErrorCode.NONE)
    p.isr = [0]  # below min.insync.replicas=2 after the append
    assert p.check_enough_replicas_reach_offset(5) == (True, ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND)
    p.make_follower(PartitionState(leader=1, leader_epoch=2, isr=[0, 1], replicas=[0, 1]))
    assert p.check_enough_replicas_reach_offset(5) == (True, ErrorCode.NOT_LEADER_OR_FOLLOWER)


def test_follower_dropped_from_isr_by_the_controller_stops_holding_the_hw(tmp_path: Path) -> None:
    p = make_partition(tmp_path)
    lead(p, 1000, epoch=1)
    append(p, 10, 1000)
    p.update_follower_fetch_state(1, 10, 0, 1001)
    p.update_follower_fetch_state(2, 10, 0, 1001)
    assert p.high_watermark == 10
    append(p, 5, 1002)
    p.update_follower_fetch_state(2, 12, 0, 1003)  # replica 2 then stops (controlled shutdown, crash)
    # The controller takes 2 out of the ISR; this broker stays leader at a new epoch.
    lead(p, 1004, isr=[0, 1], epoch=2)
    p.update_follower_fetch_state(1, 15, 0, 1005)
    assert p.high_watermark == 15  # not held at 12 until replica.lag.time.max.ms passes


def test_last_stable_offset_bounds_read_committed_list_offsets(tmp_path: Path) -> None:
    """Kafka's fetchOffsetForTimestamp: read_committed answers LATEST with the LSO and finds MAX_TIMESTAMP and
    timestamps only below it; EARLIEST is the log start either way. The LSO never passes the HW."""
    p = make_partition(tmp_path)
    p.min_insync_replicas = 1  # the leader alone may move the HW
    lead(p, 5000, isr=[0])
    p.append_records_to_leader(memoryview(idempotent_batch(1, 0, 2)), 1, 5000)  # 0-1, timestamps T0, T0+1
    p.append_records_to_leader(memoryview(txn_batch(2, 50, 2)), 1, 5000)  # 2-3, timestamps T0+50, T0+51: open
    assert (p.last_stable_offset, p.high_watermark) == (2, 4)
    for read_committed, latest, max_ts, at_50 in ((True, 2, (-1, -1, -1), (-1, -1, -1)),
                                                  (False, 4, (3, T0 + 51, 1), (2, T0 + 50, 1))):
        def lookup(ts: int, rc: bool = read_committed) -> tuple[int, int, int]:
            return p.fetch_offset_for_timestamp(ts, -1, from_replica=False, read_committed=rc)

        assert lookup(LATEST_TIMESTAMP) == (latest, -1, 1)
        assert lookup(EARLIEST_TIMESTAMP)[0] == 0
        assert lookup(MAX_TIMESTAMP) == max_ts
        assert lookup(T0 + 50) == at_50
        assert lookup(T0 + 1) == (1, T0 + 1, 1)
    assert p.fetch_offset_for_timestamp(LATEST_TIMESTAMP, -1, from_replica=True)[0] == 4
    p.append_records_to_leader(memoryview(marker(2, commit=True)), 1, 5000, origin=AppendOrigin.COORDINATOR)
    assert p.last_stable_offset == p.high_watermark == 5


def test_high_watermark_holds_while_the_isr_is_below_min_insync_replicas(tmp_path: Path) -> None:
    """Kafka 3.7+ (KAFKA-15583): an acks=1 write to a partition whose ISR is below the effective
    min.insync.replicas stays invisible to consumers until enough replicas hold it again."""
    p = make_partition(tmp_path)  # min.insync.replicas=2, replicas [0, 1, 2]
    lead(p, 1000, isr=[0])
    append(p, 3, 1000)
    assert p.is_under_min_isr and p.high_watermark == 0
    # Replica 1 holds the records but is not in the ISR yet; replica 2 is past the lag: without the rule the
    # leader would move the HW to 3 here.
    p.update_follower_fetch_state(1, 3, 0, 1000 + LAG_MS + 1)
    assert p.high_watermark == 0
    lead(p, 1000 + LAG_MS + 2, isr=[0, 1], epoch=2)  # back in the ISR: two copies, the HW moves
    p.update_follower_fetch_state(1, 3, 0, 1000 + LAG_MS + 3)
    assert not p.is_under_min_isr and p.high_watermark == 3


def test_min_insync_replicas_above_the_replication_factor_counts_as_the_replication_factor(tmp_path: Path) -> None:
    p = make_partition(tmp_path)
    p.min_insync_replicas = 5
    lead(p, 1000, isr=[0, 1, 2])
    assert p.effective_min_isr == 3 and not p.is_under_min_isr
    append(p, 2, 1000)
    for rid in (1, 2):
        p.update_follower_fetch_state(rid, 2, 0, 1001)
    assert p.high_watermark == 2

"""DelayedFetch without sockets: each of Kafka's completion cases, decided by log positions, not reads.

A leader ReplicaManager (broker 0) on real logs; consumers and followers park fetches with `fetch_messages`
and the events that can answer them (appends, follower fetches, LeaderAndIsr, StopReplica) happen on it.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import pytest

from broker.cluster.partition import FETCH_HIGH_WATERMARK, FETCH_LOG_END, FETCH_TXN_COMMITTED, Partition, PartitionState
from broker.server import delayed_fetch as delayed_fetch_module
from broker.server.delayed_fetch import FetchParams, FetchPartitionData, PartitionFetchInfo
from broker.server.replica_manager import ReplicaManager
from protocol.errors import ErrorCode
from storage import AppendOrigin, LogConfig
from tests.storage.txn_support import idempotent_batch, marker, txn_batch

from .replication import TP, follow, lead, records, replica_manager

WAIT_MS = 30_000  # a parked fetch must be answered by an event, long before this


def consumer_fetch(rm: ReplicaManager, offset: int, *, min_bytes: int = 1, epoch: int = 1,
                   max_bytes: int = 1 << 20, max_wait_ms: int = WAIT_MS) -> Any:
    return rm.fetch_messages(
        FetchParams(replica_id=-1, max_wait_ms=max_wait_ms, min_bytes=min_bytes, max_bytes=1 << 20,
                    isolation=FETCH_HIGH_WATERMARK),
        [(TP, PartitionFetchInfo(offset, max_bytes, current_leader_epoch=epoch))])


def follower_fetch(rm: ReplicaManager, replica_id: int, offset: int, *, epoch: int = 1, last_fetched_epoch: int = 1,
                   min_bytes: int = 1, max_wait_ms: int = WAIT_MS) -> Any:
    return rm.fetch_messages(
        FetchParams(replica_id=replica_id, max_wait_ms=max_wait_ms, min_bytes=min_bytes, max_bytes=1 << 20,
                    isolation=FETCH_LOG_END),
        [(TP, PartitionFetchInfo(offset, 1 << 20, current_leader_epoch=epoch, log_start_offset=0,
                                 last_fetched_epoch=last_fetched_epoch))])


def answer(pending: Any) -> FetchPartitionData:
    assert isinstance(pending, asyncio.Future) and pending.done(), "the fetch is still parked"
    ((tp, data),) = pending.result()
    return data


def parked(pending: Any) -> bool:
    return isinstance(pending, asyncio.Future) and not pending.done()


def leader(tmp_path: Path, *, isr: list[int] | None = None, config: LogConfig | None = None) -> tuple[ReplicaManager,
                                                                                                       Partition]:
    """Broker 0 leads at epoch 1; by default alone in the ISR, so its appends move the HW at once."""
    rm = replica_manager(tmp_path, 0, config=config)
    return rm, lead(rm, 1, isr=isr or [0], replicas=[0, 1, 2])


def produce(rm: ReplicaManager, n: int = 1, value: bytes = b"v") -> None:
    result = rm.append_records(1000, 1, {TP: records(n, value=value)})
    assert isinstance(result, dict) and result[TP].error == ErrorCode.NONE


def test_g_completes_when_the_bytes_between_fetch_offset_and_hw_reach_min_bytes_without_reading(
        tmp_path: Path) -> None:
    async def scenario() -> None:
        rm, partition = leader(tmp_path)
        produce(rm, 2)
        log_ = partition.log
        assert log_ is not None
        batch_size = log_.size_in_bytes()  # every batch here has two one-byte records
        pending = consumer_fetch(rm, 2, min_bytes=2 * batch_size + 1)
        assert parked(pending)
        reads: list[int] = []
        real_read = log_.read
        log_.read = lambda *a, **kw: reads.append(a[0]) or real_read(*a, **kw)  # type: ignore[method-assign]
        produce(rm, 2)
        produce(rm, 2)
        assert parked(pending) and reads == []  # two batches are not enough, and counting them read nothing
        produce(rm, 2)
        data = answer(pending)
        assert reads == [2]  # the one read is the answer's
        assert data.error == ErrorCode.NONE and data.size == 3 * batch_size and data.high_watermark == 8

    asyncio.run(scenario())


def test_g_counts_each_partition_at_most_its_max_bytes(tmp_path: Path) -> None:
    async def scenario() -> None:
        rm, partition = leader(tmp_path)
        pending = consumer_fetch(rm, 0, min_bytes=200, max_bytes=100, max_wait_ms=1)
        produce(rm, 1, value=b"x" * 500)
        assert parked(pending)  # 500 bytes arrived, but this partition may send only 100: not enough
        data = (await pending)[0][1]  # expiry answers with what is there
        assert data.error == ErrorCode.NONE and data.size > 500  # the first batch goes whole

    asyncio.run(scenario())


def test_a_consumer_fetch_is_answered_when_this_broker_stops_leading(tmp_path: Path) -> None:
    async def scenario() -> None:
        rm, partition = leader(tmp_path)
        pending = consumer_fetch(rm, 0)
        assert parked(pending)
        follow(rm, 2, 2, isr=[2], replicas=[0, 1, 2])
        data = answer(pending)
        assert data.error == ErrorCode.NOT_LEADER_OR_FOLLOWER

    asyncio.run(scenario())


def test_a_follower_fetch_is_answered_when_its_leader_moves(tmp_path: Path) -> None:
    # Kafka's case A holds for followers too: a follower parked on a broker that is no longer the leader
    # hears it at once and goes to the new leader, instead of waiting out replica.fetch.wait.max.ms.
    async def scenario() -> None:
        rm, partition = leader(tmp_path)
        produce(rm, 3)
        pending = follower_fetch(rm, 1, 3)
        assert parked(pending)
        follow(rm, 2, 2, isr=[2, 1], replicas=[0, 1, 2])
        data = answer(pending)
        assert data.error == ErrorCode.NOT_LEADER_OR_FOLLOWER

    asyncio.run(scenario())


def test_b_c_a_fetch_is_answered_when_the_partition_leaves_this_broker(tmp_path: Path) -> None:
    async def scenario() -> None:
        rm, partition = leader(tmp_path)
        pending = consumer_fetch(rm, 0)
        assert parked(pending)
        rm.stop_replicas([TP], delete=True)
        # The metadata still names the partition (on other brokers): clients refresh and go there.
        assert answer(pending).error == ErrorCode.NOT_LEADER_OR_FOLLOWER

    asyncio.run(scenario())


def test_e_a_fetch_whose_leader_epoch_is_fenced_is_answered(tmp_path: Path) -> None:
    async def scenario() -> None:
        rm, partition = leader(tmp_path)
        produce(rm, 3)
        consumer = consumer_fetch(rm, 3)
        follower = follower_fetch(rm, 1, 3)
        assert parked(consumer) and parked(follower)
        lead(rm, 2, isr=[0], replicas=[0, 1, 2])  # still the leader, at a new epoch
        assert answer(consumer).error == ErrorCode.FENCED_LEADER_EPOCH
        assert answer(follower).error == ErrorCode.FENCED_LEADER_EPOCH

    asyncio.run(scenario())


def test_f_a_fetch_offset_on_an_older_segment_is_answered_without_counting_bytes(tmp_path: Path) -> None:
    async def scenario() -> None:
        rm, partition = leader(tmp_path, config=LogConfig(segment_bytes=1000))
        while partition.log is not None and partition.log.active_segment.size < 800:
            produce(rm, 1, value=b"x" * 100)
        end = partition.log_end_offset
        pending = consumer_fetch(rm, end, min_bytes=1 << 20)  # far more than will arrive
        assert parked(pending)
        produce(rm, 1, value=b"x" * 300)  # does not fit: the log rolls, the HW moves to the new segment
        assert partition.log is not None and partition.log.active_segment.base_offset == end
        data = answer(pending)
        assert data.error == ErrorCode.NONE and data.size > 300

    asyncio.run(scenario())


def test_a_consumer_ahead_of_the_hw_waits_for_it(tmp_path: Path) -> None:
    # After a leader change the new leader's HW can lag what a consumer already read; like Kafka, the fetch
    # waits for the HW to pass its offset instead of being answered empty again and again.
    async def scenario() -> None:
        rm, partition = leader(tmp_path, isr=[0, 1])
        produce(rm, 2)
        produce(rm, 3)
        assert partition.high_watermark == 0 and partition.log_end_offset == 5
        pending = consumer_fetch(rm, 2)
        assert parked(pending)
        follower_fetch(rm, 1, 2, max_wait_ms=0)  # HW 2: still not past the consumer's offset
        assert partition.high_watermark == 2 and parked(pending)
        follower_fetch(rm, 1, 5, max_wait_ms=0)
        data = answer(pending)
        assert data.error == ErrorCode.NONE and data.size > 0 and data.high_watermark == 5

    asyncio.run(scenario())


def test_h_a_follower_fetch_is_answered_when_its_last_fetched_epoch_diverges(tmp_path: Path) -> None:
    # On one event loop a LeaderAndIsr answers the fetch first (case A or E); this follower sends no current
    # leader epoch, and the partition is changed underneath the purgatory, as Kafka's request threads can.
    async def scenario() -> None:
        rm, partition = leader(tmp_path)
        produce(rm, 3)
        partition.make_leader(PartitionState(leader=0, leader_epoch=2, isr=[0], replicas=[0, 1, 2]), 0)
        produce(rm, 2)
        assert partition.log is not None and partition.log.leader_epoch_cache.entries() == [(1, 0), (2, 3)]
        pending = follower_fetch(rm, 1, 5, epoch=-1, last_fetched_epoch=2)
        assert parked(pending)
        # Epoch 2's records are lost (this broker followed another leader, truncated, and leads again).
        partition.make_follower(PartitionState(leader=2, leader_epoch=3, isr=[2], replicas=[0, 1, 2]))
        partition.truncate_to(3)
        partition.make_leader(PartitionState(leader=0, leader_epoch=4, isr=[0], replicas=[0, 1, 2]), 0)
        produce(rm, 1)  # an append checks the purgatory; the log end (4) is still short of the fetch offset
        data = answer(pending)
        assert data.error == ErrorCode.NONE and data.diverging_epoch == (1, 3) and data.records is None

    asyncio.run(scenario())


def test_i_a_parked_follower_fetch_hears_a_new_hw_after_the_hold(tmp_path: Path) -> None:
    """Ours, not Kafka's: a follower that has everything hears the new HW (moved by another follower's fetch)
    once its fetch has been parked FOLLOWER_HW_HOLD_MS, not only after replica.fetch.wait.max.ms."""
    async def scenario() -> None:
        rm, _ = leader(tmp_path, isr=[0, 1, 2])
        produce(rm, 3)
        follower_fetch(rm, 2, 0, min_bytes=1 << 20, max_wait_ms=0)  # follower 2 reads 0..2 (its LEO: 0)
        caught_up = follower_fetch(rm, 2, 3)  # follower 2 has everything: parked, HW still 0
        assert parked(caught_up)
        assert rm.partitions[TP].high_watermark == 0
        pending_hw = follower_fetch(rm, 1, 3)  # follower 1 catches up too: the HW moves to 3
        assert parked(caught_up), "answered with the HW alone before the hold: a round trip per produce"
        started = time.monotonic()
        ((_, data),) = await asyncio.wait_for(caught_up, 5)
        assert data.error == ErrorCode.NONE and data.records is None and data.high_watermark == 3
        assert time.monotonic() - started < 1, "the HW waited for replica.fetch.wait.max.ms, not the hold"
        assert parked(pending_hw)  # its own fetch saw HW 3 already: nothing new for it

    asyncio.run(scenario())


def test_i_data_within_the_hold_carries_the_new_hw(tmp_path: Path) -> None:
    """The next produce, within the hold, answers the held fetch at once with its data and the new HW: one
    answer, as in Kafka, instead of an empty one first."""
    async def scenario() -> None:
        rm, _ = leader(tmp_path, isr=[0, 1, 2])
        produce(rm, 3)
        follower_fetch(rm, 2, 0, min_bytes=1 << 20, max_wait_ms=0)
        caught_up = follower_fetch(rm, 2, 3)
        follower_fetch(rm, 1, 0, min_bytes=1 << 20, max_wait_ms=0)
        follower_fetch(rm, 1, 3)  # the HW moves to 3
        assert parked(caught_up)
        produce(rm, 2)
        data = answer(caught_up)
        assert data.error == ErrorCode.NONE and data.size > 0 and data.high_watermark == 3

    asyncio.run(scenario())


def test_i_without_a_hold_the_new_hw_is_answered_at_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A fetch parked longer than the hold hears the HW as soon as it moves (here: a hold of 0)."""
    monkeypatch.setattr(delayed_fetch_module, "FOLLOWER_HW_HOLD_MS", 0)

    async def scenario() -> None:
        rm, _ = leader(tmp_path, isr=[0, 1, 2])
        produce(rm, 3)
        follower_fetch(rm, 2, 0, min_bytes=1 << 20, max_wait_ms=0)
        caught_up = follower_fetch(rm, 2, 3)
        follower_fetch(rm, 1, 3)
        data = answer(caught_up)
        assert data.error == ErrorCode.NONE and data.records is None and data.high_watermark == 3

    asyncio.run(scenario())


def test_expiry_answers_with_what_is_there(tmp_path: Path) -> None:
    async def scenario() -> None:
        rm, partition = leader(tmp_path)
        produce(rm, 2)
        pending = consumer_fetch(rm, 0, min_bytes=1 << 20, max_wait_ms=1)
        assert parked(pending)
        data = (await pending)[0][1]
        assert data.error == ErrorCode.NONE and data.size > 0 and data.high_watermark == 2

    asyncio.run(scenario())


def test_read_committed_waits_on_the_last_stable_offset(tmp_path: Path) -> None:
    """Kafka's DelayedFetch for TXN_COMMITTED measures up to the LSO: data appended after an open transaction
    moves the HW (a read_uncommitted fetch completes) but not the LSO; the transaction's marker does."""

    async def scenario() -> None:
        rm, partition = leader(tmp_path)
        assert rm.append_records(1000, 1, {TP: memoryview(txn_batch(7, 0))})[TP].error == ErrorCode.NONE
        assert (partition.last_stable_offset, partition.high_watermark) == (0, 1)
        committed = rm.fetch_messages(
            FetchParams(replica_id=-1, max_wait_ms=WAIT_MS, min_bytes=1, max_bytes=1 << 20,
                        isolation=FETCH_TXN_COMMITTED),
            [(TP, PartitionFetchInfo(0, 1 << 20, current_leader_epoch=1))])
        uncommitted = consumer_fetch(rm, 1)
        assert parked(committed) and parked(uncommitted)
        assert rm.append_records(1000, 1, {TP: memoryview(idempotent_batch(8, 0))})[TP].error == ErrorCode.NONE
        assert answer(uncommitted).high_watermark == 2
        assert parked(committed) and partition.last_stable_offset == 0
        result = rm.append_records(1000, -1, {TP: memoryview(marker(7, commit=False))},
                                   origin=AppendOrigin.COORDINATOR)
        assert isinstance(result, dict) and result[TP].error == ErrorCode.NONE
        data = answer(committed)
        assert (data.last_stable_offset, data.high_watermark) == (3, 3)
        assert [(t.producer_id, t.first_offset) for t in data.aborted_transactions] == [(7, 0)]
        rm.shutdown()

    asyncio.run(scenario())

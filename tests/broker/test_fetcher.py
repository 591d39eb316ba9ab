"""Follower truncation by leader epoch (KIP-101 / KIP-279) in `ReplicaFetcher`, without sockets.

The follower side is a real (unstarted) `KafkaServer` with real logs; the leader is a `LeaderEndPoint`
answering OffsetsForLeaderEpoch from a real leader `Log`'s epoch cache, the way the leader's handler does
(largest epoch <= the one asked, and where it ends) — the fetcher's seam for a leader, as in Kafka.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from broker.config import KafkaConfig
from broker.fetcher import ReplicaFetcher
from broker.partition import Partition, PartitionState
from broker.server import KafkaServer
from protocol.records import build_batch, iter_batches
from storage import Log, LogConfig, TopicPartition

TP = TopicPartition("t", 0)


def make_log(path: Path, epochs: list[tuple[int, int]], log_end_offset: int) -> Log:
    """A log whose records from each (epoch, start) entry to the next were written under that epoch."""
    log_ = Log.open(path, LogConfig())
    bounds = [start for _, start in epochs[1:]] + [log_end_offset]
    for (epoch, start), end in zip(epochs, bounds, strict=True):
        for offset in range(start, end):
            log_.append_as_follower(bytearray(build_batch([(b"k", b"e%d-o%d" % (epoch, offset), [], 0)],
                                                          base_offset=offset, partition_leader_epoch=epoch)))
    assert log_.leader_epoch_cache.entries() == epochs and log_.log_end_offset == log_end_offset
    return log_


class EpochLeader:
    """OffsetsForLeaderEpoch answered from a leader log; other requests are not needed here. Like a real
    leader it has started its current epoch at its log end offset (Partition.make_leader)."""

    def __init__(self, log_: Log, current_epoch: int) -> None:
        self.log = log_
        self.log.leader_epoch_cache.assign(current_epoch, log_.log_end_offset)
        self.asked: list[int] = []

    async def offsets_for_leader_epoch(self, build: Any) -> Any:
        request = build(4)
        topics = []
        for t in request.topics:
            parts = []
            for p in t.partitions:
                self.asked.append(p.leader_epoch)
                epoch, end = self.log.leader_epoch_cache.end_offset_for(p.leader_epoch, self.log.log_end_offset)
                parts.append(SimpleNamespace(partition=p.partition, error_code=0, leader_epoch=epoch, end_offset=end))
            topics.append(SimpleNamespace(topic=t.topic, partitions=parts))
        return SimpleNamespace(topics=topics)

    async def fetch(self, build: Any) -> Any:
        raise NotImplementedError

    async def list_offsets(self, build: Any) -> Any:
        raise NotImplementedError

    def close(self) -> None:
        pass


def follower(tmp_path: Path, log_: Log, leader_epoch: int, high_watermark: int = 0) -> tuple[KafkaServer, Partition]:
    server = KafkaServer(KafkaConfig({"broker.id": "1", "log.dirs": str(tmp_path / "follower-server")}))
    partition = Partition(TP, 1, replica_lag_time_max_ms=10000)
    partition.set_log(log_, high_watermark)
    partition.make_follower(PartitionState(leader=0, leader_epoch=leader_epoch, isr=[0, 1], replicas=[0, 1]))
    return server, partition


def truncate(server: KafkaServer, partition: Partition, leader: EpochLeader) -> int:
    """Run the fetcher's truncation phase to completion; returns the number of OffsetsForLeaderEpoch rounds."""

    async def run() -> int:
        fetcher = ReplicaFetcher(server, 0, leader)
        fetcher.add(partition)
        rounds = 0
        while fetcher.partitions[TP].truncating:
            rounds += 1
            assert rounds <= 10, "truncation does not converge"
            await fetcher._truncate()
        return rounds

    return asyncio.run(run())


def values(log_: Log) -> list[bytes | None]:
    data = _read_all(log_)
    return [r.value for batch in iter_batches(data) for r in batch.records()]


def _read_all(log_: Log) -> bytes:
    out = b""
    offset = log_.log_start_offset
    while offset < log_.log_end_offset:
        info = log_.read(offset, 1 << 20, max_offset=log_.log_end_offset)
        if info.records is None or info.records.length == 0:
            break
        chunk = os.pread(info.records.fileno, info.records.length, info.records.position)
        out += chunk
        offset = max(b.last_offset for b in iter_batches(chunk)) + 1
    return out


def test_kip_279_follower_with_epochs_the_leader_never_had(tmp_path: Path) -> None:
    # The follower led epochs 2 and 4 briefly; the new leader only knows 0, 1 and 3.
    follower_log = make_log(tmp_path / "f" / "t-0", [(0, 0), (2, 5), (4, 8)], 10)
    leader = EpochLeader(make_log(tmp_path / "l" / "t-0", [(0, 0), (1, 5), (3, 7)], 12), 5)
    server, partition = follower(tmp_path, follower_log, leader_epoch=5)
    rounds = truncate(server, partition, leader)
    assert leader.asked == [4, 2, 0]  # each round asks with the follower's now-latest epoch
    assert rounds == 3
    assert follower_log.log_end_offset == 5  # the common prefix: epoch 0, offsets 0..4
    assert follower_log.leader_epoch_cache.entries() == [(0, 0)]
    assert values(follower_log) == [b"e0-o%d" % i for i in range(5)]


def test_kip_101_longer_follower_log_truncates_to_the_end_of_its_epoch_on_the_leader(tmp_path: Path) -> None:
    # Same epochs; the follower has 4 records of epoch 1 the leader lost (it ends epoch 1 at 7).
    follower_log = make_log(tmp_path / "f" / "t-0", [(0, 0), (1, 5)], 11)
    leader = EpochLeader(make_log(tmp_path / "l" / "t-0", [(0, 0), (1, 5), (2, 7)], 9), 2)
    server, partition = follower(tmp_path, follower_log, leader_epoch=2, high_watermark=3)
    assert truncate(server, partition, leader) == 1
    assert follower_log.log_end_offset == 7  # not the HW (3): committed records stay
    assert follower_log.leader_epoch_cache.entries() == [(0, 0), (1, 5)]


def test_shorter_follower_log_keeps_everything(tmp_path: Path) -> None:
    follower_log = make_log(tmp_path / "f" / "t-0", [(0, 0), (1, 5)], 6)
    leader = EpochLeader(make_log(tmp_path / "l" / "t-0", [(0, 0), (1, 5)], 20), 1)
    server, partition = follower(tmp_path, follower_log, leader_epoch=1, high_watermark=2)
    assert truncate(server, partition, leader) == 1
    assert follower_log.log_end_offset == 6


def test_empty_epoch_entry_at_the_log_end_is_dropped(tmp_path: Path) -> None:
    # The follower became leader of epoch 3 at offset 6 but appended nothing before losing leadership.
    follower_log = make_log(tmp_path / "f" / "t-0", [(0, 0), (1, 5)], 6)
    follower_log.leader_epoch_cache.assign(3, 6)
    leader = EpochLeader(make_log(tmp_path / "l" / "t-0", [(0, 0), (1, 5), (2, 6)], 9), 4)
    server, partition = follower(tmp_path, follower_log, leader_epoch=4)
    truncate(server, partition, leader)
    assert follower_log.log_end_offset == 6
    assert follower_log.leader_epoch_cache.entries() == [(0, 0), (1, 5)]


def test_no_epochs_falls_back_to_the_high_watermark(tmp_path: Path) -> None:
    follower_log = Log.open(tmp_path / "f" / "t-0", LogConfig())
    for offset in range(8):  # records from before leader epochs (partition leader epoch -1)
        follower_log.append_as_follower(bytearray(build_batch([(b"k", b"v", [], 0)], base_offset=offset)))
    assert follower_log.leader_epoch_cache.latest_epoch() is None
    leader = EpochLeader(make_log(tmp_path / "l" / "t-0", [(0, 0)], 20), 1)
    server, partition = follower(tmp_path, follower_log, leader_epoch=1, high_watermark=5)
    truncate(server, partition, leader)
    assert leader.asked == []
    assert follower_log.log_end_offset == 5

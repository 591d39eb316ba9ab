"""broker.coordinator.runtime: loading an internal topic's partition on becoming its leader, unloading it on
resignation, without sockets.

A real `Partition` over a real `storage.Log` in a temporary directory plays the internal topic's partition;
the shard is either `RecordingShard` (what the runtime tells a coordinator, in order) or the group
coordinator's real `GroupMetadataManager`. Tests wait on the runtime's load tasks, never on time.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from pathlib import Path

import pytest

from broker.cluster.partition import Partition, PartitionState
from broker.coordinator import runtime as runtime_module
from broker.coordinator.group import GroupCoordinatorConfig, GroupMetadataManager
from broker.coordinator.group.schema import (
    OffsetCommitKey,
    OffsetCommitValue,
    encode_offset_commit_key,
    encode_offset_commit_value,
)
from broker.coordinator.runtime import CoordinatorRuntime, Record
from protocol.records import ControlRecordType, build_batch, build_control_batch
from storage import AppendOrigin, Log, LogConfig, TopicPartition

TOPIC = "__internal"
NOW = 1_000


class RecordingShard:
    """What a coordinator hears from the runtime, in order."""

    def __init__(self) -> None:
        self.events: list[tuple[str, int]] = []
        self.records: dict[int, list[tuple[bytes, bytes | None]]] = {}
        self.chunk_loaded = asyncio.Event()

    def begin_loading(self, partition: int) -> None:
        self.events.append(("begin", partition))
        self.records[partition] = []

    def load_partition(self, partition: int, records: Iterable[Record]) -> None:
        self.events.append(("chunk", partition))
        self.records[partition].extend((bytes(k), None if v is None else bytes(v)) for k, v in records)
        self.chunk_loaded.set()  # the load yields to the loop after each chunk: the test runs next

    def on_partition_loaded(self, partition: int) -> None:
        self.events.append(("loaded", partition))

    def unload_partition(self, partition: int) -> None:
        self.events.append(("unload", partition))


def leader_partition(tmp_path: Path, partition: int = 0, topic: str = TOPIC, epoch: int = 1) -> Partition:
    p = Partition(TopicPartition(topic, partition), 0, replica_lag_time_max_ms=10_000)
    p.log = Log.open(tmp_path / f"{topic}-{partition}", LogConfig())
    p.make_leader(PartitionState(leader=0, leader_epoch=epoch, isr=[0], replicas=[0]), NOW)
    return p


def append(p: Partition, batch: bytes) -> None:
    """Written as a coordinator writes its internal topic (control batches included)."""
    assert p.log is not None
    p.log.append_as_leader(bytearray(batch), p.leader_epoch, now_ms=NOW, origin=AppendOrigin.COORDINATOR)
    p.maybe_increment_leader_hw(NOW)


def append_records(p: Partition, n: int, prefix: str = "k") -> None:
    append(p, build_batch([(f"{prefix}{i}".encode(), f"v{i}".encode(), [], NOW) for i in range(n)]))


def follower_state(epoch: int) -> PartitionState:
    return PartitionState(leader=1, leader_epoch=epoch, isr=[0, 1], replicas=[0, 1])


def runtime_for(shard: object) -> CoordinatorRuntime:
    # The replica manager is only used for appends, which these tests do not make.
    return CoordinatorRuntime(TOPIC, shard, replica_manager=None, append_timeout_ms=1000)  # type: ignore[arg-type]


async def loading(tmp_path: Path, batches: int) -> tuple[Partition, RecordingShard, CoordinatorRuntime]:
    """A leader of `batches` one-record batches whose load has read its first chunk (LOAD_CHUNK_BYTES is
    patched to one batch) and yielded to the test."""
    p = leader_partition(tmp_path)
    for i in range(batches):
        append_records(p, 1, prefix=f"b{i}-")
    shard = RecordingShard()
    runtime = runtime_for(shard)
    runtime.on_leadership_change([p], [])
    await shard.chunk_loaded.wait()
    return p, shard, runtime


def test_becoming_leader_loads_the_committed_records_then_reports_the_partition_loaded(tmp_path: Path) -> None:
    async def scenario() -> None:
        p = leader_partition(tmp_path, partition=3)
        append_records(p, 5)
        append(p, build_control_batch(ControlRecordType.COMMIT, producer_id=1, producer_epoch=0,
                                      coordinator_epoch=0, timestamp=NOW))
        append(p, build_batch([(None, b"keyless", [], NOW)]))
        shard = RecordingShard()
        runtime = runtime_for(shard)
        runtime.on_leadership_change([p], [])
        assert shard.events == [("begin", 3)]  # at once: requests for the partition answer "loading"
        await runtime.wait_loaded(3)
        assert shard.events[0] == ("begin", 3) and shard.events[-1] == ("loaded", 3)
        # Control batches and keyless records are not coordinator state.
        assert shard.records[3] == [(f"k{i}".encode(), f"v{i}".encode()) for i in range(5)]

    asyncio.run(scenario())


def test_records_above_the_high_watermark_are_loaded(tmp_path: Path) -> None:
    """A new leader's high watermark can lag records the previous leader had already committed and the old
    coordinator acknowledged (its followers learn the HW only on their next fetch); they are state all the
    same (everything in a leader's log gets committed), so the load reads to the log end offset, as Kafka's
    coordinators do (FetchIsolation.LOG_END). Stopping at the HW lost, e.g., a transaction's added partitions."""
    async def scenario() -> None:
        p = leader_partition(tmp_path)
        p.make_leader(PartitionState(leader=0, leader_epoch=1, isr=[0, 1], replicas=[0, 1]), NOW)
        append_records(p, 4)
        assert p.high_watermark == 0 < p.log_end_offset  # the follower has not fetched them
        shard = RecordingShard()
        runtime = runtime_for(shard)
        runtime.on_leadership_change([p], [])
        await runtime.wait_loaded(0)
        assert shard.records[0] == [(f"k{i}".encode(), f"v{i}".encode()) for i in range(4)]
        assert shard.events == [("begin", 0), ("chunk", 0), ("loaded", 0)]

    asyncio.run(scenario())


def test_resignation_during_a_load_cancels_it_and_unloads(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(runtime_module, "LOAD_CHUNK_BYTES", 64)  # one small batch per chunk

    async def scenario() -> None:
        p, shard, runtime = await loading(tmp_path, 20)
        p.make_follower(follower_state(2))
        runtime.on_leadership_change([], [p])
        await runtime.wait_loaded(0)
        assert shard.events[-1] == ("unload", 0)
        assert ("loaded", 0) not in shard.events
        assert len(shard.records[0]) < 20

    asyncio.run(scenario())


def test_a_load_stops_unfinished_when_leadership_moved_without_a_resignation(tmp_path: Path,
                                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(runtime_module, "LOAD_CHUNK_BYTES", 64)

    async def scenario() -> None:
        p, shard, runtime = await loading(tmp_path, 10)
        p.make_follower(follower_state(2))  # the runtime has not heard of it yet
        await runtime.wait_loaded(0)
        assert ("loaded", 0) not in shard.events and ("unload", 0) not in shard.events

    asyncio.run(scenario())


def test_a_new_leadership_restarts_a_running_load(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(runtime_module, "LOAD_CHUNK_BYTES", 64)

    async def scenario() -> None:
        p, shard, runtime = await loading(tmp_path, 10)
        p.make_leader(PartitionState(leader=0, leader_epoch=2, isr=[0], replicas=[0]), NOW)
        runtime.on_leadership_change([p], [])
        await runtime.wait_loaded(0)
        assert shard.events.count(("begin", 0)) == 2
        assert shard.events.count(("loaded", 0)) == 1 and shard.events[-1] == ("loaded", 0)
        assert shard.records[0] == [(f"b{i}-0".encode(), b"v0") for i in range(10)]  # the second load, whole

    asyncio.run(scenario())


def test_partitions_of_other_topics_are_ignored_and_stop_replica_unloads(tmp_path: Path) -> None:
    async def scenario() -> None:
        other = leader_partition(tmp_path, topic="orders")
        shard = RecordingShard()
        runtime = runtime_for(shard)
        runtime.on_leadership_change([other], [other])
        assert shard.events == []
        runtime.on_resignation(7)  # StopReplica of an internal partition never loaded here
        assert shard.events == [("unload", 7)]

    asyncio.run(scenario())


def test_shutdown_cancels_and_waits_for_loads_and_the_topic_creation(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(runtime_module, "LOAD_CHUNK_BYTES", 64)

    async def scenario() -> None:
        _, shard, runtime = await loading(tmp_path, 10)
        created: list[str] = []
        started, never = asyncio.Event(), asyncio.Event()

        async def create() -> None:
            created.append("started")
            started.set()
            await never.wait()

        runtime.ensure_topic(False, create)
        runtime.ensure_topic(False, create)  # already under way: not started twice
        runtime.ensure_topic(True, create)  # exists: nothing to do
        await started.wait()
        await runtime.shutdown()
        assert created == ["started"]
        assert ("loaded", 0) not in shard.events
        await runtime.wait_loaded(0)  # nothing left running

    asyncio.run(scenario())


def test_the_group_metadata_manager_loads_committed_offsets_through_the_runtime(tmp_path: Path) -> None:
    async def scenario() -> None:
        p = leader_partition(tmp_path, partition=0)
        commits = [(encode_offset_commit_key(OffsetCommitKey("g", "t", n)),
                    encode_offset_commit_value(OffsetCommitValue(10 * n, -1, "", NOW, -1))) for n in range(3)]
        tombstone = (encode_offset_commit_key(OffsetCommitKey("g", "t", 1)), None)
        append(p, build_batch([(k, v, [], NOW) for k, v in [*commits, tombstone]]))
        manager = GroupMetadataManager(lambda partition, records: asyncio.sleep(0, 0),
                                       GroupCoordinatorConfig(offsets_topic_num_partitions=1))
        runtime = runtime_for(manager)
        runtime.on_leadership_change([p], [])
        assert manager.is_loading(0)
        await runtime.wait_loaded(0)
        assert manager.is_active(0)
        group = manager.groups["g"]
        assert {tp: o.offset for tp, o in group.offsets.items()} == {TopicPartition("t", 0): 0,
                                                                    TopicPartition("t", 2): 20}
        p.make_follower(follower_state(2))
        runtime.on_leadership_change([], [p])
        assert not manager.is_active(0) and "g" not in manager.groups
        manager.shutdown()

    asyncio.run(scenario())


class BatchRecordingShard(RecordingShard):
    """A shard that follows transactions: the runtime hands it whole batches, markers included."""

    def __init__(self) -> None:
        super().__init__()
        self.batches: list[tuple[int, int, bool, int | None, list[bytes]]] = []

    def load_batches(self, partition: int, batches: list[runtime_module.LoadedBatch]) -> None:
        self.events.append(("batches", partition))
        self.batches.extend((b.base_offset, b.producer_id, b.is_transactional, b.control_type,
                             [bytes(k) for k, _ in b.records]) for b in batches)


def test_a_batch_loading_shard_gets_producer_ids_transactional_bits_and_markers(tmp_path: Path) -> None:
    async def scenario() -> None:
        p = leader_partition(tmp_path)
        append_records(p, 2, prefix="plain")
        append(p, build_batch([(b"t0", b"v", [], NOW), (b"t1", b"v", [], NOW)], producer_id=7, producer_epoch=0,
                              base_sequence=0, is_transactional=True))
        append(p, build_control_batch(ControlRecordType.ABORT, producer_id=7, producer_epoch=0, coordinator_epoch=0,
                                      timestamp=NOW))
        append(p, build_batch([(b"t2", b"v", [], NOW)], producer_id=8, producer_epoch=0, base_sequence=0,
                              is_transactional=True))
        append(p, build_control_batch(ControlRecordType.COMMIT, producer_id=8, producer_epoch=0, coordinator_epoch=0,
                                      timestamp=NOW))
        shard = BatchRecordingShard()
        runtime = runtime_for(shard)
        runtime.on_leadership_change([p], [])
        await runtime.wait_loaded(0)
        assert shard.events == [("begin", 0), ("batches", 0), ("loaded", 0)]
        assert shard.batches == [(0, -1, False, None, [b"plain0", b"plain1"]), (2, 7, True, None, [b"t0", b"t1"]),
                                 (4, 7, True, 0, []), (5, 8, True, None, [b"t2"]), (6, 8, True, 1, [])]

    asyncio.run(scenario())

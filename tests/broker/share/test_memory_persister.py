"""The in-memory Persister honours the share coordinator's rules (the contract of
broker/coordinator/share/persister.py), and a share-partition leader fenced by it reloads its state."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from confluent_kafka.admin import AdminClient, NewTopic

from broker.coordinator.share.memory_persister import InMemoryPersister
from broker.coordinator.share.persister import PersisterError, PersisterStateBatch, SharePartitionState
from broker.share.manager import share_partition_manager
from broker.testing import EmbeddedBroker
from protocol.errors import ErrorCode
from storage import TopicPartition

TID = b"\x01" * 16


def run(coro):  # type: ignore[no-untyped-def]
    return asyncio.run(coro)


def test_uninitialized_reads_as_epoch_zero() -> None:
    p = InMemoryPersister()
    state = run(p.read("g", TID, 0, 0))
    assert (state.state_epoch, state.start_offset, state.batches) == (0, -1, [])


def test_initialize_then_fence_stale_epochs() -> None:
    p = InMemoryPersister()
    run(p.initialize("g", TID, 0, 1, 5))
    with pytest.raises(PersisterError) as e:
        run(p.initialize("g", TID, 0, 1, 5))
    assert e.value.error_code == ErrorCode.FENCED_STATE_EPOCH
    run(p.write("g", TID, 0, SharePartitionState(2, 5, [], 3)))
    with pytest.raises(PersisterError) as e:
        run(p.write("g", TID, 0, SharePartitionState(1, 5, [], 3)))
    assert e.value.error_code == ErrorCode.FENCED_STATE_EPOCH
    with pytest.raises(PersisterError) as e:
        run(p.read("g", TID, 0, 2))
    assert e.value.error_code == ErrorCode.FENCED_LEADER_EPOCH
    with pytest.raises(PersisterError) as e:
        run(p.write("g", TID, 0, SharePartitionState(2, 5, [], 2)))
    assert e.value.error_code == ErrorCode.FENCED_LEADER_EPOCH


def test_writes_merge_batches_and_prune_below_the_start() -> None:
    p = InMemoryPersister()
    run(p.initialize("g", TID, 0, 1, 0))
    run(p.write("g", TID, 0, SharePartitionState(1, 0, [PersisterStateBatch(0, 9, 0, 1)], 0)))
    run(p.write("g", TID, 0, SharePartitionState(1, -1, [PersisterStateBatch(3, 4, 2, 1)], 0)))
    state = run(p.read("g", TID, 0, 0))
    assert state.start_offset == 0
    assert state.batches == [PersisterStateBatch(0, 2, 0, 1), PersisterStateBatch(3, 4, 2, 1),
                             PersisterStateBatch(5, 9, 0, 1)]
    run(p.write("g", TID, 0, SharePartitionState(1, 4, [], 0)))
    state = run(p.read("g", TID, 0, 0))
    assert state.batches == [PersisterStateBatch(4, 4, 2, 1), PersisterStateBatch(5, 9, 0, 1)]
    summary = run(p.read_summary("g", TID, 0, 0))
    assert (summary.state_epoch, summary.start_offset, summary.batches) == (1, 4, [])
    state.batches.clear()  # the store keeps its own copy
    assert run(p.read("g", TID, 0, 0)).batches
    run(p.delete("g", TID, 0))
    assert run(p.read("g", TID, 0, 0)).state_epoch == 0


def test_a_fenced_share_partition_is_reloaded(tmp_path: Path) -> None:
    """The leader's copy written with a stale state epoch (an admin reset the state meanwhile) is dropped, and
    the next request loads the new state: the manager over a real broker."""
    with EmbeddedBroker(data_dir=tmp_path) as b:
        admin = AdminClient({"bootstrap.servers": b.bootstrap})
        admin.create_topics([NewTopic("fenced", 1, 1)])["fenced"].result(15)
        tid = b.server.metadata_cache.topic_id("fenced")
        manager = share_partition_manager(b.server)
        tp = TopicPartition("fenced", 0)

        async def scenario() -> tuple[int, int, int]:
            entry = await manager.entry("g", tp, tid)
            await manager.persister.initialize("g", tid.bytes, 0, entry.state_epoch + 1, 7)  # an admin's reset
            code = await manager._persist("g", entry)
            reloaded = await manager.entry("g", tp, tid)
            return code, reloaded.state_epoch, reloaded.share.start_offset

        code, epoch, start = b.call(scenario)
    assert (code, epoch, start) == (ErrorCode.FENCED_STATE_EPOCH, 2, 7)

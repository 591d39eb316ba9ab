"""The in-memory Persister honours the share coordinator's rules (broker/share/persister.py's contract)."""

from __future__ import annotations

import asyncio

import pytest

from broker.share.memory_persister import InMemoryPersister
from broker.share.persister import PersisterError, PersisterStateBatch, SharePartitionState
from protocol.errors import ErrorCode

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

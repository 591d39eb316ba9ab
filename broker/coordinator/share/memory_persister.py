"""An in-memory `Persister` (persister.py): the share coordinator's rules without the network or
`__share_group_state`, for a single broker and for tests (Kafka's tests use an in-memory persister the same way).

Rules, as Kafka's share coordinator (ShareCoordinatorShard) applies them:
- `initialize` creates the state (state epoch, start offset, no batches); initializing again with a state
  epoch not above the stored one is FENCED_STATE_EPOCH, a higher one starts afresh.
- `read` of a partition never initialized answers state epoch 0 and start offset -1; otherwise the state. A
  leader epoch below the stored one is FENCED_LEADER_EPOCH; a higher one is remembered.
- `write` with a state epoch below the stored one is FENCED_STATE_EPOCH, a leader epoch below the stored one
  FENCED_LEADER_EPOCH; a partition never initialized is initialized by it. The written batches are merged
  into the stored ones (the newer state wins for each offset, as the coordinator's ShareUpdate replay does),
  a start offset of -1 keeps the stored one, and batches (or their parts) below the start offset are dropped.
- `delete` forgets the partition; `read_summary` answers state epoch and start offset only and changes
  nothing (leader epoch -1, an admin's read, is never fenced).
Every state is copied in and out, so callers never share lists with the store.
"""

from __future__ import annotations

from dataclasses import replace

from broker.coordinator.share.persister import PersisterError, PersisterStateBatch, RecordState, SharePartitionState
from protocol.errors import ErrorCode

_Key = tuple[str, bytes, int]


class InMemoryPersister:
    def __init__(self) -> None:
        self._states: dict[_Key, SharePartitionState] = {}

    async def initialize(self, group_id: str, topic_id: bytes, partition: int, state_epoch: int,
                         start_offset: int) -> None:
        key = (group_id, topic_id, partition)
        current = self._states.get(key)
        if current is not None and state_epoch <= current.state_epoch:
            raise PersisterError(ErrorCode.FENCED_STATE_EPOCH,
                                 f"state epoch {state_epoch} is not above {current.state_epoch}")
        self._states[key] = SharePartitionState(state_epoch, start_offset, [],
                                                current.leader_epoch if current is not None else -1)

    async def read(self, group_id: str, topic_id: bytes, partition: int, leader_epoch: int) -> SharePartitionState:
        current = self._states.get((group_id, topic_id, partition))
        if current is None:
            return SharePartitionState(0, -1, [], -1)
        if leader_epoch < current.leader_epoch:
            raise PersisterError(ErrorCode.FENCED_LEADER_EPOCH,
                                 f"leader epoch {leader_epoch} is below {current.leader_epoch}")
        current.leader_epoch = leader_epoch
        return replace(current, batches=list(current.batches))

    async def write(self, group_id: str, topic_id: bytes, partition: int, state: SharePartitionState) -> None:
        key = (group_id, topic_id, partition)
        current = self._states.get(key)
        if current is None:
            self._states[key] = SharePartitionState(state.state_epoch, state.start_offset,
                                                    _merge([], state.batches, state.start_offset),
                                                    state.leader_epoch)
            return
        if state.state_epoch < current.state_epoch:
            raise PersisterError(ErrorCode.FENCED_STATE_EPOCH,
                                 f"state epoch {state.state_epoch} is below {current.state_epoch}")
        if state.leader_epoch < current.leader_epoch:
            raise PersisterError(ErrorCode.FENCED_LEADER_EPOCH,
                                 f"leader epoch {state.leader_epoch} is below {current.leader_epoch}")
        start = state.start_offset if state.start_offset >= 0 else current.start_offset
        self._states[key] = SharePartitionState(state.state_epoch, start,
                                                _merge(current.batches, state.batches, start), state.leader_epoch)

    async def delete(self, group_id: str, topic_id: bytes, partition: int) -> None:
        self._states.pop((group_id, topic_id, partition), None)

    async def read_summary(self, group_id: str, topic_id: bytes, partition: int,
                           leader_epoch: int) -> SharePartitionState:
        current = self._states.get((group_id, topic_id, partition))
        if current is None:
            return SharePartitionState(0, -1, [], -1)
        if leader_epoch < current.leader_epoch and leader_epoch != -1:
            raise PersisterError(ErrorCode.FENCED_LEADER_EPOCH,
                                 f"leader epoch {leader_epoch} is below {current.leader_epoch}")
        done = sum(max(0, b.last_offset - max(b.first_offset, current.start_offset) + 1) for b in current.batches
                   if b.delivery_state in (RecordState.ACKNOWLEDGED, RecordState.ARCHIVED))
        return SharePartitionState(current.state_epoch, current.start_offset, [], current.leader_epoch,
                                   done if current.start_offset >= 0 else -1)


def _merge(old: list[PersisterStateBatch], new: list[PersisterStateBatch],
           start_offset: int) -> list[PersisterStateBatch]:
    """`old` overlaid by `new` (new wins where they overlap), cut at `start_offset`, sorted, with adjacent
    batches of equal state and delivery count combined."""
    pieces: list[PersisterStateBatch] = []
    for batch in old:
        pieces.extend(_minus(batch, new))
    pieces.extend(new)
    out: list[PersisterStateBatch] = []
    for b in sorted(pieces, key=lambda b: b.first_offset):
        if b.last_offset < start_offset:
            continue
        if b.first_offset < start_offset:
            b = replace(b, first_offset=start_offset)
        last = out[-1] if out else None
        if (last is not None and last.last_offset + 1 == b.first_offset and last.delivery_state == b.delivery_state
                and last.delivery_count == b.delivery_count):
            out[-1] = replace(last, last_offset=b.last_offset)
        else:
            out.append(b)
    return out


def _minus(batch: PersisterStateBatch, cover: list[PersisterStateBatch]) -> list[PersisterStateBatch]:
    """The parts of `batch` no batch of `cover` overlaps."""
    parts = [batch]
    for c in cover:
        next_parts = []
        for p in parts:
            if c.last_offset < p.first_offset or c.first_offset > p.last_offset:
                next_parts.append(p)
                continue
            if p.first_offset < c.first_offset:
                next_parts.append(replace(p, last_offset=c.first_offset - 1))
            if p.last_offset > c.last_offset:
                next_parts.append(replace(p, first_offset=c.last_offset + 1))
        parts = next_parts
    return parts

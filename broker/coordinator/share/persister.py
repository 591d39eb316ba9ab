"""The share-partition state persister (KIP-932): how a share-partition leader keeps its state durable.

The contract shared by the two sides of share groups:
- the share-partition leader (`broker/share/`: ShareFetch, ShareAcknowledge, the in-flight records, their
  acquisition locks and delivery counts) calls a `Persister` to read its state when it first serves a
  (group, topic, partition) and to write every change before answering the acknowledgement;
- the share coordinator (`broker/coordinator/share/`, on the leader of a `__share_group_state` partition) keeps
  that state in ShareSnapshot/ShareUpdate records, and a network `Persister` reaches it with the
  Initialize/Read/Write/Delete/ReadShareGroupStateSummary RPCs (Kafka's `DefaultStatePersister`).

Errors travel as `PersisterError` carrying Kafka's error code (e.g. FENCED_STATE_EPOCH, COORDINATOR_NOT_AVAILABLE,
NOT_COORDINATOR, UNKNOWN_TOPIC_OR_PARTITION, FENCED_LEADER_EPOCH) so the caller answers its client as Kafka's
SharePartition does.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import IntEnum
from typing import Protocol

from protocol.errors import ErrorCode


class RecordState(IntEnum):
    """Kafka's RecordState ids, as persisted in a state batch's DeliveryState."""

    AVAILABLE = 0
    ACQUIRED = 1
    ACKNOWLEDGED = 2
    ARCHIVED = 4


@dataclass(frozen=True)
class PersisterStateBatch:
    """A run of offsets sharing one state and delivery count (Kafka's PersisterStateBatch)."""

    first_offset: int
    last_offset: int
    delivery_state: int
    delivery_count: int


@dataclass
class SharePartitionState:
    """What a share partition persists: its start offset, the state epoch that fences stale writers, and the
    batches of in-flight offsets at or after the start offset that are not plain AVAILABLE."""

    state_epoch: int
    start_offset: int
    batches: list[PersisterStateBatch] = field(default_factory=list)
    leader_epoch: int = -1
    # Kafka 4.2's DeliveryCompleteCount (read_summary only): offsets at or after the start offset acknowledged or
    # archived; -1 when unknown.
    delivery_complete_count: int = -1


class PersisterError(Exception):
    def __init__(self, error_code: int, message: str = "") -> None:
        super().__init__(message or f"persister error {error_code}")
        self.error_code = error_code


class Persister(Protocol):
    """Every method raises `PersisterError` on a Kafka error; an uninitialized share partition reads as
    state_epoch 0 (Kafka: uninitialized, start offset -1) rather than raising."""

    async def initialize(self, group_id: str, topic_id: bytes, partition: int, state_epoch: int,
                         start_offset: int) -> None: ...

    async def read(self, group_id: str, topic_id: bytes, partition: int,
                   leader_epoch: int) -> SharePartitionState: ...

    async def write(self, group_id: str, topic_id: bytes, partition: int,
                    state: SharePartitionState) -> None: ...

    async def delete(self, group_id: str, topic_id: bytes, partition: int) -> None: ...

    async def read_summary(self, group_id: str, topic_id: bytes, partition: int,
                           leader_epoch: int) -> SharePartitionState:
        """state_epoch, start_offset and delivery_complete_count only (batches empty)."""
        ...


def persister_error_code(code: int) -> int:
    """The error a share-partition leader answers for a persister error, as Kafka's SharePartition maps them:
    the share coordinator unavailable or moving -> COORDINATOR_NOT_AVAILABLE, a newer leader epoch ->
    NOT_LEADER_OR_FOLLOWER, FENCED_STATE_EPOCH and UNKNOWN_TOPIC_OR_PARTITION as they are, anything else
    UNKNOWN_SERVER_ERROR."""
    if code in (ErrorCode.NOT_COORDINATOR, ErrorCode.COORDINATOR_NOT_AVAILABLE,
                ErrorCode.COORDINATOR_LOAD_IN_PROGRESS):
        return ErrorCode.COORDINATOR_NOT_AVAILABLE
    if code == ErrorCode.FENCED_LEADER_EPOCH:
        return ErrorCode.NOT_LEADER_OR_FOLLOWER
    if code in (ErrorCode.FENCED_STATE_EPOCH, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION):
        return code
    return ErrorCode.UNKNOWN_SERVER_ERROR

"""An acks=all produce parked until its writes are replicated (Kafka's DelayedProduce), and a partition's answer.

Contract: `ReplicaManager.append_records` appends to each leader first and parks one `DelayedProduce` per
acks=-1 request that appended something, watched by topic-partition in the produce purgatory; appends that
move the HW, ISR changes and leadership changes check it again. Each partition that appended is done when
`Partition.check_enough_replicas_reach_offset` says the HW passed its last offset: NONE, or
NOT_ENOUGH_REPLICAS_AFTER_APPEND when the ISR shrank below min.insync.replicas meanwhile;
NOT_LEADER_OR_FOLLOWER when this broker stopped leading it, UNKNOWN_TOPIC_OR_PARTITION when it no longer
hosts it. At the request's `timeout_ms` the partitions still waiting answer REQUEST_TIMED_OUT. Partitions
that failed up front keep their error. The future gets the whole result map exactly once.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from broker.server.purgatory import DelayedOperation
from protocol.errors import ErrorCode
from storage import TopicPartition

if TYPE_CHECKING:
    from broker.server.replica_manager import ReplicaManager


@dataclass
class ProducePartitionResult:
    error: ErrorCode = ErrorCode.NONE
    base_offset: int = -1
    last_offset: int = -1
    log_append_time: int = -1
    log_start_offset: int = -1
    error_message: str | None = None
    record_errors: list[tuple[int, str | None]] = field(default_factory=list)


class DelayedProduce(DelayedOperation):
    def __init__(self, delay_ms: int, replica_manager: ReplicaManager,
                 results: dict[TopicPartition, ProducePartitionResult], future: asyncio.Future) -> None:
        super().__init__(delay_ms)
        self.rm = replica_manager
        self.results = results
        self.future = future
        self.pending = {tp for tp, r in results.items() if r.error == ErrorCode.NONE}

    def try_complete(self) -> bool:
        for tp in list(self.pending):
            partition = self.rm.partitions.get(tp)
            if partition is None:
                self.results[tp].error = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                self.pending.discard(tp)
                continue
            done, error = partition.check_enough_replicas_reach_offset(self.results[tp].last_offset + 1)
            if done:
                self.results[tp].error = error
                self.pending.discard(tp)
        if not self.pending:
            return self.force_complete()
        return False

    def on_expiration(self) -> None:
        for tp in self.pending:
            self.results[tp].error = ErrorCode.REQUEST_TIMED_OUT
        self.pending.clear()

    def on_complete(self) -> None:
        if not self.future.done():
            self.future.set_result(self.results)

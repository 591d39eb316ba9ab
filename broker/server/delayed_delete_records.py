"""DeleteRecords parked until the replicas have moved their log start offset (Kafka's DelayedDeleteRecords).

Contract: one `DelayedDeleteRecords` per DeleteRecords request whose partitions were deleted on this leader
but whose low watermark (the lowest log start offset of the leader and every remote replica on a live broker,
`Partition.low_watermark_if_leader`) is still below the offset asked for. Watched by topic-partition in the
ReplicaManager's delete-records purgatory; checked again after each follower fetch (which carries the
follower's log start offset) and each leadership change. A partition completes with NONE and its low
watermark once the low watermark reaches the offset, with NOT_LEADER_OR_FOLLOWER or
UNKNOWN_TOPIC_OR_PARTITION (low watermark -1) when this broker stops leading or hosting it meanwhile, and with
REQUEST_TIMED_OUT at the request's timeout. Partitions that failed up front keep their error.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from broker.common.errors import KafkaApiError
from broker.server.purgatory import DelayedOperation
from protocol.errors import ErrorCode
from storage import TopicPartition

if TYPE_CHECKING:
    from broker.server.replica_manager import ReplicaManager

INVALID_LOW_WATERMARK = -1


@dataclass
class DeleteRecordsPartitionResult:
    error: ErrorCode
    low_watermark: int = INVALID_LOW_WATERMARK
    requested_offset: int = INVALID_LOW_WATERMARK
    acks_pending: bool = False


class DelayedDeleteRecords(DelayedOperation):
    def __init__(self, delay_ms: int, replica_manager: ReplicaManager,
                 results: dict[TopicPartition, DeleteRecordsPartitionResult], is_alive: Callable[[int], bool],
                 future: asyncio.Future) -> None:
        super().__init__(delay_ms)
        self.rm = replica_manager
        self.results = results
        self.is_alive = is_alive
        self.future = future
        for r in results.values():
            if r.error == ErrorCode.NONE:
                r.acks_pending = True
                r.error = ErrorCode.REQUEST_TIMED_OUT  # until the low watermark gets there

    def try_complete(self) -> bool:
        for tp, r in self.results.items():
            if not r.acks_pending:
                continue
            partition = self.rm.partitions.get(tp)
            if partition is None:
                r.acks_pending, r.error, r.low_watermark = False, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, -1
                continue
            try:
                low = partition.low_watermark_if_leader(self.is_alive)
            except KafkaApiError as e:
                r.acks_pending, r.error, r.low_watermark = False, e.code, INVALID_LOW_WATERMARK
                continue
            if low >= r.requested_offset:
                r.acks_pending, r.error, r.low_watermark = False, ErrorCode.NONE, low
        if not any(r.acks_pending for r in self.results.values()):
            return self.force_complete()
        return False

    def on_complete(self) -> None:
        if not self.future.done():
            self.future.set_result(self.results)

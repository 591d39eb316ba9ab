"""A fetch parked until enough bytes are there (Kafka's DelayedFetch), and the fetch request's types.

Contract: `ReplicaManager.fetch_messages` reads once and, when fewer than `min_bytes` came back and the
request may wait, parks one `DelayedFetch` watched by topic-partition in the fetch purgatory. Appends, HW
moves, ISR and leadership changes check it (`try_complete`), which compares log positions
(`LogOffsetMetadata`) and never reads the log; on completion or at `max_wait_ms` it reads once more through
`ReplicaManager.read_from_local_logs` (without updating a follower's fetch state again) and the future gets
that answer exactly once. The dataclasses here are what the Fetch handler and the ReplicaManager exchange:
`FetchParams` (Kafka's FetchParams), `PartitionFetchInfo` (Kafka's PartitionData), `FetchPartitionData`
(Kafka's FetchPartitionData), `ClientMetadata` (KIP-392).
"""

from __future__ import annotations

import asyncio
import time
import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING

from broker.cluster.partition import FETCH_LOG_END
from broker.common.errors import KafkaApiError
from broker.server.purgatory import DelayedOperation
from protocol.errors import ErrorCode
from storage import AbortedTxn, LogOffsetMetadata, StorageError, TopicPartition

if TYPE_CHECKING:
    from broker.server.replica_manager import ReplicaManager

# Case I holds a follower's parked fetch this long before answering it with a new HW alone. Answered at once, every
# acks=all produce cost a round trip more: the HW moves when the last follower fetches, which woke the follower
# that had fetched first with an empty answer, and it fetched again at once (3.2 follower fetches per produce
# instead of 2.2 at 10,000 msg/s RF=3, the empty answers built and sent before the produce's own). Under load the
# next data comes within the hold and carries the HW, as in Kafka; when the producer stops, the follower hears
# the HW this much later, still far sooner than Kafka's replica.fetch.wait.max.ms.
FOLLOWER_HW_HOLD_MS = 10


@dataclass(frozen=True)
class ClientMetadata:
    """What a consumer's Fetch v11+ says about it (Kafka's ClientMetadata), for KIP-392."""

    rack_id: str
    client_id: str | None
    client_host: str


@dataclass
class FetchParams:
    replica_id: int  # -1 for consumers
    max_wait_ms: int
    min_bytes: int
    max_bytes: int
    isolation: int  # FETCH_LOG_END / FETCH_HIGH_WATERMARK / FETCH_TXN_COMMITTED
    hard_max_bytes_limit: bool = False  # Fetch v0-v2: no "first batch always returned" relief
    client_metadata: ClientMetadata | None = None  # consumers' Fetch v11+

    @property
    def is_from_follower(self) -> bool:
        return self.replica_id >= 0

    @property
    def fetch_only_from_leader(self) -> bool:
        """Kafka's fetchOnlyLeader: consumers with client metadata (Fetch v11+) may read from a follower."""
        return self.is_from_follower or self.client_metadata is None


@dataclass
class PartitionFetchInfo:
    fetch_offset: int
    max_bytes: int
    current_leader_epoch: int = -1
    log_start_offset: int = -1
    last_fetched_epoch: int = -1
    topic_id: uuid.UUID | None = None  # v13+: checked against the log's (INCONSISTENT_TOPIC_ID)


@dataclass
class FetchPartitionData:
    error: ErrorCode
    high_watermark: int = -1
    last_stable_offset: int = -1
    log_start_offset: int = -1
    records: object | None = None  # storage FileSlice or None
    diverging_epoch: tuple[int, int] | None = None
    preferred_read_replica: int = -1
    fetch_offset_metadata: LogOffsetMetadata | None = None  # where the fetch offset sits (for DelayedFetch)
    aborted_transactions: list[AbortedTxn] | None = None  # read_committed: those overlapping the records

    @property
    def size(self) -> int:
        return self.records.length if self.records is not None else 0  # type: ignore[attr-defined]


@dataclass
class FetchPartitionStatus:
    """A parked fetch's partition (Kafka's FetchPartitionStatus): where its fetch offset sits in the log."""

    start_offset_metadata: LogOffsetMetadata
    fetch_info: PartitionFetchInfo
    high_watermark: int = -1  # the HW the first read answered: a follower waits for a newer one too


class DelayedFetch(DelayedOperation):
    def __init__(self, delay_ms: int, rm: ReplicaManager, params: FetchParams,
                 statuses: list[tuple[TopicPartition, FetchPartitionStatus]], future: asyncio.Future) -> None:
        super().__init__(delay_ms)
        self.rm = rm
        self.params = params
        self.statuses = statuses
        self.future = future
        self.parked_at = time.monotonic()

    def try_complete(self) -> bool:
        """Kafka's DelayedFetch.tryComplete, by log positions alone. Answer now when, for some partition:
        A/B/C this broker no longer hosts it, has no log, or (for consumers and followers alike) no longer
          leads it — a follower whose leader moved hears NOT_LEADER_OR_FOLLOWER at once;
        E the request's leader epoch is fenced (or unknown) now;
        F the fetch offset and the end it reads up to (HW or LEO) are on different segments (a roll, a
          truncated log): there is something to answer without counting bytes;
        H a follower's last fetched epoch no longer matches our epochs (a diverging epoch, KIP-320);
        I (ours, not Kafka's) the HW moved since a follower's fetch was parked: the follower hears it once the
          fetch has been parked FOLLOWER_HW_HOLD_MS (its deadline is brought forward to then), or with data
          that comes sooner; not only at replica.fetch.wait.max.ms (its HW, and the consumers reading from it,
          KIP-392, would lag by up to that wait);
        or when G the bytes between each fetch offset and its end, summed (each at most the partition's max
        bytes), reach min_bytes. A consumer whose offset is past the HW (a new leader's HW can lag what it
        read from the old one) waits until the HW passes it, as in Kafka."""
        accumulated = 0
        hw_moved = False
        from_follower = self.params.is_from_follower
        isolation = FETCH_LOG_END if from_follower else self.params.isolation
        for tp, status in self.statuses:
            info = status.fetch_info
            partition = self.rm.partitions.get(tp)
            if partition is None or partition.log is None:
                return self.force_complete()  # B, C
            try:
                end = partition.end_offset_metadata(info.current_leader_epoch, isolation,  # A, E
                                                    require_leader=self.params.fetch_only_from_leader)
                start = status.start_offset_metadata
                # Same offset: nothing new, whatever the positions say (a segment rolled at the end, say).
                if end.message_offset != start.message_offset:
                    if start.message_offset_only:  # the read stopped at the HW: place it once, now
                        start = status.start_offset_metadata = partition.offset_metadata(start.message_offset)
                    if end.on_older_segment(start) or start.on_older_segment(end):
                        return self.force_complete()  # F
                    if start.message_offset < end.message_offset:
                        accumulated += min(end.position_diff(start), info.max_bytes)
                if from_follower and info.last_fetched_epoch >= 0 and \
                        partition.diverging_epoch(info.last_fetched_epoch, info.fetch_offset) is not None:
                    return self.force_complete()  # H
                if from_follower and 0 <= status.high_watermark < partition.high_watermark:
                    hw_moved = True  # I, unless G answers first
            except (KafkaApiError, StorageError):
                return self.force_complete()
        if accumulated >= self.params.min_bytes:
            return self.force_complete()  # G
        if hw_moved:
            held_s = time.monotonic() - self.parked_at
            if held_s * 1000 >= FOLLOWER_HW_HOLD_MS or not self.expire_within(FOLLOWER_HW_HOLD_MS / 1000 - held_s):
                return self.force_complete()  # I
        return False

    def on_complete(self) -> None:
        if not self.future.done():
            infos = [(tp, status.fetch_info) for tp, status in self.statuses]
            self.future.set_result(self.rm.read_from_local_logs(self.params, infos, update_fetch_state=False))

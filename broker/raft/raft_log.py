"""The replicated log of the Raft layer: `__cluster_metadata-0` on disk (Kafka's ReplicatedLog, KafkaMetadataLog).

Contract:
- The log is a `storage.Log` in Kafka's segment format (`.log`, `.index`, `.timeindex`,
  `leader-epoch-checkpoint`), so `kafka-dump-log --cluster-metadata-decoder` reads it. Retention is never by time
  or size (snapshots are not written yet, so nothing is ever deleted).
- Every batch is written with its offsets and partition leader epoch already in place: the leader's own
  (`append_as_leader(values, epoch)`, one uncompressed v2 batch, no producer id, record values only, as Kafka's
  BatchAccumulator writes; `append_control(key, value, epoch)` for a control record such as LeaderChangeMessage)
  and a follower's fetched ones (`append_as_follower`). The epoch cache follows the batches' epochs.
- `end_offset` is the log end offset; `last_fetched_epoch` the epoch of the last batch (0 for an empty log, Kafka's
  lastFetchedEpoch); `end_offset_for_epoch(e)` Kafka's endOffsetForEpoch: the largest epoch <= e we hold and
  where it ends (the log end for our last epoch); an epoch we have no entry for answers (end offset, last epoch).
- `validate_offset_and_epoch(offset, epoch)`: Kafka's validateOffsetAndEpoch for a fetch: `None` when the
  fetcher's log agrees with ours up to `offset`, else the (epoch, end offset) it diverges at (a DivergingEpoch).
- `truncate_to_end_offset(epoch, end_offset)`: Kafka's truncateToEndOffset, a follower's answer to a
  DivergingEpoch: to the smaller of the leader's end offset and our own end of that epoch (or our end of the
  epoch before it when we never had that epoch), so the next fetch's last fetched epoch agrees with the leader.
  It never goes below the high watermark (committed records are never truncated: `ValueError`).
- Every append is fsynced before it returns (Kafka's KafkaRaftClient flushes before the leader counts its own end
  offset and before a follower fetches again, so what a majority acknowledged survives a power loss).
- `read(offset, max_bytes, max_offset)` returns whole batches as bytes (what a Fetch answer carries).
- `high_watermark` is kept here and only moves forward, capped at the log end offset.
"""

from __future__ import annotations

import time
from pathlib import Path

from records import build_batch
from storage import Log, LogConfig, TopicPartition

METADATA_PARTITION = TopicPartition("__cluster_metadata", 0)


def _now_ms() -> int:
    return int(time.time() * 1000)


class RaftLog:
    def __init__(self, directory: Path, *, segment_bytes: int = 1073741824,
                 topic_partition: TopicPartition = METADATA_PARTITION) -> None:
        """`directory`: the partition's own directory (`<metadata.log.dir>/__cluster_metadata-0`)."""
        self.dir = Path(directory)
        config = LogConfig(segment_bytes=segment_bytes, retention_ms=-1)
        self.log = Log.open(self.dir, config, topic_partition=topic_partition)
        self.high_watermark = 0

    # ---- positions
    @property
    def end_offset(self) -> int:
        return self.log.log_end_offset

    @property
    def start_offset(self) -> int:
        return self.log.log_start_offset

    @property
    def last_fetched_epoch(self) -> int:
        latest = self.log.leader_epoch_cache.latest_epoch()
        return 0 if latest is None else latest

    def end_offset_for_epoch(self, epoch: int) -> tuple[int, int]:
        """(epoch, end offset): the largest epoch <= `epoch` we hold and the offset it ends at."""
        found_epoch, end = self.log.leader_epoch_cache.end_offset_for(epoch, self.end_offset)
        if found_epoch < 0:
            return self.last_fetched_epoch, self.end_offset
        return found_epoch, end

    def validate_offset_and_epoch(self, offset: int, epoch: int) -> tuple[int, int] | None:
        if offset == 0 and epoch == 0:
            return None  # an empty log agrees with every log
        end_epoch, end_offset = self.end_offset_for_epoch(epoch)
        if end_epoch != epoch or end_offset < offset:
            return end_epoch, end_offset
        return None

    # ---- appends
    def append_as_leader(self, values: list[bytes], epoch: int, *, now_ms: int | None = None) -> tuple[int, int]:
        """One batch of `values` at the log end in `epoch`; (first offset, last offset)."""
        if not values:
            raise ValueError("no records to append")
        ts = _now_ms() if now_ms is None else now_ms
        base = self.end_offset
        batch = build_batch([(None, v, (), ts) for v in values], base_offset=base, partition_leader_epoch=epoch)
        self.log.append_as_follower(bytearray(batch))
        self.log.flush()
        return base, base + len(values) - 1

    def append_control(self, key: bytes, value: bytes, epoch: int, *, now_ms: int | None = None) -> int:
        """One control batch with one control record (a LeaderChangeMessage); its offset."""
        ts = _now_ms() if now_ms is None else now_ms
        base = self.end_offset
        batch = build_batch([(key, value, (), ts)], base_offset=base, partition_leader_epoch=epoch,
                            is_control=True)
        self.log.append_as_follower(bytearray(batch))
        self.log.flush()
        return base

    def append_as_follower(self, data: bytes | bytearray | memoryview) -> int:
        """Fetched whole batches (a cut last batch is left for the next fetch); how many records were appended."""
        info = self.log.append_as_follower(data)
        self.log.flush()
        return info.records_count

    # ---- reads
    def read(self, offset: int, max_bytes: int, max_offset: int | None = None) -> bytes:
        info = self.log.read(offset, max_bytes, max_offset=max_offset)
        if info.records is None:
            return b""
        return bytes(info.records.read())

    # ---- truncation and the high watermark
    def truncate_to_end_offset(self, epoch: int, end_offset: int) -> int:
        if epoch == 0:
            target = min(end_offset, self.end_offset)
        else:
            local_epoch, local_end = self.end_offset_for_epoch(epoch)
            target = min(local_end, end_offset) if local_epoch == epoch else local_end
        if target < self.high_watermark:
            raise ValueError(f"truncation to {target} below the high watermark {self.high_watermark}")
        if target < self.end_offset:
            self.log.truncate_to(target)
        return target

    def update_high_watermark(self, offset: int) -> bool:
        """Move the high watermark forward (never past the log end); whether it moved."""
        offset = min(offset, self.end_offset)
        if offset > self.high_watermark:
            self.high_watermark = offset
            return True
        return False

    def flush(self) -> None:
        self.log.flush()

    def close(self) -> None:
        self.log.flush()
        self.log.close()

"""`__cluster_metadata-0/` on disk: the metadata log a KRaft broker fetched, its snapshots and `quorum-state`
(Kafka's KafkaMetadataLog and FileQuorumStateStore, for an observer).

Contract:
- The directory sits in the metadata log dir (`metadata.log.dir`, else the first log dir); the LogManager never
  loads it as a partition. Batches are kept as fetched, in Kafka's segment format (`storage.Log`: `.log`,
  `.index`, `.timeindex`, the leader epoch checkpoint), so Kafka's tools read it.
- `append(data)` appends fetched batches; `truncate_to(offset)` drops what diverged; `restart_at(offset)` empties
  the log to start after a fetched snapshot (`<end>-<epoch>.checkpoint` in the same directory).
- `trim_to(snapshot)`: the log starts at a snapshot's end (whole segments below it deleted) and older
  snapshots go.
- `load()` reads what the directory holds at start-up: the latest snapshot's id (or None) and the batches after
  it, which the follower holds until the quorum's high watermark says they are committed.
- `write_quorum_state(leader_id, epoch, voters)`: `quorum-state`, QuorumStateData version 0 as Kafka 3.9 writes
  it with kraft.version 0 (cluster id empty, voted id -1, applied offset 0, the voters), written atomically;
  `read_quorum_epoch()` reads its epoch back at start-up.
"""

from __future__ import annotations

import json
from pathlib import Path

from records import iter_batches
from storage import Log, LogConfig, TopicPartition
from storage.checkpoints import write_atomically
from storage.snapshot_file import SnapshotId, latest_snapshot_id, list_snapshots, snapshot_path

METADATA_PARTITION = TopicPartition("__cluster_metadata", 0)
QUORUM_STATE_FILE = "quorum-state"


class MetadataLogStore:
    def __init__(self, directory: Path, *, segment_bytes: int = 1073741824, segment_ms: int = 604800000) -> None:
        """`segment_bytes` / `segment_ms`: metadata.log.segment.bytes / metadata.log.segment.ms."""
        self.dir = Path(directory)
        self.dir.mkdir(parents=True, exist_ok=True)
        # Retention is the snapshots' business (trim_to), never time or size.
        config = LogConfig(segment_bytes=segment_bytes, segment_ms=segment_ms, retention_ms=-1)
        self.log = Log.open(self.dir, config, topic_partition=METADATA_PARTITION)

    @property
    def end_offset(self) -> int:
        return self.log.log_end_offset

    def load(self) -> tuple[SnapshotId | None, bytes]:
        """The latest snapshot here (if any) and the bytes of the batches from its end (or the log start)."""
        snapshot = latest_snapshot_id(self.dir)
        start = max(self.log.log_start_offset, snapshot.end_offset if snapshot is not None else 0)
        if snapshot is not None and self.log.log_end_offset < snapshot.end_offset:
            self.log.truncate_fully_and_start_at(snapshot.end_offset)
        chunks = []
        offset = start
        while offset < self.log.log_end_offset:
            info = self.log.read(offset, 8 * 1024 * 1024)
            if info.records is None:
                break
            data = info.records.read()
            chunks.append(data)
            last = None
            for batch in iter_batches(data):
                last = batch
            if last is None:
                break
            offset = last.next_offset
        return snapshot, b"".join(chunks)

    def snapshot_path(self, snapshot: SnapshotId) -> Path:
        return snapshot_path(self.dir, snapshot)

    def append(self, data: bytes | bytearray | memoryview) -> None:
        self.log.append_as_follower(bytearray(data))

    def truncate_to(self, offset: int) -> None:
        if offset < self.log.log_end_offset:
            self.log.truncate_to(offset)

    def restart_at(self, offset: int) -> None:
        self.log.truncate_fully_and_start_at(offset)

    def trim_to(self, snapshot: SnapshotId) -> None:
        """A snapshot now covers everything before `snapshot.end_offset`: the log starts there (whole segments
        below it go) and older snapshots are deleted, as Kafka's KafkaMetadataLog does after a snapshot."""
        if self.log.log_start_offset < snapshot.end_offset <= self.log.log_end_offset:
            self.log.maybe_increment_log_start_offset(snapshot.end_offset)
            self.log.delete_expired_files(2**62)  # now: nothing reads a metadata log segment below its start
        for older in list_snapshots(self.dir):
            if older.snapshot_id < snapshot and not older.partial:
                older.path.unlink(missing_ok=True)

    def write_quorum_state(self, leader_id: int, leader_epoch: int, voters: list[int]) -> None:
        state = {"clusterId": "", "leaderId": leader_id, "leaderEpoch": leader_epoch, "votedId": -1,
                 "appliedOffset": 0, "currentVoters": [{"voterId": v} for v in sorted(voters)], "data_version": 0}
        write_atomically(self.dir / QUORUM_STATE_FILE, json.dumps(state, separators=(",", ":")))

    def read_quorum_epoch(self) -> int:
        """The leader epoch `quorum-state` recorded (0 when there is none or it cannot be read)."""
        try:
            state = json.loads((self.dir / QUORUM_STATE_FILE).read_text())
            return max(0, int(state.get("leaderEpoch", 0)))
        except (OSError, ValueError, TypeError, AttributeError):
            return 0

    def close(self) -> None:
        self.log.flush()
        self.log.close()

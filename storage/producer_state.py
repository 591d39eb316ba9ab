"""Idempotent-producer state of one partition: producer id -> epoch and its last 5 batches.

Contract (Kafka's ProducerStateManager, idempotence only; transactions are not tracked beyond the fields
kept in snapshots): ``validate_append`` checks one batch of a leader append against the state (and any
pending updates of the same request) and returns either the duplicate's metadata or the updated entry;
the log calls ``update`` only after the bytes are written. Snapshots ``<offset:020d>.snapshot`` are taken at
segment rolls and clean shutdown in Kafka's format (version 1: ``version int16 | crc uint32 | entries array``,
each entry ``producer_id int64, producer_epoch int16, last_sequence int32, last_offset int64,
offset_delta int32, timestamp int64, coordinator_epoch int32, current_txn_first_offset int64``; CRC32C over
the entries). After truncation or recovery the log reloads the newest snapshot <= the log end offset and
replays the batch headers after it.
"""

from __future__ import annotations

import logging
import os
import struct
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path

import crc32c

from records.header import NO_PRODUCER_EPOCH, NO_SEQUENCE, BatchHeader
from storage.checkpoints import fsync_dir
from storage.errors import (
    CorruptLogError,
    InvalidProducerEpochError,
    OutOfOrderSequenceError,
)

log = logging.getLogger(__name__)

NUM_BATCHES_TO_RETAIN = 5
SNAPSHOT_SUFFIX = ".snapshot"
SNAPSHOT_VERSION = 1
_SNAP_HEADER = struct.Struct(">hIi")  # version, crc, entry count
_SNAP_ENTRY = struct.Struct(">qhiqiqiq")
_MAX_SNAPSHOT_ENTRIES = 10_000_000


@dataclass(frozen=True, slots=True)
class BatchMetadata:
    first_seq: int
    last_seq: int
    first_offset: int
    last_offset: int
    timestamp: int


@dataclass
class ProducerStateEntry:
    producer_id: int
    producer_epoch: int = NO_PRODUCER_EPOCH
    batches: deque[BatchMetadata] = field(default_factory=lambda: deque(maxlen=NUM_BATCHES_TO_RETAIN))
    coordinator_epoch: int = -1
    current_txn_first_offset: int = -1
    last_timestamp: int = -1

    @property
    def last_seq(self) -> int:
        return self.batches[-1].last_seq if self.batches else NO_SEQUENCE

    @property
    def last_data_offset(self) -> int:
        return self.batches[-1].last_offset if self.batches else -1

    def copy(self) -> ProducerStateEntry:
        return ProducerStateEntry(
            self.producer_id,
            self.producer_epoch,
            deque(self.batches, maxlen=NUM_BATCHES_TO_RETAIN),
            self.coordinator_epoch,
            self.current_txn_first_offset,
            self.last_timestamp,
        )

    def find_duplicate(self, h: BatchHeader) -> BatchMetadata | None:
        if h.producer_epoch != self.producer_epoch:
            return None
        for b in self.batches:
            if b.first_seq == h.base_sequence and b.last_seq == h.last_sequence:
                return b
        return None

    def add_batch(self, epoch: int, h: BatchHeader, first_offset: int) -> None:
        if epoch != self.producer_epoch:
            self.batches.clear()
            self.producer_epoch = epoch
        last_offset = first_offset + h.last_offset_delta
        self.batches.append(BatchMetadata(h.base_sequence, h.last_sequence, first_offset, last_offset, h.max_timestamp))
        self.last_timestamp = h.max_timestamp


def _in_sequence(last_seq: int, next_seq: int) -> bool:
    return next_seq == last_seq + 1 or (next_seq == 0 and last_seq == 2147483647)


class ProducerStateManager:
    def __init__(self, dir: Path) -> None:
        self.dir = Path(dir)
        self.producers: dict[int, ProducerStateEntry] = {}
        self.map_end_offset = 0

    def last_entry(self, producer_id: int) -> ProducerStateEntry | None:
        return self.producers.get(producer_id)

    # -- leader appends ------------------------------------------------------------------------------
    def validate_append(
        self, h: BatchHeader, pending: dict[int, ProducerStateEntry]
    ) -> BatchMetadata | ProducerStateEntry:
        """Check one leader batch; returns the duplicate's metadata, or the updated (pending) entry."""
        current = pending.get(h.producer_id) or self.producers.get(h.producer_id)
        if current is not None:
            dup = current.find_duplicate(h)
            if dup is not None:
                return dup
        entry = current.copy() if current is not None else ProducerStateEntry(h.producer_id)
        if h.producer_epoch < entry.producer_epoch:
            raise InvalidProducerEpochError(
                f"producer {h.producer_id}: epoch {h.producer_epoch} is older than {entry.producer_epoch}"
            )
        if h.producer_epoch != entry.producer_epoch:
            if h.base_sequence != 0 and entry.producer_epoch != NO_PRODUCER_EPOCH:
                raise OutOfOrderSequenceError(
                    f"producer {h.producer_id}: new epoch {h.producer_epoch} starts at sequence "
                    f"{h.base_sequence}, expected 0"
                )
        elif entry.batches and not _in_sequence(entry.last_seq, h.base_sequence):
            raise OutOfOrderSequenceError(
                f"producer {h.producer_id}: sequence {h.base_sequence} after {entry.last_seq} "
                f"(epoch {h.producer_epoch})"
            )
        return entry

    def update(self, entry: ProducerStateEntry) -> None:
        self.producers[entry.producer_id] = entry

    # -- followers, recovery, replay -----------------------------------------------------------------
    def replay(self, h: BatchHeader) -> None:
        """Apply a batch already in the log (no sequence checks), as Kafka does for replication/recovery."""
        if h.has_producer_id:
            entry = self.producers.get(h.producer_id)
            if entry is None:
                entry = self.producers[h.producer_id] = ProducerStateEntry(h.producer_id)
            if h.producer_epoch >= entry.producer_epoch or entry.producer_epoch == NO_PRODUCER_EPOCH:
                if h.is_control:
                    entry.producer_epoch = h.producer_epoch
                    entry.current_txn_first_offset = -1
                else:
                    entry.add_batch(h.producer_epoch, h, h.base_offset)
                    if h.is_transactional and entry.current_txn_first_offset < 0:
                        entry.current_txn_first_offset = h.base_offset
        self.map_end_offset = max(self.map_end_offset, h.next_offset)

    # -- snapshots -----------------------------------------------------------------------------------
    def snapshot_path(self, offset: int) -> Path:
        return self.dir / f"{offset:020d}{SNAPSHOT_SUFFIX}"

    def snapshot_offsets(self) -> list[int]:
        out = []
        for p in self.dir.glob(f"*{SNAPSHOT_SUFFIX}"):
            stem = p.name[: -len(SNAPSHOT_SUFFIX)]
            if stem.isdigit():
                out.append(int(stem))
        return sorted(out)

    def take_snapshot(self, offset: int | None = None, *, sync: bool = True) -> Path:
        """Write ``<offset>.snapshot`` (tmp + rename). ``sync=False`` skips the fsyncs so a roll on the event
        loop never waits for the disk; the log fsyncs the file and directory on its next flush (a snapshot
        lost in a crash is harmless: the state is rebuilt from an older snapshot and the log)."""
        offset = self.map_end_offset if offset is None else offset
        body = bytearray()
        count = 0
        for e in self.producers.values():
            if not e.batches and e.producer_epoch == NO_PRODUCER_EPOCH:
                continue
            last = e.batches[-1] if e.batches else None
            body += _SNAP_ENTRY.pack(
                e.producer_id,
                e.producer_epoch,
                last.last_seq if last else NO_SEQUENCE,
                last.last_offset if last else -1,
                (last.last_seq - last.first_seq) if last else 0,
                e.last_timestamp,
                e.coordinator_epoch,
                e.current_txn_first_offset,
            )
            count += 1
        entries = struct.pack(">i", count) + body
        data = struct.pack(">hI", SNAPSHOT_VERSION, crc32c.crc32c(entries)) + entries
        path = self.snapshot_path(offset)
        tmp = path.with_name(path.name + ".tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            os.write(fd, data)
            if sync:
                os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
        if sync:
            fsync_dir(self.dir)
        return path

    def _read_snapshot(self, offset: int) -> dict[int, ProducerStateEntry]:
        data = self.snapshot_path(offset).read_bytes()
        if len(data) < _SNAP_HEADER.size:
            raise CorruptLogError(f"snapshot {offset} too short")
        version, crc, count = _SNAP_HEADER.unpack_from(data)
        if version != SNAPSHOT_VERSION:
            raise CorruptLogError(f"snapshot {offset}: unsupported version {version}")
        if crc32c.crc32c(memoryview(data)[6:]) != crc:
            raise CorruptLogError(f"snapshot {offset}: CRC mismatch")
        if not 0 <= count <= _MAX_SNAPSHOT_ENTRIES or len(data) != _SNAP_HEADER.size + count * _SNAP_ENTRY.size:
            raise CorruptLogError(f"snapshot {offset}: bad entry count {count}")
        out = {}
        for i in range(count):
            pid, epoch, last_seq, last_offset, delta, ts, coord, txn_first = _SNAP_ENTRY.unpack_from(
                data, _SNAP_HEADER.size + i * _SNAP_ENTRY.size
            )
            e = ProducerStateEntry(
                pid, epoch, coordinator_epoch=coord, current_txn_first_offset=txn_first, last_timestamp=ts
            )
            if last_seq != NO_SEQUENCE:
                e.batches.append(BatchMetadata(last_seq - delta, last_seq, last_offset - delta, last_offset, ts))
            out[pid] = e
        return out

    def load_latest_snapshot(self, max_offset: int) -> int | None:
        """Reset state to the newest readable snapshot <= ``max_offset``; returns its offset (None: empty)."""
        self.producers = {}
        self.map_end_offset = 0
        for offset in reversed(self.snapshot_offsets()):
            if offset > max_offset:
                continue
            try:
                self.producers = self._read_snapshot(offset)
            except (OSError, CorruptLogError) as e:
                log.warning("deleting unreadable producer snapshot %s: %s", self.snapshot_path(offset), e)
                self.snapshot_path(offset).unlink(missing_ok=True)
                continue
            self.map_end_offset = offset
            return offset
        return None

    def delete_snapshots_after(self, offset: int) -> None:
        for o in self.snapshot_offsets():
            if o > offset:
                self.snapshot_path(o).unlink(missing_ok=True)

    def delete_snapshots_before(self, offset: int) -> None:
        """Remove snapshots below ``offset`` but keep the newest of them, replay may start there."""
        older = [o for o in self.snapshot_offsets() if o < offset]
        for o in older[:-1]:
            self.snapshot_path(o).unlink(missing_ok=True)

    def truncate_fully(self, offset: int) -> None:
        self.producers = {}
        self.map_end_offset = offset
        for o in self.snapshot_offsets():
            self.snapshot_path(o).unlink(missing_ok=True)

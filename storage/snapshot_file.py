"""KRaft snapshots in Kafka's `.checkpoint` format (KIP-630): the files of `__cluster_metadata-0/` and the
`bootstrap.checkpoint` that `kafka-storage.sh format` writes.

File format (Kafka's FileRawSnapshotWriter / RecordsSnapshotWriter / RecordsIterator):
- Named `<end offset, 20 digits>-<epoch, 10 digits>.checkpoint` after the snapshot id (Kafka's
  OffsetAndEpoch: the offset one past the last record the snapshot covers, and that record's epoch).
  Written as `<name>-<random>.checkpoint.part`, fsynced, then renamed; `.checkpoint.deleted` marks one
  being deleted. `bootstrap.checkpoint` is the same format under a fixed name (snapshot id 0-0).
- The content is v2 record batches with offsets from 0, every batch's partition leader epoch the snapshot
  epoch. The first batch is a control batch whose first record is the SnapshotHeader (KRaftVersion and
  Voters records may follow it in that batch); then data batches whose records have no key, a non-empty
  value (one metadata record frame each), a timestamp delta of 0 and no headers; the last batch is a control
  batch holding the SnapshotFooter.

Contract:
- This module moves bytes only: control records are `(key, value)` pairs and data records are values, as
  `protocol.metadata_records` encodes them (storage never imports protocol). The type of a control record
  is read from its key (`records.control_record_type`).
- `SnapshotWriter(log_dir, snapshot_id, header)` then `append(values)` any number of times and
  `freeze(footer)`; `read_snapshot(path)` returns every batch after checking CRCs, the header first, the
  footer last and Kafka's record rules, raising `CorruptSnapshotError` (a `CorruptRecordError`) otherwise.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

from records import (
    Compression,
    CorruptRecordError,
    InvalidRecordError,
    KRaftControlRecordType,
    RecordBatch,
    build_batch,
    control_record_type,
    iter_batches,
)
from storage.checkpoints import fsync_dir

SUFFIX = ".checkpoint"
PARTIAL_SUFFIX = SUFFIX + ".part"
DELETE_SUFFIX = SUFFIX + ".deleted"
BOOTSTRAP_FILE = "bootstrap.checkpoint"
_OFFSET_WIDTH = 20
_EPOCH_WIDTH = 10
# Kafka's KafkaRaftClient.MAX_BATCH_SIZE_BYTES, the batch size its snapshot writers use.
DEFAULT_MAX_BATCH_BYTES = 8 * 1024 * 1024

ControlRecord = tuple[bytes, bytes]  # (key, value)


class CorruptSnapshotError(CorruptRecordError):
    """A snapshot file that does not follow Kafka's layout."""


class SnapshotId(NamedTuple):
    """Kafka's OffsetAndEpoch for a snapshot: the end offset (exclusive) and the epoch of its last record."""

    end_offset: int
    epoch: int


BOOTSTRAP_SNAPSHOT_ID = SnapshotId(0, 0)


def snapshot_filename(snapshot_id: SnapshotId) -> str:
    return f"{snapshot_id.end_offset:0{_OFFSET_WIDTH}d}-{snapshot_id.epoch:0{_EPOCH_WIDTH}d}"


def snapshot_path(log_dir: Path, snapshot_id: SnapshotId) -> Path:
    return Path(log_dir) / (snapshot_filename(snapshot_id) + SUFFIX)


@dataclass(frozen=True)
class SnapshotPath:
    path: Path
    snapshot_id: SnapshotId
    partial: bool
    deleted: bool


def parse_snapshot_path(path: Path) -> SnapshotPath | None:
    """The snapshot a file name denotes (Kafka's Snapshots.parse), or None for any other file."""
    name = Path(path).name
    partial = name.endswith(PARTIAL_SUFFIX)
    deleted = name.endswith(DELETE_SUFFIX)
    if not (partial or deleted or name.endswith(SUFFIX)):
        return None
    offset_text = name[:_OFFSET_WIDTH]
    epoch_text = name[_OFFSET_WIDTH + 1:_OFFSET_WIDTH + 1 + _EPOCH_WIDTH]
    if (len(name) < _OFFSET_WIDTH + 1 + _EPOCH_WIDTH or name[_OFFSET_WIDTH] != "-"
            or not offset_text.isdigit() or not epoch_text.isdigit()):
        return None
    return SnapshotPath(Path(path), SnapshotId(int(offset_text), int(epoch_text)), partial, deleted)


def list_snapshots(log_dir: Path) -> list[SnapshotPath]:
    """Every snapshot file of a metadata log directory (partial and deleted ones included), by id."""
    found = [p for p in map(parse_snapshot_path, Path(log_dir).iterdir()) if p is not None]
    return sorted(found, key=lambda p: (p.snapshot_id, p.partial, p.deleted))


def latest_snapshot_id(log_dir: Path) -> SnapshotId | None:
    """The id of the newest complete snapshot (neither partial nor being deleted)."""
    ids = [p.snapshot_id for p in list_snapshots(log_dir) if not (p.partial or p.deleted)]
    return max(ids) if ids else None


def _check_control_pair(pair: ControlRecord, expected: KRaftControlRecordType | None = None) -> None:
    key, value = pair
    if not value:
        raise ValueError("a control record needs a value")
    ctype = control_record_type(key)
    if ctype is None:
        raise ValueError("a control record key is 4 bytes: version and type")
    if expected is not None and ctype != expected:
        raise ValueError(f"expected a {expected.name} control record, got type {ctype}")


class SnapshotWriter:
    """Writes one snapshot: the header control batch at construction, data batches, the footer at freeze.

    `header` is the SnapshotHeader control record; `header_extras` the control records Kafka puts after it
    in the first batch (KRaftVersion, Voters) when kraft.version is 1. Every record of a batch carries the
    same timestamp, the time the batch was written (`timestamp_ms`), since Kafka's reader rejects a
    non-zero timestamp delta.
    """

    def __init__(
        self,
        log_dir: Path,
        snapshot_id: SnapshotId,
        header: ControlRecord,
        *,
        header_extras: Sequence[ControlRecord] = (),
        timestamp_ms: int,
        compression: Compression = Compression.NONE,
        max_batch_bytes: int = DEFAULT_MAX_BATCH_BYTES,
        final_path: Path | None = None,
    ) -> None:
        _check_control_pair(header, KRaftControlRecordType.SNAPSHOT_HEADER)
        for pair in header_extras:
            _check_control_pair(pair)
        self.snapshot_id = snapshot_id
        self.log_dir = Path(log_dir)
        self.final_path = final_path if final_path is not None else snapshot_path(self.log_dir, snapshot_id)
        self.log_dir.mkdir(parents=True, exist_ok=True)
        self.tmp_path = self.log_dir / f"{snapshot_filename(snapshot_id)}-{secrets.token_hex(8)}{PARTIAL_SUFFIX}"
        self._file = open(self.tmp_path, "xb")  # noqa: SIM115 - kept open across append() calls
        self._timestamp_ms = timestamp_ms
        self._compression = compression
        self._max_batch_bytes = max_batch_bytes
        self._next_offset = 0
        self._pending: list[bytes] = []
        self._pending_bytes = 0
        self.frozen = False
        self._write_batch([header, *header_extras], control=True)

    def _write_batch(self, records: Sequence[tuple[bytes | None, bytes]], control: bool) -> None:
        batch = build_batch(
            [(key, value, (), self._timestamp_ms) for key, value in records],
            base_offset=self._next_offset,
            compression=Compression.NONE if control else self._compression,
            partition_leader_epoch=self.snapshot_id.epoch,
            is_control=control,
        )
        self._file.write(batch)
        self._next_offset += len(records)

    def _drain(self) -> None:
        if self._pending:
            self._write_batch([(None, v) for v in self._pending], control=False)
            self._pending = []
            self._pending_bytes = 0

    def append(self, values: Iterable[bytes]) -> None:
        """Metadata record frames, each the value of one data record."""
        if self.frozen:
            raise ValueError(f"snapshot {self.snapshot_id} is frozen")
        for value in values:
            if not value:
                raise ValueError("a snapshot data record needs a non-empty value")
            # ~10 bytes of record framing besides the value.
            size = len(value) + 10
            if self._pending and self._pending_bytes + size > self._max_batch_bytes:
                self._drain()
            self._pending.append(bytes(value))
            self._pending_bytes += size

    def freeze(self, footer: ControlRecord) -> Path:
        """Write the footer, fsync, and move the file to its final name; returns that path."""
        _check_control_pair(footer, KRaftControlRecordType.SNAPSHOT_FOOTER)
        if self.frozen:
            raise ValueError(f"snapshot {self.snapshot_id} is already frozen")
        self._drain()
        self._write_batch([footer], control=True)
        self._file.flush()
        os.fsync(self._file.fileno())
        self._file.close()
        os.replace(self.tmp_path, self.final_path)
        fsync_dir(self.final_path.parent)
        self.frozen = True
        return self.final_path

    def close(self) -> None:
        """Abandon an unfrozen snapshot (its partial file is removed); a no-op after freeze."""
        if not self._file.closed:
            self._file.close()
        if not self.frozen:
            self.tmp_path.unlink(missing_ok=True)

    def __enter__(self) -> SnapshotWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


@dataclass
class SnapshotBatch:
    base_offset: int
    epoch: int  # the batch's partition leader epoch
    append_timestamp: int  # its max timestamp, as Kafka's Batch.appendTimestamp
    size_in_bytes: int
    is_control: bool
    # Control batches: (key, value) pairs; data batches: the values (metadata record frames).
    control_records: list[ControlRecord] = field(default_factory=list)
    values: list[bytes] = field(default_factory=list)


@dataclass
class Snapshot:
    snapshot_id: SnapshotId | None  # None for a file not named after an id
    batches: list[SnapshotBatch]

    @property
    def header(self) -> ControlRecord:
        return self.batches[0].control_records[0]

    @property
    def footer(self) -> ControlRecord:
        return self.batches[-1].control_records[-1]

    @property
    def control_records(self) -> list[ControlRecord]:
        return [pair for b in self.batches if b.is_control for pair in b.control_records]

    def values(self) -> list[bytes]:
        """Every data record value, in offset order."""
        return [v for b in self.batches if not b.is_control for v in b.values]


def _read_batch(batch: RecordBatch) -> SnapshotBatch:
    try:
        batch.ensure_valid()
        out = SnapshotBatch(batch.base_offset, batch.partition_leader_epoch, batch.max_timestamp,
                            batch.size_in_bytes, batch.is_control)
        for record in batch.records():
            if record.headers:
                raise CorruptSnapshotError(f"record at offset {record.offset} has headers")
            if record.timestamp != batch.first_timestamp:
                raise CorruptSnapshotError(f"record at offset {record.offset} has a non-zero timestamp delta")
            if not record.value:
                raise CorruptSnapshotError(f"record at offset {record.offset} has no value")
            if batch.is_control:
                if not record.key or control_record_type(record.key) is None:
                    raise CorruptSnapshotError(f"control record at offset {record.offset} has no valid key")
                out.control_records.append((record.key, record.value))
            else:
                if record.key is not None:
                    raise CorruptSnapshotError(f"data record at offset {record.offset} has a key")
                out.values.append(record.value)
    except (CorruptRecordError, InvalidRecordError) as e:
        if isinstance(e, CorruptSnapshotError):
            raise
        raise CorruptSnapshotError(str(e)) from None
    return out


def read_snapshot(path: Path) -> Snapshot:
    """Read and check a whole snapshot file."""
    path = Path(path)
    parsed = parse_snapshot_path(path)
    data = path.read_bytes()
    batches: list[SnapshotBatch] = []
    try:
        for batch in iter_batches(data):
            batches.append(_read_batch(batch))  # iter_batches refuses magic 0/1 here
    except CorruptSnapshotError as e:
        raise CorruptSnapshotError(f"{path}: {e}") from None
    except (CorruptRecordError, InvalidRecordError) as e:
        raise CorruptSnapshotError(f"{path}: {e}") from None
    if not batches or not batches[0].is_control or not batches[0].control_records:
        raise CorruptSnapshotError(f"{path}: the first batch is not a control batch with at least one record")
    if control_record_type(batches[0].control_records[0][0]) != KRaftControlRecordType.SNAPSHOT_HEADER:
        raise CorruptSnapshotError(f"{path}: the first control record is not a snapshot header")
    last = batches[-1]
    if (len(batches) < 2 or not last.is_control
            or control_record_type(last.control_records[-1][0]) != KRaftControlRecordType.SNAPSHOT_FOOTER):
        raise CorruptSnapshotError(f"{path}: the last batch does not end with a snapshot footer")
    expected = 0
    for b in batches:
        if b.base_offset != expected:
            raise CorruptSnapshotError(f"{path}: batch at offset {b.base_offset} where {expected} was expected")
        expected += len(b.control_records) + len(b.values)
    return Snapshot(parsed.snapshot_id if parsed is not None else None, batches)


def delete_snapshot(log_dir: Path, snapshot_id: SnapshotId) -> bool:
    """Remove a snapshot's file and its `.deleted` form (Kafka's Snapshots.deleteIfExists)."""
    path = snapshot_path(log_dir, snapshot_id)
    deleted_path = path.with_name(snapshot_filename(snapshot_id) + DELETE_SUFFIX)
    removed = False
    for p in (path, deleted_path):
        try:
            p.unlink()
            removed = True
        except FileNotFoundError:
            pass
    return removed

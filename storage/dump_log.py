"""Kafka's ``kafka-dump-log`` (DumpLogSegments) for our log directories: the inspection tool, nothing else.

Contract:
- ``python -m storage.dump_log --files A,B [--print-data-log] [--deep-iteration] [--verify-index-only]
  [--index-sanity-check] [--skip-record-metadata] [--max-message-size N] [--max-bytes N]``; paths may also be
  given positionally and may be directories (a partition dir or a whole log dir, dumped file by file).
- Understands ``.log`` (v2 batches; v0/v1 message sets shallowly), ``.index``, ``.timeindex``, ``.snapshot``
  (producer state), ``.txnindex``, ``leader-epoch-checkpoint``, ``*-offset-checkpoint``
  (``replication-``, ``recovery-point-``, ``log-start-``, ``cleaner-``), ``partition.metadata`` and
  ``meta.properties``. Output lines follow Kafka's DumpLogSegments so operators feel at home; problems go to
  stderr like Kafka's (index mismatches, non-consecutive offsets, trailing invalid bytes).
- Batches, records and compression come from the shared codec (``records``), log files are read through
  ``storage.file_records``, the text checkpoints through ``storage.checkpoints``. The binary index, snapshot
  and transaction-index formats are declared here with construct (clarity over speed: this is a tool, and
  nothing on the broker's path imports it).
- Input is untrusted: every length is checked against what is left and against explicit caps; a file that
  cannot be parsed makes the exit status 1 with one line on stderr, never an ``AssertionError``.
"""

from __future__ import annotations

import argparse
import os
import struct
import sys
import zlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

import construct as cs
import crc32c

from records import BatchHeader, Record, RecordBatch, control_record_type, crc_is_valid
from records.header import DELETE_HORIZON_MASK, TIMESTAMP_TYPE_MASK
from storage.checkpoints import (
    LeaderEpochCheckpointFile,
    OffsetCheckpointFile,
    PartitionMetadataFile,
    read_properties,
    uuid_to_kafka_str,
)
from storage.errors import StorageError
from storage.file_records import DEFAULT_MAX_ENTRY_BYTES, iter_file_entries
from storage.producer_state import decrement_sequence


class CheckpointFormatError(Exception):
    """An index, snapshot or transaction-index file does not follow Kafka's format."""


DEFAULT_MAX_DECOMPRESSED_BYTES = 128 * 1024 * 1024
DEFAULT_MAX_MESSAGE_SIZE = 5 * 1024 * 1024  # Kafka's --max-message-size default
INT32_MAX = 2**31 - 1
NO_TIMESTAMP = -1
COMPRESSION_NAMES = {0: "none", 1: "gzip", 2: "snappy", 3: "lz4", 4: "zstd"}
# Kafka 3.7's ControlRecordType; any other type id is UNKNOWN there
CONTROL_TYPE_NAMES = {0: "ABORT", 1: "COMMIT", 2: "LEADER_CHANGE", 3: "SNAPSHOT_HEADER", 4: "SNAPSHOT_FOOTER"}


# ---------------------------------------------------------------------------------------------------------
# Log entries: v2 batches through the shared codec, v0/v1 messages shallowly
# ---------------------------------------------------------------------------------------------------------


def entry_header(entry: memoryview, magic: int) -> BatchHeader:
    """The header of a log entry; a v0/v1 message is shown as a one-record batch with magic 0/1 (its offset is
    its last inner offset, and only its codec bits are kept as attributes)."""
    if magic >= 2:
        return BatchHeader.unpack_from(entry)
    offset, length, crc = struct.unpack_from(">qiI", entry)
    attributes = entry[17] & 0x07
    timestamp = struct.unpack_from(">q", entry, 18)[0] if magic == 1 else NO_TIMESTAMP
    return BatchHeader(offset, length, -1, magic, crc, attributes, 0, timestamp, timestamp, -1, -1, -1, 1)


def entry_is_valid(entry: memoryview, magic: int) -> bool:
    """Kafka's isValid: CRC32C over attributes..end for v2, zlib's CRC32 over magic..end for v0/v1."""
    if magic >= 2:
        return crc_is_valid(entry, 0, len(entry))
    return zlib.crc32(entry[16:]) == struct.unpack_from(">I", entry, 12)[0]


def decode_entry(entry: memoryview) -> list[Record]:
    """The records of a v2 batch (decompressed, bounded); codec errors propagate as ``ValueError``s."""
    return list(RecordBatch(entry).records(DEFAULT_MAX_DECOMPRESSED_BYTES))


# ---------------------------------------------------------------------------------------------------------
# Binary index / snapshot formats (construct: the tool's place for declarative structs)
# ---------------------------------------------------------------------------------------------------------

OffsetIndexEntry = cs.Struct("relative_offset" / cs.Int32sb, "position" / cs.Int32sb)  # 8 bytes
TimeIndexEntry = cs.Struct("timestamp" / cs.Int64sb, "relative_offset" / cs.Int32sb)  # 12 bytes
# Kafka's ProducerStateManager snapshot (version 1): version, crc32c of everything after it, entries.
ProducerSnapshotEntry = cs.Struct(
    "producer_id" / cs.Int64sb, "producer_epoch" / cs.Int16sb, "last_sequence" / cs.Int32sb,
    "last_offset" / cs.Int64sb, "offset_delta" / cs.Int32sb, "timestamp" / cs.Int64sb,
    "coordinator_epoch" / cs.Int32sb, "current_txn_first_offset" / cs.Int64sb,
)
ProducerSnapshotHeader = cs.Struct("version" / cs.Int16sb, "crc" / cs.Int32ub, "count" / cs.Int32sb)
# Kafka's TransactionIndex entry (AbortedTxn), 34 bytes.
AbortedTxnEntry = cs.Struct(
    "version" / cs.Int16sb, "producer_id" / cs.Int64sb, "first_offset" / cs.Int64sb,
    "last_offset" / cs.Int64sb, "last_stable_offset" / cs.Int64sb,
)
OFFSET_INDEX_ENTRY_SIZE = 8
TIME_INDEX_ENTRY_SIZE = 12


def base_offset_from_name(path: Path) -> int:
    stem = path.name.split(".")[0]
    if not stem.isdigit():
        raise ValueError(f"{path.name}: file name does not start with a base offset")
    return int(stem)


def read_offset_index(path: Path) -> list[tuple[int, int]]:
    """(absolute offset, position) entries; stops at the zero-filled preallocated tail like Kafka's tool."""
    base = base_offset_from_name(path)
    data = path.read_bytes()
    entries: list[tuple[int, int]] = []
    for i in range(len(data) // OFFSET_INDEX_ENTRY_SIZE):
        e = OffsetIndexEntry.parse(data[i * 8 : i * 8 + 8])
        if e.relative_offset == 0 and i > 0:
            break
        entries.append((base + e.relative_offset, e.position))
    return entries


def read_time_index(path: Path) -> list[tuple[int, int]]:
    """(timestamp, absolute offset) entries, stopping at the zero-filled tail."""
    base = base_offset_from_name(path)
    data = path.read_bytes()
    entries: list[tuple[int, int]] = []
    for i in range(len(data) // TIME_INDEX_ENTRY_SIZE):
        e = TimeIndexEntry.parse(data[i * 12 : i * 12 + 12])
        if e.relative_offset == 0 and i > 0:
            break
        entries.append((e.timestamp, base + e.relative_offset))
    return entries


# ---------------------------------------------------------------------------------------------------------
# The dump tool
# ---------------------------------------------------------------------------------------------------------


@dataclass
class DumpOptions:
    print_data_log: bool = False
    deep_iteration: bool = False
    verify_index_only: bool = False
    index_sanity_check: bool = False
    skip_record_metadata: bool = False
    max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE
    max_bytes: int = INT32_MAX

    @property
    def is_deep(self) -> bool:
        return self.print_data_log or self.deep_iteration


@dataclass
class DumpProblems:
    """What Kafka's tool prints to stderr at the end: index mismatches, offset gaps, time index errors."""

    index_mismatches: dict[str, list[tuple[int, int]]] = field(default_factory=dict)
    non_consecutive: dict[str, list[tuple[int, int]]] = field(default_factory=dict)
    time_index_mismatches: dict[str, list[tuple[int, int]]] = field(default_factory=dict)
    time_index_out_of_order: dict[str, list[tuple[int, int]]] = field(default_factory=dict)
    time_index_not_found: dict[str, list[tuple[int, int]]] = field(default_factory=dict)

    def print(self, err: TextIO) -> None:
        for name, pairs in self.index_mismatches.items():
            err.write(f"Mismatches in :{name}\n")
            for idx, log in sorted(pairs, reverse=True):
                err.write(f"  Index offset: {idx}, log offset: {log}\n")
        for name, pairs in self.time_index_mismatches.items():
            err.write(f"Found timestamp mismatch in :{name}\n")
            for idx, log in pairs:
                err.write(f"  Index timestamp: {idx}, log timestamp: {log}\n")
        for name, pairs in self.time_index_out_of_order.items():
            err.write(f"Found out of order timestamp in :{name}\n")
            for idx, prev in pairs:
                err.write(f"  Index timestamp: {idx}, Previously indexed timestamp: {prev}\n")
        for pairs in self.time_index_not_found.values():
            err.write("The following indexed offsets are not found in the log.\n")
            for idx, log in pairs:
                err.write(f"Indexed offset: {idx}, found log offset: {log}\n")
        for name, pairs in self.non_consecutive.items():
            err.write(f"Non-consecutive offsets in {name}\n")
            for prev, nxt in pairs:
                err.write(f"  {prev} is followed by {nxt}\n")

    @property
    def any(self) -> bool:
        return any((self.index_mismatches, self.non_consecutive, self.time_index_mismatches,
                    self.time_index_out_of_order, self.time_index_not_found))


def _bool(b: bool) -> str:
    return "true" if b else "false"


def _text(b: bytes) -> str:
    return b.decode("utf-8", errors="replace")


def _timestamp_type(header: BatchHeader) -> str:
    if header.magic == 0:
        return "NoTimestampType"
    return "LogAppendTime" if header.attributes & TIMESTAMP_TYPE_MASK else "CreateTime"


def format_batch(header: BatchHeader, position: int, is_valid: bool) -> str:
    if header.magic >= 2:
        horizon = header.base_timestamp if header.attributes & DELETE_HORIZON_MASK else None
        horizon_text = "OptionalLong.empty" if horizon is None else f"OptionalLong[{horizon}]"
        head = (f"baseOffset: {header.base_offset} lastOffset: {header.last_offset}"
                f" count: {header.records_count}"
                f" baseSequence: {header.base_sequence} lastSequence: {header.last_sequence}"
                f" producerId: {header.producer_id} producerEpoch: {header.producer_epoch}"
                f" partitionLeaderEpoch: {header.partition_leader_epoch}"
                f" isTransactional: {_bool(header.is_transactional)} isControl: {_bool(header.is_control)}"
                f" deleteHorizonMs: {horizon_text}")
    else:
        head = f"offset: {header.last_offset}"
    codec = header.compression_code
    return (f"{head} position: {position} {_timestamp_type(header)}: {header.max_timestamp}"
            f" size: {header.size} magic: {header.magic}"
            f" compresscodec: {COMPRESSION_NAMES.get(codec, str(codec))}"
            f" crc: {header.crc} isvalid: {_bool(is_valid)}")


def format_record(header: BatchHeader, record: Record, opts: DumpOptions) -> str:
    parts: list[str] = []
    if not opts.skip_record_metadata:
        key_size = -1 if record.key is None else len(record.key)
        value_size = -1 if record.value is None else len(record.value)
        line = (f"| offset: {record.offset} {_timestamp_type(header)}: {record.timestamp}"
                f" keySize: {key_size} valueSize: {value_size}"
                f" sequence: {record.sequence} headerKeys: [{','.join(k for k, _ in record.headers)}]")
        if header.is_control:
            ctype = control_record_type(record.key)
            if ctype in (0, 1) and record.value is not None and len(record.value) >= 6:
                coordinator_epoch = struct.unpack_from(">i", record.value, 2)[0]
                line += f" endTxnMarker: {CONTROL_TYPE_NAMES[ctype]} coordinatorEpoch: {coordinator_epoch}"
            else:
                line += f" controlType: {CONTROL_TYPE_NAMES.get(ctype or -1, 'UNKNOWN')}({ctype})"
        parts.append(line)
    if opts.print_data_log and not header.is_control:
        prefix = "| " if opts.skip_record_metadata else " "
        if record.key is not None:
            parts.append(f"{prefix}key: {_text(record.key)}")
            prefix = " "
        if record.value is not None:
            parts.append(f"{prefix}payload: {_text(record.value)}")
    return "".join(parts)


def dump_log_file(path: Path, opts: DumpOptions, out: TextIO, problems: DumpProblems) -> None:
    out.write(f"Log starting offset: {base_offset_from_name(path)}\n")
    with open(path, "rb") as f:
        end = min(os.fstat(f.fileno()).st_size, opts.max_bytes)
        valid_bytes = 0
        last_offset: int | None = None  # the first record of a segment starts the sequence (base > 0 is fine)
        for position, magic, entry in iter_file_entries(f.fileno(), 0, end, max_entry_bytes=DEFAULT_MAX_ENTRY_BYTES):
            header = entry_header(entry, magic)
            out.write(format_batch(header, position, entry_is_valid(entry, magic)) + "\n")
            if opts.is_deep and magic >= 2:
                try:
                    records = decode_entry(entry)
                except ValueError as exc:
                    out.write(f"| cannot decode records: {exc}\n")
                    records = []
                for record in records:
                    if last_offset is not None and record.offset != last_offset + 1:
                        problems.non_consecutive.setdefault(str(path.absolute()), []).append(
                            (last_offset, record.offset))
                    last_offset = record.offset
                    out.write(format_record(header, record, opts) + "\n")
            valid_bytes += header.size
    trailing = end - valid_bytes
    if trailing > 0 and opts.max_bytes == INT32_MAX:
        out.write(f"Found {trailing} invalid bytes at the end of {path.name}\n")


def _batch_at(fd: int, position: int, max_size: int) -> BatchHeader | None:
    size = os.fstat(fd).st_size
    if position < 0 or position >= size:
        return None
    for _pos, magic, entry in iter_file_entries(fd, position, min(size, position + max_size)):
        return entry_header(entry, magic)
    return None


def dump_index_file(path: Path, opts: DumpOptions, out: TextIO, problems: DumpProblems) -> None:
    size = path.stat().st_size
    entries = read_offset_index(path)
    if not entries:
        out.write(f"{path} is empty.\n")
        return
    if opts.index_sanity_check:
        base = base_offset_from_name(path)
        if size % OFFSET_INDEX_ENTRY_SIZE != 0:
            raise CheckpointFormatError(f"Index file {path.name} is corrupt, found {size} bytes which is "
                                        f"neither positive nor a multiple of {OFFSET_INDEX_ENTRY_SIZE}.")
        if entries[-1][0] < base:
            raise CheckpointFormatError(f"Corrupt index found, index file ({path}) has non-zero size but the "
                                        f"last offset is {entries[-1][0]} which is less than the base offset "
                                        f"{base}.")
        out.write(f"{path} passed sanity check.\n")
        return
    with open(_sibling(path, ".log"), "rb") as f:
        for offset, position in entries:
            header = _batch_at(f.fileno(), position, opts.max_message_size)
            found = header.last_offset if header is not None else -1
            if found != offset:
                problems.index_mismatches.setdefault(str(path.absolute()), []).append((offset, found))
            if not opts.verify_index_only:
                out.write(f"offset: {offset} position: {position}\n")


def dump_time_index_file(path: Path, opts: DumpOptions, out: TextIO, problems: DumpProblems) -> None:
    entries = read_time_index(path)
    if opts.index_sanity_check:
        size = path.stat().st_size
        base = base_offset_from_name(path)
        if size % TIME_INDEX_ENTRY_SIZE != 0:
            raise CheckpointFormatError(f"Time index file {path.name} is corrupt, found {size} bytes which "
                                        f"is neither positive nor a multiple of {TIME_INDEX_ENTRY_SIZE}.")
        if entries and (entries[-1][1] < base or entries[-1][0] < entries[0][0]):
            raise CheckpointFormatError(f"Corrupt time index found, time index file ({path}) has non-zero "
                                        f"size but its last entry {entries[-1]} is out of order.")
        out.write(f"{path} passed sanity check.\n")
        return
    with open(_sibling(path, ".log"), "rb") as f:
        fd = f.fileno()
        # Headers only (small); a matching batch is re-read to check its records' timestamps.
        batches = [(p, entry_header(e, m)) for p, m, e in iter_file_entries(fd, 0, os.fstat(fd).st_size)]
        _check_time_index(path, entries, batches, fd, opts, out, problems)


def _check_time_index(path: Path, entries: list[tuple[int, int]], batches: list[tuple[int, BatchHeader]],
                      fd: int, opts: DumpOptions, out: TextIO, problems: DumpProblems) -> None:
    key = str(path.absolute())
    prev_ts = NO_TIMESTAMP
    for timestamp, offset in entries:
        match = next(((p, h) for p, h in batches if h.last_offset >= offset), None)
        if match is None:
            problems.time_index_not_found.setdefault(key, []).append((offset, -1))
        elif match[1].last_offset != offset:
            problems.time_index_not_found.setdefault(key, []).append((offset, match[1].last_offset))
        else:
            position, header = match
            batch = memoryview(os.pread(fd, header.size, position))
            max_ts = header.max_timestamp
            if header.magic >= 2 and not header.attributes & TIMESTAMP_TYPE_MASK:
                try:
                    max_ts = max((r.timestamp for r in decode_entry(batch)), default=NO_TIMESTAMP)
                except ValueError:
                    max_ts = header.max_timestamp
            if max_ts != timestamp:
                problems.time_index_mismatches.setdefault(key, []).append((timestamp, max_ts))
            if prev_ts >= timestamp:
                problems.time_index_out_of_order.setdefault(key, []).append((timestamp, prev_ts))
        if not opts.verify_index_only:
            out.write(f"timestamp: {timestamp} offset: {offset}\n")
        prev_ts = timestamp


def dump_producer_snapshot(path: Path, out: TextIO) -> None:
    data = path.read_bytes()
    if len(data) < ProducerSnapshotHeader.sizeof():
        raise CheckpointFormatError(f"{path}: snapshot too short")
    head = ProducerSnapshotHeader.parse(data)
    if crc32c.crc32c(data[6:]) != head.crc:
        raise CheckpointFormatError(f"Snapshot is corrupt (CRC is no longer valid). Stored crc: {head.crc}")
    n = head.count
    entry_size = ProducerSnapshotEntry.sizeof()
    if n < 0 or 10 + n * entry_size != len(data):
        raise CheckpointFormatError(f"{path}: entry count {n} does not match the file size")
    for i in range(n):
        e = ProducerSnapshotEntry.parse(data[10 + i * entry_size : 10 + (i + 1) * entry_size])
        # Kafka prints the entry's OptionalLong and, when the entry kept a batch (last offset >= 0), that batch
        txn_first = e.current_txn_first_offset
        line = (f"producerId: {e.producer_id} producerEpoch: {e.producer_epoch}"
                f" coordinatorEpoch: {e.coordinator_epoch}"
                f" currentTxnFirstOffset: {f'OptionalLong[{txn_first}]' if txn_first >= 0 else 'OptionalLong.empty'}"
                f" lastTimestamp: {e.timestamp} ")
        if e.last_offset >= 0:
            first_seq = decrement_sequence(e.last_sequence, e.offset_delta) if e.last_sequence >= 0 else -1
            line += (f"firstSequence: {first_seq} lastSequence: {e.last_sequence}"
                     f" lastOffset: {e.last_offset}"
                     f" offsetDelta: {e.offset_delta} timestamp: {e.timestamp}")
        out.write(line + "\n")


def dump_txn_index(path: Path, out: TextIO) -> None:
    data = path.read_bytes()
    size = AbortedTxnEntry.sizeof()
    for i in range(len(data) // size):
        e = AbortedTxnEntry.parse(data[i * size : (i + 1) * size])
        out.write(f"version: {e.version} producerId: {e.producer_id} firstOffset: {e.first_offset}"
                  f" lastOffset: {e.last_offset} lastStableOffset: {e.last_stable_offset}\n")


def dump_checkpoint(path: Path, out: TextIO) -> None:
    name = path.name
    if name == "leader-epoch-checkpoint":
        for epoch, start in LeaderEpochCheckpointFile(path).read():
            out.write(f"epoch: {epoch} startOffset: {start}\n")
    elif name.endswith("-offset-checkpoint"):
        for tp, offset in OffsetCheckpointFile(path).read().items():
            out.write(f"topic: {tp.topic} partition: {tp.partition} offset: {offset}\n")
    elif name == "partition.metadata":
        topic_id = PartitionMetadataFile(path).read()
        if topic_id is not None:
            out.write(f"version: 0 topic_id: {uuid_to_kafka_str(topic_id)} (uuid: {topic_id})\n")
    elif name == "meta.properties":
        for k, v in sorted((read_properties(path) or {}).items()):
            out.write(f"{k}={v}\n")


CHECKPOINT_NAMES = {"leader-epoch-checkpoint", "partition.metadata", "meta.properties"}


def _sibling(path: Path, suffix: str) -> Path:
    return path.with_name(path.name.split(".")[0] + suffix)


def _is_checkpoint(path: Path) -> bool:
    return path.name in CHECKPOINT_NAMES or path.name.endswith("-offset-checkpoint")


def expand_paths(paths: Sequence[Path]) -> list[Path]:
    """Files as given; a directory expands to its files (sorted) and its partition sub-directories."""
    out: list[Path] = []
    for p in paths:
        if p.is_dir():
            children = sorted(p.iterdir())
            out.extend(c for c in children if c.is_file())
            out.extend(expand_paths([c for c in children if c.is_dir()]))
        else:
            out.append(p)
    return out


def dump_file(path: Path, opts: DumpOptions, out: TextIO, err: TextIO, problems: DumpProblems) -> None:
    out.write(f"Dumping {path}\n")
    suffix = path.suffix
    if suffix == ".log":
        dump_log_file(path, opts, out, problems)
    elif suffix == ".index":
        dump_index_file(path, opts, out, problems)
    elif suffix == ".timeindex":
        dump_time_index_file(path, opts, out, problems)
    elif suffix == ".snapshot":
        dump_producer_snapshot(path, out)
    elif suffix == ".txnindex":
        dump_txn_index(path, out)
    elif _is_checkpoint(path):
        dump_checkpoint(path, out)
    else:
        err.write(f"Ignoring unknown file {path}\n")


def run(paths: Sequence[Path], opts: DumpOptions, out: TextIO, err: TextIO) -> int:
    """Dumps every path; returns the exit status (1 if a file could not be read or parsed)."""
    problems = DumpProblems()
    status = 0
    for path in expand_paths(paths):
        try:
            dump_file(path, opts, out, err, problems)
        except (OSError, ValueError, StorageError, CheckpointFormatError, cs.ConstructError) as exc:
            err.write(f"{path}: {exc}\n")
            status = 1
    problems.print(err)
    return status


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m storage.dump_log",
        description="Parse a log file and dump its contents to the console, useful for debugging a seemingly "
                    "corrupt log segment (Kafka's kafka-dump-log).")
    parser.add_argument("paths", nargs="*", type=Path, help="files or directories (alternative to --files)")
    parser.add_argument("--files", default="", help="comma-separated data and index log files to dump")
    parser.add_argument("--print-data-log", action="store_true", help="print the messages' content")
    parser.add_argument("--deep-iteration", action="store_true", help="iterate records, not only batches")
    parser.add_argument("--verify-index-only", action="store_true", help="only report index mismatches")
    parser.add_argument("--index-sanity-check", action="store_true", help="only run the index sanity check")
    parser.add_argument("--skip-record-metadata", action="store_true", help="do not print record metadata")
    parser.add_argument("--max-message-size", type=int, default=DEFAULT_MAX_MESSAGE_SIZE)
    parser.add_argument("--max-bytes", type=int, default=INT32_MAX)
    args = parser.parse_args(argv)
    paths = list(args.paths) + [Path(p) for p in args.files.split(",") if p]
    if not paths:
        parser.error("Missing required argument \"[files]\"")
    opts = DumpOptions(print_data_log=args.print_data_log, deep_iteration=args.deep_iteration,
                       verify_index_only=args.verify_index_only, index_sanity_check=args.index_sanity_check,
                       skip_record_metadata=args.skip_record_metadata, max_message_size=args.max_message_size,
                       max_bytes=args.max_bytes)
    return run(paths, opts, sys.stdout, sys.stderr)


if __name__ == "__main__":
    sys.exit(main())

__all__ = [
    "CheckpointFormatError", "DumpOptions", "DumpProblems", "entry_header", "entry_is_valid", "format_batch",
    "format_record", "main", "read_offset_index", "read_time_index", "run",
]

"""One log segment: ``<base_offset:020d>.log`` plus its ``.index``, ``.timeindex`` and ``.txnindex``.

Contract: the ``.log`` file holds v2 record batches back to back exactly as appended (offsets already
assigned). ``append`` writes whole batches at the end and adds an index entry (last offset of the batch ->
its position) whenever more than ``index_interval_bytes`` were written since the previous entry, plus a time
index entry when the max timestamp grows. A failed write is rolled back by truncating the file to its previous
size (``KafkaStorageError``). ``read`` returns a ``FileSlice`` of whole batches starting with the batch that
contains the start offset. ``recover`` re-validates every batch (size, magic, CRC32C, monotonic offsets),
rebuilds the offset and time indexes and, given the producer state as of the segment's base offset, the
transaction index (the aborted transactions whose markers the segment holds, ``storage.transaction_index``),
and truncates a torn or corrupt tail, reporting what it cut. The transaction index follows the segment
through truncation, renames and deletion; its file exists only once a transaction was aborted here. Files
may carry a suffix (``.cleaned``, ``.swap``, ``.deleted``) during the cleaner's swap protocol and deletion.
Headers are parsed by the shared codec (``records``); ``read_header`` / ``parse_batches`` turn its errors
into ``CorruptLogError``.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from records import BATCH_HEADER_SIZE as HEADER_SIZE
from records import BatchHeader, CorruptRecordError, InvalidRecordError, RecordBatch, batch_headers, crc_is_valid
from records.header import COMPRESSION_MASK, MAX_TIMESTAMP_AT, TIMESTAMP_TYPE_MASK, parse_fields, parse_header
from storage import log_writer
from storage.config import LogConfig
from storage.errors import CorruptIndexError, CorruptLogError, KafkaStorageError
from storage.index import NO_TIMESTAMP, OffsetIndex, TimeIndex
from storage.producer_append import replay_batch
from storage.producer_state import ProducerStateManager
from storage.transaction_index import TXN_INDEX_SUFFIX, TransactionIndex, TxnIndexSearchResult
from storage.values import FileSlice

log = logging.getLogger(__name__)

LOG_SUFFIX = ".log"
INDEX_SUFFIX = ".index"
TIME_INDEX_SUFFIX = ".timeindex"
INT32_MAX = 2147483647
_WALK_CHUNK = 8192


def segment_file_name(base_offset: int, suffix: str) -> str:
    return f"{base_offset:020d}{suffix}"


def read_header(buf: bytes | bytearray | memoryview, pos: int, where: str) -> BatchHeader:
    """The checked header at ``pos`` (``records.parse_header`` plus lastOffsetDelta >= 0, which walking a log
    relies on); any problem is a ``CorruptLogError`` that starts with ``where``."""
    try:
        h = parse_header(buf, pos)
    except (CorruptRecordError, InvalidRecordError) as e:
        raise CorruptLogError(f"{where}: {e}") from None
    if h.last_offset_delta < 0:
        raise CorruptLogError(f"{where}: negative lastOffsetDelta")
    return h


def parse_batches(
    buf: bytes | bytearray | memoryview, where: object, *, allow_partial_tail: bool = False
) -> list[tuple[int, BatchHeader]]:
    """``records.batch_headers`` with storage's checks and errors (``read_header``)."""
    try:
        batches = batch_headers(buf, allow_partial_tail=allow_partial_tail)
    except (CorruptRecordError, InvalidRecordError) as e:
        raise CorruptLogError(f"{where}: {e}") from None
    for pos, h in batches:
        if h.last_offset_delta < 0:
            raise CorruptLogError(f"{where}: negative lastOffsetDelta at position {pos}")
    return batches


@dataclass(frozen=True)
class RecoveryResult:
    truncated_bytes: int
    valid_bytes: int
    next_offset: int
    reason: str | None = None
    bad_offset: int | None = None


class LogSegment:
    def __init__(
        self,
        dir: Path,
        base_offset: int,
        config: LogConfig,
        *,
        file_suffix: str = "",
        now_ms: int | None = None,
        new: bool = False,
    ) -> None:
        """``new``: the directory holds none of this segment's files (a log just created): nothing is looked up,
        the ``.log`` is created exclusively."""
        # The caller's Path when it is one: its log's, shared (Path(path) copies, ~450 bytes per partition each).
        self.dir = dir if isinstance(dir, Path) else Path(dir)
        self.base_offset = base_offset
        self.index_interval_bytes = config.index_interval_bytes
        self.file_suffix = file_suffix
        self.log_path = self.dir / segment_file_name(base_offset, LOG_SUFFIX + file_suffix)
        if new:
            existed = indexes_existed = False
            self.fd = os.open(self.log_path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o644)
            self.size = 0
        else:
            existed = self.log_path.exists()
            indexes_existed = all(
                (self.dir / segment_file_name(base_offset, ext + file_suffix)).exists()
                for ext in (INDEX_SUFFIX, TIME_INDEX_SUFFIX)
            )
            self.fd = os.open(self.log_path, os.O_RDWR | os.O_CREAT, 0o644)
            self.size = os.fstat(self.fd).st_size
        self.offset_index = OffsetIndex(
            self.dir / segment_file_name(base_offset, INDEX_SUFFIX + file_suffix),
            base_offset,
            config.segment_index_bytes,
            new=new,
        )
        self.time_index = TimeIndex(
            self.dir / segment_file_name(base_offset, TIME_INDEX_SUFFIX + file_suffix),
            base_offset,
            config.segment_index_bytes,
            new=new,
        )
        self.txn_index = TransactionIndex(
            base_offset, self.dir / segment_file_name(base_offset, TXN_INDEX_SUFFIX + file_suffix))
        self.created_ms = (
            int(os.fstat(self.fd).st_mtime * 1000) if existed else (now_ms if now_ms is not None else _now_ms())
        )
        self.max_timestamp_so_far = NO_TIMESTAMP
        self.offset_of_max_timestamp_so_far = base_offset
        self.next_offset = base_offset
        self.rolling_based_timestamp: int | None = None
        self._bytes_since_last_index_entry = 0
        self._last_index_position = 0
        self.deleted_at_ms: int | None = None
        self.needs_recovery = False
        self.index_problem: str | None = None
        self.unwritten_bytes = 0  # reserved by a LogWriter append, not yet in the file
        if self.size > 0 and not indexes_existed:
            self.needs_recovery = True
            self.index_problem = "index file missing"

    # -- opening -------------------------------------------------------------------------------------------
    @classmethod
    def open(
        cls,
        dir: Path,
        base_offset: int,
        config: LogConfig,
        *,
        file_suffix: str = "",
        now_ms: int | None = None,
    ) -> LogSegment:
        """Open or create a segment and load its state from the indexes (no CRC scan; see ``recover``).

        When an index fails Kafka's sanity check (or the tail does not parse) ``needs_recovery`` is set and
        ``index_problem`` says why; the caller then runs ``recover``, which rebuilds the indexes.
        """
        seg = cls(dir, base_offset, config, file_suffix=file_suffix, now_ms=now_ms)
        if seg.needs_recovery:
            return seg
        try:
            seg.offset_index.sanity_check(seg.size)
            seg.time_index.sanity_check()
            seg.txn_index.sanity_check()
            seg._load_tail()
        except CorruptLogError as e:
            seg.needs_recovery = True
            seg.index_problem = str(e)
        return seg

    def _load_tail(self) -> None:
        """next_offset and max timestamp from the last index entries plus a header walk of the tail."""
        _, pos = self.offset_index.last_entry()
        ts, ts_offset = self.time_index.last_entry()
        self.max_timestamp_so_far, self.offset_of_max_timestamp_so_far = ts, ts_offset
        self.next_offset = max(self.base_offset, self.offset_index.last_offset)
        self._last_index_position = pos
        while pos < self.size:
            h = self._read_header(pos)
            if h is None or pos + h.size > self.size:
                raise CorruptIndexError(f"{self.log_path}: incomplete batch at position {pos}")
            self._track(h)
            pos += h.size
        if self.offset_index.entries == 0 and self.size == 0:
            self.next_offset = self.base_offset
        self._bytes_since_last_index_entry = self.size - self._last_index_position
        self._load_rolling_timestamp()

    def _load_rolling_timestamp(self) -> None:
        self.rolling_based_timestamp = None
        if self.size >= HEADER_SIZE:
            h = self._read_header(0)
            if h is not None and h.max_timestamp >= 0:
                self.rolling_based_timestamp = h.max_timestamp

    def _index_has_room(self) -> bool:
        # A full index only makes lookups walk further; it must never fail an append whose bytes are written
        # (the log rolls before an append when the index is full, so this matters for multi-batch appends and
        # for recovery under a smaller segment.index.bytes).
        return not (self.offset_index.is_full() or self.time_index.is_full())

    def _track(self, h: BatchHeader) -> None:
        if h.max_timestamp > self.max_timestamp_so_far:
            self.max_timestamp_so_far = h.max_timestamp
            self.offset_of_max_timestamp_so_far = h.last_offset
        self.next_offset = h.next_offset

    def _read_header(self, pos: int) -> BatchHeader | None:
        raw = os.pread(self.fd, HEADER_SIZE, pos)
        if len(raw) < HEADER_SIZE:
            return None
        return read_header(raw, 0, f"{self.log_path}: batch header at position {pos}")

    def _walk(self, pos: int) -> Iterator[tuple[int, int, int, int]]:
        """(position, size, base_offset, last_offset) of each batch from ``pos`` on; headers read in chunks so
        a lookup costs one pread, not one per batch."""
        end = self.size
        buf = b""
        buf_start = pos
        while pos < end:
            rel = pos - buf_start
            if rel + HEADER_SIZE > len(buf):
                buf = os.pread(self.fd, _WALK_CHUNK, pos)
                buf_start, rel = pos, 0
                if len(buf) < HEADER_SIZE:
                    return
            try:
                h = parse_fields(buf, rel)
            except (CorruptRecordError, InvalidRecordError) as e:
                raise CorruptLogError(f"{self.log_path}: batch header at position {pos}: {e}") from None
            if h[6] < 0:
                raise CorruptLogError(f"{self.log_path}: batch header at position {pos}: negative lastOffsetDelta")
            size = h[1] + 12
            yield pos, size, h[0], h[0] + h[6]
            pos += size

    # -- writing -------------------------------------------------------------------------------------------
    def can_convert_to_relative_offset(self, offset: int) -> bool:
        return 0 <= offset - self.base_offset <= INT32_MAX

    def append(
        self,
        records: bytes | bytearray | memoryview,
        batches: list[tuple[int, BatchHeader]] | None = None,
    ) -> int:
        """Write whole batches at the end; returns the position they start at."""
        if batches is None:
            batches = parse_batches(records, self.log_path)
        if not batches:
            return self.size
        position = self.size
        self._prepare(batches)
        view = memoryview(records)
        written = 0
        log_writer.injected_stall(self.log_path)  # looked up here so tests can replace it
        try:
            while written < len(view):
                written += os.pwrite(self.fd, view[written:], position + written)
        except OSError as e:
            try:
                os.ftruncate(self.fd, position)
            except OSError:
                log.exception("could not roll back partial write in %s", self.log_path)
            raise KafkaStorageError(f"write to {self.log_path} failed: {e}") from e
        finally:
            view.release()
        self._track_and_index(position, batches)
        self.size = position + written
        return position

    def reserve(self, records: bytes | bytearray | memoryview, batches: list[tuple[int, BatchHeader]]) -> int:
        """Place whole batches after everything appended so far without writing them (a ``LogWriter`` does,
        then ``mark_written``); their index entries and timestamps count at once, ``size`` (what reads see)
        only once they are written. Returns their position."""
        position = self.appended_size
        self._prepare(batches)
        self._track_and_index(position, batches)
        self.unwritten_bytes += len(records)
        return position

    def mark_written(self, nbytes: int) -> None:
        self.size += nbytes
        self.unwritten_bytes -= nbytes

    @property
    def appended_size(self) -> int:
        """The bytes appended, written or still with the writer."""
        return self.size + self.unwritten_bytes

    def _prepare(self, batches: list[tuple[int, BatchHeader]]) -> None:
        for _, h in batches:
            if not self.can_convert_to_relative_offset(h.last_offset):
                raise CorruptLogError(f"offset {h.last_offset} does not fit segment base {self.base_offset}")
        try:
            self.offset_index.ensure_capacity()
            self.time_index.ensure_capacity()
        except OSError as e:
            raise KafkaStorageError(f"growing the indexes of {self.log_path} failed: {e}") from e

    def _track_and_index(self, position: int, batches: list[tuple[int, BatchHeader]]) -> None:
        if self.appended_size == 0 and batches[0][1].max_timestamp >= 0:
            self.rolling_based_timestamp = batches[0][1].max_timestamp
        for rel_pos, h in batches:
            pos = position + rel_pos
            self._track(h)
            if self._bytes_since_last_index_entry > self.index_interval_bytes and self._index_has_room():
                self.offset_index.append(h.last_offset, pos)
                self.time_index.maybe_append(self.max_timestamp_so_far, self.offset_of_max_timestamp_so_far)
                self._bytes_since_last_index_entry = 0
                self._last_index_position = pos
            self._bytes_since_last_index_entry += h.size

    # -- reading -------------------------------------------------------------------------------------------
    def translate_offset(self, offset: int, starting_position: int = 0) -> tuple[int, int, int, int] | None:
        """(position, size, base_offset, last_offset) of the first batch with last_offset >= ``offset``."""
        _, pos = self.offset_index.lookup(offset)
        for found in self._walk(max(pos, starting_position)):
            if found[3] >= offset:
                return found
        return None

    def read(
        self, start_offset: int, max_size: int, *, max_offset: int | None = None, min_one_message: bool = True
    ) -> tuple[FileSlice | None, bool] | None:
        """Whole batches from the one containing ``start_offset``; None when this segment has no such batch.

        Returns (slice, first_entry_incomplete); slice is None when nothing may be returned.
        """
        found = self.translate_offset(start_offset)
        if found is None:
            return None
        pos, size, base, _last = found
        if max_offset is not None and base >= max_offset:
            return None, False
        end_limit = self.size
        if max_offset is not None and max_offset < self.next_offset:
            bound = self.translate_offset(max_offset, pos)
            if bound is not None:
                bpos, bsize, bbase, _ = bound
                end_limit = bpos if bbase >= max_offset else bpos + bsize
        if size > max_size:
            if min_one_message:
                return FileSlice(self.fd, pos, size, str(self.log_path)), False
            return None, True
        target = min(pos + max_size, end_limit)
        end = pos + size
        if target == end_limit:
            end = end_limit
        else:
            _, ipos = self.offset_index.lookup_by_position(target)
            cursor = max(ipos, end)
            # An index entry is a batch boundary; when it already covers most of max_size, stop there (max_size
            # is a soft limit) and save the header walk, otherwise walk up to the last whole batch that fits.
            if (cursor - pos) * 4 < (target - pos) * 3:
                for bpos, bsize, _, _ in self._walk(cursor):
                    if bpos + bsize > target:
                        break
                    cursor = bpos + bsize
            end = max(end, cursor)
        return FileSlice(self.fd, pos, end - pos, str(self.log_path)), False

    def read_batch(self, position: int, size: int) -> bytes:
        """The bytes of the batch at ``position`` (control batches for the producer state, tools)."""
        return os.pread(self.fd, size, position)

    def collect_aborted_txns(self, fetch_offset: int, upper_bound_offset: int) -> TxnIndexSearchResult:
        return self.txn_index.collect_aborted_txns(fetch_offset, upper_bound_offset)

    def fetch_upper_bound_offset(self, start_position: int, fetch_size: int) -> int | None:
        """Kafka's fetchUpperBoundOffset: the offset of the first index entry at or past the end of a fetch
        (the entry's batch lies after everything fetched), None when the index has none."""
        found = self.offset_index.fetch_upper_bound(start_position + fetch_size)
        return None if found is None else found[0]

    def batches_from(self, position: int = 0) -> list[tuple[int, BatchHeader]]:
        """Headers of every batch from ``position`` to the end (header walk, no CRC)."""
        out = []
        while position < self.size:
            h = self._read_header(position)
            if h is None:
                break
            out.append((position, h))
            position += h.size
        return out

    def find_offset_by_timestamp(self, timestamp: int, starting_offset: int) -> tuple[int, int, int] | None:
        """(offset, timestamp, leader_epoch) for ListOffsets: the first batch with max_timestamp >= ``timestamp``,
        refined to its first record with timestamp >= ``timestamp`` when the batch is uncompressed CreateTime
        (as Kafka's LogSegment.findOffsetByTimestamp; compressed batches answer with the batch's first offset
        and max timestamp instead of being decompressed)."""
        _, ts_offset = self.time_index.lookup(timestamp)
        _, pos = self.offset_index.lookup(max(ts_offset, starting_offset))
        while pos < self.size:
            h = self._read_header(pos)
            if h is None:
                return None
            if h.max_timestamp >= timestamp and h.last_offset >= starting_offset:
                if h.attributes & (COMPRESSION_MASK | TIMESTAMP_TYPE_MASK) == 0:
                    exact = _first_record_at_or_after(os.pread(self.fd, h.size, pos), timestamp, starting_offset)
                    if exact is not None:
                        return exact[0], exact[1], h.partition_leader_epoch
                return max(h.base_offset, starting_offset), h.max_timestamp, h.partition_leader_epoch
            pos += h.size
        return None

    def offset_of_max_timestamp(self) -> int:
        """ListOffsets MAX_TIMESTAMP's offset in this segment: the first record carrying the segment's max
        timestamp, as Kafka's RecordBatch.offsetOfMaxTimestamp reads it from the batch the segment tracks (whose
        last offset `offset_of_max_timestamp_so_far` is). Uncompressed CreateTime batches are read record by
        record; a compressed one answers with that last offset (not decompressed here)."""
        tracked = self.offset_of_max_timestamp_so_far
        _, pos = self.offset_index.lookup(tracked)
        while pos < self.size:
            h = self._read_header(pos)
            if h is None or h.base_offset > tracked:
                break
            if h.last_offset >= tracked:
                if h.max_timestamp == self.max_timestamp_so_far and \
                        h.attributes & (COMPRESSION_MASK | TIMESTAMP_TYPE_MASK) == 0:
                    exact = _first_record_at_or_after(os.pread(self.fd, h.size, pos), h.max_timestamp,
                                                      h.base_offset)
                    if exact is not None:
                        return exact[0]
                break
            pos += h.size
        return tracked

    # -- recovery and truncation -----------------------------------------------------------------------
    def recover(self, max_message_size: int = INT32_MAX,
                producer_state: ProducerStateManager | None = None) -> RecoveryResult:
        """Validate every batch, rebuild the indexes, truncate an invalid tail. ``producer_state`` (as of the
        segment's base offset) takes each batch and rebuilds the transaction index (Kafka's recover); without
        it the transaction index is left as it is (a cleaner's ``.swap`` segment brings its own)."""
        self.offset_index.reset()
        self.time_index.reset()
        if producer_state is not None:
            self.txn_index.reset()
        self.max_timestamp_so_far = NO_TIMESTAMP
        self.offset_of_max_timestamp_so_far = self.base_offset
        self.next_offset = self.base_offset
        self._bytes_since_last_index_entry = 0
        self._last_index_position = 0
        self.size = os.fstat(self.fd).st_size
        pos = 0
        reason: str | None = None
        bad_offset: int | None = None
        expected_min = self.base_offset
        while pos < self.size:
            raw = os.pread(self.fd, HEADER_SIZE, pos)
            if len(raw) < HEADER_SIZE:
                reason = f"torn batch header ({len(raw)} of {HEADER_SIZE} bytes)"
                break
            try:
                h = read_header(raw, 0, f"batch header at position {pos}")
            except CorruptLogError as e:
                reason = str(e)
                break
            bad_offset = h.base_offset
            if h.size > self.size - pos:
                reason = f"torn batch: {h.size} bytes declared, {self.size - pos} on disk"
                break
            if h.size > max_message_size:
                reason = f"batch size {h.size} exceeds {max_message_size}"
                break
            if h.base_offset < expected_min or not self.can_convert_to_relative_offset(h.last_offset):
                reason = f"non-monotonic base offset {h.base_offset} (expected >= {expected_min})"
                break
            data = os.pread(self.fd, h.size, pos)
            if len(data) < h.size or not crc_is_valid(data, 0, h.size):
                reason = "CRC32C mismatch"
                break
            if producer_state is not None:
                replay_batch(producer_state, self.txn_index, memoryview(data), h)
            if self._bytes_since_last_index_entry > self.index_interval_bytes and self._index_has_room():
                self.offset_index.append(h.last_offset, pos)
                self._track(h)
                self.time_index.maybe_append(self.max_timestamp_so_far, self.offset_of_max_timestamp_so_far)
                self._bytes_since_last_index_entry = 0
                self._last_index_position = pos
            else:
                self._track(h)
            self._bytes_since_last_index_entry += h.size
            expected_min = h.next_offset
            pos += h.size
            bad_offset = None
        truncated = self.size - pos
        if truncated:
            os.ftruncate(self.fd, pos)
            self.size = pos
        self._load_rolling_timestamp()
        return RecoveryResult(truncated, pos, self.next_offset, reason if truncated else None, bad_offset)

    def truncate_to(self, offset: int) -> int:
        """Remove the batch containing ``offset`` and everything after it; returns the bytes removed."""
        found = self.translate_offset(offset)
        if found is not None:
            # Kafka cuts at the start of the batch that contains ``offset``: batches are never split
            cut = found[0]
        elif self.next_offset > offset:
            cut = self.size  # only reserved batches (their write failed) lie at or after ``offset``
        else:
            return 0
        self.offset_index.truncate_to(offset)
        self.time_index.truncate_to(offset)
        self.txn_index.truncate_to(offset)
        removed = self.size - cut
        os.ftruncate(self.fd, cut)
        self.size = cut
        self.unwritten_bytes = 0
        # the surviving index entries are exact; walk only from the last one to recompute the tail state
        self._load_tail()
        return removed

    # -- lifecycle -----------------------------------------------------------------------------------------
    def should_roll(
        self, size_to_append: int, max_timestamp: int, last_offset: int, config: LogConfig, now_ms: int
    ) -> bool:
        rolling_ts = self.rolling_based_timestamp
        if rolling_ts is None:
            rolling_ts = self.created_ms
        size = self.appended_size
        return (
            size > config.segment_bytes - size_to_append
            or (size > 0 and now_ms - rolling_ts > config.segment_ms)
            or self.offset_index.is_full()
            or self.time_index.is_full()
            or not self.can_convert_to_relative_offset(last_offset)
        )

    def on_become_inactive(self) -> None:
        """Final time index entry and trimmed indexes, as Kafka does when the segment rolls."""
        if self.max_timestamp_so_far >= 0:
            self.time_index.maybe_append(
                self.max_timestamp_so_far, self.offset_of_max_timestamp_so_far, skip_full_check=True
            )
        self.offset_index.trim_to_valid_size()
        self.time_index.trim_to_valid_size()

    def largest_timestamp(self) -> int:
        """Max batch timestamp, or the file's mtime when no batch carries one (Kafka's largestTimestamp)."""
        if self.max_timestamp_so_far >= 0:
            return self.max_timestamp_so_far
        try:
            return int(os.stat(self.log_path).st_mtime * 1000)
        except OSError:
            return 0

    def flush(self) -> None:
        try:
            os.fsync(self.fd)
        except OSError as e:
            if self.fd >= 0:
                raise KafkaStorageError(f"fsync of {self.log_path} failed: {e}") from e
        self.offset_index.flush()
        self.time_index.flush()
        self.txn_index.flush()

    def close(self) -> None:
        self.on_become_inactive()
        self.close_handles()

    def close_handles(self) -> None:
        self.offset_index.close()
        self.time_index.close()
        self.txn_index.close()
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    def change_file_suffixes(self, old_suffix: str, new_suffix: str) -> None:
        """Rename the segment's files from ``old_suffix`` to ``new_suffix`` (e.g. "" -> ".deleted")."""

        def renamed(p: Path) -> Path:
            name = p.name
            if old_suffix and name.endswith(old_suffix):
                name = name[: -len(old_suffix)]
            return p.with_name(name + new_suffix)

        new_log = renamed(self.log_path)
        os.replace(self.log_path, new_log)
        self.log_path = new_log
        for idx in (self.offset_index, self.time_index):
            if idx.path.exists():
                idx.rename_to(renamed(idx.path))
            else:
                idx.path = renamed(idx.path)
        self.txn_index.rename_to(renamed(self.txn_index.path))
        self.file_suffix = new_suffix

    def delete_files(self) -> None:
        self.close_handles()
        for p in (self.log_path, self.offset_index.path, self.time_index.path):
            p.unlink(missing_ok=True)
        self.txn_index.delete()

    def read_all(self) -> bytes:
        """Copy of the whole .log file (tests and tools)."""
        return FileSlice(self.fd, 0, self.size, str(self.log_path)).read()

    def max_timestamp_at(self, position: int) -> int:
        raw = os.pread(self.fd, 8, position + MAX_TIMESTAMP_AT)
        return int.from_bytes(raw, "big", signed=True)

    def __repr__(self) -> str:
        return f"LogSegment(base_offset={self.base_offset}, size={self.size}, path={self.log_path})"


def _first_record_at_or_after(batch: bytes, timestamp: int, starting_offset: int) -> tuple[int, int] | None:
    """(offset, timestamp) of the first record of an uncompressed CreateTime batch with timestamp >=
    ``timestamp`` and offset >= ``starting_offset``; reads record lengths and deltas only. None when there is
    none or the records do not parse (the caller then answers with the batch's own offset and timestamp)."""
    try:
        for offset, ts in RecordBatch(batch).offsets_and_timestamps():
            if ts >= timestamp and offset >= starting_offset:
                return offset, ts
    except (CorruptRecordError, InvalidRecordError):
        return None
    return None


def _now_ms() -> int:
    return int(time.time() * 1000)

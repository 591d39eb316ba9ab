"""Kafka's segment indexes, mmap'd: ``.index`` (offset -> position) and ``.timeindex`` (time -> offset).

Formats (big-endian, as Kafka's OffsetIndex/TimeIndex):
- ``.index``: 8-byte entries ``relative_offset int32 | position int32`` (relative_offset = offset - base).
- ``.timeindex``: 12-byte entries ``timestamp int64 | relative_offset int32``.
A writable index is preallocated to ``max_index_size`` (rounded down to whole entries) and trimmed to its
entries when the segment rolls or closes; a new one's file is created only with its first entry, or empty
when it is trimmed before one (Kafka's LazyIndex defers it too); on open the entry count is the file length /
entry size, then Kafka's sanity checks run (``sanity_check`` raises ``CorruptIndexError``; the segment rebuilds
the index). Lookups are binary searches (the offset index keeps a native-endian copy of its two columns, 8 bytes per
entry, so the search runs in C's ``bisect``). Entries are strictly increasing in offset (and in timestamp for
the time index). Not thread-safe except ``flush``, which may run in a worker thread.
"""

from __future__ import annotations

import bisect
import errno
import mmap
import os
import struct
import sys
import threading
from array import array
from pathlib import Path

from storage.errors import CorruptIndexError, InvalidRecordError

_OFFSET_ENTRY = struct.Struct(">ii")
_TIME_ENTRY = struct.Struct(">qi")
NO_TIMESTAMP = -1


class _MmapIndex:
    entry_size: int = 0

    def __init__(self, path: Path, base_offset: int, max_index_size: int, *, writable: bool = True,
                 new: bool = False) -> None:
        """``new``: the file is known not to exist yet (a segment of a log just created): nothing is looked up."""
        if max_index_size < self.entry_size:
            raise ValueError(f"invalid max index size {max_index_size}")
        self.path = Path(path)
        self.base_offset = base_offset
        self.max_index_size = max_index_size - max_index_size % self.entry_size
        self.writable = writable
        self._lock = threading.Lock()
        self._mmap: mmap.mmap | None = None
        self._closed = False
        self._cols: tuple[array, array] | None = None
        if writable and (new or not self.path.exists()):
            # A new segment's index (Kafka's LazyIndex): the file is created when the index first grows;
            # creating two more files per new partition cost as much as its log and its directory together.
            self.entries = 0
            self._length = 0
            self._created = False
            return
        self._created = True
        exists = self.path.stat().st_size > 0
        fd = self._open()
        try:
            if exists:
                length = os.fstat(fd).st_size
                self.entries = length // self.entry_size
            else:
                self.entries = 0
                if writable:
                    os.ftruncate(fd, self.max_index_size)
            self._length = os.fstat(fd).st_size
        finally:
            os.close(fd)

    def _open(self) -> int:
        """The file, opened only to be mapped or resized. It is mapped on first use (`_buf`), not when opened: an
        index nobody has read or written yet holds no descriptor (a new partition's empty segment holds only its
        log's), and a mapped one holds the mapping's own (Python's mmap dups the descriptor it is given)."""
        return os.open(self.path, os.O_RDWR | os.O_CREAT if self.writable else os.O_RDONLY, 0o644)

    # -- file management -------------------------------------------------------------------------------
    def _map(self, fd: int, length: int) -> None:
        if self._mmap is not None:
            self._mmap.close()
            self._mmap = None
        self._length = length
        if length > 0:
            access = mmap.ACCESS_WRITE if self.writable else mmap.ACCESS_READ
            self._mmap = mmap.mmap(fd, length, access=access)

    @property
    def max_entries(self) -> int:
        return self.max_index_size // self.entry_size

    @property
    def size_in_bytes(self) -> int:
        return self.entries * self.entry_size

    @property
    def file_length(self) -> int:
        return self._length

    def is_full(self) -> bool:
        return self.entries >= self.max_entries

    def resize(self, new_size: int) -> None:
        """Grow or shrink the file (never below the used entries), as Kafka's AbstractIndex.resize."""
        new_size = max(new_size - new_size % self.entry_size, self.size_in_bytes)
        with self._lock:
            if new_size == self._length and self._created:
                return
            if self._mmap is not None:
                self._mmap.flush()
                self._mmap.close()
                self._mmap = None
            if self._closed:
                raise OSError(errno.EBADF, f"index {self.path} is closed")
            fd = self._open()
            try:
                os.ftruncate(fd, new_size)
            finally:
                os.close(fd)
            self._created = True  # a trimmed empty index is an empty file, as Kafka leaves it at close
            self._length = new_size  # mapped again on its next use

    def trim_to_valid_size(self) -> None:
        self.resize(self.size_in_bytes)

    def reset_max_size(self, max_index_size: int) -> None:
        self.max_index_size = max(max_index_size - max_index_size % self.entry_size, self.size_in_bytes)
        self.resize(self.max_index_size)

    def ensure_capacity(self) -> None:
        """Grow a trimmed index back to its max size now, so no later entry append needs the disk."""
        if self._length < self.max_index_size:
            self.resize(self.max_index_size)

    def _ensure_room(self) -> None:
        if self.size_in_bytes + self.entry_size > self._length:
            self.resize(max(self.max_index_size, self.size_in_bytes + self.entry_size))

    def flush(self) -> None:
        with self._lock:
            if self._mmap is not None:
                self._mmap.flush()

    def reset(self) -> None:
        """Drop every entry (used before a rebuild)."""
        self.entries = 0
        self._cols = None
        if self.writable:
            # shrinking to zero and growing again makes the kernel zero-fill, without writing 10 MiB ourselves
            self.resize(0)
            self.resize(self.max_index_size)

    def close(self) -> None:
        with self._lock:
            self._closed = True
            if self._mmap is not None:
                self._mmap.close()
                self._mmap = None

    def rename_to(self, new_path: Path) -> None:
        os.replace(self.path, new_path)
        self.path = Path(new_path)

    def delete(self) -> None:
        self.close()
        self.path.unlink(missing_ok=True)

    def _relative(self, offset: int) -> int:
        rel = offset - self.base_offset
        if not 0 <= rel <= 2147483647:
            raise InvalidRecordError(f"offset {offset} cannot be stored relative to base {self.base_offset}")
        return rel

    def _buf(self) -> mmap.mmap:
        buf = self._mmap
        if buf is None:
            with self._lock:
                if self._mmap is None and self._length > 0 and not self._closed:
                    fd = self._open()
                    try:
                        self._map(fd, self._length)
                    finally:
                        os.close(fd)
                buf = self._mmap
            if buf is None:
                raise CorruptIndexError(f"index {self.path} is not mapped")
        return buf


class OffsetIndex(_MmapIndex):
    entry_size = 8

    def entry(self, n: int) -> tuple[int, int]:
        rel, pos = _OFFSET_ENTRY.unpack_from(self._buf(), n * 8)
        return self.base_offset + rel, pos

    def last_entry(self) -> tuple[int, int]:
        return self.entry(self.entries - 1) if self.entries else (self.base_offset, 0)

    @property
    def last_offset(self) -> int:
        return self.last_entry()[0]

    def sanity_check(self, log_size: int | None = None) -> None:
        if self._length % self.entry_size:
            raise CorruptIndexError(f"index file {self.path} length {self._length} is not a multiple of 8")
        if self.entries == 0:
            return
        last_offset, last_pos = self.last_entry()
        if last_offset < self.base_offset:
            raise CorruptIndexError(f"index {self.path}: last offset {last_offset} < base {self.base_offset}")
        if self.entries > 1:
            prev_offset, prev_pos = self.entry(self.entries - 2)
            # a preallocated file left untrimmed by a crash ends in zero entries
            if prev_offset >= last_offset or prev_pos >= last_pos:
                raise CorruptIndexError(f"index {self.path}: entries not increasing at the tail")
        if log_size is not None and last_pos > log_size:
            raise CorruptIndexError(f"index {self.path}: position {last_pos} beyond log size {log_size}")

    def _columns(self) -> tuple[array, array]:
        """Native-endian (relative_offset, position) columns, rebuilt whenever they fall out of step."""
        cols = self._cols
        if cols is None or len(cols[0]) != self.entries:
            flat = array("i")
            if self.entries:
                flat.frombytes(self._buf()[: self.entries * 8])
                if sys.byteorder == "little":
                    flat.byteswap()
            cols = self._cols = (flat[0::2], flat[1::2])
        return cols

    def _largest_lower_bound_slot(self, target_offset: int) -> int:
        """Slot of the largest entry with offset <= target, or -1."""
        if not self.entries:
            return -1
        return bisect.bisect_right(self._columns()[0], target_offset - self.base_offset) - 1

    def lookup(self, target_offset: int) -> tuple[int, int]:
        """(offset, position) of the largest entry with offset <= target, else (base_offset, 0)."""
        slot = self._largest_lower_bound_slot(target_offset)
        if slot < 0:
            return self.base_offset, 0
        rel, pos = self._columns()
        return self.base_offset + rel[slot], pos[slot]

    def lookup_by_position(self, target_position: int) -> tuple[int, int]:
        """(offset, position) of the largest entry with position <= target, else (base_offset, 0)."""
        if not self.entries:
            return self.base_offset, 0
        rel, pos = self._columns()
        slot = bisect.bisect_right(pos, target_position) - 1
        if slot < 0:
            return self.base_offset, 0
        return self.base_offset + rel[slot], pos[slot]

    def fetch_upper_bound(self, target_position: int) -> tuple[int, int] | None:
        """(offset, position) of the smallest entry with position >= target, None when there is none."""
        if not self.entries:
            return None
        rel, pos = self._columns()
        slot = bisect.bisect_left(pos, target_position)
        if slot >= len(pos):
            return None
        return self.base_offset + rel[slot], pos[slot]

    def append(self, offset: int, position: int) -> None:
        if self.entries and offset <= self.last_offset:
            raise InvalidRecordError(
                f"index {self.path}: offset {offset} is not larger than the last offset {self.last_offset}"
            )
        if self.is_full():
            raise InvalidRecordError(f"index {self.path} is full ({self.entries} entries)")
        self._ensure_room()
        rel = self._relative(offset)
        _OFFSET_ENTRY.pack_into(self._buf(), self.entries * 8, rel, position)
        cols = self._cols
        if cols is not None and len(cols[0]) == self.entries:
            cols[0].append(rel)
            cols[1].append(position)
        self.entries += 1

    def truncate_to(self, offset: int) -> None:
        """Remove entries with offset >= ``offset``."""
        slot = self._largest_lower_bound_slot(offset)
        if slot < 0:
            self.entries = 0
        elif self.entry(slot)[0] == offset:
            self.entries = slot
        else:
            self.entries = slot + 1
        self._cols = None

    def all_entries(self) -> list[tuple[int, int]]:
        return [self.entry(i) for i in range(self.entries)]


class TimeIndex(_MmapIndex):
    entry_size = 12

    def entry(self, n: int) -> tuple[int, int]:
        ts, rel = _TIME_ENTRY.unpack_from(self._buf(), n * 12)
        return ts, self.base_offset + rel

    def last_entry(self) -> tuple[int, int]:
        return self.entry(self.entries - 1) if self.entries else (NO_TIMESTAMP, self.base_offset)

    def is_full(self) -> bool:
        # Kafka keeps one slot free for the entry written when the segment becomes inactive
        return self.entries >= self.max_entries - 1

    def sanity_check(self) -> None:
        if self._length % self.entry_size:
            raise CorruptIndexError(f"time index {self.path} length {self._length} is not a multiple of 12")
        if self.entries == 0:
            return
        last_ts, last_offset = self.last_entry()
        first_ts, _ = self.entry(0)
        if last_ts < first_ts:
            raise CorruptIndexError(f"time index {self.path}: last timestamp {last_ts} < first {first_ts}")
        if last_offset < self.base_offset:
            raise CorruptIndexError(f"time index {self.path}: last offset {last_offset} < base")
        if self.entries > 1:
            prev_ts, prev_offset = self.entry(self.entries - 2)
            if prev_ts >= last_ts or prev_offset > last_offset:
                raise CorruptIndexError(f"time index {self.path}: entries not increasing at the tail")

    def maybe_append(self, timestamp: int, offset: int, *, skip_full_check: bool = False) -> None:
        """Append when ``timestamp`` is larger than the last entry's, as Kafka's TimeIndex.maybeAppend."""
        if not skip_full_check and self.is_full():
            raise InvalidRecordError(f"time index {self.path} is full ({self.entries} entries)")
        last_ts, last_offset = self.last_entry()
        if self.entries and offset < last_offset:
            raise InvalidRecordError(f"time index {self.path}: offset {offset} < last offset {last_offset}")
        if self.entries and timestamp <= last_ts:
            return
        if self.entries >= self.max_entries:
            return  # only reachable with skip_full_check on an exactly full index
        self._ensure_room()
        _TIME_ENTRY.pack_into(self._buf(), self.entries * 12, timestamp, self._relative(offset))
        self.entries += 1

    def lookup(self, target_timestamp: int) -> tuple[int, int]:
        """(timestamp, offset) of the largest entry with timestamp <= target, else (-1, base_offset)."""
        if not self.entries:
            return NO_TIMESTAMP, self.base_offset
        buf = self._buf()
        unpack = _TIME_ENTRY.unpack_from
        if unpack(buf, 0)[0] > target_timestamp:
            return NO_TIMESTAMP, self.base_offset
        lo, hi = 0, self.entries - 1
        while lo < hi:
            mid = (lo + hi + 1) >> 1
            if unpack(buf, mid * 12)[0] <= target_timestamp:
                lo = mid
            else:
                hi = mid - 1
        return self.entry(lo)

    def truncate_to(self, offset: int) -> None:
        """Remove entries with offset >= ``offset``."""
        n = self.entries
        while n > 0 and self.entry(n - 1)[1] >= offset:
            n -= 1
        self.entries = n

    def all_entries(self) -> list[tuple[int, int]]:
        return [self.entry(i) for i in range(self.entries)]

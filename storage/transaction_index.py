"""Kafka's transaction index: ``<base_offset:020d>.txnindex``, the aborted transactions of one segment.

Format (Kafka's ``TransactionIndex`` / ``AbortedTxn``, big-endian), a plain sequence of 34-byte entries::

    version int16 (0) | producer_id int64 | first_offset int64 | last_offset int64 | last_stable_offset int64

One entry per transaction whose ABORT marker was written into the segment: ``first_offset`` is the
transaction's first data offset (possibly in an earlier segment), ``last_offset`` the marker's offset and
``last_stable_offset`` the partition's LSO just after the abort. Entries are in marker order, so
``last_offset`` strictly increases (``append`` refuses anything else). A read_committed fetch collects the
entries overlapping its range (``collect_aborted_txns``): each tells the consumer to drop that producer's
records from ``first_offset`` until the marker.

Contract:
- The file is created on the first ``append`` only (most segments never see an abort); a missing file is an
  empty index. Entries are read once into memory and kept in step with every change (the file stays the
  truth across restarts).
- ``truncate_to(offset)`` drops the entries whose marker is at or after ``offset``; ``reset`` drops all
  (the segment recovery rebuilds the index); ``rename_to`` follows the segment's suffix changes
  (``.deleted``, ``.cleaned``, ``.swap``); ``delete`` removes the file.
- ``sanity_check`` raises ``CorruptIndexError`` for an entry whose marker lies before the segment's base
  offset, an unknown version, or entries out of order; a trailing partial entry (a torn write) is ignored,
  as Kafka's reader does.
- Writes are ``pwrite``s without fsync; ``flush`` fsyncs (the log's flush, or a roll). Not thread-safe, except
  that the cleaner's thread may read the entries of a non-active segment while appends go elsewhere.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

from storage.errors import CorruptIndexError, KafkaStorageError

__all__ = ["ABORTED_TXN_SIZE", "TXN_INDEX_SUFFIX", "AbortedTxn", "TransactionIndex", "TxnIndexSearchResult"]

TXN_INDEX_SUFFIX = ".txnindex"
CURRENT_VERSION = 0
_ENTRY = struct.Struct(">hqqqq")
ABORTED_TXN_SIZE = _ENTRY.size  # 34


class AbortedTxn(NamedTuple):
    """One aborted transaction (Kafka's AbortedTxn). ``version`` is what the file says (0 when we write)."""

    producer_id: int
    first_offset: int
    last_offset: int
    last_stable_offset: int
    version: int = CURRENT_VERSION

    def to_bytes(self) -> bytes:
        return _ENTRY.pack(self.version, self.producer_id, self.first_offset, self.last_offset,
                           self.last_stable_offset)

    @classmethod
    def from_bytes(cls, data: bytes | bytearray | memoryview, pos: int = 0) -> AbortedTxn:
        version, producer_id, first, last, lso = _ENTRY.unpack_from(data, pos)
        return cls(producer_id, first, last, lso, version)


class TxnIndexSearchResult(NamedTuple):
    """Aborted transactions overlapping a fetch range, and whether later segments need not be searched."""

    aborted_transactions: list[AbortedTxn]
    is_complete: bool


def parse_entries(data: bytes | bytearray | memoryview) -> list[AbortedTxn]:
    """Every whole 34-byte entry of a ``.txnindex`` file's bytes (a torn tail is left out)."""
    return [AbortedTxn.from_bytes(data, pos) for pos in range(0, len(data) - ABORTED_TXN_SIZE + 1, ABORTED_TXN_SIZE)]


@dataclass
class TransactionIndex:
    """The aborted-transaction index of the segment starting at ``start_offset``, stored at ``path``."""

    start_offset: int
    path: Path

    def __post_init__(self) -> None:
        self.path = Path(self.path)
        self._fd = -1
        self._entries: list[AbortedTxn] | None = None  # loaded on first use
        self._size = 0  # bytes of whole entries in the file

    # -- reading -------------------------------------------------------------------------------------------
    def _load(self) -> list[AbortedTxn]:
        entries = self._entries
        if entries is None:
            try:
                data = self.path.read_bytes()
            except FileNotFoundError:
                data = b""
            except OSError as e:
                raise KafkaStorageError(f"reading transaction index {self.path} failed: {e}") from e
            entries = self._entries = parse_entries(data)
            self._size = len(entries) * ABORTED_TXN_SIZE
        return entries

    def all_aborted_txns(self) -> list[AbortedTxn]:
        return list(self._load())

    @property
    def last_offset(self) -> int | None:
        entries = self._load()
        return entries[-1].last_offset if entries else None

    def collect_aborted_txns(self, fetch_offset: int, upper_bound_offset: int) -> TxnIndexSearchResult:
        """Kafka's collectAbortedTxns: the entries whose range [first_offset, last_offset] meets
        [fetch_offset, upper_bound_offset); complete (no later segment can add any) once an entry's LSO
        reaches the upper bound, since every later abort then started at or after it."""
        found: list[AbortedTxn] = []
        for txn in self._load():
            if txn.last_offset >= fetch_offset and txn.first_offset < upper_bound_offset:
                found.append(txn)
            if txn.last_stable_offset >= upper_bound_offset:
                return TxnIndexSearchResult(found, True)
        return TxnIndexSearchResult(found, False)

    def sanity_check(self) -> None:
        last = None
        for txn in self._load():
            if txn.version > CURRENT_VERSION:
                raise CorruptIndexError(
                    f"unexpected aborted transaction version {txn.version} in transaction index {self.path}")
            if txn.last_offset < self.start_offset:
                raise CorruptIndexError(
                    f"last offset of aborted transaction {txn} in index {self.path} is less than start offset "
                    f"{self.start_offset}")
            if last is not None and txn.last_offset <= last:
                raise CorruptIndexError(f"aborted transactions out of order in transaction index {self.path}")
            last = txn.last_offset

    # -- writing -------------------------------------------------------------------------------------------
    def _open(self) -> int:
        if self._fd < 0:
            try:
                self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
            except OSError as e:
                raise KafkaStorageError(f"opening transaction index {self.path} failed: {e}") from e
        return self._fd

    def append(self, txn: AbortedTxn) -> None:
        entries = self._load()
        if entries and entries[-1].last_offset >= txn.last_offset:
            raise ValueError(
                f"the last offset of appended transactions must increase: {txn.last_offset} is not above "
                f"{entries[-1].last_offset} in {self.path}")
        fd = self._open()
        data = txn.to_bytes()
        try:
            written = 0
            while written < len(data):
                written += os.pwrite(fd, data[written:], self._size + written)
        except OSError as e:
            try:
                os.ftruncate(fd, self._size)
            except OSError:
                pass
            raise KafkaStorageError(f"write to transaction index {self.path} failed: {e}") from e
        self._size += ABORTED_TXN_SIZE
        entries.append(txn)

    def append_all(self, txns: Iterable[AbortedTxn]) -> None:
        for txn in txns:
            self.append(txn)

    def truncate_to(self, offset: int) -> None:
        """Drop the entries whose marker is at or after ``offset``."""
        entries = self._load()
        keep = len(entries)
        while keep and entries[keep - 1].last_offset >= offset:
            keep -= 1
        if keep == len(entries):
            return
        self._truncate_entries(keep)

    def reset(self) -> None:
        """Remove every entry (the file, if any, becomes empty)."""
        self._load()
        if self._fd >= 0 or self.path.exists():
            self._truncate_entries(0)
        else:
            self._entries = []
            self._size = 0

    def _truncate_entries(self, keep: int) -> None:
        assert self._entries is not None
        size = keep * ABORTED_TXN_SIZE
        try:
            os.ftruncate(self._open(), size)
        except OSError as e:
            raise KafkaStorageError(f"truncating transaction index {self.path} failed: {e}") from e
        del self._entries[keep:]
        self._size = size

    def flush(self) -> None:
        if self._fd >= 0:
            try:
                os.fsync(self._fd)
            except OSError as e:
                raise KafkaStorageError(f"fsync of transaction index {self.path} failed: {e}") from e

    # -- files ---------------------------------------------------------------------------------------------
    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def rename_to(self, new_path: Path) -> None:
        """Move the file (when there is one) and follow it."""
        new_path = Path(new_path)
        if self.path.exists():
            os.replace(self.path, new_path)
        self.path = new_path

    def delete(self) -> None:
        self.close()
        self.path.unlink(missing_ok=True)
        self._entries = []
        self._size = 0

    def __len__(self) -> int:
        return len(self._load())

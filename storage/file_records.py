"""Whole entries of a log file, read in large chunks (Kafka's FileRecords / FileLogInputStream).

Contract: ``iter_file_entries(fd, start, end)`` yields ``(position, magic, entry)`` for every complete entry
in bytes ``[start, end)`` of an open file, where an entry is Kafka's log framing, ``offset int64 |
length int32 | length bytes``: a v2 record batch, or a v0/v1 message (whose magic sits at the same byte,
16). It reads ``chunk_bytes`` at a time (segments can be 1 GiB) and stops quietly at the first entry that
is incomplete, longer than ``max_entry_bytes``, or shorter than its format's fixed header, as Kafka's reader
stops at a partial tail. What an entry holds is the caller's business (``records.RecordBatch``,
``records.parse_header``). Used by the log cleaner and the dump tool, never by the produce or fetch path.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Iterator

from records import LOG_OVERHEAD
from records.header import MAGIC_AT, MIN_BATCH_LENGTH

__all__ = ["DEFAULT_MAX_ENTRY_BYTES", "iter_entries", "iter_file_entries"]

DEFAULT_MAX_ENTRY_BYTES = 128 * 1024 * 1024
DEFAULT_CHUNK_BYTES = 4 * 1024 * 1024
# The length field's smallest honest value per magic: crc, magic, attributes, [timestamp], key and value
# lengths for v0/v1; the fixed batch header for v2.
_MIN_LENGTH = {0: 4 + 1 + 1 + 4 + 4, 1: 4 + 1 + 1 + 8 + 4 + 4}
_OFFSET_AND_LENGTH = struct.Struct(">qi")


def iter_entries(
    buf: bytes | bytearray | memoryview, *, max_entry_bytes: int = DEFAULT_MAX_ENTRY_BYTES
) -> Iterator[tuple[int, int, memoryview]]:
    """``(position, magic, entry)`` of each complete entry of ``buf``; stops at the first that is not."""
    view = memoryview(buf)
    pos = 0
    end = len(view)
    while end - pos > MAGIC_AT:
        _offset, length = _OFFSET_AND_LENGTH.unpack_from(view, pos)
        magic = view[pos + MAGIC_AT]
        if not _MIN_LENGTH.get(magic, MIN_BATCH_LENGTH) <= length <= max_entry_bytes:
            return
        if pos + LOG_OVERHEAD + length > end:
            return
        yield pos, magic, view[pos : pos + LOG_OVERHEAD + length]
        pos += LOG_OVERHEAD + length


def iter_file_entries(
    fd: int,
    start: int,
    end: int,
    *,
    max_entry_bytes: int = DEFAULT_MAX_ENTRY_BYTES,
    chunk_bytes: int = DEFAULT_CHUNK_BYTES,
) -> Iterator[tuple[int, int, memoryview]]:
    """``iter_entries`` over bytes ``[start, end)`` of ``fd``; positions are file positions."""
    pos = start
    while end - pos > MAGIC_AT:
        chunk = os.pread(fd, min(chunk_bytes, end - pos), pos)
        consumed = 0
        for rel, magic, entry in iter_entries(chunk, max_entry_bytes=max_entry_bytes):
            yield pos + rel, magic, entry
            consumed = rel + len(entry)
        if consumed == 0:
            # Either one entry larger than the chunk, or an incomplete tail: read exactly what it declares.
            if len(chunk) < LOG_OVERHEAD:
                return
            (length,) = struct.unpack_from(">i", chunk, 8)
            size = LOG_OVERHEAD + length
            if length < 0 or length > max_entry_bytes or pos + size > end or size <= len(chunk):
                return
            for rel, magic, entry in iter_entries(os.pread(fd, size, pos), max_entry_bytes=max_entry_bytes):
                yield pos + rel, magic, entry
                consumed = rel + len(entry)
            if consumed == 0:
                return
        pos += consumed

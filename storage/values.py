"""Small value types shared by the storage engine and the broker.

Contract: ``TopicPartition`` stringifies to its directory name (``"topic-3"``). ``FileSlice`` names bytes of a
segment file by (fd, position, length) so the server can ``os.sendfile`` them; ``read()`` copies and is for
tests, tools and compaction only. The fd stays open until the segment is closed or its deletion delay passes.
"""

from __future__ import annotations

import os
from dataclasses import dataclass


@dataclass(frozen=True, order=True)
class TopicPartition:
    topic: str
    partition: int

    def __str__(self) -> str:
        return f"{self.topic}-{self.partition}"

    @classmethod
    def from_dir_name(cls, name: str) -> TopicPartition:
        """Parse ``<topic>-<partition>``; ValueError when the name is not a partition directory."""
        topic, sep, part = name.rpartition("-")
        if not sep or not topic or not part.isdigit():
            raise ValueError(f"not a partition directory name: {name!r}")
        return cls(topic, int(part))


@dataclass(frozen=True)
class LogAppendInfo:
    first_offset: int
    last_offset: int
    max_timestamp: int
    offset_of_max_timestamp: int
    log_append_time: int  # -1 unless given
    log_start_offset: int
    records_count: int
    valid_bytes: int
    duplicate: bool = False  # idempotent duplicate: offsets are the original batch's, nothing written


@dataclass(frozen=True)
class FileSlice:
    fileno: int
    position: int
    length: int
    path: str

    def read(self) -> bytes:
        out = bytearray()
        while len(out) < self.length:
            chunk = os.pread(self.fileno, self.length - len(out), self.position + len(out))
            if not chunk:
                break
            out += chunk
        return bytes(out)


@dataclass(frozen=True)
class FetchDataInfo:
    fetch_offset: int
    records: FileSlice | None  # None = no data (at LEO / max_offset)
    first_entry_incomplete: bool = False

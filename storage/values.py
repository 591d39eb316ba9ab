"""Small value types shared by the storage engine and the broker.

Contract: ``TopicPartition`` is the one topic-partition type of the broker, its metadata store, the group
coordinator and compat: hashable, ordered (topic, then partition), unpackable (``topic, partition = tp``), and it
stringifies to its directory name (``"topic-3"``). ``FileSlice`` names bytes of a
segment file by (fd, position, length) so the server can ``os.sendfile`` them; ``read()`` copies and is for
tests, tools and compaction only. The fd stays open until the segment is closed or its deletion delay passes.
``LogOffsetMetadata`` places an offset in the log (segment and byte position) so that the distance between two
offsets on one segment is a subtraction, not a read.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass


@dataclass(frozen=True, order=True)
class TopicPartition:
    topic: str
    partition: int

    def __str__(self) -> str:
        return f"{self.topic}-{self.partition}"

    def __iter__(self) -> Iterator[str | int]:
        # Unpacking only; hashing and equality stay the dataclass's, so its cost as a dict key is unchanged.
        return iter((self.topic, self.partition))

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


@dataclass(frozen=True, slots=True)
class LogOffsetMetadata:
    """Where an offset sits in the log (Kafka's LogOffsetMetadata): the offset, the base offset of the segment
    holding its batch and that batch's byte position in the segment. Built from an offset alone
    (``segment_base_offset`` -1, "message offset only") it compares by offset but has no position."""

    message_offset: int
    segment_base_offset: int = -1
    relative_position_in_segment: int = -1

    @property
    def message_offset_only(self) -> bool:
        return self.segment_base_offset < 0

    def on_older_segment(self, other: LogOffsetMetadata) -> bool:
        """True when this offset lies on a segment before ``other``'s (both must have positions)."""
        return self.segment_base_offset < other.segment_base_offset

    def on_same_segment(self, other: LogOffsetMetadata) -> bool:
        return self.segment_base_offset == other.segment_base_offset

    def position_diff(self, other: LogOffsetMetadata) -> int:
        """Bytes from ``other`` up to this offset; both on the same segment."""
        if self.message_offset_only or other.message_offset_only or not self.on_same_segment(other):
            raise ValueError(f"no position difference between {self} and {other}")
        return self.relative_position_in_segment - other.relative_position_in_segment


@dataclass(frozen=True)
class FetchDataInfo:
    fetch_offset: int
    records: FileSlice | None  # None = no data (at LEO / max_offset)
    first_entry_incomplete: bool = False
    # Where fetch_offset sits; message-offset-only when the read did not have to find it (Log.read).
    fetch_offset_metadata: LogOffsetMetadata | None = None
    # read_committed reads: storage.transaction_index.AbortedTxn entries overlapping the range (None otherwise)
    aborted_transactions: list | None = None

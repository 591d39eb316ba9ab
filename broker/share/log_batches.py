"""The log batches a share-partition leader reads, as far as it needs to look into them: their offsets, whether
they are control batches (transaction markers, and which), and, for a group reading read_committed
(`share.isolation.level`), which transactional batches were aborted.

Contract: `parse_batches(buf)` gives the whole batches in `buf` (a trailing partial batch is left out);
`deliverable(batches, aborted)` says per batch whether its records may be handed out: never a control batch,
and with `aborted` (the fetch's aborted transactions, read_committed) not a transactional batch of a producer
whose transaction was aborted, from that transaction's first offset to its ABORT marker (the consumer's rule
in Kafka's fetcher, applied by Kafka 4.1's share partitions).
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

_HEADER = struct.Struct(">qi")
_TRANSACTIONAL, _CONTROL = 0x10, 0x20
_RECORDS_AT = 61  # the first record of a magic-2 batch
ABORT = 0


@dataclass(frozen=True, slots=True)
class LogBatch:
    first_offset: int
    last_offset: int
    control: bool
    transactional: bool
    producer_id: int
    raw: bytes
    marker: int = -1  # a control batch's marker type: 0 ABORT, 1 COMMIT


def parse_batches(buf: bytes) -> list[LogBatch]:
    out: list[LogBatch] = []
    pos = 0
    while pos + 12 <= len(buf):
        base, length = _HEADER.unpack_from(buf, pos)
        end = pos + 12 + length
        if end > len(buf) or length < 0:
            break
        raw = bytes(buf[pos:end])
        if len(raw) > _RECORDS_AT and raw[16] >= 2:
            (attributes,) = struct.unpack_from(">h", raw, 21)
            (last_delta,) = struct.unpack_from(">i", raw, 23)
            (producer_id,) = struct.unpack_from(">q", raw, 43)
            control = bool(attributes & _CONTROL)
            out.append(LogBatch(base, base + last_delta, control, bool(attributes & _TRANSACTIONAL), producer_id,
                                raw, _marker(raw) if control else -1))
        else:
            out.append(LogBatch(base, base, False, False, -1, raw))
        pos = end
    return out


def deliverable(batches: Sequence[LogBatch], aborted: Iterable[tuple[int, int]] | None) -> list[bool]:
    """Per batch: may its records be handed out. `aborted`: (producer id, first offset) of the aborted
    transactions overlapping the batches (read_committed), or None (read_uncommitted)."""
    if aborted is None:
        return [not b.control for b in batches]
    pending = sorted(aborted, key=lambda a: a[1])
    aborting: set[int] = set()
    out = []
    for b in batches:
        while pending and pending[0][1] <= b.last_offset:
            aborting.add(pending.pop(0)[0])
        if b.control:
            if b.marker == ABORT:
                aborting.discard(b.producer_id)
            out.append(False)
        else:
            out.append(not (b.transactional and b.producer_id in aborting))
    return out


def _marker(raw: bytes) -> int:
    """The type of a control batch's first record's key (version int16, type int16), -1 if unreadable."""
    try:
        pos = _RECORDS_AT
        _, pos = _varint(raw, pos)  # record length
        pos += 1  # attributes
        _, pos = _varint(raw, pos)  # timestamp delta
        _, pos = _varint(raw, pos)  # offset delta
        key_length, pos = _varint(raw, pos)
        if key_length < 4:
            return -1
        return int(struct.unpack_from(">h", raw, pos + 2)[0])
    except (IndexError, struct.error):
        return -1


def _varint(buf: bytes, pos: int) -> tuple[int, int]:
    """A zigzag varint at `pos`: (value, the position after it)."""
    value = shift = 0
    while True:
        byte = buf[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return (value >> 1) ^ -(value & 1), pos
        shift += 7

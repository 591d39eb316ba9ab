"""Batch-level checks of an append, from headers and CRCs only, and in-place offset assignment.

Contract:
- ``validate_batches`` walks every batch of one partition's records once (one header parse and one CRC32C
  per batch, no record decoding) and makes the checks of Kafka's ``UnifiedLog.analyzeAndValidateRecords``
  and ``LogValidator.validateBatch``: at least one batch, magic 2, sane lengths, each batch within
  ``max_batch_size`` (``RecordTooLargeError``), CRC32C, a known codec. With ``from_client`` (a producer's
  batches, Kafka's ``AppendOrigin.CLIENT``) also: base offset 0, a positive records count equal to
  last_offset_delta + 1, no control batches, a base sequence when there is a producer id, and exactly one
  batch. It returns a ``BatchesSummary`` that includes each batch's position and header.
- ``assign_batch_offsets`` writes base offsets and the partition leader epoch into already validated
  batches (outside the CRC) and, for LogAppendTime, the timestamp type and max timestamp with one CRC per
  batch; ``assign_offsets`` does the same over a raw buffer.
- Failures are ``CorruptRecordError`` / ``InvalidRecordError`` / ``RecordTooLargeError``; storage's
  ``LogValidator`` turns them into its typed errors.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

# The extension module itself: `python -m broker` stands in for the crc32c package (broker/lazy_packages.py), whose
# __init__ looks its own version up in the installed distributions (importlib.metadata: 30-200 ms at start-up).
from crc32c._crc32c import crc32c

from records.batch import RecordBatch, batch_fields
from records.compression import Compression
from records.errors import CorruptRecordError, InvalidRecordError, RecordTooLargeError
from records.header import (
    ATTRIBUTES_AT,
    COMPRESSION_MASK,
    CONTROL_MASK,
    LOG_OVERHEAD,
    TIMESTAMP_TYPE_MASK,
    TRANSACTIONAL_MASK,
    TimestampType,
    increment_sequence,
    parse_fields,
    set_base_offset,
    set_max_timestamp,
    set_partition_leader_epoch,
)

__all__ = ["BatchesSummary", "assign_batch_offsets", "assign_offsets", "validate_batches"]

_CODECS = tuple(Compression)
_MAX_CODEC = len(_CODECS) - 1


class BatchesSummary(NamedTuple):
    """What an append needs to know about one partition's batches, from headers only.

    ``offset_count`` is how many offsets ``assign_offsets`` consumes (sum of last_offset_delta + 1).
    ``offset_delta_of_max_timestamp`` is relative to the first assigned offset: the last offset of the
    first batch holding ``max_timestamp`` (Kafka's shallow offset of max timestamp). ``batches`` holds
    ``(position, header fields)`` of every batch (plain tuples in ``BatchHeader`` order: the hot path does
    not name them).
    """

    batch_count: int
    record_count: int
    offset_count: int
    size_in_bytes: int
    first_batch: RecordBatch
    last_batch: RecordBatch
    max_timestamp: int
    offset_delta_of_max_timestamp: int
    producer_id: int
    producer_epoch: int
    first_sequence: int
    last_sequence: int
    is_transactional: bool
    is_control: bool
    codecs: frozenset[Compression]
    timestamp_type: TimestampType
    batches: list[tuple[int, tuple]]


def _check_client_batch(h: tuple, batch_count: int) -> None:
    """Kafka's ``LogValidator.validateBatch`` for ``AppendOrigin.CLIENT`` (and the client base offset rule of
    ``analyzeAndValidateRecords``)."""
    if h[0] != 0:
        raise InvalidRecordError(f"the base offset of a client's record batch must be 0, not {h[0]}")
    last_offset_delta = h[6]
    count = h[12]
    if last_offset_delta < 0:
        raise InvalidRecordError(f"batch has an invalid offset range [0, {last_offset_delta}]")
    if count <= 0:
        raise InvalidRecordError(f"invalid reported count {count} for record batch")
    if count != last_offset_delta + 1:
        raise InvalidRecordError(
            f"inconsistent batch offset range ({last_offset_delta + 1}) and record count ({count})"
        )
    if h[5] & CONTROL_MASK:
        raise InvalidRecordError("clients are not allowed to write control records")
    if h[9] >= 0 and h[11] < 0:
        raise InvalidRecordError(f"invalid sequence number {h[11]} for producer id {h[9]}")
    if batch_count >= 1:
        # Kafka: "Compressed outer record has more than one batch", which applies to every v2 batch.
        raise InvalidRecordError("a produce request may carry only one v2 batch per partition")


def validate_batches(
    buf: bytes | bytearray | memoryview, *, max_batch_size: int, from_client: bool = True
) -> BatchesSummary:
    """Walk all batches with header-only work plus CRC32C, check them (see the module contract), summarize."""
    view = memoryview(buf).cast("B") if not isinstance(buf, memoryview) else buf
    n = len(view)
    if n == 0:
        raise InvalidRecordError("record batch has no batches at all")
    pos = 0
    record_count = offset_count = 0
    max_ts = max_ts_delta = -1
    codecs: set[Compression] = set()
    batches: list[tuple[int, tuple]] = []
    while pos < n:
        h = parse_fields(view, pos)
        end = pos + LOG_OVERHEAD + h[1]
        if end > n:
            raise CorruptRecordError(f"batch_length {h[1]} runs past the end of the {n}-byte buffer")
        if end - pos > max_batch_size:
            raise RecordTooLargeError(f"batch of {end - pos} bytes exceeds the maximum {max_batch_size}")
        crc = crc32c(view[pos + ATTRIBUTES_AT:end])
        if crc != h[4]:
            raise CorruptRecordError(f"record batch CRC 0x{h[4]:08x} does not match computed 0x{crc:08x}")
        code = h[5] & COMPRESSION_MASK
        if code > _MAX_CODEC:
            raise InvalidRecordError(f"unknown compression codec {code}")
        if from_client:
            _check_client_batch(h, len(batches))
        elif h[6] < 0 or h[12] < 0:
            raise CorruptRecordError("negative last_offset_delta or records_count")
        codecs.add(_CODECS[code])
        if h[8] > max_ts:
            max_ts = h[8]
            max_ts_delta = offset_count + h[6]
        batches.append((pos, h))
        record_count += h[12]
        offset_count += h[6] + 1
        pos = end
    first_pos, first = batches[0]
    last_pos, last = batches[-1]
    first_batch = RecordBatch._of(view[first_pos:first_pos + first[1] + LOG_OVERHEAD], first)
    return BatchesSummary(
        batch_count=len(batches),
        record_count=record_count,
        offset_count=offset_count,
        size_in_bytes=n,
        first_batch=first_batch,
        last_batch=first_batch if len(batches) == 1 else RecordBatch._of(view[last_pos:n], last),
        max_timestamp=max_ts,
        offset_delta_of_max_timestamp=max_ts_delta,
        producer_id=first[9],
        producer_epoch=first[10],
        first_sequence=first[11],
        last_sequence=-1 if last[11] < 0 else increment_sequence(last[11], last[6]),
        is_transactional=bool(first[5] & TRANSACTIONAL_MASK),
        is_control=bool(first[5] & CONTROL_MASK),
        codecs=frozenset(codecs),
        timestamp_type=TimestampType.LOG_APPEND_TIME if first[5] & TIMESTAMP_TYPE_MASK else TimestampType.CREATE_TIME,
        batches=batches,
    )


def assign_batch_offsets(
    buf: bytearray | memoryview,
    batches: Sequence[tuple[int, tuple]],
    first_offset: int,
    leader_epoch: int,
    log_append_time: int | None = None,
) -> int:
    """Write offsets, the leader epoch and (with ``log_append_time``) LogAppendTime into the validated
    ``batches`` (position, header fields) of a writable ``buf``; returns the next offset."""
    offset = first_offset
    for pos, h in batches:
        set_base_offset(buf, pos, offset)
        set_partition_leader_epoch(buf, pos, leader_epoch)
        if log_append_time is not None:
            set_max_timestamp(buf, pos, h[1] + LOG_OVERHEAD, TimestampType.LOG_APPEND_TIME, log_append_time)
        offset += h[6] + 1
    return offset


def assign_offsets(
    buf: bytearray | memoryview,
    first_offset: int,
    leader_epoch: int,
    *,
    log_append_time: int | None = None,
) -> int:
    """Patch every batch's base offset and partition leader epoch in place; returns the next offset.

    ``buf`` must be writable and already validated. With ``log_append_time`` each batch also becomes
    LOG_APPEND_TIME with that max timestamp, and its CRC is recomputed (the only case that needs it).
    """
    view = memoryview(buf).cast("B") if not isinstance(buf, memoryview) else buf
    batches = batch_fields(view)
    for _pos, h in batches:
        if h[6] < 0:
            raise CorruptRecordError(f"batch at base offset {h[0]} has a negative last_offset_delta")
    return assign_batch_offsets(view, batches, first_offset, leader_epoch, log_append_time)

"""Inflated records: the parsed form of a v2 batch's records section, decoded and built only on demand.

Record layout (Kafka's ``DefaultRecord``; varints are zig-zag)::

    length varint | attributes int8 | timestampDelta varint | offsetDelta varint |
    keyLength varint | key | valueLength varint | value | headerCount varint |
    [headerKeyLength varint | headerKey | headerValueLength varint | headerValue]...

Contract:
- ``decode_records`` turns an (already decompressed) records section into ``Record`` values with Kafka's
  absolute offsets, timestamps (the batch's max timestamp for every record of a LogAppendTime batch) and
  sequences; ``iter_offsets_and_timestamps`` reads only lengths, timestamp and offset deltas (Kafka's
  skip-key-value iteration). Malformed bytes raise ``CorruptRecordError``, never anything else.
- ``build_batch`` writes one whole v2 batch (header, records, compression, CRC) as Kafka's producer and log
  cleaner do; ``build_control_batch`` / ``parse_control_record`` are transaction markers.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from enum import IntEnum

from records.compression import Compression, compress
from records.errors import CorruptRecordError, InvalidRecordError
from records.header import (
    BATCH_HEADER_SIZE,
    COMPRESSION_MASK,
    CONTROL_MASK,
    CRC_AT,
    DELETE_HORIZON_MASK,
    HEADER_STRUCT,
    LOG_OVERHEAD,
    NO_TIMESTAMP,
    TIMESTAMP_TYPE_MASK,
    TRANSACTIONAL_MASK,
    TimestampType,
    compute_crc,
    increment_sequence,
)

__all__ = [
    "ControlRecordType",
    "KRaftControlRecordType",
    "Record",
    "RecordInput",
    "build_batch",
    "build_control_batch",
    "control_record_type",
    "decode_records",
    "iter_offsets_and_timestamps",
    "parse_control_record",
]

_UINT32 = struct.Struct(">I")


class ControlRecordType(IntEnum):
    ABORT = 0
    COMMIT = 1


class KRaftControlRecordType(IntEnum):
    """The control record types of the KRaft metadata log (Kafka's ControlRecordType beyond the markers)."""

    LEADER_CHANGE = 2
    SNAPSHOT_HEADER = 3
    SNAPSHOT_FOOTER = 4
    KRAFT_VERSION = 5
    KRAFT_VOTERS = 6


@dataclass(frozen=True, slots=True)
class Record:
    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: Sequence[tuple[str, bytes | None]] = field(default_factory=list)
    sequence: int = -1


def _read_varint(buf: bytes, pos: int, end: int) -> tuple[int, int]:
    """Zigzag varint up to 64 bits; returns (value, new_pos)."""
    if pos < end:
        b = buf[pos]
        if b < 0x80:  # one byte: the common case for lengths, deltas and counts
            return (b >> 1) ^ -(b & 1), pos + 1
    result = 0
    shift = 0
    while True:
        if pos >= end:
            raise CorruptRecordError("record truncated inside a varint")
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            break
        shift += 7
        if shift > 63:
            raise CorruptRecordError("varint longer than 10 bytes")
    return (result >> 1) ^ -(result & 1), pos


def decode_records(
    payload: memoryview,
    count: int,
    base_offset: int,
    base_timestamp: int,
    log_append_time: int | None,
    base_sequence: int,
) -> Iterator[Record]:
    """The ``count`` records of a decompressed records section. With a KIP-534 delete horizon the base
    timestamp is the horizon and deltas stay relative to it, as in Kafka."""
    # One copy of the records section: indexing and slicing bytes is cheaper than a memoryview, and keys
    # and values come out as bytes anyway.
    data = bytes(payload)
    pos = 0
    end = len(data)
    for _ in range(count):
        length, pos = _read_varint(data, pos, end)
        if length < 0 or pos + length > end:
            raise CorruptRecordError(f"record length {length} is negative or past the batch end")
        record_end = pos + length
        if pos >= record_end:
            raise CorruptRecordError("empty record")
        pos += 1  # attributes, unused
        timestamp_delta, pos = _read_varint(data, pos, record_end)
        offset_delta, pos = _read_varint(data, pos, record_end)
        key_len, pos = _read_varint(data, pos, record_end)
        if key_len < -1 or pos + key_len > record_end:
            raise CorruptRecordError(f"record key length {key_len} is invalid")
        key = None
        if key_len >= 0:
            key = data[pos:pos + key_len]
            pos += key_len
        value_len, pos = _read_varint(data, pos, record_end)
        if value_len < -1 or pos + value_len > record_end:
            raise CorruptRecordError(f"record value length {value_len} is invalid")
        value = None
        if value_len >= 0:
            value = data[pos:pos + value_len]
            pos += value_len
        header_count, pos = _read_varint(data, pos, record_end)
        if header_count < 0 or header_count > record_end - pos:
            raise CorruptRecordError(f"invalid record header count {header_count}")
        headers: list[tuple[str, bytes | None]] = []
        for _h in range(header_count):
            hk_len, pos = _read_varint(data, pos, record_end)
            if hk_len < 0 or pos + hk_len > record_end:
                raise CorruptRecordError(f"record header key length {hk_len} is invalid")
            # Java decodes with replacement of malformed UTF-8; so do we.
            hkey = data[pos:pos + hk_len].decode("utf-8", "replace")
            pos += hk_len
            hv_len, pos = _read_varint(data, pos, record_end)
            if hv_len < -1 or pos + hv_len > record_end:
                raise CorruptRecordError(f"record header value length {hv_len} is invalid")
            hval = None
            if hv_len >= 0:
                hval = data[pos:pos + hv_len]
                pos += hv_len
            headers.append((hkey, hval))
        if pos != record_end:
            raise CorruptRecordError(f"record declared {length} bytes but used {length - (record_end - pos)}")
        yield Record(
            offset=base_offset + offset_delta,
            timestamp=log_append_time if log_append_time is not None else base_timestamp + timestamp_delta,
            key=key,
            value=value,
            headers=headers,
            sequence=-1 if base_sequence < 0 else increment_sequence(base_sequence, offset_delta),
        )
    if pos != end:
        raise CorruptRecordError(f"{end - pos} bytes left after the declared {count} records")


def iter_offsets_and_timestamps(
    payload: bytes, count: int, base_offset: int, base_timestamp: int
) -> Iterator[tuple[int, int]]:
    """(offset, timestamp) of each record, reading only the length and the two deltas of each."""
    pos = 0
    end = len(payload)
    for _ in range(count):
        length, body = _read_varint(payload, pos, end)
        record_end = body + length
        if length <= 0 or record_end > end:
            raise CorruptRecordError(f"record length {length} is not positive or past the batch end")
        timestamp_delta, after = _read_varint(payload, body + 1, record_end)  # body + 1: skip attributes
        offset_delta, _ = _read_varint(payload, after, record_end)
        yield base_offset + offset_delta, base_timestamp + timestamp_delta
        pos = record_end


def _write_varint(out: bytearray, value: int) -> None:
    v = (value << 1) ^ (value >> 63)
    while v >= 0x80:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)


def _encode_record(
    out: bytearray,
    offset_delta: int,
    timestamp_delta: int,
    key: bytes | None,
    value: bytes | None,
    headers: Sequence[tuple[str, bytes | None]],
) -> None:
    body = bytearray(b"\x00")  # attributes
    _write_varint(body, timestamp_delta)
    _write_varint(body, offset_delta)
    if key is None:
        body.append(1)  # varint(-1)
    else:
        _write_varint(body, len(key))
        body += key
    if value is None:
        body.append(1)
    else:
        _write_varint(body, len(value))
        body += value
    _write_varint(body, len(headers))
    for hkey, hval in headers:
        hk = hkey.encode("utf-8")
        _write_varint(body, len(hk))
        body += hk
        if hval is None:
            body.append(1)
        else:
            _write_varint(body, len(hval))
            body += hval
    _write_varint(out, len(body))
    out += body


RecordInput = tuple[bytes | None, bytes | None, Sequence[tuple[str, bytes | None]], int]


def build_batch(
    records: Sequence[RecordInput],
    *,
    base_offset: int = 0,
    compression: Compression = Compression.NONE,
    producer_id: int = -1,
    producer_epoch: int = -1,
    base_sequence: int = -1,
    partition_leader_epoch: int = -1,
    is_transactional: bool = False,
    is_control: bool = False,
    timestamp_type: TimestampType = TimestampType.CREATE_TIME,
    max_timestamp: int | None = None,
    offset_deltas: Sequence[int] | None = None,
    last_offset_delta: int | None = None,
    base_timestamp: int | None = None,
    delete_horizon_ms: int | None = None,
) -> bytes:
    """Build one v2 batch from ``(key, value, headers, timestamp)`` tuples.

    Offsets are ``base_offset + index`` unless ``offset_deltas`` gives them (compacted batches keep gaps);
    ``last_offset_delta`` may be larger than the last record's (the cleaner keeps a trimmed batch's offset
    and sequence range). The base timestamp is the first record's unless ``base_timestamp`` is given;
    ``max_timestamp`` defaults to the largest record timestamp (Kafka puts the log append time there for
    LOG_APPEND_TIME batches; pass it). An empty ``records`` gives a header-only batch (Kafka's
    ``writeEmptyHeader``: no compressed payload even with a codec) whose timestamps are ``base_timestamp``
    (-1 by default). ``delete_horizon_ms`` (KIP-534, the cleaner's) sets the delete-horizon attribute and
    becomes the base timestamp, record timestamps staying deltas from it.
    """
    if delete_horizon_ms is not None:
        base_timestamp = delete_horizon_ms
    if offset_deltas is not None and len(offset_deltas) != len(records):
        raise ValueError("offset_deltas must have one entry per record")
    body = bytearray()
    if records:
        first_timestamp = records[0][3] if base_timestamp is None else base_timestamp
        for i, (key, value, headers, timestamp) in enumerate(records):
            delta = offset_deltas[i] if offset_deltas is not None else i
            _encode_record(body, delta, timestamp - first_timestamp, key, value, headers)
        if last_offset_delta is None:
            last_offset_delta = offset_deltas[-1] if offset_deltas is not None else len(records) - 1
        computed_max = max(r[3] for r in records)
        payload = compress(compression, body) if compression != Compression.NONE else bytes(body)
    else:
        first_timestamp = NO_TIMESTAMP if base_timestamp is None else base_timestamp
        if last_offset_delta is None:
            last_offset_delta = 0
        computed_max = first_timestamp
        payload = b""
    if max_timestamp is None:
        max_timestamp = computed_max
    attributes = int(compression) & COMPRESSION_MASK
    if timestamp_type == TimestampType.LOG_APPEND_TIME:
        attributes |= TIMESTAMP_TYPE_MASK
    if is_transactional:
        attributes |= TRANSACTIONAL_MASK
    if is_control:
        attributes |= CONTROL_MASK
    if delete_horizon_ms is not None:
        attributes |= DELETE_HORIZON_MASK
    out = bytearray(BATCH_HEADER_SIZE)
    HEADER_STRUCT.pack_into(
        out,
        0,
        base_offset,
        BATCH_HEADER_SIZE - LOG_OVERHEAD + len(payload),
        partition_leader_epoch,
        2,
        0,
        attributes,
        last_offset_delta,
        first_timestamp,
        max_timestamp,
        producer_id,
        producer_epoch,
        base_sequence,
        len(records),
    )
    out += payload
    _UINT32.pack_into(out, CRC_AT, compute_crc(out, 0, len(out)))
    return bytes(out)


def build_control_batch(
    control_type: ControlRecordType,
    *,
    producer_id: int,
    producer_epoch: int,
    coordinator_epoch: int,
    timestamp: int,
    base_offset: int = 0,
    partition_leader_epoch: int = -1,
) -> bytes:
    """A transaction marker (COMMIT/ABORT) batch as the transaction coordinator writes it.

    Key: version int16 (0) + type int16; value: version int16 (0) + coordinator_epoch int32.
    """
    key = struct.pack(">hh", 0, int(control_type))
    value = struct.pack(">hi", 0, coordinator_epoch)
    return build_batch(
        [(key, value, (), timestamp)],
        base_offset=base_offset,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        base_sequence=-1,
        partition_leader_epoch=partition_leader_epoch,
        is_transactional=True,
        is_control=True,
    )


def control_record_type(key: bytes | None) -> int | None:
    """The type number in a control record's key (version int16, type int16): 0 ABORT, 1 COMMIT, and the
    KRaft types Kafka adds; None when the key is too short."""
    if key is None or len(key) < 4:
        return None
    return struct.unpack_from(">hh", key, 0)[1]


def parse_control_record(record: Record) -> tuple[ControlRecordType, int]:
    """(type, coordinator_epoch) of a transaction marker record."""
    ctype = control_record_type(record.key)
    if ctype is None:
        raise CorruptRecordError("control record key shorter than 4 bytes")
    try:
        kind = ControlRecordType(ctype)
    except ValueError:
        raise InvalidRecordError(f"unknown control record type {ctype}") from None
    if record.value is None or len(record.value) < 6:
        raise CorruptRecordError("control record value shorter than 6 bytes")
    _vversion, coordinator_epoch = struct.unpack_from(">hi", record.value, 0)
    return kind, coordinator_epoch

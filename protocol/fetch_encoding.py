"""Zero-copy FetchResponse encoding: the response as a list of byte runs and `RecordsRef` slices.

Contract:
- `RecordsRef(length, source)` stands for `length` bytes of record batches the codec never sees (the
  broker fills `source`, e.g. a segment file, position and length, and `os.sendfile`s it).
- `encode_response_parts(response) -> (total_length, parts)`: the frame without its size prefix, as
  `bytes` runs interleaved with the `records` values that are not copied: every `RecordsRef`, and any
  `bytes`/`memoryview` records larger than `INLINE_RECORDS_MAX`. Length prefixes before each records
  value are computed from `.length` / `len()`. `total_length` is the sum of all part lengths.
- Works for FetchResponse v0-v18 with a hand-written encoder (the generic one costs too much per
  partition); its output is byte-identical to the generic encoder's. For any other response the list
  holds the whole frame as one `bytes` run.
- Items of the `responses`, `partitions` and `aborted_transactions` arrays must be the message's data
  objects (e.g. `FetchResponse.FetchableTopicResponse(...)`), not tuples.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from struct import Struct
from typing import Any

from kafka.protocol.api_message import ApiMessage

from protocol.api_keys import ApiKey
from protocol.codec import _RESPONSE_HEADER_TAGS, encode_response
from protocol.kafka_python_ext import uvarint_bytes
from protocol.messages import FetchResponse

# Records smaller than this are copied into the surrounding run; larger ones stay separate parts.
INLINE_RECORDS_MAX = 4096


@dataclass(frozen=True, slots=True)
class RecordsRef:
    """Placeholder for `length` bytes of record batches sent by the broker itself (sendfile)."""

    length: int
    source: Any = None


Part = bytes | memoryview | RecordsRef

_I32 = Struct('>i')
_I16_I32 = Struct('>hi')
_I64_I64 = Struct('>qq')
_PARTITION_V0 = Struct('>ihq')
_PARTITION_V4 = Struct('>ihqq')
_PARTITION_V5 = Struct('>ihqqq')
_NULL_ARRAY = b'\xff\xff\xff\xff'
_ZERO_UUID = bytes(16)

_struct = FetchResponse._struct
_TOPIC = _struct.fields['responses']
_PARTITION = _TOPIC.fields['partitions']
_ABORTED = _PARTITION.fields['aborted_transactions']


def _array_length(buf: bytearray, items: Any, flexible: bool) -> None:
    if flexible:
        buf += uvarint_bytes(0 if items is None else len(items) + 1)
    else:
        buf += _NULL_ARRAY if items is None else _I32.pack(len(items))


def _string(buf: bytearray, value: str | None, flexible: bool) -> None:
    if value is None:
        buf += b'\x00' if flexible else b'\xff\xff'
        return
    raw = value.encode('utf-8')
    buf += uvarint_bytes(len(raw) + 1) if flexible else len(raw).to_bytes(2, 'big', signed=True)
    buf += raw


def _uuid(value: Any) -> bytes:
    if value is None:
        return _ZERO_UUID
    if isinstance(value, uuid.UUID):
        return value.bytes
    return uuid.UUID(value).bytes


def _fetch_response_parts(response: ApiMessage) -> tuple[int, list[Part]]:
    version = response.API_VERSION
    flexible = version >= 12
    if version >= 5:
        pack_partition = _PARTITION_V5.pack
    elif version >= 4:
        pack_partition = _PARTITION_V4.pack
    else:
        pack_partition = _PARTITION_V0.pack
    topic_tags = _TOPIC.tagged_fields(version) if flexible else None
    partition_tags = _PARTITION.tagged_fields(version) if flexible else None
    aborted_tags = _ABORTED.tagged_fields(version) if flexible else None

    uvarint = uvarint_bytes
    pack_i32 = _I32.pack
    parts: list[Part] = []
    total = 0
    header = response.header
    if header is None:
        raise ValueError('response has no header: call with_header(correlation_id=...) first')
    buf = bytearray(_I32.pack(header.correlation_id))
    if flexible:
        buf += _RESPONSE_HEADER_TAGS.encode(header)
    if version >= 1:
        buf += _I32.pack(response.throttle_time_ms)
    if version >= 7:
        buf += _I16_I32.pack(response.error_code, response.session_id)
    topics = response.responses
    _array_length(buf, topics, flexible)
    for topic in topics or ():
        if version >= 13:
            buf += _uuid(topic.topic_id)
        else:
            _string(buf, topic.topic, flexible)
        partitions = topic.partitions
        _array_length(buf, partitions, flexible)
        for p in partitions or ():
            if version >= 5:
                buf += pack_partition(p.partition_index, p.error_code, p.high_watermark,
                                      p.last_stable_offset, p.log_start_offset)
            elif version >= 4:
                buf += pack_partition(p.partition_index, p.error_code, p.high_watermark, p.last_stable_offset)
            else:
                buf += pack_partition(p.partition_index, p.error_code, p.high_watermark)
            if version >= 4:
                aborted = p.aborted_transactions
                _array_length(buf, aborted, flexible)
                for txn in aborted or ():
                    buf += _I64_I64.pack(txn.producer_id, txn.first_offset)
                    if flexible:
                        buf += aborted_tags.encode(txn, version)
            if version >= 11:
                buf += _I32.pack(p.preferred_read_replica)
            records = p.records
            if records is None:
                buf += b'\x00' if flexible else _NULL_ARRAY
            else:
                is_ref = type(records) is RecordsRef
                length = records.length if is_ref else len(records)
                buf += uvarint(length + 1) if flexible else pack_i32(length)
                if is_ref or length > INLINE_RECORDS_MAX:
                    total += len(buf) + length
                    parts.append(bytes(buf))
                    parts.append(records)
                    buf = bytearray()
                else:
                    buf += records
            if flexible:
                # Kafka 3.9's partition tags are all structs defaulting to None: test them inline.
                if (p.unknown_tags is None and p.diverging_epoch is None and p.current_leader is None
                        and p.snapshot_id is None):
                    buf.append(0)
                else:
                    buf += partition_tags.encode(p, version)
        if flexible:
            if topic.unknown_tags is None:
                buf.append(0)
            else:
                buf += topic_tags.encode(topic, version)
    if flexible:
        buf += _struct.tagged_fields(version).encode(response, version)
    total += len(buf)
    parts.append(bytes(buf))
    return total, parts


def encode_response_parts(response: ApiMessage) -> tuple[int, list[Part]]:
    if response.API_KEY == ApiKey.FETCH:
        return _fetch_response_parts(response)
    frame = encode_response(response)
    return len(frame), [frame]


def encode_fetch_response(response: ApiMessage) -> bytes:
    """The whole FetchResponse frame as one `bytes` (records must be bytes-like, not RecordsRef)."""
    _, parts = _fetch_response_parts(response)
    if any(isinstance(part, RecordsRef) for part in parts):
        raise TypeError('a FetchResponse holding RecordsRef values needs encode_response_parts')
    return b''.join(parts)

"""Kafka's record formats, the one codec that ``protocol``, ``storage``, the log cleaner and the dump tool share.

It sits below both ``protocol`` and ``storage`` and imports neither. Two forms, named apart as Tansu does:

- **Deflated** (``records.batch``, ``records.header``): the bytes of v2 record batches as they travel and
  are stored. ``RecordBatch`` is a zero-copy view; ``BatchHeader`` the 61-byte header parsed by one
  ``struct.unpack_from``; in-place setters for baseOffset and partitionLeaderEpoch (outside the CRC) and the
  LogAppendTime max timestamp (with its CRC, computed once). The produce and fetch paths touch only this
  form, except where Kafka must decode (the keys of a compacted topic's records).
- **Inflated** (``records.record``): ``Record`` values decoded from a batch on demand (decompressing when
  needed), and ``build_batch`` to write batches back.

``records.validation`` checks and summarizes an append from headers and CRCs; ``records.compression`` holds
the codecs; ``records.legacy`` reads, builds and converts magic v0/v1 message sets. Untrusted bytes raise
only ``CorruptRecordError`` or ``InvalidRecordError`` (``ValueError``s).
Nothing here imports ``construct`` or anything of the dump tool: broker start-up loads this package.
"""

from records.batch import DEFAULT_MAX_DECOMPRESSED_SIZE, RecordBatch, batch_headers, iter_batches, read_magic
from records.compression import Compression, compress, decompress
from records.errors import CorruptRecordError, InvalidRecordError, RecordTooLargeError
from records.header import (
    BATCH_HEADER_SIZE,
    LOG_OVERHEAD,
    BatchHeader,
    TimestampType,
    compute_crc,
    crc_is_valid,
    increment_sequence,
    parse_header,
    set_base_offset,
    set_max_timestamp,
    set_partition_leader_epoch,
)
from records.record import (
    ControlRecordType,
    KRaftControlRecordType,
    Record,
    RecordInput,
    build_batch,
    build_control_batch,
    control_record_type,
    decode_records,
    parse_control_record,
)
from records.validation import BatchesSummary, assign_batch_offsets, assign_offsets, validate_batches

__all__ = [
    "BATCH_HEADER_SIZE",
    "DEFAULT_MAX_DECOMPRESSED_SIZE",
    "LOG_OVERHEAD",
    "BatchHeader",
    "BatchesSummary",
    "Compression",
    "ControlRecordType",
    "KRaftControlRecordType",
    "CorruptRecordError",
    "InvalidRecordError",
    "Record",
    "RecordBatch",
    "RecordInput",
    "RecordTooLargeError",
    "TimestampType",
    "assign_batch_offsets",
    "assign_offsets",
    "batch_headers",
    "build_batch",
    "build_control_batch",
    "compress",
    "compute_crc",
    "control_record_type",
    "crc_is_valid",
    "decode_records",
    "decompress",
    "increment_sequence",
    "iter_batches",
    "parse_control_record",
    "parse_header",
    "read_magic",
    "set_base_offset",
    "set_max_timestamp",
    "set_partition_leader_epoch",
    "validate_batches",
]

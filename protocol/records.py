"""Record batches for the protocol layer: the shared ``records`` codec under the names protocol users import.

The codec itself (zero-copy ``RecordBatch`` views, record decoding and building, compression, the
produce-path batch checks) lives in the bottom-layer package ``records``, which ``storage`` uses as well;
see its contract there. This module only re-exports it, so ``protocol`` and ``broker`` code keeps importing
``protocol.records``.
"""

from __future__ import annotations

from records import (
    BATCH_HEADER_SIZE,
    DEFAULT_MAX_DECOMPRESSED_SIZE,
    LOG_OVERHEAD,
    BatchesSummary,
    Compression,
    ControlRecordType,
    CorruptRecordError,
    InvalidRecordError,
    Record,
    RecordBatch,
    RecordInput,
    RecordTooLargeError,
    TimestampType,
    assign_offsets,
    build_batch,
    build_control_batch,
    control_record_type,
    iter_batches,
    parse_control_record,
    read_magic,
    validate_batches,
)

__all__ = [
    "BATCH_HEADER_SIZE",
    "DEFAULT_MAX_DECOMPRESSED_SIZE",
    "LOG_OVERHEAD",
    "BatchesSummary",
    "Compression",
    "ControlRecordType",
    "CorruptRecordError",
    "InvalidRecordError",
    "Record",
    "RecordBatch",
    "RecordInput",
    "RecordTooLargeError",
    "TimestampType",
    "assign_offsets",
    "build_batch",
    "build_control_batch",
    "control_record_type",
    "iter_batches",
    "parse_control_record",
    "read_magic",
    "validate_batches",
]

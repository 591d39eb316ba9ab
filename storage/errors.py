"""Typed errors raised by the storage engine; the broker maps them to Kafka error codes.

Each class names the Kafka error it stands for in ``kafka_error`` (``protocol.errors.ErrorCode`` member
names; storage does not import protocol), so the broker can answer with ``ErrorCode[e.kafka_error]`` and
``str(e)`` as the error message. ``InvalidRecordError.record_errors`` carries KIP-467's per-record errors:
``(index of the record in its batch, message)``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar


class StorageError(Exception):
    """Base class for storage errors."""

    kafka_error: ClassVar[str] = "UNKNOWN_SERVER_ERROR"


class OffsetOutOfRangeError(StorageError):
    """A fetch offset below the log start offset or above the log end offset (OFFSET_OUT_OF_RANGE)."""

    kafka_error = "OFFSET_OUT_OF_RANGE"


class CorruptLogError(StorageError):
    """Bytes on disk or in a request are not a valid record batch (CORRUPT_MESSAGE)."""

    kafka_error = "CORRUPT_MESSAGE"


class CorruptIndexError(CorruptLogError):
    """An .index/.timeindex failed its sanity check; the segment's indexes are rebuilt."""


class CorruptRecordError(CorruptLogError):
    """A batch handed to an append is damaged: bad CRC32C, truncated, impossible lengths (Kafka's
    CorruptRecordException, CORRUPT_MESSAGE)."""


class InvalidRecordError(StorageError):
    """Records that cannot be appended, e.g. non-monotonic offsets on a follower append (INVALID_RECORD).

    ``record_errors`` lists the records that failed a per-record check (KIP-467), empty otherwise."""

    kafka_error = "INVALID_RECORD"

    def __init__(self, message: str, record_errors: Sequence[tuple[int, str | None]] = ()) -> None:
        super().__init__(message)
        self.record_errors: list[tuple[int, str | None]] = list(record_errors)


class UnexpectedAppendOffsetError(InvalidRecordError):
    """A follower append whose first batch starts below the log end offset (Kafka's
    UnexpectedAppendOffsetException), with the first offset of that batch and the last offset of the append, so
    the partition can tell a leader log start offset inside a batch (restart the log at the batch) from a bug."""

    def __init__(self, message: str, first_offset: int, last_offset: int) -> None:
        super().__init__(message)
        self.first_offset = first_offset
        self.last_offset = last_offset


class RecordTooLargeError(InvalidRecordError):
    """A batch larger than max.message.bytes (MESSAGE_TOO_LARGE)."""

    kafka_error = "MESSAGE_TOO_LARGE"


class RecordBatchTooLargeError(InvalidRecordError):
    """The records of one append are larger than a whole segment, segment.bytes (Kafka's
    RecordBatchTooLargeException, RECORD_LIST_TOO_LARGE)."""

    kafka_error = "RECORD_LIST_TOO_LARGE"


class DuplicateSequenceError(StorageError):
    """A duplicate idempotent batch that is no longer in the producer's cache (DUPLICATE_SEQUENCE_NUMBER)."""

    kafka_error = "DUPLICATE_SEQUENCE_NUMBER"


class OutOfOrderSequenceError(StorageError):
    """A sequence gap for an idempotent producer (OUT_OF_ORDER_SEQUENCE_NUMBER)."""

    kafka_error = "OUT_OF_ORDER_SEQUENCE_NUMBER"


class InvalidProducerEpochError(StorageError):
    """A batch from a fenced (older) producer epoch (INVALID_PRODUCER_EPOCH)."""

    kafka_error = "INVALID_PRODUCER_EPOCH"


class KafkaStorageError(StorageError):
    """An I/O failure (ENOSPC, EIO, ...); the log rolled back the partial write (KAFKA_STORAGE_ERROR)."""

    kafka_error = "KAFKA_STORAGE_ERROR"


class InvalidTxnStateError(StorageError):
    """A producer's batch that contradicts its transaction state: a non-transactional batch while its
    transaction is open, or a transactional batch the coordinator has not verified (KIP-890) (Kafka's
    InvalidTxnStateException, INVALID_TXN_STATE)."""

    kafka_error = "INVALID_TXN_STATE"


class TransactionCoordinatorFencedError(StorageError):
    """A transaction marker from a coordinator epoch older than one already seen for that producer (Kafka's
    TransactionCoordinatorFencedException, TRANSACTION_COORDINATOR_FENCED)."""

    kafka_error = "TRANSACTION_COORDINATOR_FENCED"

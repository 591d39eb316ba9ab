"""Typed errors raised by the storage engine; the broker maps them to Kafka error codes."""


class StorageError(Exception):
    """Base class for storage errors."""


class OffsetOutOfRangeError(StorageError):
    """A fetch offset below the log start offset or above the log end offset (OFFSET_OUT_OF_RANGE)."""


class CorruptLogError(StorageError):
    """Bytes on disk or in a request are not a valid record batch (CORRUPT_MESSAGE)."""


class CorruptIndexError(CorruptLogError):
    """An .index/.timeindex failed its sanity check; the segment's indexes are rebuilt."""


class InvalidRecordError(StorageError):
    """Records that cannot be appended, e.g. non-monotonic offsets on a follower append (INVALID_RECORD)."""


class RecordTooLargeError(InvalidRecordError):
    """A batch larger than max.message.bytes (MESSAGE_TOO_LARGE)."""


class DuplicateSequenceError(StorageError):
    """A duplicate idempotent batch that is no longer in the producer's cache (DUPLICATE_SEQUENCE_NUMBER)."""


class OutOfOrderSequenceError(StorageError):
    """A sequence gap for an idempotent producer (OUT_OF_ORDER_SEQUENCE_NUMBER)."""


class InvalidProducerEpochError(StorageError):
    """A batch from a fenced (older) producer epoch (INVALID_PRODUCER_EPOCH)."""


class KafkaStorageError(StorageError):
    """An I/O failure (ENOSPC, EIO, ...); the log rolled back the partial write (KAFKA_STORAGE_ERROR)."""

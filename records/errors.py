"""The codec's typed errors: the only exceptions untrusted record bytes can raise here.

Both are ``ValueError`` subclasses so a caller that treats bad input generically still catches them. The
layer that owns the request turns them into Kafka's error codes (the broker for a Produce request,
``storage.log_validator`` for an append).
"""

from __future__ import annotations

__all__ = ["CorruptRecordError", "InvalidRecordError", "RecordTooLargeError"]


class CorruptRecordError(ValueError):
    """Bytes that cannot be what a client sent: bad CRC, truncation, impossible lengths, bad varints.

    Kafka's CorruptRecordException: CORRUPT_MESSAGE (error code 2).
    """


class InvalidRecordError(ValueError):
    """Well-formed bytes that Kafka would not accept: bad magic, count/offset mismatch, unknown codec.

    Kafka's InvalidRecordException: INVALID_RECORD (error code 87).
    """


class RecordTooLargeError(InvalidRecordError):
    """A batch larger than ``max.message.bytes``: Kafka's RecordTooLargeException, MESSAGE_TOO_LARGE (10)."""

"""The Kafka error codes the group coordinator answers with.

Contract: `GroupErrorCode` is `protocol.errors.ErrorCode` (Kafka's names and wire values,
`org.apache.kafka.common.protocol.Errors`); results hold them as ints so a handler copies them straight
into a response. `error_code_of(exc)` reads the code out of an exception raised by the injected
`append_records` callable (our broker's `KafkaApiError.code`, or kafka-python's `KafkaError.errno`).
"""

from __future__ import annotations

from protocol.errors import ErrorCode

# Kafka's error codes, one table for the whole broker: the coordinator answers with the same enum the
# protocol layer uses (its members carry Kafka's names and wire values).
GroupErrorCode = ErrorCode


class Refused(Exception):
    """A request a group refuses with this code (and message), raised inside a request method and answered."""

    def __init__(self, code: int, message: str | None = None) -> None:
        super().__init__(message)
        self.code, self.message = code, message


def error_code_of(exc: BaseException) -> int | None:
    """The Kafka error code an append failure carries, or None when it carries none."""
    # An OSError's errno is an operating-system code, not a Kafka one.
    attrs = ("code", "error_code") if isinstance(exc, OSError) else ("code", "error_code", "errno")
    for attr in attrs:
        value = getattr(exc, attr, None)
        if isinstance(value, int) and not isinstance(value, bool):
            return int(value)
    return None


def _map_append_error(code: int, too_large: int) -> int:
    """Kafka's mapping of a failed append to __consumer_offsets; only the answer to an oversized write differs."""
    if code in (GroupErrorCode.UNKNOWN_TOPIC_OR_PARTITION, GroupErrorCode.NOT_ENOUGH_REPLICAS,
                GroupErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND, GroupErrorCode.REQUEST_TIMED_OUT):
        return GroupErrorCode.COORDINATOR_NOT_AVAILABLE
    if code in (GroupErrorCode.NOT_LEADER_OR_FOLLOWER, GroupErrorCode.KAFKA_STORAGE_ERROR):
        return GroupErrorCode.NOT_COORDINATOR
    if code in (GroupErrorCode.MESSAGE_TOO_LARGE, GroupErrorCode.RECORD_LIST_TOO_LARGE,
                GroupErrorCode.INVALID_FETCH_SIZE):
        return too_large
    return code


def map_offset_append_error(code: int) -> int:
    """What a client hears when an offset commit's append to __consumer_offsets failed (Kafka's rules)."""
    return _map_append_error(code, GroupErrorCode.INVALID_COMMIT_OFFSET_SIZE)


def map_group_append_error(code: int) -> int:
    """What a client hears when storing group metadata failed (Kafka's rules for SyncGroup)."""
    return _map_append_error(code, GroupErrorCode.UNKNOWN_SERVER_ERROR)

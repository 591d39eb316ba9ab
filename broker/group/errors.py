"""The Kafka error codes the group coordinator answers with.

Contract: `GroupErrorCode` members carry Kafka's names and wire values
(`org.apache.kafka.common.protocol.Errors`); results hold them as ints so a handler copies them straight
into a response. `error_code_of(exc)` reads the code out of an exception raised by the injected
`append_records` callable (our broker's `KafkaApiError.code`, or kafka-python's `KafkaError.errno`).
"""

from __future__ import annotations

from enum import IntEnum


class GroupErrorCode(IntEnum):
    UNKNOWN_SERVER_ERROR = -1
    NONE = 0
    UNKNOWN_TOPIC_OR_PARTITION = 3
    INVALID_FETCH_SIZE = 4
    NOT_LEADER_OR_FOLLOWER = 6
    REQUEST_TIMED_OUT = 7
    MESSAGE_TOO_LARGE = 10
    OFFSET_METADATA_TOO_LARGE = 12
    COORDINATOR_LOAD_IN_PROGRESS = 14
    COORDINATOR_NOT_AVAILABLE = 15
    NOT_COORDINATOR = 16
    RECORD_LIST_TOO_LARGE = 18
    NOT_ENOUGH_REPLICAS = 19
    NOT_ENOUGH_REPLICAS_AFTER_APPEND = 20
    ILLEGAL_GENERATION = 22
    INCONSISTENT_GROUP_PROTOCOL = 23
    INVALID_GROUP_ID = 24
    UNKNOWN_MEMBER_ID = 25
    INVALID_SESSION_TIMEOUT = 26
    REBALANCE_IN_PROGRESS = 27
    INVALID_COMMIT_OFFSET_SIZE = 28
    INVALID_REQUEST = 42
    KAFKA_STORAGE_ERROR = 56
    NON_EMPTY_GROUP = 68
    GROUP_ID_NOT_FOUND = 69
    MEMBER_ID_REQUIRED = 79
    GROUP_MAX_SIZE_REACHED = 81
    FENCED_INSTANCE_ID = 82
    GROUP_SUBSCRIBED_TO_TOPIC = 86
    UNSTABLE_OFFSET_COMMIT = 88


def error_code_of(exc: BaseException) -> int | None:
    """The Kafka error code an append failure carries, or None when it carries none."""
    # An OSError's errno is an operating-system code, not a Kafka one.
    attrs = ("code", "error_code") if isinstance(exc, OSError) else ("code", "error_code", "errno")
    for attr in attrs:
        value = getattr(exc, attr, None)
        if isinstance(value, int) and not isinstance(value, bool):
            return int(value)
    return None


def map_offset_append_error(code: int) -> int:
    """What a client hears when an offset commit's append to __consumer_offsets failed (Kafka's rules)."""
    if code in (GroupErrorCode.UNKNOWN_TOPIC_OR_PARTITION, GroupErrorCode.NOT_ENOUGH_REPLICAS,
                GroupErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND, GroupErrorCode.REQUEST_TIMED_OUT):
        return GroupErrorCode.COORDINATOR_NOT_AVAILABLE
    if code in (GroupErrorCode.NOT_LEADER_OR_FOLLOWER, GroupErrorCode.KAFKA_STORAGE_ERROR):
        return GroupErrorCode.NOT_COORDINATOR
    if code in (GroupErrorCode.MESSAGE_TOO_LARGE, GroupErrorCode.RECORD_LIST_TOO_LARGE,
                GroupErrorCode.INVALID_FETCH_SIZE):
        return GroupErrorCode.INVALID_COMMIT_OFFSET_SIZE
    return code


def map_group_append_error(code: int) -> int:
    """What a client hears when storing group metadata failed (Kafka's rules for SyncGroup)."""
    if code in (GroupErrorCode.UNKNOWN_TOPIC_OR_PARTITION, GroupErrorCode.NOT_ENOUGH_REPLICAS,
                GroupErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND, GroupErrorCode.REQUEST_TIMED_OUT):
        return GroupErrorCode.COORDINATOR_NOT_AVAILABLE
    if code in (GroupErrorCode.NOT_LEADER_OR_FOLLOWER, GroupErrorCode.KAFKA_STORAGE_ERROR):
        return GroupErrorCode.NOT_COORDINATOR
    if code in (GroupErrorCode.MESSAGE_TOO_LARGE, GroupErrorCode.RECORD_LIST_TOO_LARGE,
                GroupErrorCode.INVALID_FETCH_SIZE):
        return GroupErrorCode.UNKNOWN_SERVER_ERROR
    return code

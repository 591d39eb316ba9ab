"""GroupErrorCode carries Kafka's wire values; append failures map to what Kafka answers."""

from __future__ import annotations

import kafka.errors as kafka_errors

from broker.coordinator.group.errors import (
    GroupErrorCode,
    error_code_of,
    map_group_append_error,
    map_offset_append_error,
)

# kafka-python's names for a few codes predate Kafka's renames.
OLD_NAMES = {"UNKNOWN_SERVER_ERROR": "UNKNOWN", "NONE": "NO_ERROR",
             "NOT_LEADER_OR_FOLLOWER": "NOT_LEADER_FOR_PARTITION", "MESSAGE_TOO_LARGE": "MESSAGE_SIZE_TOO_LARGE",
             "INVALID_TOPIC_EXCEPTION": "INVALID_TOPIC", "INVALID_REPLICA_ASSIGNMENT": "INVALID_REPLICATION_ASSIGNMENT"}


# Codes of later Kafka versions kafka-python does not know (its UNKNOWN), with Kafka's values (Errors.java).
NEWER = {"INVALID_REGULAR_EXPRESSION": 128, "REBOOTSTRAP_REQUIRED": 129}


def test_codes_match_kafka() -> None:
    for code in GroupErrorCode:
        if code.name in NEWER:
            assert code.value == NEWER[code.name]
            continue
        assert kafka_errors.for_code(code.value).message == OLD_NAMES.get(code.name, code.name)


def test_error_code_of_reads_our_and_kafka_python_exceptions() -> None:
    class ApiError(Exception):
        code = GroupErrorCode.NOT_ENOUGH_REPLICAS

    assert error_code_of(ApiError()) == 19
    assert error_code_of(kafka_errors.NotLeaderForPartitionError()) == 6
    assert error_code_of(OSError(5, "io")) is None  # an OS errno, not a Kafka code
    assert error_code_of(RuntimeError("x")) is None


def test_append_error_mapping() -> None:
    E = GroupErrorCode
    assert map_offset_append_error(E.NOT_LEADER_OR_FOLLOWER) == E.NOT_COORDINATOR
    assert map_offset_append_error(E.RECORD_LIST_TOO_LARGE) == E.INVALID_COMMIT_OFFSET_SIZE
    assert map_offset_append_error(E.NOT_ENOUGH_REPLICAS_AFTER_APPEND) == E.COORDINATOR_NOT_AVAILABLE
    assert map_group_append_error(E.MESSAGE_TOO_LARGE) == E.UNKNOWN_SERVER_ERROR
    assert map_group_append_error(E.KAFKA_STORAGE_ERROR) == E.NOT_COORDINATOR
    assert map_group_append_error(E.REQUEST_TIMED_OUT) == E.COORDINATOR_NOT_AVAILABLE

"""CreatePartitions: every code of `broker.apis.create_partitions.ERRORS`, over a real socket with our codec."""

from __future__ import annotations

from typing import Any

from broker.apis import create_partitions
from protocol import ApiKey, request_class
from protocol.errors import ErrorCode

from .acl_support import denied
from .quota_support import mutation_quota_used_up
from .support import REASSIGNING_OFF_2, THREE_REPLICAS, Brokers, Producer, error_path_test

Req = request_class(ApiKey.CREATE_PARTITIONS)
T = Req.CreatePartitionsTopic
REASSIGN = request_class(ApiKey.ALTER_PARTITION_REASSIGNMENTS)
TOPIC = "create-partitions-plain"


def topic(name: str, count: int, assignments: list[list[int]] | None = None) -> Any:
    return T(name=name, count=count,
             assignments=[T.CreatePartitionsAssignment(broker_ids=a) for a in assignments] if assignments else None)


def send(b: Brokers, *topics: Any, timeout_ms: int = 30000, validate_only: bool = True,
         port: int | None = None) -> Any:
    return b.call(Req[3](topics=list(topics), timeout_ms=timeout_ms, validate_only=validate_only), port)


def reassignment_in_progress(b: Brokers) -> Any:
    # a reassignment of REASSIGNING_OFF_2's partition from the dead broker 2 to broker 0: broker 0 has no
    # leader to copy from, so the reassignment stays in progress
    port = b.controller_port()
    R = REASSIGN.ReassignableTopic
    moved = b.call(REASSIGN[0](timeout_ms=30000, topics=[R(name=REASSIGNING_OFF_2, partitions=[
        R.ReassignablePartition(partition_index=0, replicas=[0])])]), port)
    assert moved.error_code == ErrorCode.NONE and moved.responses[0].partitions[0].error_code == ErrorCode.NONE, moved
    return send(b, topic(REASSIGNING_OFF_2, 2), port=port)


def throttled(b: Brokers) -> Any:
    port = mutation_quota_used_up(b)
    b.topic("grow-throttled", port=port)  # CreateTopics v4: permissive, created all the same
    return send(b, topic("grow-throttled", 2), validate_only=False, port=port)


PRODUCERS: dict[ErrorCode, Producer] = {
    ErrorCode.THROTTLING_QUOTA_EXCEEDED: throttled,
    ErrorCode.NOT_CONTROLLER: lambda b: send(b, topic(TOPIC, 2), port=b.not_controller_port()),
    ErrorCode.INVALID_REQUEST: lambda b: send(b, topic(b.topic(TOPIC), 2), topic(TOPIC, 3)),
    ErrorCode.REASSIGNMENT_IN_PROGRESS: reassignment_in_progress,
    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION: lambda b: send(b, topic("create-partitions-missing", 2)),
    ErrorCode.INVALID_PARTITIONS: lambda b: send(b, topic(b.topic(TOPIC), 1)),
    ErrorCode.INVALID_REPLICA_ASSIGNMENT: lambda b: send(b, topic(b.topic(TOPIC), 2, [[0], [0]])),
    ErrorCode.INVALID_REPLICATION_FACTOR: lambda b: send(b, topic(THREE_REPLICAS, 2), port=b.controller_port()),
    ErrorCode.REQUEST_TIMED_OUT: lambda b: send(b, topic(b.topic("create-partitions-no-wait"), 2), timeout_ms=0,
                                                validate_only=False),
    # 10,001 new partitions: over Kafka's controller bound of 10,000 records per operation
    ErrorCode.UNKNOWN_SERVER_ERROR: lambda b: send(b, topic(b.topic(TOPIC), 10_002)),
}

PRODUCERS.update({
    ErrorCode.TOPIC_AUTHORIZATION_FAILED: lambda b: send(b, T(name="partitions-denied", count=2, assignments=None),
                                                         port=denied(b)),
})

test_errors = error_path_test(create_partitions, PRODUCERS)


def test_a_topic_named_twice_is_answered_once(brokers: Brokers) -> None:
    response = send(brokers, topic(brokers.topic(TOPIC), 2), topic(TOPIC, 3))
    assert [(r.name, r.error_code) for r in response.results] == [(TOPIC, ErrorCode.INVALID_REQUEST)]


def test_new_partitions_count_against_one_bound_per_request(brokers: Brokers) -> None:
    """Kafka's controller counts the request's new partitions topic after topic: the topic that passes 10,000 is
    refused (UNKNOWN_SERVER_ERROR, no message), and so is a later one that would pass what is left."""
    a, b = brokers.topic("bound-a"), brokers.topic("bound-b")
    response = send(brokers, topic(a, 6_001), topic(b, 2**31 - 1), topic(brokers.topic("bound-c"), 4_002))
    assert [(r.name, r.error_code, r.error_message) for r in response.results] == [
        (a, ErrorCode.NONE, None), (b, ErrorCode.UNKNOWN_SERVER_ERROR, None),
        ("bound-c", ErrorCode.UNKNOWN_SERVER_ERROR, None)]

"""AlterPartitionReassignments and ListPartitionReassignments on a single in-process broker (the active
controller of its local metadata store), through our codec on a real socket: each per-partition error code
of the handlers' contracts, with Kafka's messages. NOT_CONTROLLER and reassignments that move data are in
tests/cluster/test_reassignment_api.py (three brokers on ZooKeeper)."""

from __future__ import annotations

import socket
from typing import Any

from kafka import KafkaAdminClient
from kafka.admin import NewTopic

from protocol import ApiKey, request_class
from protocol.errors import ErrorCode
from tests.broker.wire import roundtrip


def alter(port: int, topic: str, partitions: dict[int, list[int] | None]) -> dict[int, tuple[int, str | None]]:
    Req = request_class(ApiKey.ALTER_PARTITION_REASSIGNMENTS)
    Topic = Req.ReassignableTopic
    request = Req[0](timeout_ms=5000, topics=[Topic(name=topic, partitions=[
        Topic.ReassignablePartition(partition_index=p, replicas=r) for p, r in partitions.items()])])
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        resp = roundtrip(s, request, 1)
    assert resp.error_code == ErrorCode.NONE and resp.error_message is None
    assert [t.name for t in resp.responses] == [topic]
    return {p.partition_index: (p.error_code, p.error_message) for t in resp.responses for p in t.partitions}


def list_ongoing(port: int, topics: list[tuple[str, list[int]]] | None) -> Any:
    Req = request_class(ApiKey.LIST_PARTITION_REASSIGNMENTS)
    body = None if topics is None else [Req.ListPartitionReassignmentsTopics(name=t, partition_indexes=ps)
                                        for t, ps in topics]
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        return roundtrip(s, Req[0](timeout_ms=5000, topics=body), 1)


def test_alter_partition_reassignments_error_codes(broker: Any) -> None:
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    try:
        admin.create_topics([NewTopic("moved", 2, 1)])
    finally:
        admin.close()
    port = broker.port
    invalid = ErrorCode.INVALID_REPLICA_ASSIGNMENT
    assert alter(port, "moved", {0: []}) == {
        0: (invalid, "Empty replica list specified in partition reassignment.")}
    assert alter(port, "moved", {0: [0, 0]}) == {
        0: (invalid, "Duplicate replica ids in partition reassignment replica list: [0, 0]")}
    assert alter(port, "moved", {0: [0, -1]}) == {0: (invalid, "Invalid broker id in replica list: [0, -1]")}
    assert alter(port, "moved", {1: [0, 5]}) == {1: (invalid, "Replica assignment has brokers that are not alive. "
                                                          "Replica list: [5], live broker list: [0]")}
    assert alter(port, "moved", {0: None}) == {0: (ErrorCode.NO_REASSIGNMENT_IN_PROGRESS, None)}
    unknown = (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "The partition does not exist.")
    assert alter(port, "moved", {7: [0]}) == {7: unknown}
    assert alter(port, "nowhere", {0: [0]}) == {0: unknown}
    # The assignment already is the target: accepted, nothing in progress afterwards.
    assert alter(port, "moved", {0: [0], 1: [0]}) == {0: (ErrorCode.NONE, None), 1: (ErrorCode.NONE, None)}


def test_list_partition_reassignments_when_none_is_in_progress(broker: Any) -> None:
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    try:
        admin.create_topics([NewTopic("still", 1, 1)])
        assert admin.list_partition_reassignments() == {}
        assert admin.list_partition_reassignments({"still": [0]}) == {}
    finally:
        admin.close()
    for topics in (None, [("still", [0, 3]), ("nowhere", [0])]):
        resp = list_ongoing(broker.port, topics)
        assert (resp.error_code, resp.error_message, resp.topics) == (ErrorCode.NONE, None, [])

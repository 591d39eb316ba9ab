"""CreateTopics: every code of `broker.apis.create_topics.ERRORS`, over a real socket with our codec."""

from __future__ import annotations

from typing import Any

from broker.apis import create_topics
from protocol import ApiKey, request_class
from protocol.errors import ErrorCode

from .acl_support import denied
from .quota_support import mutation_quota_used_up
from .support import Brokers, Producer, error_path_test

Req = request_class(ApiKey.CREATE_TOPICS)
T = Req.CreatableTopic


def topic(name: str, partitions: int = 1, replication_factor: int = 1, configs: dict[str, str | None] | None = None,
          assignment: list[int] | None = None) -> Any:
    return T(name=name, num_partitions=partitions, replication_factor=replication_factor,
             assignments=[T.CreatableReplicaAssignment(partition_index=0, broker_ids=assignment)] if assignment else [],
             configs=[T.CreatableTopicConfig(name=k, value=v) for k, v in (configs or {}).items()])


def send(b: Brokers, *topics: Any, timeout_ms: int = 30000) -> Any:
    return b.call(Req[7](topics=list(topics), timeout_ms=timeout_ms, validate_only=False))


PRODUCERS: dict[ErrorCode, Producer] = {
    ErrorCode.THROTTLING_QUOTA_EXCEEDED: lambda b: b.call(Req[7](topics=[topic("create-throttled")], timeout_ms=30000,
                                                                 validate_only=False), mutation_quota_used_up(b)),
    ErrorCode.NOT_CONTROLLER: lambda b: b.call(Req[7](topics=[topic("create-elsewhere")], timeout_ms=30000,
                                                      validate_only=False), b.not_controller_port()),
    ErrorCode.INVALID_REQUEST: lambda b: send(b, topic("create-twice"), topic("create-twice")),
    ErrorCode.INVALID_CONFIG: lambda b: send(b, topic("create-bad-config", configs={"retention.ms": "soon"})),
    ErrorCode.INVALID_TOPIC_EXCEPTION: lambda b: send(b, topic("bad name!")),
    ErrorCode.TOPIC_ALREADY_EXISTS: lambda b: send(b, topic(b.topic("create-existing"))),
    ErrorCode.INVALID_PARTITIONS: lambda b: send(b, topic("create-no-partitions", partitions=0)),
    ErrorCode.INVALID_REPLICATION_FACTOR: lambda b: send(b, topic("create-rf-3", replication_factor=3)),
    ErrorCode.INVALID_REPLICA_ASSIGNMENT: lambda b: send(b, topic("create-both", assignment=[0])),
    ErrorCode.REQUEST_TIMED_OUT: lambda b: send(b, topic("create-no-wait"), timeout_ms=0),
    # 1 + 9,999 records, and one more for the config: over Kafka's 10,000 per operation
    ErrorCode.POLICY_VIOLATION: lambda b: send(b, topic("create-huge", partitions=9_999,
                                                        configs={"retention.ms": "1000"})),  # nothing created
}

PRODUCERS.update({
    ErrorCode.TOPIC_AUTHORIZATION_FAILED: lambda b: b.call(
        Req[7](topics=[topic("create-denied")], timeout_ms=30000, validate_only=False), denied(b)),
})

test_errors = error_path_test(create_topics, PRODUCERS)


def test_too_many_records_refuse_the_whole_request_before_any_placement(brokers: Brokers) -> None:
    """Two billion partitions cost nothing: every topic of the request, the harmless one and the duplicate too,
    is refused with the message of Kafka's controller, and none is created."""
    response = send(brokers, topic("huge-small"), topic("huge-big", partitions=2**31 - 1), topic("huge-small"))
    assert [(t.name, t.error_code, t.error_message) for t in response.topics] == [
        ("huge-small", ErrorCode.POLICY_VIOLATION, "Unable to perform excessively large batch operation."),
        ("huge-big", ErrorCode.POLICY_VIOLATION, "Unable to perform excessively large batch operation.")]
    exactly = brokers.call(Req[7](topics=[topic("huge-exact", partitions=9_999)], timeout_ms=30000,
                                  validate_only=True))  # 10,000 records: allowed
    assert exactly.topics[0].error_code == ErrorCode.NONE

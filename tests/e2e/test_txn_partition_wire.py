"""The partition leader's and the group coordinator's side of transactions over real sockets: TxnOffsetCommit
and OffsetFetch through the codec, DescribeProducers through kafka-python's admin client and the codec, and
Produce's transactional-id rule.

Until the transaction coordinator lands (T2), its part is played in-process: the COMMIT/ABORT marker goes to
the group's `__consumer_offsets` partition through `ReplicaManager.append_records(origin=COORDINATOR)` and
`group_coordinator.handle_txn_completion` is called, exactly what the WriteTxnMarkers handler does; the
brokers that commit offsets in a transaction run with `transaction.partition.verification.enable=false`
(there is no coordinator to verify with). The default broker shows what Kafka answers without one.
"""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator
from typing import Any

import pytest
from kafka import TopicPartition as KafkaTopicPartition
from kafka.admin import KafkaAdminClient, NewTopic
from kafka.errors import UnknownTopicOrPartitionError

from protocol import request_class
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode
from storage import AppendOrigin, TopicPartition
from tests.broker.wire import roundtrip
from tests.e2e import txn_support
from tests.storage.txn_support import marker, txn_batch

TOPIC = "txn-in"
GROUP = "txn-group"
NO_VERIFICATION = {"transaction.partition.verification.enable": "false"}


class Wire:
    def __init__(self, bootstrap: str) -> None:
        host, port = bootstrap.rsplit(":", 1)
        self.sock = socket.create_connection((host, int(port)), timeout=15)
        self.correlation_id = 0

    def call(self, request: Any) -> Any:
        self.correlation_id += 1
        return roundtrip(self.sock, request, self.correlation_id)

    def close(self) -> None:
        self.sock.close()


@pytest.fixture
def wire_factory() -> Iterator[Any]:
    opened: list[Wire] = []

    def make(broker: Any) -> Wire:
        opened.append(Wire(broker.bootstrap))
        return opened[-1]
    yield make
    for w in opened:
        w.close()


def create_topic(broker: Any, name: str = TOPIC, partitions: int = 2) -> None:
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap, request_timeout_ms=10000)
    try:
        admin.create_topics([NewTopic(name, partitions, 1)])
    finally:
        admin.close()


def txn_offset_commit(wire: Wire, pid: int, offsets: dict[tuple[str, int], int], *, version: int = 3,
                      group: str = GROUP, member_id: str = "", generation: int = -1) -> dict[tuple[str, int], int]:
    Req = request_class(ApiKey.TXN_OFFSET_COMMIT)[version]
    Topic = Req.TxnOffsetCommitRequestTopic
    by_topic: dict[str, list[Any]] = {}
    for (topic, partition), offset in offsets.items():
        by_topic.setdefault(topic, []).append(Topic.TxnOffsetCommitRequestPartition(
            partition_index=partition, committed_offset=offset, committed_metadata="meta"))
    fields: dict[str, Any] = {}
    if version >= 3:
        fields = {"member_id": member_id, "generation_id": generation, "group_instance_id": None}
    response = wire.call(Req(transactional_id="tx", group_id=group, producer_id=pid, producer_epoch=0,
                             topics=[Topic(name=t, partitions=ps) for t, ps in by_topic.items()], **fields))
    return {(t.name, p.partition_index): p.error_code for t in response.topics for p in t.partitions}


def offset_fetch(wire: Wire, *partitions: int, stable: bool) -> list[tuple[int, int]]:
    Req = request_class(ApiKey.OFFSET_FETCH)[7]
    response = wire.call(Req(group_id=GROUP, require_stable=stable, topics=[
        Req.OffsetFetchRequestTopic(name=TOPIC, partition_indexes=list(partitions))]))
    assert response.error_code == ErrorCode.NONE
    return [(p.committed_offset, p.error_code) for t in response.topics for p in t.partitions]


def wait_for_group_coordinator(wire: Wire) -> None:
    Req = request_class(ApiKey.FIND_COORDINATOR)[3]
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if wire.call(Req(key=GROUP, key_type=0)).error_code == ErrorCode.NONE:
            Fetch = request_class(ApiKey.OFFSET_FETCH)[7]
            if wire.call(Fetch(group_id=GROUP, require_stable=False, topics=[])).error_code == ErrorCode.NONE:
                return
        time.sleep(0.1)
    raise AssertionError("the group coordinator never became available")


def end_txn(broker: Any, pid: int, commit: bool) -> None:
    """The WriteTxnMarkers handler's work for the group's partition: the marker, then the completion hook."""
    group_service = broker.server.group_coordinator
    partition = group_service.partition_for(GROUP)
    txn_support.append(broker, TopicPartition("__consumer_offsets", partition), marker(pid, commit),
                       origin=AppendOrigin.COORDINATOR)
    broker.call(lambda: group_service.handle_txn_completion(pid, [partition], commit))


def test_txn_offsets_visible_on_commit_dropped_on_abort_and_reloaded_after_restart(
        broker_factory: Any, wire_factory: Any, tmp_path: Any) -> None:
    broker = broker_factory(NO_VERIFICATION, data_dir=tmp_path / "b")
    create_topic(broker)
    wire = wire_factory(broker)
    wait_for_group_coordinator(wire)

    assert txn_offset_commit(wire, 77, {(TOPIC, 0): 42, (TOPIC, 1): 43}) == {(TOPIC, 0): 0, (TOPIC, 1): 0}
    assert offset_fetch(wire, 0, 1, stable=False) == [(-1, 0), (-1, 0)]
    assert offset_fetch(wire, 0, 1, stable=True) == [(-1, ErrorCode.UNSTABLE_OFFSET_COMMIT)] * 2
    end_txn(broker, 77, commit=True)
    assert offset_fetch(wire, 0, 1, stable=True) == [(42, 0), (43, 0)]

    assert txn_offset_commit(wire, 78, {(TOPIC, 0): 50}, version=0) == {(TOPIC, 0): 0}
    end_txn(broker, 78, commit=False)
    assert offset_fetch(wire, 0, stable=True) == [(42, 0)]

    assert txn_offset_commit(wire, 79, {(TOPIC, 1): 60}) == {(TOPIC, 1): 0}  # left open across the restart
    broker.stop()
    broker = broker_factory(NO_VERIFICATION, data_dir=tmp_path / "b")
    wire = wire_factory(broker)
    wait_for_group_coordinator(wire)
    assert offset_fetch(wire, 0, 1, stable=False) == [(42, 0), (43, 0)]
    assert offset_fetch(wire, 0, 1, stable=True) == [(42, 0), (-1, ErrorCode.UNSTABLE_OFFSET_COMMIT)]
    end_txn(broker, 79, commit=True)
    assert offset_fetch(wire, 0, 1, stable=True) == [(42, 0), (60, 0)]


def test_txn_offset_commit_errors(broker_factory: Any, wire_factory: Any) -> None:
    broker = broker_factory(NO_VERIFICATION)
    create_topic(broker)
    wire = wire_factory(broker)
    wait_for_group_coordinator(wire)
    assert txn_offset_commit(wire, 5, {(TOPIC, 0): 1, (TOPIC, 7): 1, ("no-such-topic", 0): 1}) == {
        (TOPIC, 0): 0, (TOPIC, 7): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        ("no-such-topic", 0): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}
    assert txn_offset_commit(wire, 5, {(TOPIC, 0): 1}, group="") == {(TOPIC, 0): ErrorCode.INVALID_GROUP_ID}
    # KIP-447: a v3 request naming a member the group does not know
    assert txn_offset_commit(wire, 5, {(TOPIC, 0): 1}, member_id="ghost", generation=3) == {
        (TOPIC, 0): ErrorCode.UNKNOWN_MEMBER_ID}


def test_without_a_transaction_coordinator_verification_fails_as_in_kafka(broker: Any, wire_factory: Any) -> None:
    """transaction.partition.verification.enable defaults to true: with no __transaction_state there is no
    coordinator to verify with; TxnOffsetCommit answers COORDINATOR_NOT_AVAILABLE, a transactional produce
    NOT_ENOUGH_REPLICAS (both retriable), and a transactional produce without a transactional id
    TRANSACTIONAL_ID_AUTHORIZATION_FAILED."""
    create_topic(broker)
    wire = wire_factory(broker)
    wait_for_group_coordinator(wire)
    assert txn_offset_commit(wire, 5, {(TOPIC, 0): 1}) == {(TOPIC, 0): ErrorCode.COORDINATOR_NOT_AVAILABLE}

    Produce = request_class(ApiKey.PRODUCE)[9]
    Topic = Produce.TopicProduceData

    def produce(transactional_id: str | None) -> tuple[int, str | None]:
        response = wire.call(Produce(transactional_id=transactional_id, acks=-1, timeout_ms=5000, topic_data=[
            Topic(name=TOPIC, partition_data=[Topic.PartitionProduceData(index=0, records=bytes(txn_batch(9, 0)))])]))
        part = response.responses[0].partition_responses[0]
        return part.error_code, part.error_message

    assert produce(None) == (ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, None)
    error, message = produce("tx")
    assert error == ErrorCode.NOT_ENOUGH_REPLICAS
    assert message == ("Unable to verify the partition has been added to the transaction. "
                       "Underlying error: COORDINATOR_NOT_AVAILABLE")
    assert broker.call(lambda: broker.server.replica_manager.partitions[TopicPartition(TOPIC, 0)]
                       .log.log_end_offset) == 0


def test_describe_producers(broker: Any, wire_factory: Any) -> None:
    create_topic(broker)
    tp = TopicPartition(TOPIC, 0)
    txn_support.append(broker, tp, txn_batch(11, 0, 3, epoch=2))  # open transaction from offset 0
    txn_support.append(broker, tp, txn_batch(12, 0, 2, transactional=False))  # idempotent
    txn_support.append(broker, tp, txn_batch(13, 0, 1, epoch=1))
    txn_support.append(broker, tp, marker(13, commit=True, epoch=1, coordinator_epoch=4),
                       origin=AppendOrigin.COORDINATOR)

    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap, request_timeout_ms=10000)
    try:
        states = admin.describe_producers([KafkaTopicPartition(TOPIC, 0), KafkaTopicPartition(TOPIC, 1)])
        by_pid = {p.producer_id: (p.producer_epoch, p.last_sequence, p.coordinator_epoch,
                                  p.current_transaction_start_offset, p.last_timestamp > 0)
                  for p in states[KafkaTopicPartition(TOPIC, 0)].active_producers}
        assert by_pid == {11: (2, 2, -1, 0, True), 12: (0, 1, -1, -1, True), 13: (1, 0, 4, -1, True)}
        assert states[KafkaTopicPartition(TOPIC, 1)].active_producers == []
        with pytest.raises(UnknownTopicOrPartitionError):
            admin.describe_producers([KafkaTopicPartition("no-such-topic", 0)], broker_id=broker.server.broker_id)
    finally:
        admin.close()

    wire = wire_factory(broker)
    Req = request_class(ApiKey.DESCRIBE_PRODUCERS)[0]
    response = wire.call(Req(topics=[Req.TopicRequest(name="bad/name", partition_indexes=[0]),
                                     Req.TopicRequest(name=TOPIC, partition_indexes=[5]),
                                     Req.TopicRequest(name="no-such-topic", partition_indexes=[0, 1])]))
    answers = [(t.name, p.partition_index, p.error_code, p.error_message)
               for t in response.topics for p in t.partitions]
    assert answers == [
        ("bad/name", 0, ErrorCode.INVALID_TOPIC_EXCEPTION, "Topic name \"bad/name\" is illegal, it contains a "
                                                          "character other than ASCII alphanumerics, '.', '_' and '-'"),
        (TOPIC, 5, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, None),
        ("no-such-topic", 0, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, None),
        ("no-such-topic", 1, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, None)]

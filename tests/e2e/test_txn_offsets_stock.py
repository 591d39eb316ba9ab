"""Offsets in transactions and KIP-890 verification with the real transaction coordinator, over real sockets.

- confluent-kafka's consume-transform-produce loop: `send_offsets_to_transaction` (AddOffsetsToTxn, then
  TxnOffsetCommit to the group coordinator) commits the group's offsets with the transaction's output; an
  aborted transaction commits neither; a consumer that requires stable offsets resumes after the last commit.
- kafka-python's transactional producer sends offsets the same way.
- KIP-890 part 1: a transactional produce to a partition never added to the transaction is refused by the
  leader (INVALID_TXN_STATE) after asking the coordinator; once AddPartitionsToTxn added it, the same produce
  goes through. TxnOffsetCommit without AddOffsetsToTxn: INVALID_TXN_STATE as well.
"""

from __future__ import annotations

import time
from typing import Any

from confluent_kafka import Consumer, Producer, TopicPartition
from kafka import KafkaProducer
from kafka import TopicPartition as KafkaTopicPartition

from protocol import request_class
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode
from tests.cluster.support import raw_request
from tests.e2e.test_transactions import FAST, create_topic, read_all
from tests.storage.txn_support import txn_batch

GROUP = "ctp-group"


def fill(bootstrap: str, topic: str, n: int) -> None:
    p = Producer({"bootstrap.servers": bootstrap})
    for i in range(n):
        p.produce(topic, value=f"in-{i}".encode(), partition=0)
    assert p.flush(30) == 0


def consumer(bootstrap: str, topic: str) -> Consumer:
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": GROUP, "isolation.level": "read_committed",
                  "auto.offset.reset": "earliest", "enable.auto.commit": False})
    c.subscribe([topic])
    return c


def poll_n(c: Consumer, n: int) -> list[Any]:
    got: list[Any] = []
    deadline = time.monotonic() + 30
    while len(got) < n and time.monotonic() < deadline:
        msg = c.poll(0.5)
        if msg is not None and msg.error() is None:
            got.append(msg)
    assert len(got) == n, got
    return got


def committed(bootstrap: str, topic: str) -> int:
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": GROUP})
    try:
        return c.committed([TopicPartition(topic, 0)], timeout=15)[0].offset
    finally:
        c.close()


def test_confluent_consume_transform_produce_commits_offsets_with_the_output(broker_factory: Any) -> None:
    broker = broker_factory(FAST)
    create_topic(broker.bootstrap, "ctp-in", 1)
    create_topic(broker.bootstrap, "ctp-out", 1)
    fill(broker.bootstrap, "ctp-in", 6)
    p = Producer({"bootstrap.servers": broker.bootstrap, "transactional.id": "ctp"})
    p.init_transactions(30)
    c = consumer(broker.bootstrap, "ctp-in")
    try:
        for commit in (True, False):
            msgs = poll_n(c, 3)
            p.begin_transaction()
            for m in msgs:
                p.produce("ctp-out", value=b"out-" + m.value(), partition=0)
            p.send_offsets_to_transaction(c.position(c.assignment()), c.consumer_group_metadata(), 30)
            if commit:
                p.commit_transaction(30)
            else:
                p.abort_transaction(30)
    finally:
        c.close()
    assert committed(broker.bootstrap, "ctp-in") == 3  # the aborted transaction's offsets (6) are gone
    assert sorted(read_all(broker.bootstrap, "ctp-out", 3)) == [b"out-in-0", b"out-in-1", b"out-in-2"]
    # a new member resumes after the committed transaction: the aborted input is read again
    c = consumer(broker.bootstrap, "ctp-in")
    try:
        assert [m.value() for m in poll_n(c, 3)] == [b"in-3", b"in-4", b"in-5"]
    finally:
        c.close()


def test_kafka_python_send_offsets_to_transaction(broker_factory: Any) -> None:
    broker = broker_factory(FAST)
    create_topic(broker.bootstrap, "kp-out", 1)
    create_topic(broker.bootstrap, "ctp-in", 1)
    p = KafkaProducer(bootstrap_servers=broker.bootstrap, transactional_id="kp-ctp")
    try:
        p.init_transactions()
        p.begin_transaction()
        p.send("kp-out", b"x", partition=0)
        from kafka.structs import OffsetAndMetadata
        p.send_offsets_to_transaction({KafkaTopicPartition("ctp-in", 0): OffsetAndMetadata(17, "", -1)}, GROUP)
        p.commit_transaction()
    finally:
        p.close()
    assert committed(broker.bootstrap, "ctp-in") == 17


def test_kip_890_a_partition_not_in_the_transaction_is_refused_by_its_leader(broker_factory: Any) -> None:
    broker = broker_factory(FAST)
    create_topic(broker.bootstrap, "v-out", 1)
    port = broker.port
    Find = request_class(ApiKey.FIND_COORDINATOR)[3]
    deadline = time.monotonic() + 30
    while raw_request(port, Find(key="v-tx", key_type=1)).error_code != ErrorCode.NONE:
        assert time.monotonic() < deadline
        time.sleep(0.1)
    Init = request_class(ApiKey.INIT_PRODUCER_ID)[4]
    while True:
        init = raw_request(port, Init(transactional_id="v-tx", transaction_timeout_ms=60000, producer_id=-1,
                                      producer_epoch=-1))
        if init.error_code == ErrorCode.NONE:
            break
        assert init.error_code in (ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, ErrorCode.NOT_COORDINATOR,
                                   ErrorCode.COORDINATOR_NOT_AVAILABLE) and time.monotonic() < deadline
        time.sleep(0.1)
    pid, epoch = init.producer_id, init.producer_epoch

    Produce = request_class(ApiKey.PRODUCE)[9]
    Topic = Produce.TopicProduceData

    def produce() -> tuple[int, str | None]:
        response = raw_request(port, Produce(transactional_id="v-tx", acks=-1, timeout_ms=5000, topic_data=[
            Topic(name="v-out", partition_data=[Topic.PartitionProduceData(
                index=0, records=bytes(txn_batch(pid, 0, epoch=epoch)))])]))
        part = response.responses[0].partition_responses[0]
        return part.error_code, part.error_message

    assert produce() == (ErrorCode.INVALID_TXN_STATE, "Partition was not added to the transaction")

    TxnCommit = request_class(ApiKey.TXN_OFFSET_COMMIT)[3]
    T = TxnCommit.TxnOffsetCommitRequestTopic
    Fetch = request_class(ApiKey.OFFSET_FETCH)[7]
    while raw_request(port, Find(key=GROUP, key_type=0)).error_code != ErrorCode.NONE or \
            raw_request(port, Fetch(group_id=GROUP, require_stable=False, topics=[])).error_code != ErrorCode.NONE:
        assert time.monotonic() < deadline + 30
        time.sleep(0.1)
    answer = raw_request(port, TxnCommit(
        transactional_id="v-tx", group_id=GROUP, producer_id=pid, producer_epoch=epoch, generation_id=-1,
        member_id="", group_instance_id=None, topics=[T(name="v-out", partitions=[
            T.TxnOffsetCommitRequestPartition(partition_index=0, committed_offset=1, committed_metadata="")])]))
    assert answer.topics[0].partitions[0].error_code == ErrorCode.INVALID_TXN_STATE

    Add = request_class(ApiKey.ADD_PARTITIONS_TO_TXN)[3]
    added = raw_request(port, Add(v3_and_below_transactional_id="v-tx", v3_and_below_producer_id=pid,
                                  v3_and_below_producer_epoch=epoch, v3_and_below_topics=[
                                      Add.AddPartitionsToTxnTopic(name="v-out", partitions=[0])]))
    assert added.results_by_topic_v3_and_below[0].results_by_partition[0].partition_error_code == ErrorCode.NONE
    assert produce() == (ErrorCode.NONE, None)

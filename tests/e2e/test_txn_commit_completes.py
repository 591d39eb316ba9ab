"""A committed transaction is complete before the broker serves the producer's next request (one broker).

The coordinator answers EndTxn once PrepareCommit is written, as Kafka's; the COMMIT markers of the partitions
this broker leads are then written in-process and CompleteCommit right after, before the broker reads another
request. So the producer's next AddPartitionsToTxn, sent the moment EndTxn is answered (here: sent with it on
the same connection, which the broker serves after EndTxn's answer), finds the transaction complete and is
accepted, where a marker sent over the wire to this same broker left it in PrepareCommit and answered
CONCURRENT_TRANSACTIONS (the client then retried 20 ms later). The marker is in the partition's log.

The leader verifies a transactional produce (KIP-890) with this same broker's coordinator in-process: the
partition in the transaction takes the batch, the other one refuses it with INVALID_TXN_STATE.
"""

from __future__ import annotations

import socket
from typing import Any

from confluent_kafka.admin import AdminClient, NewTopic

from protocol import request_class
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode
from tests.broker.wire import recv, roundtrip, send
from tests.e2e.support import wait_until
from tests.storage.txn_support import txn_batch

FIND = request_class(ApiKey.FIND_COORDINATOR)
INIT = request_class(ApiKey.INIT_PRODUCER_ID)
ADD = request_class(ApiKey.ADD_PARTITIONS_TO_TXN)
END = request_class(ApiKey.END_TXN)
LIST_OFFSETS = request_class(ApiKey.LIST_OFFSETS)
DESCRIBE = request_class(ApiKey.DESCRIBE_TRANSACTIONS)
PRODUCE = request_class(ApiKey.PRODUCE)
TOPIC = "txn-complete"
TXN_ID = "completes-at-once"
TRANSACTIONS = 5


def _add(producer_id: int, epoch: int) -> Any:
    return ADD[3](v3_and_below_transactional_id=TXN_ID, v3_and_below_producer_id=producer_id,
                  v3_and_below_producer_epoch=epoch,
                  v3_and_below_topics=[ADD.AddPartitionsToTxnTopic(name=TOPIC, partitions=[0])])


def _add_errors(response: Any) -> set[int]:
    return {p.partition_error_code for t in response.results_by_topic_v3_and_below for p in t.results_by_partition}


def _log_end_offset(sock: socket.socket) -> int:
    T = LIST_OFFSETS.ListOffsetsTopic
    resp = roundtrip(sock, LIST_OFFSETS[7](replica_id=-1, isolation_level=0, topics=[T(name=TOPIC, partitions=[
        T.ListOffsetsPartition(partition_index=0, current_leader_epoch=-1, timestamp=-1)])]), 99)
    return int(resp.topics[0].partitions[0].offset)


def _produce_error(sock: socket.socket, partition: int, records: bytearray) -> int:
    T = PRODUCE.TopicProduceData
    resp = roundtrip(sock, PRODUCE[9](transactional_id=TXN_ID, acks=-1, timeout_ms=10000, topic_data=[
        T(name=TOPIC, partition_data=[T.PartitionProduceData(index=partition, records=bytes(records))])]), 97)
    return int(resp.responses[0].partition_responses[0].error_code)


def test_next_add_partitions_after_a_commit_is_accepted(broker_factory: Any) -> None:
    broker = broker_factory({"transaction.state.log.num.partitions": "3"})
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    for f in admin.create_topics([NewTopic(TOPIC, 2, 1)]).values():
        f.result(30)
    with socket.create_connection(("127.0.0.1", broker.port), timeout=30) as sock:
        init: list[Any] = []

        def initialized() -> bool:
            roundtrip(sock, FIND[3](key=TXN_ID, key_type=1), 1)
            init.append(roundtrip(sock, INIT[4](transactional_id=TXN_ID, transaction_timeout_ms=60000,
                                                producer_id=-1, producer_epoch=-1), 2))
            return init[-1].error_code == ErrorCode.NONE

        wait_until(initialized, 30, "the transaction coordinator")
        pid, epoch = init[-1].producer_id, init[-1].producer_epoch
        assert _add_errors(roundtrip(sock, _add(pid, epoch), 3)) == {ErrorCode.NONE}
        for i in range(TRANSACTIONS):
            # EndTxn and the next transaction's AddPartitionsToTxn back to back: served in that order.
            send(sock, END[3](transactional_id=TXN_ID, producer_id=pid, producer_epoch=epoch, committed=True),
                 10 + 2 * i)
            send(sock, _add(pid, epoch), 11 + 2 * i)
            assert recv(sock, ApiKey.END_TXN, 3).error_code == ErrorCode.NONE
            assert _add_errors(recv(sock, ApiKey.ADD_PARTITIONS_TO_TXN, 3)) == {ErrorCode.NONE}, f"transaction {i}"
        assert _log_end_offset(sock) == TRANSACTIONS  # one COMMIT marker per transaction, nothing else
        described = roundtrip(sock, DESCRIBE[0](transactional_ids=[TXN_ID]), 98).transaction_states[0]
        assert described.transaction_state == "Ongoing"  # the last AddPartitionsToTxn opened a new one
        assert _produce_error(sock, 1, txn_batch(pid, 0, epoch=epoch)) == ErrorCode.INVALID_TXN_STATE
        assert _produce_error(sock, 0, txn_batch(pid, 0, epoch=epoch)) == ErrorCode.NONE

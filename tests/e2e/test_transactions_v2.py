"""transaction.version 2 (KIP-890 part 2) over real sockets, with raw requests through our codec: no stock client
here speaks it (librdkafka 2.16 and kafka-python stop at EndTxn v4 / Produce v11).

- InitProducerId, then Produce v12 to two partitions and TxnOffsetCommit v5 without AddPartitionsToTxn or
  AddOffsetsToTxn: the leaders have the coordinator add the partitions; EndTxn v5 commit answers the bumped
  epoch; a read_committed confluent-kafka consumer sees the records and the group the offsets; a retried
  EndTxn (the epoch before the bump) answers the same id and epoch again.
- The next transaction runs at the returned epoch, its sequences from 0; EndTxn v5 abort bumps again and the
  records stay invisible to read_committed; the old epochs are fenced (Produce INVALID_PRODUCER_EPOCH, EndTxn
  PRODUCER_FENCED); an abort with nothing in the transaction bumps too, a commit there is INVALID_TXN_STATE.
- The partitions saw the bumped epochs in the markers (DescribeProducers).
- A stock TV1 transactional producer (confluent-kafka) still commits on the same broker.
- At the exhausted epoch an end moves the producer to a new producer id at epoch 0 (retry answered the same).
"""

from __future__ import annotations

import time
from typing import Any

from confluent_kafka import Producer

from protocol import request_class
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode
from protocol.records import build_batch
from tests.cluster.support import raw_request
from tests.e2e.support import wait_until
from tests.e2e.test_transactions import create_topic, describe, read_all

FAST = {"transaction.state.log.num.partitions": "3"}
TOPIC = "tv2-out"
GROUP = "tv2-group"
TXN = "tv2-txn"

Produce = request_class(ApiKey.PRODUCE)
End = request_class(ApiKey.END_TXN)
TxnCommit = request_class(ApiKey.TXN_OFFSET_COMMIT)
Fetch = request_class(ApiKey.OFFSET_FETCH)[7]
Find = request_class(ApiKey.FIND_COORDINATOR)[3]


def produce(port: int, pid: int, epoch: int, partitions: dict[int, bytes], *, sequence: int = 0,
            version: int = 12) -> dict[int, int]:
    now = int(time.time() * 1000)
    T = Produce.TopicProduceData
    response = raw_request(port, Produce[version](transactional_id=TXN, acks=-1, timeout_ms=10000, topic_data=[
        T(name=TOPIC, partition_data=[T.PartitionProduceData(index=p, records=build_batch(
            [(None, value, [], now)], producer_id=pid, producer_epoch=epoch, base_sequence=sequence,
            is_transactional=True)) for p, value in partitions.items()])]))
    return {p.index: p.error_code for t in response.responses for p in t.partition_responses}


def end(port: int, pid: int, epoch: int, commit: bool, version: int = 5) -> tuple[int, int, int]:
    r = raw_request(port, End[version](transactional_id=TXN, producer_id=pid, producer_epoch=epoch,
                                       committed=commit))
    return r.error_code, r.producer_id, r.producer_epoch


def txn_offset_commit(port: int, pid: int, epoch: int, offset: int) -> int:
    T = TxnCommit.TxnOffsetCommitRequestTopic
    answer = raw_request(port, TxnCommit[5](
        transactional_id=TXN, group_id=GROUP, producer_id=pid, producer_epoch=epoch, generation_id=-1,
        member_id="", group_instance_id=None, topics=[T(name=TOPIC, partitions=[
            T.TxnOffsetCommitRequestPartition(partition_index=0, committed_offset=offset, committed_metadata="")])]))
    return answer.topics[0].partitions[0].error_code


def committed_offset(port: int) -> tuple[int, int]:
    response = raw_request(port, Fetch(group_id=GROUP, require_stable=True, topics=[
        Fetch.OffsetFetchRequestTopic(name=TOPIC, partition_indexes=[0])]))
    p = response.topics[0].partitions[0]
    return p.committed_offset, p.error_code


def producer_epochs(port: int, pid: int) -> dict[int, int]:
    Req = request_class(ApiKey.DESCRIBE_PRODUCERS)[0]
    response = raw_request(port, Req(topics=[Req.TopicRequest(name=TOPIC, partition_indexes=[0, 1])]))
    return {p.partition_index: s.producer_epoch for t in response.topics for p in t.partitions
            for s in p.active_producers if s.producer_id == pid}


def init(port: int) -> tuple[int, int]:
    Init = request_class(ApiKey.INIT_PRODUCER_ID)[5]
    answers: list[Any] = []

    def initialized() -> bool:
        raw_request(port, Find(key=TXN, key_type=1))
        answers.append(raw_request(port, Init(transactional_id=TXN, transaction_timeout_ms=60000, producer_id=-1,
                                              producer_epoch=-1)))
        return answers[-1].error_code == ErrorCode.NONE

    wait_until(initialized, 30, "InitProducerId once __transaction_state is loaded")
    return answers[-1].producer_id, answers[-1].producer_epoch


def test_tv2_commit_abort_and_fencing_without_add_partitions(broker_factory: Any) -> None:
    broker = broker_factory(FAST)
    port = broker.port
    create_topic(broker.bootstrap, TOPIC)
    pid, epoch = init(port)
    wait_until(lambda: raw_request(port, Find(key=GROUP, key_type=0)).error_code == 0
               and raw_request(port, Fetch(group_id=GROUP, require_stable=False, topics=[])).error_code == 0,
               30, "the group coordinator")

    # Transaction 1: no AddPartitionsToTxn, no AddOffsetsToTxn.
    assert produce(port, pid, epoch, {0: b"c-0", 1: b"c-1"}) == {0: 0, 1: 0}
    assert txn_offset_commit(port, pid, epoch, 7) == ErrorCode.NONE
    state = describe(port, TXN)
    topics = {t.topic: sorted(t.partitions) for t in state.topics}
    assert state.transaction_state == "Ongoing" and topics[TOPIC] == [0, 1] and len(topics["__consumer_offsets"]) == 1
    assert end(port, pid, epoch, commit=True) == (0, pid, epoch + 1)
    wait_until(lambda: describe(port, TXN).transaction_state == "CompleteCommit", 30, "the commit")
    assert end(port, pid, epoch, commit=True) == (0, pid, epoch + 1)  # a retry answers the same again
    assert end(port, pid, epoch, commit=False)[0] == ErrorCode.INVALID_TXN_STATE  # a retry the other way
    assert sorted(read_all(broker.bootstrap, TOPIC, 2)) == [b"c-0", b"c-1"]
    assert committed_offset(port) == (7, 0)
    assert producer_epochs(port, pid) == {0: epoch + 1, 1: epoch + 1}  # the markers carried the bumped epoch

    # Transaction 2 at the returned epoch, sequences from 0 again: aborted.
    epoch2 = epoch + 1
    assert produce(port, pid, epoch2, {0: b"a-0"}) == {0: 0}
    assert txn_offset_commit(port, pid, epoch2, 9) == ErrorCode.NONE
    assert end(port, pid, epoch2, commit=False) == (0, pid, epoch2 + 1)
    wait_until(lambda: describe(port, TXN).transaction_state == "CompleteAbort", 30, "the abort")
    assert sorted(read_all(broker.bootstrap, TOPIC, 2)) == [b"c-0", b"c-1"]
    assert sorted(read_all(broker.bootstrap, TOPIC, 3, isolation="read_uncommitted")) == [b"a-0", b"c-0", b"c-1"]
    assert committed_offset(port) == (7, 0)
    assert producer_epochs(port, pid)[0] == epoch2 + 1

    # The old epochs are fenced.
    assert produce(port, pid, epoch2, {1: b"zombie"}) == {1: ErrorCode.INVALID_PRODUCER_EPOCH}
    assert end(port, pid, epoch, commit=True) == (ErrorCode.PRODUCER_FENCED, -1, -1)
    assert end(port, pid, epoch2 + 1, commit=True, version=4)[0] == ErrorCode.INVALID_TXN_STATE  # TV1 rules at v4

    # Nothing in the transaction: an abort still bumps (the producer may not know the state), a commit is refused.
    epoch3 = epoch2 + 1
    assert end(port, pid, epoch3, commit=True) == (ErrorCode.INVALID_TXN_STATE, -1, -1)
    assert end(port, pid, epoch3, commit=False) == (0, pid, epoch3 + 1)
    wait_until(lambda: describe(port, TXN).transaction_state == "CompleteAbort", 30, "the empty abort")
    assert describe(port, TXN).producer_epoch == epoch3 + 1

    # A TV1 client on the same broker is unchanged.
    p = Producer({"bootstrap.servers": broker.bootstrap, "transactional.id": "tv1-txn"})
    p.init_transactions(30)
    p.begin_transaction()
    p.produce(TOPIC, b"tv1", partition=1)
    p.commit_transaction(30)
    assert sorted(read_all(broker.bootstrap, TOPIC, 3)) == [b"c-0", b"c-1", b"tv1"]


def test_tv2_end_at_the_exhausted_epoch_moves_to_a_new_producer_id(broker_factory: Any) -> None:
    """An EndTxn v5 at the last usable epoch (32766): the bump reaches 32767, the markers carry it, and the
    producer continues under a new producer id at epoch 0; a retry with the old id and epoch answers the same.
    32766 transactions are too many for a test: the epoch is set on the coordinator's metadata (on the
    broker's loop) right after InitProducerId, as if the producer had run them."""
    broker = broker_factory(FAST)
    port = broker.port
    create_topic(broker.bootstrap, TOPIC)
    pid, _ = init(port)
    last = 32766

    def exhaust() -> None:
        md = broker.server.transaction_coordinator.state.get_state(TXN)[1]
        md.producer_epoch = last

    broker.call(exhaust)
    assert produce(port, pid, last, {0: b"last"}) == {0: 0}
    err, new_pid, new_epoch = end(port, pid, last, commit=True)
    assert err == 0 and new_pid != pid and new_epoch == 0
    wait_until(lambda: describe(port, TXN).transaction_state == "CompleteCommit", 30, "the commit")
    assert end(port, pid, last, commit=True) == (0, new_pid, 0)  # the retry, after the switch
    assert producer_epochs(port, pid) == {0: 32767}  # the marker carried the bumped epoch
    assert produce(port, new_pid, 0, {1: b"next"}) == {1: 0}
    assert end(port, new_pid, 0, commit=True) == (0, new_pid, 1)
    wait_until(lambda: describe(port, TXN).transaction_state == "CompleteCommit", 30, "the second commit")
    assert sorted(read_all(broker.bootstrap, TOPIC, 2)) == [b"last", b"next"]
    assert produce(port, pid, last, {1: b"zombie"}) == {1: ErrorCode.INVALID_PRODUCER_ID_MAPPING}

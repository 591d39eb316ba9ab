"""The transaction coordinator across broker restarts: its state comes back from `__transaction_state`.

- kill -9 of a `python -m broker` process holding one committed and one open transaction: after the restart
  the committed records stay visible to read_committed, DescribeTransactions finds the open transaction
  Ongoing with its partitions (loaded from the log), and a new producer instance's InitProducerId fences it:
  the open records are aborted (never visible) and the epoch is bumped past the fence.
- A transaction whose PrepareCommit was written but whose markers were not (the coordinator stopped between
  the two): the restarted coordinator finds it while loading, writes the markers and CompleteCommit, and
  read_committed consumers then see its records.
"""

from __future__ import annotations

import time
from typing import Any

from confluent_kafka import Producer

from broker.coordinator.transaction.log import encode_key, encode_value
from broker.coordinator.transaction.metadata import TransactionState, TxnTransitMetadata
from storage import TopicPartition
from tests.e2e.support import wait_until
from tests.e2e.test_transactions import FAST, create_topic, describe, open_transaction, read_all


def loaded_state(port: int, txn_id: str) -> Any:
    state = None

    def answered() -> bool:
        nonlocal state
        state = describe(port, txn_id)
        return state.error_code == 0

    wait_until(answered, 30, f"{txn_id} loaded by the coordinator")
    return state


def test_kill_9_keeps_committed_and_fences_the_open_transaction(broker_factory: Any, tmp_path: Any) -> None:
    data_dir = tmp_path / "node"
    broker = broker_factory(FAST, data_dir=data_dir, process=True)
    create_topic(broker.bootstrap, "restart-out")
    p = Producer({"bootstrap.servers": broker.bootstrap, "transactional.id": "durable"})
    p.init_transactions(30)
    p.begin_transaction()
    p.produce("restart-out", b"kept-0", partition=0)
    p.produce("restart-out", b"kept-1", partition=1)
    p.commit_transaction(30)
    p.begin_transaction()
    p.produce("restart-out", b"left-open", partition=1)
    p.flush(30)
    before = describe(broker.port, "durable")
    assert before.transaction_state == "Ongoing"
    broker.kill()

    broker = broker_factory(FAST, data_dir=data_dir, process=True, port=broker.port)
    after = loaded_state(broker.port, "durable")
    assert (after.transaction_state, after.producer_id, after.producer_epoch) == (
        "Ongoing", before.producer_id, before.producer_epoch)
    assert [(t.topic, list(t.partitions)) for t in after.topics] == [("restart-out", [1])]
    assert sorted(read_all(broker.bootstrap, "restart-out", 2)) == [b"kept-0", b"kept-1"]

    again = Producer({"bootstrap.servers": broker.bootstrap, "transactional.id": "durable"})
    again.init_transactions(30)
    bumped = describe(broker.port, "durable")
    assert (bumped.transaction_state, bumped.producer_id, bumped.producer_epoch) == (
        "Empty", before.producer_id, before.producer_epoch + 2)
    again.begin_transaction()
    again.produce("restart-out", b"after-restart", partition=0)
    again.commit_transaction(30)
    assert sorted(read_all(broker.bootstrap, "restart-out", 3)) == [b"after-restart", b"kept-0", b"kept-1"]
    broker.stop()


def test_prepare_commit_found_on_load_is_completed(broker_factory: Any, tmp_path: Any) -> None:
    data_dir = tmp_path / "node"
    broker = broker_factory(FAST, data_dir=data_dir)
    create_topic(broker.bootstrap, "resume-out")
    _producer, ongoing = open_transaction(broker, "resume-out", "resumed", [(0, b"pending-0"), (1, b"pending-1")])

    # What EndTxn writes before the markers; the coordinator then stops before sending any.
    service = broker.server.transaction_coordinator
    now = int(time.time() * 1000)
    target = TxnTransitMetadata(ongoing.producer_id, -1, ongoing.producer_epoch, -1, ongoing.transaction_timeout_ms,
                                TransactionState.PREPARE_COMMIT,
                                frozenset({TopicPartition("resume-out", 0), TopicPartition("resume-out", 1)}),
                                ongoing.transaction_start_time_ms, now)

    async def write_prepare_commit() -> None:
        await service.runtime.append(service.partition_for("resumed"), [(encode_key("resumed"),
                                                                        encode_value(target))])

    broker.call(write_prepare_commit)
    assert read_all(broker.bootstrap, "resume-out", 0, settle=0.5) == []
    broker.stop()

    broker = broker_factory(FAST, data_dir=data_dir)
    wait_until(lambda: describe(broker.port, "resumed").transaction_state == "CompleteCommit", 30,
               "the loaded PrepareCommit completed")
    assert sorted(read_all(broker.bootstrap, "resume-out", 2)) == [b"pending-0", b"pending-1"]

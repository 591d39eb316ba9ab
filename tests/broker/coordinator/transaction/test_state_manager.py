"""TransactionStateManager as the runtime's shard: loading replays `__transaction_state` records (the last value
of an id wins, a tombstone removes it, undecodable records are skipped), ids answer COORDINATOR_LOAD_IN_PROGRESS
while their partition loads and NOT_COORDINATOR once it is unloaded or was never ours, Prepare* transactions are
handed over for their markers, and the coordinator epoch is the partition's leader epoch when loading began.
Writes are covered end to end (tests/e2e/test_transactions.py)."""

from __future__ import annotations

from broker.coordinator.transaction.config import TransactionConfig
from broker.coordinator.transaction.log import encode_key, encode_value
from broker.coordinator.transaction.metadata import TransactionState, TxnTransitMetadata
from broker.coordinator.transaction.state_manager import TransactionStateManager
from protocol.errors import ErrorCode
from storage import TopicPartition

S = TransactionState


async def no_writes(partition: int, records: list[tuple[bytes, bytes | None]]) -> int:
    raise AssertionError("loading never writes")


def record(txn_id: str, state: TransactionState, epoch: int = 0,
           partitions: frozenset[TopicPartition] = frozenset()) -> tuple[bytes, bytes]:
    return encode_key(txn_id), encode_value(TxnTransitMetadata(
        77, -1, epoch, -1, 60000, state, partitions, -1 if state == S.EMPTY else 10, 20))


def manager(partitions: int = 1) -> tuple[TransactionStateManager, list]:
    epochs = {0: 5}
    m = TransactionStateManager(TransactionConfig(transaction_state_log_num_partitions=partitions), no_writes,
                                lambda p: epochs[p])
    handed: list = []
    m.on_loaded = lambda p, epoch, txns: handed.append((p, epoch, sorted(t.transactional_id for t in txns)))
    return m, handed


def test_loading_replays_records() -> None:
    m, handed = manager()
    assert m.get_state("a") == ErrorCode.NOT_COORDINATOR
    m.begin_loading(0)
    assert m.get_state("a") == ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
    tp = frozenset({TopicPartition("t", 0)})
    m.load_partition(0, [record("a", S.EMPTY), record("a", S.ONGOING, partitions=tp), record("b", S.EMPTY),
                         (encode_key("garbage"), b"\x00\x00\x01"), (b"\x00\x09\x00\x00", b"")])
    m.load_partition(0, [(encode_key("b"), None), record("c", S.PREPARE_COMMIT, epoch=3, partitions=tp)])
    m.on_partition_loaded(0)
    got = m.get_state("a")
    assert isinstance(got, tuple) and got[0] == 5 and got[1].state == S.ONGOING and got[1].topic_partitions == set(tp)
    assert m.get_state("b") is None and m.get_state("garbage") is None
    assert handed == [(0, 5, ["c"])]
    assert [t[0] for t in m.timed_out_transactions(10 ** 15)] == ["a"]
    m.unload_partition(0)
    assert m.get_state("a") == ErrorCode.NOT_COORDINATOR


def test_partition_of_an_id_is_kafkas() -> None:
    m, _ = manager(50)
    # abs(String.hashCode) % 50, as Kafka places them: "my-txn".hashCode() == -1061187895,
    # "transactional-id-1".hashCode() == 1051133891 (s[0]*31^(n-1) + ... + s[n-1], as an int32)
    assert [m.partition_for(i) for i in ("", "my-txn", "transactional-id-1")] == [0, 45, 41]

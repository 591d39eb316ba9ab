"""`__transaction_state` records byte for byte as Kafka 3.7.1 writes them.

The expected bytes are spelled out field by field from TransactionLogKey.json (version 0: TransactionalId
string) and TransactionLogValue.json (version 0, non-flexible: ProducerId int64, ProducerEpoch int16,
TransactionTimeoutMs int32, TransactionStatus int8, TransactionPartitions nullable array of {Topic string,
PartitionIds []int32}, TransactionLastUpdateTimestampMs int64, TransactionStartTimestampMs int64; version 1 is
the flexible form: compact strings/arrays as unsigned varint length+1, a tagged-field count after each struct),
each value prefixed with its int16 version as MessageUtil.toVersionPrefixedBytes does — not from our encoder.
"""

from __future__ import annotations

import pytest

from broker.coordinator.transaction.log import TxnLogError, decode_key, decode_value, encode_key, encode_value
from broker.coordinator.transaction.metadata import TransactionState, TxnTransitMetadata
from storage import TopicPartition


def transit(state: TransactionState, partitions: set[TopicPartition]) -> TxnTransitMetadata:
    return TxnTransitMetadata(producer_id=4000, last_producer_id=-1, producer_epoch=7, last_producer_epoch=-1,
                              txn_timeout_ms=60000, txn_state=state, topic_partitions=frozenset(partitions),
                              txn_start_timestamp=1700000000123, txn_last_update_timestamp=1700000000456)


HEAD = (
    "0000"                  # value version 0
    "0000000000000fa0"      # producer id 4000
    "0007"                  # producer epoch 7
    "0000ea60"              # timeout 60000
)
TIMES = "0000018bcfe569c8" "0000018bcfe5687b"  # last update 1700000000456, start 1700000000123


def test_key_is_version_0_and_a_short_string() -> None:
    assert encode_key("my-txn").hex() == "0000" "0006" + b"my-txn".hex()
    assert decode_key(bytes.fromhex("0000" "0006") + b"my-txn") == "my-txn"
    assert decode_key(bytes.fromhex("0001" "0006") + b"my-txn") is None  # an unknown version is skipped


def test_ongoing_value_groups_partitions_by_topic() -> None:
    value = encode_value(transit(TransactionState.ONGOING, {TopicPartition("a", 1), TopicPartition("a", 0),
                                                             TopicPartition("b", 3)}))
    expected = (HEAD + "01"                        # status Ongoing
                + "00000002"                        # two topics
                + "0001" + b"a".hex() + "00000002" + "00000000" + "00000001"
                + "0001" + b"b".hex() + "00000001" + "00000003"
                + TIMES)
    assert value.hex() == expected
    md = decode_value("t", value)
    assert md is not None and md.state == TransactionState.ONGOING and md.producer_epoch == 7
    assert md.topic_partitions == {TopicPartition("a", 0), TopicPartition("a", 1), TopicPartition("b", 3)}
    assert (md.txn_start_timestamp, md.txn_last_update_timestamp, md.txn_timeout_ms) == (1700000000123,
                                                                                         1700000000456, 60000)
    assert md.last_producer_id == -1 and md.last_producer_epoch == -1  # the format has no field for them


def test_empty_value_has_a_null_partition_array() -> None:
    value = encode_value(transit(TransactionState.EMPTY, set()))
    assert value.hex() == HEAD + "00" + "ffffffff" + TIMES
    md = decode_value("t", value)
    assert md is not None and md.state == TransactionState.EMPTY and md.topic_partitions == set()


def test_complete_commit_writes_an_empty_array() -> None:
    assert encode_value(transit(TransactionState.COMPLETE_COMMIT, set())).hex() == HEAD + "04" + "00000000" + TIMES


def test_empty_with_partitions_is_refused() -> None:
    with pytest.raises(ValueError):
        encode_value(transit(TransactionState.EMPTY, {TopicPartition("a", 0)}))


def test_version_1_flexible_value_is_read() -> None:
    raw = bytes.fromhex(
        "0001" "0000000000000fa0" "0007" "0000ea60" "02"   # PrepareCommit
        "02"                                              # compact array: 1 topic
        "02" + b"a".hex() + "03" "00000000" "00000005" "00"  # topic "a", partitions [0, 5], no tags
        + TIMES + "00")
    md = decode_value("t", raw)
    assert md is not None and md.state == TransactionState.PREPARE_COMMIT
    assert md.topic_partitions == {TopicPartition("a", 0), TopicPartition("a", 5)}


def test_tombstone_and_garbage() -> None:
    assert decode_value("t", None) is None
    with pytest.raises(TxnLogError):
        decode_value("t", bytes.fromhex("0000" "00000000"))
    with pytest.raises(TxnLogError):
        decode_value("t", bytes.fromhex("0005") + bytes(30))


def test_version_1_value_with_the_kafka_4_tagged_fields() -> None:
    # Kafka 4.x TransactionLogValue v1: PreviousProducerId tag 0 (int64), NextProducerId tag 1 (int64),
    # ClientTransactionVersion tag 2 (int16), each only when not its default.
    target = TxnTransitMetadata(producer_id=4000, last_producer_id=3999, producer_epoch=7, last_producer_epoch=6,
                                txn_timeout_ms=60000, txn_state=TransactionState.PREPARE_ABORT,
                                topic_partitions=frozenset({TopicPartition("a", 5)}),
                                txn_start_timestamp=1700000000123, txn_last_update_timestamp=1700000000456,
                                next_producer_id=5000, client_transaction_version=2)
    expected = ("0001" "0000000000000fa0" "0007" "0000ea60" "03"   # PrepareAbort
                "02" "02" + b"a".hex() + "02" "00000005" "00"      # one topic "a", partition [5], no tags
                + TIMES + "03"                                    # three tagged fields
                + "00" "08" "0000000000000f9f"                    # tag 0: previous producer id 3999
                + "01" "08" "0000000000001388"                    # tag 1: next producer id 5000
                + "02" "02" "0002")                               # tag 2: client transaction version 2
    value = encode_value(target, version=1)
    assert value.hex() == expected
    md = decode_value("t", value)
    assert md is not None and md.state == TransactionState.PREPARE_ABORT
    assert (md.last_producer_id, md.next_producer_id, md.client_transaction_version) == (3999, 5000, 2)
    # Defaults are not written; Empty is a null compact array.
    empty = transit(TransactionState.EMPTY, set())
    assert encode_value(empty, version=1).hex() == (
        "0001" "0000000000000fa0" "0007" "0000ea60" "00" "00" + TIMES + "00")
    md = decode_value("t", encode_value(empty, version=1))
    assert md is not None and (md.last_producer_id, md.next_producer_id, md.client_transaction_version) == (-1, -1, 0)

"""WriteTxnMarkers on a partition leader, over a raw socket (what a transaction coordinator sends).

A COMMIT marker closes a producer's open transaction (the last stable offset moves to the high watermark) and
is a control batch in the log; per-partition errors as Kafka's handleWriteTxnMarkersRequest: an unknown
partition answers UNKNOWN_TOPIC_OR_PARTITION while the marker's other partitions are written, a marker with an
older producer epoch INVALID_PRODUCER_EPOCH, one from an older coordinator epoch TRANSACTION_COORDINATOR_FENCED;
results are grouped by producer id; markers for `__consumer_offsets` are written there too.
"""

from __future__ import annotations

from typing import Any

from kafka import KafkaAdminClient
from kafka.admin import NewTopic

from protocol import request_class
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode
from storage import TopicPartition
from tests.cluster.support import raw_request
from tests.e2e import txn_support
from tests.e2e.support import wait_until
from tests.storage.txn_support import txn_batch

TOPIC = "markers"


def markers_request(version: int, *markers: tuple[int, int, bool, int, dict[str, list[int]]]) -> Any:
    Req = request_class(ApiKey.WRITE_TXN_MARKERS)
    M = Req.WritableTxnMarker
    return Req[version](markers=[
        M(producer_id=pid, producer_epoch=epoch, transaction_result=commit, coordinator_epoch=coord_epoch,
          topics=[M.WritableTxnMarkerTopic(name=t, partition_indexes=ps) for t, ps in topics.items()])
        for pid, epoch, commit, coord_epoch, topics in markers])


def errors_of(response: Any) -> dict[int, dict[TopicPartition, int]]:
    return {m.producer_id: {TopicPartition(t.name, p.partition_index): p.error_code for t in m.topics
                            for p in t.partitions} for m in response.markers}


def test_markers_close_transactions_with_kafkas_errors(broker: Any) -> None:
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    admin.create_topics([NewTopic(TOPIC, 2, 1)])
    admin.close()
    tp0, tp1 = TopicPartition(TOPIC, 0), TopicPartition(TOPIC, 1)
    txn_support.append(broker, tp0, txn_batch(7, 0, 2, epoch=3))
    txn_support.append(broker, tp1, txn_batch(8, 0, 1, epoch=0))
    assert txn_support.partition_state(broker, tp0) == (0, 2)  # open transaction: LSO at its first offset

    response = raw_request(broker.port, markers_request(
        1, (7, 3, True, 5, {TOPIC: [0], "no-such-topic": [0]}), (8, 0, False, 5, {TOPIC: [1]})))
    unknown = TopicPartition("no-such-topic", 0)
    assert errors_of(response) == {7: {tp0: 0, unknown: ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}, 8: {tp1: 0}}
    assert txn_support.partition_state(broker, tp0) == (3, 3)  # the marker is offset 2; nothing open
    assert txn_support.partition_state(broker, tp1) == (2, 2)

    txn_support.append(broker, tp0, txn_batch(7, 2, 1, epoch=3))
    older_producer = raw_request(broker.port, markers_request(0, (7, 2, True, 5, {TOPIC: [0]})))
    assert errors_of(older_producer) == {7: {tp0: ErrorCode.INVALID_PRODUCER_EPOCH}}
    older_coordinator = raw_request(broker.port, markers_request(1, (7, 3, True, 4, {TOPIC: [0]})))
    assert errors_of(older_coordinator) == {7: {tp0: ErrorCode.TRANSACTION_COORDINATOR_FENCED}}
    assert txn_support.partition_state(broker, tp0) == (3, 4)  # still open


def test_marker_for_the_offsets_topic(broker: Any) -> None:
    # __consumer_offsets exists once a group coordinator was looked up
    find = request_class(ApiKey.FIND_COORDINATOR)[3](key="g", key_type=0)
    wait_until(lambda: raw_request(broker.port, find).error_code == 0, 30, "__consumer_offsets")
    response = raw_request(broker.port, markers_request(1, (9, 0, True, 0, {"__consumer_offsets": [0]})))
    assert errors_of(response) == {9: {TopicPartition("__consumer_offsets", 0): 0}}

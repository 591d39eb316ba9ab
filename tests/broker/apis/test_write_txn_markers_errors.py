"""WriteTxnMarkers: every code of `broker.apis.write_txn_markers.ERRORS`, over a real socket with our codec, as
a transaction coordinator sends it to a partition leader."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from broker.apis import write_txn_markers
from broker.testing import BrokerProcess
from protocol import ApiKey, request_class
from protocol.errors import ErrorCode
from tests.e2e.support import wait_until

from .acl_support import denied
from .support import Brokers, Producer, error_path_test

Req = request_class(ApiKey.WRITE_TXN_MARKERS)
M = Req.WritableTxnMarker


def send(b: Brokers, topic: str, producer_id: int, producer_epoch: int = 0, coordinator_epoch: int = 0,
         port: int | None = None) -> Any:
    return b.call(Req[1](markers=[M(producer_id=producer_id, producer_epoch=producer_epoch, transaction_result=True,
                                    coordinator_epoch=coordinator_epoch,
                                    topics=[M.WritableTxnMarkerTopic(name=topic, partition_indexes=[0])])]), port)


def written(b: Brokers, topic: str, producer_id: int, producer_epoch: int, coordinator_epoch: int) -> None:
    answer = send(b, b.topic(topic), producer_id, producer_epoch, coordinator_epoch)
    assert answer.markers[0].topics[0].partitions[0].error_code == ErrorCode.NONE, answer


def older_producer_epoch(b: Brokers) -> Any:
    written(b, "markers-epoch", 8001, 3, 0)
    return send(b, "markers-epoch", 8001, producer_epoch=2)


def older_coordinator_epoch(b: Brokers) -> Any:
    written(b, "markers-coordinator", 8002, 0, 5)
    return send(b, "markers-coordinator", 8002, coordinator_epoch=4)


def on_a_follower(b: Brokers) -> Any:
    c = b.cluster
    topic = b.topic("markers-follower", port=c.ports[1], replicas=[1, 0])
    answers: list[Any] = []
    wait_until(lambda: answers.append(send(b, topic, 8003, port=c.ports[0])) or
               answers[-1].markers[0].topics[0].partitions[0].error_code != ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
               30, "broker 0 to follow markers-follower")
    return answers[-1]


PRODUCERS: dict[ErrorCode, Producer] = {
    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION: lambda b: send(b, "markers-missing", 8000),
    ErrorCode.NOT_LEADER_OR_FOLLOWER: on_a_follower,
    ErrorCode.INVALID_PRODUCER_EPOCH: older_producer_epoch,
    ErrorCode.TRANSACTION_COORDINATOR_FENCED: older_coordinator_epoch,
    ErrorCode.NOT_ENOUGH_REPLICAS: lambda b: send(b, b.under_min_isr(), 8004, port=b.cluster.ports[0]),
}

def disk_full(b: Brokers) -> Any:
    """A broker of its own whose files may not pass 32 KiB (RLIMIT_FSIZE, as a full disk): markers are written
    until one crosses the limit."""
    with tempfile.TemporaryDirectory() as d:
        full = BrokerProcess({"log.index.size.max.bytes": "4096"}, data_dir=Path(d), file_size_limit=32 * 1024)
        full.start()
        try:
            topic = b.topic("markers-disk-full", port=full.port)
            for producer_id in range(9000, 10000):
                answer = send(b, topic, producer_id, port=full.port)
                if answer.markers[0].topics[0].partitions[0].error_code != ErrorCode.NONE:
                    return answer
            raise AssertionError("1,000 markers written past a 32 KiB file-size limit")
        finally:
            full.stop()


PRODUCERS.update({
    ErrorCode.CLUSTER_AUTHORIZATION_FAILED: lambda b: send(b, "markers-denied", 1, port=denied(b)),
    ErrorCode.KAFKA_STORAGE_ERROR: disk_full,
})

test_errors = error_path_test(write_txn_markers, PRODUCERS)

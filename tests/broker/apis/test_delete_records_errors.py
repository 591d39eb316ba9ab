"""DeleteRecords: every code of `broker.apis.delete_records.ERRORS`, over a real socket with our codec."""

from __future__ import annotations

import time
from typing import Any

from broker.apis import delete_records
from protocol import ApiKey, request_class
from protocol.errors import ErrorCode
from protocol.records import build_batch
from tests.e2e.support import wait_until

from .acl_support import denied
from .support import Brokers, Producer, error_path_test

Req = request_class(ApiKey.DELETE_RECORDS)
T = Req.DeleteRecordsTopic


def send(b: Brokers, topic: str, offset: int, *, timeout_ms: int = 10000, port: int | None = None) -> Any:
    return b.call(Req[2](topics=[T(name=topic, partitions=[T.DeleteRecordsPartition(partition_index=0,
                                                                                    offset=offset)])],
                         timeout_ms=timeout_ms), port)


def follower_behind(b: Brokers) -> Any:
    # With timeout_ms 0 the answer cannot wait for follower 1 to learn the new log start offset (it learns it
    # from its next fetch response), so the low watermark is still below the offset asked for.
    c = b.cluster
    topic = b.topic("delete-records-replicated", port=c.ports[0], replicas=[0, 1])
    produce = request_class(ApiKey.PRODUCE)
    P = produce.TopicProduceData
    records = build_batch([(b"k", b"v", [], int(time.time() * 1000))] * 3)
    resp = b.call(produce[9](transactional_id=None, acks=-1, timeout_ms=10000, topic_data=[
        P(name=topic, partition_data=[P.PartitionProduceData(index=0, records=records)])]), c.ports[0])
    assert resp.responses[0].partition_responses[0].error_code == ErrorCode.NONE
    wait_until(lambda: b.partition_on_0(topic).isr_nodes == [0, 1], 30, "follower 1 in the ISR")
    return send(b, topic, 2, timeout_ms=0, port=c.ports[0])


PRODUCERS: dict[ErrorCode, Producer] = {
    ErrorCode.OFFSET_OUT_OF_RANGE: lambda b: send(b, b.topic("delete-records-plain"), 100),
    ErrorCode.NOT_LEADER_OR_FOLLOWER: lambda b: send(b, b.led_by_other("delete-records-on-1"), 0,
                                                     port=b.cluster.ports[0]),
    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION: lambda b: send(b, "delete-records-missing", 0),
    ErrorCode.REQUEST_TIMED_OUT: follower_behind,
}

PRODUCERS.update({
    ErrorCode.TOPIC_AUTHORIZATION_FAILED: lambda b: send(b, "delete-records-denied", 0, port=denied(b)),
})

test_errors = error_path_test(delete_records, PRODUCERS)

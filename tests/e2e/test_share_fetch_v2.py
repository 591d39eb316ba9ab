"""ShareFetch and ShareAcknowledge v2 (Kafka 4.2) over a real socket with our codec: the record-limit acquire mode
(KIP-1206) and renew acknowledgements (KIP-1222) that keep a record's acquisition lock alive past its
duration (1 s here), as a slow consumer would."""

from __future__ import annotations

import socket
import time
import uuid
from typing import Any

from confluent_kafka import Producer

from protocol import ApiKey, request_class
from protocol.errors import ErrorCode
from tests.broker.wire import roundtrip
from tests.e2e.test_share_groups import create_topic, start

FETCH = request_class(ApiKey.SHARE_FETCH)
ACK = request_class(ApiKey.SHARE_ACKNOWLEDGE)
METADATA = request_class(ApiKey.METADATA)
RENEW = 4


def fetch(s: socket.socket, member: str, epoch: int, tid: uuid.UUID, *, acks: list[tuple[int, int, list[int]]] = (),
          mode: int = 0, renew: bool = False, max_records: int = 5, max_wait_ms: int = 3000) -> Any:  # type: ignore[assignment]
    T = FETCH.FetchTopic
    topics = [T(topic_id=tid, partitions=[T.FetchPartition(partition_index=0, acknowledgement_batches=[
        T.FetchPartition.AcknowledgementBatch(first_offset=f, last_offset=last, acknowledge_types=types)
        for f, last, types in acks])])]
    return roundtrip(s, FETCH[2](group_id="sg-v2", member_id=member, share_session_epoch=epoch,
                                 max_wait_ms=max_wait_ms, min_bytes=0 if renew else 1,
                                 max_bytes=0 if renew else 1 << 20,
                                 max_records=max_records, batch_size=max_records, share_acquire_mode=mode,
                                 is_renew_ack=renew, topics=topics, forgotten_topics_data=[]), 1)


def acknowledge(s: socket.socket, member: str, epoch: int, tid: uuid.UUID, first: int, last: int, kind: int,
                renew: bool) -> Any:
    T = ACK.AcknowledgeTopic
    return roundtrip(s, ACK[2](group_id="sg-v2", member_id=member, share_session_epoch=epoch, is_renew_ack=renew,
                               topics=[T(topic_id=tid, partitions=[T.AcknowledgePartition(
                                   partition_index=0, acknowledgement_batches=[
                                       T.AcknowledgePartition.AcknowledgementBatch(
                                           first_offset=first, last_offset=last, acknowledge_types=[kind])])])]), 2)


def acquired(resp: Any) -> list[tuple[int, int, int]]:
    return [(r.first_offset, r.last_offset, r.delivery_count) for t in resp.responses for p in t.partitions
            for r in p.acquired_records]


def test_record_limit_mode_and_renewed_locks(broker_factory: Any) -> None:
    broker = start(broker_factory)
    topic = f"share-{uuid.uuid4().hex[:6]}"
    create_topic(broker.bootstrap, topic, 1)
    producer = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 200})
    for i in range(5):
        producer.produce(topic, b"v%d" % i, partition=0)
    assert producer.flush(15) == 0
    with socket.create_connection(("127.0.0.1", broker.port), timeout=30) as a, \
            socket.create_connection(("127.0.0.1", broker.port), timeout=30) as b:
        meta = roundtrip(a, METADATA[12](topics=[METADATA.MetadataRequestTopic(name=topic, topic_id=uuid.UUID(int=0))],
                                         allow_auto_topic_creation=False,
                                         include_topic_authorized_operations=False), 0)
        tid = meta.topics[0].topic_id
        limited = fetch(a, "m1", 0, tid, mode=1, max_records=2)  # one log batch of 5, only 2 acquired
        refused = fetch(a, "m1", 1, tid, renew=True, max_records=5)  # a renew fetch must fetch nothing
        bad_mode = fetch(a, "m1", 1, tid, mode=7)
        time.sleep(0.6)
        renewed = acknowledge(a, "m1", 1, tid, 0, 1, RENEW, renew=True)
        time.sleep(0.6)  # past the first lock: 0-1 are still m1's
        other = fetch(b, "m2", 0, tid, mode=1, max_records=5)
        renewed_by_fetch = fetch(a, "m1", 2, tid, acks=[(0, 1, [RENEW])], renew=True, max_records=0, max_wait_ms=0)
        not_renew = acknowledge(a, "m1", 3, tid, 0, 1, RENEW, renew=False)
        accepted = acknowledge(a, "m1", 4, tid, 0, 1, 1, renew=False)
    assert acquired(limited) == [(0, 1, 1)]
    assert refused.error_code == ErrorCode.INVALID_REQUEST and bad_mode.error_code == ErrorCode.INVALID_REQUEST
    assert (renewed.error_code, [p.error_code for t in renewed.responses for p in t.partitions]) == (0, [0])
    assert renewed.acquisition_lock_timeout_ms == 1000
    assert acquired(other) == [(2, 4, 1)]
    assert [p.acknowledge_error_code for t in renewed_by_fetch.responses for p in t.partitions] == [0]
    assert acquired(renewed_by_fetch) == []
    assert [p.error_code for t in not_renew.responses for p in t.partitions] == [ErrorCode.INVALID_REQUEST]
    assert [p.error_code for t in accepted.responses for p in t.partitions] == [0]

"""Micro-benchmark: per-frame decode and encode cost of the hot-path messages.

Run `python -m protocol.bench [--repeat N]`. Prints, for Produce and Fetch requests and responses with 1
and 100 partitions, the best-of-5 mean microseconds per frame to decode and to encode. Not a test: the
numbers depend on the machine and its load. Targets (issue 2): <= 10 us for 1 partition, <= 300 us
for 100 partitions.
"""

from __future__ import annotations

import argparse
import time
import uuid
from collections.abc import Callable

from protocol import (
    decode_request,
    decode_response,
    encode_request,
    encode_response,
    encode_response_parts,
)
from protocol.api_keys import ApiKey
from protocol.fetch_encoding import RecordsRef
from protocol.messages import (
    FetchRequest,
    FetchResponse,
    ProduceRequest,
    ProduceResponse,
)

BATCH = bytes(16 * 1024)  # a 16 KiB record batch's worth of bytes; the codec never looks inside
PRODUCE_VERSION = 9
FETCH_VERSION = 12


def produce_request(partitions: int):
    topic = ProduceRequest.TopicProduceData
    req = ProduceRequest[PRODUCE_VERSION](
        transactional_id=None, acks=-1, timeout_ms=30000,
        topic_data=[topic(name='bench', partition_data=[
            topic.PartitionProduceData(index=i, records=BATCH) for i in range(partitions)])])
    req.with_header(correlation_id=1, client_id='bench')
    return req


def produce_response(partitions: int):
    topic = ProduceResponse.TopicProduceResponse
    resp = ProduceResponse[PRODUCE_VERSION](
        throttle_time_ms=0,
        responses=[topic(name='bench', partition_responses=[
            topic.PartitionProduceResponse(index=i, error_code=0, base_offset=1000 * i, log_append_time_ms=-1,
                                           log_start_offset=0, record_errors=[], error_message=None)
            for i in range(partitions)])])
    resp.with_header(correlation_id=1)
    return resp


def fetch_request(partitions: int):
    topic = FetchRequest.FetchTopic
    req = FetchRequest[FETCH_VERSION](
        replica_id=-1, max_wait_ms=500, min_bytes=1, max_bytes=52428800, isolation_level=0, session_id=0,
        session_epoch=-1, topics=[topic(topic='bench', topic_id=uuid.uuid4(), partitions=[
            topic.FetchPartition(partition=i, current_leader_epoch=0, fetch_offset=1000,
                                 last_fetched_epoch=-1,
                                 log_start_offset=-1, partition_max_bytes=1048576)
            for i in range(partitions)])],
        forgotten_topics_data=[], rack_id='')
    req.with_header(correlation_id=1, client_id='bench')
    return req


def fetch_response(partitions: int, records=BATCH):
    topic = FetchResponse.FetchableTopicResponse
    resp = FetchResponse[FETCH_VERSION](
        throttle_time_ms=0, error_code=0, session_id=0,
        responses=[topic(topic='bench', partitions=[
            topic.PartitionData(partition_index=i, error_code=0, high_watermark=2000, last_stable_offset=2000,
                                log_start_offset=0, aborted_transactions=None, preferred_read_replica=-1,
                                records=records)
            for i in range(partitions)])])
    resp.with_header(correlation_id=1)
    return resp


def measure(fn: Callable[[], object], repeat: int) -> float:
    best = float('inf')
    for _ in range(5):
        start = time.perf_counter()
        for _ in range(repeat):
            fn()
        best = min(best, (time.perf_counter() - start) / repeat)
    return best * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--repeat', type=int, default=2000, help='frames per timing run (1 partition)')
    args = parser.parse_args()
    print(f'{"message":<42} {"partitions":>10} {"decode us":>10} {"encode us":>10}')
    for partitions in (1, 100):
        repeat = max(20, args.repeat // partitions)
        req = produce_request(partitions)
        frame = bytearray(encode_request(req))
        rows = [(f'ProduceRequest v{PRODUCE_VERSION} (16 KiB/partition)',
                 lambda f=frame: decode_request(f), lambda r=req: encode_request(r))]
        resp = produce_response(partitions)
        frame = encode_response(resp)
        rows.append((f'ProduceResponse v{PRODUCE_VERSION}',
                     lambda f=frame: decode_response(f, ApiKey.PRODUCE, PRODUCE_VERSION),
                     lambda r=resp: encode_response(r)))
        req = fetch_request(partitions)
        frame = bytearray(encode_request(req))
        rows.append((f'FetchRequest v{FETCH_VERSION}', lambda f=frame: decode_request(f),
                     lambda r=req: encode_request(r)))
        resp = fetch_response(partitions)
        frame = encode_response(resp)
        rows.append((f'FetchResponse v{FETCH_VERSION} (16 KiB/partition)',
                     lambda f=frame: decode_response(f, ApiKey.FETCH, FETCH_VERSION),
                     lambda r=resp: encode_response(r)))
        ref_resp = fetch_response(partitions, RecordsRef(len(BATCH), None))
        rows.append((f'FetchResponse v{FETCH_VERSION} parts (RecordsRef)', None,
                     lambda r=ref_resp: encode_response_parts(r)))
        for name, decode, encode in rows:
            dec = f'{measure(decode, repeat):10.2f}' if decode else f'{"-":>10}'
            print(f'{name:<42} {partitions:>10} {dec} {measure(encode, repeat):10.2f}')


if __name__ == '__main__':
    main()

"""Hostile and broken input on raw sockets, while a kafka-python producer keeps producing in another thread.

One broker serves both. The raw-socket side sends: non-Kafka bytes, a frame of junk, a truncated frame then
a close, a size prefix over `socket.request.max.bytes`, ApiVersions v99, and Produce requests carrying a
corrupt batch, a batch over `message.max.bytes`, and a partition / topic that do not exist. Each bad
connection is closed by the broker or gets Kafka's error code, the broker keeps serving, and afterwards
every message the steady producer had acknowledged is consumed, at the offset it was acknowledged with.

Also on raw sockets: 30 pipelined requests (a parked Fetch among ApiVersions and Metadata) are answered in
request order, and 200 concurrent connections are all served.
"""

from __future__ import annotations

import os
import socket
import struct
import threading
import time
from typing import Any

import pytest
from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import NewTopic

from broker.apis import api_versions
from protocol import SUPPORTED_VERSIONS, ApiKey, ErrorCode, decode_response, encode_request, request_class
from protocol.records import build_batch

MAX_REQUEST = 1024 * 1024
MESSAGE_MAX = 20000
PRODUCE_VERSION = 9
CORE_APIS = {ApiKey.PRODUCE, ApiKey.FETCH, ApiKey.LIST_OFFSETS, ApiKey.METADATA, ApiKey.OFFSET_COMMIT,
             ApiKey.OFFSET_FETCH, ApiKey.FIND_COORDINATOR, ApiKey.JOIN_GROUP, ApiKey.HEARTBEAT,
             ApiKey.LEAVE_GROUP, ApiKey.SYNC_GROUP, ApiKey.DESCRIBE_GROUPS, ApiKey.LIST_GROUPS,
             ApiKey.API_VERSIONS, ApiKey.CREATE_TOPICS, ApiKey.DELETE_TOPICS, ApiKey.INIT_PRODUCER_ID}


class RawClient:
    """One Kafka connection spoken by hand: frames in, frames out, nothing else."""

    def __init__(self, bootstrap: str) -> None:
        host, port = bootstrap.rsplit(":", 1)
        self.sock = socket.create_connection((host, int(port)), timeout=10)
        self.correlation_id = 0

    def send_raw(self, data: bytes) -> None:
        self.sock.sendall(data)

    def send(self, request: Any) -> int:
        self.correlation_id += 1
        request.with_header(correlation_id=self.correlation_id, client_id="raw-e2e")
        frame = encode_request(request)
        self.sock.sendall(struct.pack(">i", len(frame)) + frame)
        return self.correlation_id

    def _read_exact(self, n: int) -> bytes:
        buf = bytearray()
        while len(buf) < n:
            chunk = self.sock.recv(n - len(buf))
            if not chunk:
                raise ConnectionError(f"connection closed after {len(buf)} of {n} bytes")
            buf += chunk
        return bytes(buf)

    def read_frame(self) -> bytes:
        (size,) = struct.unpack(">i", self._read_exact(4))
        return self._read_exact(size)

    def call(self, request: Any) -> Any:
        correlation_id = self.send(request)
        response = decode_response(self.read_frame(), request.API_KEY, request.API_VERSION)
        assert response.header.correlation_id == correlation_id
        return response

    def assert_closed_by_broker(self) -> None:
        """The broker closes its side: recv sees EOF (or a reset), never a response."""
        try:
            data = self.sock.recv(4096)
        except ConnectionResetError:
            return
        assert data == b"", f"expected the broker to close the connection, got {data[:64]!r}"

    def close(self) -> None:
        self.sock.close()


def produce_request(topic: str, partition: int, records: bytes) -> Any:
    cls = request_class(ApiKey.PRODUCE)
    topic_data = cls.TopicProduceData
    return cls[PRODUCE_VERSION](
        transactional_id=None, acks=-1, timeout_ms=5000,
        topic_data=[topic_data(name=topic, partition_data=[
            topic_data.PartitionProduceData(index=partition, records=records)])])


def partition_result(response: Any) -> Any:
    [topic] = response.responses
    [partition] = topic.partition_responses
    return partition


def api_versions_works(bootstrap: str) -> bool:
    client = RawClient(bootstrap)
    try:
        cls = request_class(ApiKey.API_VERSIONS)
        response = client.call(cls[3](client_software_name="raw-e2e", client_software_version="1"))
        return response.error_code == 0
    finally:
        client.close()


def batch(n: int, value_size: int = 10) -> bytes:
    now = int(time.time() * 1000)
    return build_batch([(f"k{i}".encode(), b"v" * value_size, [("h", b"1")], now) for i in range(n)])


class SteadyProducer(threading.Thread):
    """Produces to `topic` until stopped (bounded by `limit`), remembering what was acknowledged."""

    def __init__(self, bootstrap: str, topic: str, limit: int = 20000) -> None:
        super().__init__(name="steady-producer", daemon=True)
        self.bootstrap, self.topic, self.limit = bootstrap, topic, limit
        self.stop_event = threading.Event()
        self.acked: dict[tuple[int, int], bytes] = {}
        self.errors: list[BaseException] = []

    def run(self) -> None:
        producer = KafkaProducer(bootstrap_servers=self.bootstrap, acks=1, linger_ms=2, retries=0)
        try:
            i = 0
            while not self.stop_event.is_set() and i < self.limit:
                futures = []
                for _ in range(50):
                    value = f"steady-{i}".encode()
                    futures.append((value, producer.send(self.topic, key=str(i).encode(), value=value)))
                    i += 1
                for value, f in futures:
                    md = f.get(timeout=10)
                    self.acked[(md.partition, md.offset)] = value
                time.sleep(0.01)
        except BaseException as e:  # noqa: BLE001 - reported by the test thread
            self.errors.append(e)
        finally:
            producer.close(10)


@pytest.fixture
def steady_broker(broker_factory: Any) -> Any:
    b = broker_factory({"socket.request.max.bytes": str(MAX_REQUEST), "message.max.bytes": str(MESSAGE_MAX)})
    admin = KafkaAdminClient(bootstrap_servers=b.bootstrap)
    try:
        admin.create_topics([NewTopic("steady", 2, 1), NewTopic("target", 2, 1)])
    finally:
        admin.close()
    return b


def test_bad_input_leaves_other_clients_alone(steady_broker: Any) -> None:
    bootstrap = steady_broker.bootstrap
    steady = SteadyProducer(bootstrap, "steady")
    steady.start()
    try:
        deadline = time.monotonic() + 10
        while not steady.acked and not steady.errors and time.monotonic() < deadline:
            time.sleep(0.02)
        assert steady.acked, f"the steady producer never got an ack: {steady.errors}"

        # Not Kafka at all: "GET " read as a size prefix is ~1.2 GB, far over socket.request.max.bytes.
        c = RawClient(bootstrap)
        c.send_raw(b"GET / HTTP/1.1\r\nHost: kafka\r\n\r\n")
        c.assert_closed_by_broker()
        c.close()

        # A well-sized frame of random junk: an unknown API key / unparseable header.
        c = RawClient(bootstrap)
        junk = bytes([0x7F, 0x7F]) + os.urandom(62)
        c.send_raw(struct.pack(">i", len(junk)) + junk)
        c.assert_closed_by_broker()
        c.close()

        # A frame announced at 100 bytes, 20 sent, then the client goes away.
        c = RawClient(bootstrap)
        c.send_raw(struct.pack(">i", 100) + b"\x00\x12\x00\x03" + b"\x00" * 16)
        c.close()

        # A size prefix over socket.request.max.bytes: closed before the broker allocates anything.
        c = RawClient(bootstrap)
        c.send_raw(struct.pack(">i", MAX_REQUEST + 1) + b"\x00" * 64)
        c.assert_closed_by_broker()
        c.close()
        assert api_versions_works(bootstrap)

        # ApiVersions at a version from the future: the v0-layout UNSUPPORTED_VERSION answer (KIP-511),
        # then the client retries on the same connection at a version we serve and gets our whole table.
        c = RawClient(bootstrap)
        c.correlation_id = 77
        header = struct.pack(">hhih", ApiKey.API_VERSIONS, 99, 77, 7) + b"raw-e2e" + b"\x00"
        body = b"\x08raw-e2e" + b"\x021" + b"\x00"  # compact strings name + version, empty tagged fields
        c.send_raw(struct.pack(">i", len(header) + len(body)) + header + body)
        frame = c.read_frame()
        top = api_versions.MAX_VERSION
        fallback = decode_response(frame, ApiKey.API_VERSIONS, top)
        assert fallback.header.correlation_id == 77
        assert fallback.error_code == ErrorCode.UNSUPPORTED_VERSION
        ranges = {v.api_key: (v.min_version, v.max_version) for v in fallback.api_keys}
        assert ranges == {ApiKey.API_VERSIONS: (api_versions.MIN_VERSION, top)}
        cls = request_class(ApiKey.API_VERSIONS)
        full = c.call(cls[top](client_software_name="raw-e2e", client_software_version="1"))
        assert full.error_code == 0
        advertised = {v.api_key: (v.min_version, v.max_version) for v in full.api_keys}
        for key, (low, high) in advertised.items():
            codec_low, codec_high = SUPPORTED_VERSIONS[key]
            assert codec_low <= low <= high <= codec_high, f"api key {key}: {low}..{high} is not decodable"
        assert CORE_APIS <= set(advertised)
        c.close()

        # Produce: one connection, several bad requests, each answered with Kafka's error; the
        # connection stays usable and a good batch afterwards is appended at offset 0.
        c = RawClient(bootstrap)
        corrupt = bytearray(batch(5))
        corrupt[-3] ^= 0xFF  # inside the records: the CRC32C no longer matches
        r = partition_result(c.call(produce_request("target", 0, bytes(corrupt))))
        assert r.error_code == ErrorCode.CORRUPT_MESSAGE

        r = partition_result(c.call(produce_request("target", 0, batch(1, value_size=MESSAGE_MAX + 1000))))
        assert r.error_code == ErrorCode.MESSAGE_TOO_LARGE

        r = partition_result(c.call(produce_request("target", 99, batch(1))))
        assert r.error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION

        r = partition_result(c.call(produce_request("no-such-topic", 0, batch(1))))
        assert r.error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION

        r = partition_result(c.call(produce_request("target", 0, batch(3))))
        assert (r.error_code, r.base_offset) == (0, 0)
        c.close()
    finally:
        steady.stop_event.set()
        steady.join(30)
    assert steady.errors == []
    assert len(steady.acked) >= 50

    consumer = KafkaConsumer(bootstrap_servers=bootstrap, auto_offset_reset="earliest",
                             enable_auto_commit=False, fetch_max_wait_ms=100)
    try:
        tps = [TopicPartition("steady", 0), TopicPartition("steady", 1), TopicPartition("target", 0)]
        consumer.assign(tps)
        consumer.seek_to_beginning()
        ends = consumer.end_offsets(tps)
        # Only the good batch reached "target": the bad ones left no trace.
        assert ends[TopicPartition("target", 0)] == 3
        for p in (0, 1):
            acked_here = [off for (part, off) in steady.acked if part == p]
            assert ends[TopicPartition("steady", p)] == (max(acked_here) + 1 if acked_here else 0)
        got: dict[tuple[int, int], bytes] = {}
        target: list[bytes] = []
        deadline = time.monotonic() + 20
        while (len(got) < len(steady.acked) or len(target) < 3) and time.monotonic() < deadline:
            for tp, records in consumer.poll(timeout_ms=500).items():
                for rec in records:
                    if tp.topic == "steady":
                        got[(tp.partition, rec.offset)] = rec.value
                    else:
                        target.append(rec.key)
        assert got == steady.acked
        assert target == [b"k0", b"k1", b"k2"]
    finally:
        consumer.close()
    assert api_versions_works(bootstrap)


def fetch_request(topic: str, offset: int, max_wait_ms: int) -> Any:
    cls = request_class(ApiKey.FETCH)
    t = cls.FetchTopic
    return cls[11](replica_id=-1, max_wait_ms=max_wait_ms, min_bytes=1, max_bytes=1 << 20, isolation_level=0,
                   session_id=0, session_epoch=-1, rack_id="",
                   topics=[t(topic=topic, partitions=[t.FetchPartition(
                       partition=0, current_leader_epoch=-1, fetch_offset=offset, log_start_offset=-1,
                       partition_max_bytes=1 << 20)])],
                   forgotten_topics_data=[])


def test_pipelined_requests_are_answered_in_order(broker: Any) -> None:
    """Kafka answers each connection's requests in the order they were sent, even when an early one (a
    Fetch parked for 300 ms on an empty partition) finishes after later ones (ApiVersions, Metadata)."""
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    try:
        admin.create_topics([NewTopic("ordered", 1, 1)])
    finally:
        admin.close()
    c = RawClient(broker.bootstrap)
    try:
        sent: list[tuple[int, Any]] = []
        api_versions = request_class(ApiKey.API_VERSIONS)[3]
        metadata = request_class(ApiKey.METADATA)
        for i in range(30):
            if i % 10 == 0:
                request = fetch_request("ordered", 0, max_wait_ms=300)
            elif i % 2:
                request = api_versions(client_software_name="raw-e2e", client_software_version="1")
            else:
                request = metadata[9](topics=[metadata.MetadataRequestTopic(name="ordered")],
                                      allow_auto_topic_creation=False,
                                      include_topic_authorized_operations=False)
            sent.append((c.send(request), request))  # all written before any response is read
        for correlation_id, request in sent:
            response = decode_response(c.read_frame(), request.API_KEY, request.API_VERSION)
            assert response.header.correlation_id == correlation_id
            if request.API_KEY == ApiKey.FETCH:
                [topic] = response.responses
                [partition] = topic.partitions
                assert (partition.error_code, partition.high_watermark) == (0, 0)
    finally:
        c.close()


def test_many_concurrent_connections(broker: Any) -> None:
    clients = [RawClient(broker.bootstrap) for _ in range(200)]
    try:
        api_versions = request_class(ApiKey.API_VERSIONS)[3]
        ids = [c.send(api_versions(client_software_name="raw-e2e", client_software_version="1"))
               for c in clients]
        for c, correlation_id in zip(clients, ids, strict=True):
            response = decode_response(c.read_frame(), ApiKey.API_VERSIONS, 3)
            assert (response.header.correlation_id, response.error_code) == (correlation_id, 0)
    finally:
        for c in clients:
            c.close()
    assert api_versions_works(broker.bootstrap)

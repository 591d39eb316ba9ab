"""A tiny recording broker for golden frames: stock clients connect, it answers just enough, keeps every frame.

It listens on 127.0.0.1 (free port), answers ApiVersions (our table), Metadata (itself as the only
broker, every topic with one partition it leads), Produce, FindCoordinator, InitProducerId, ListOffsets
and Fetch (empty) using our own encoder, and records each request frame as it arrived.

`python -m tests.protocol.recording_broker` runs every client once and writes the first frame of each
(api, version) to tests/fixtures/frames/<client>/<api>_v<N>.bin (the committed golden fixtures).
"""

from __future__ import annotations

import asyncio
import socket
import socketserver
import struct
import subprocess
import sys
import threading
import time
from pathlib import Path

from fuzz.record import kcat_path
from protocol import (
    ApiKey,
    ProtocolError,
    UnsupportedVersion,
    api_versions_fallback_response,
    api_versions_response,
    decode_request,
    encode_response,
    response_class,
)

FIXTURES = Path(__file__).resolve().parents[1] / 'fixtures' / 'frames'
TOPIC = 'golden'
NODE_ID = 1


class RecordingBroker:
    def __init__(self) -> None:
        self.frames: list[bytes] = []
        self._lock = threading.Lock()
        broker = self

        class Handler(socketserver.BaseRequestHandler):
            def handle(self) -> None:
                broker._serve(self.request)

        class Server(socketserver.ThreadingTCPServer):
            allow_reuse_address = True
            daemon_threads = True

        self._server = Server(('127.0.0.1', 0), Handler)
        self.port = self._server.server_address[1]
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def __enter__(self) -> RecordingBroker:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(5)

    @property
    def bootstrap(self) -> str:
        return f'127.0.0.1:{self.port}'

    def _serve(self, sock: socket.socket) -> None:
        sock.settimeout(10)
        while True:
            prefix = _read_exactly(sock, 4)
            if prefix is None:
                return
            (size,) = struct.unpack('>i', prefix)
            if not 0 < size <= 1 << 24:
                return
            frame = _read_exactly(sock, size)
            if frame is None:
                return
            with self._lock:
                self.frames.append(frame)
            answer = self._answer(frame)
            if answer is not None:
                sock.sendall(struct.pack('>i', len(answer)) + answer)

    def _answer(self, frame: bytes) -> bytes | None:
        try:
            request = decode_request(frame)
        except UnsupportedVersion as e:
            if e.header is not None and e.header.request_api_key == ApiKey.API_VERSIONS:
                return api_versions_fallback_response(e.header)
            raise
        except ProtocolError:
            return None
        key, version, cid = request.API_KEY, request.API_VERSION, request.header.correlation_id
        if key == ApiKey.API_VERSIONS:
            return encode_response(api_versions_response(version, cid))
        cls = response_class(key)[version]
        rcls = response_class(key)
        if key == ApiKey.METADATA:
            names = [t.name for t in request.topics or []] or [TOPIC]
            topic = rcls.MetadataResponseTopic
            response = cls(
                throttle_time_ms=0, cluster_id='recording', controller_id=NODE_ID,
                brokers=[rcls.MetadataResponseBroker(node_id=NODE_ID, host='127.0.0.1', port=self.port,
                                                     rack=None)],
                topics=[topic(error_code=0, name=name, is_internal=False, partitions=[
                    topic.MetadataResponsePartition(error_code=0, partition_index=0, leader_id=NODE_ID,
                                                    leader_epoch=0, replica_nodes=[NODE_ID],
                                                    isr_nodes=[NODE_ID], offline_replicas=[])])
                        for name in names])
        elif key == ApiKey.PRODUCE:
            if request.acks == 0:
                return None
            topic = rcls.TopicProduceResponse
            response = cls(throttle_time_ms=0, responses=[
                topic(name=t.name, partition_responses=[
                    topic.PartitionProduceResponse(index=p.index, error_code=0, base_offset=0,
                                                   log_append_time_ms=-1, log_start_offset=0)
                    for p in t.partition_data])
                for t in request.topic_data])
        elif key == ApiKey.FIND_COORDINATOR:
            keys = getattr(request, 'coordinator_keys', None) or [request.key]
            response = cls(throttle_time_ms=0, error_code=0, node_id=NODE_ID, host='127.0.0.1',
                           port=self.port, coordinators=[
                               rcls.Coordinator(key=k, node_id=NODE_ID, host='127.0.0.1', port=self.port,
                                                error_code=0) for k in keys])
        elif key == ApiKey.INIT_PRODUCER_ID:
            response = cls(throttle_time_ms=0, error_code=0, producer_id=1000, producer_epoch=0)
        elif key == ApiKey.LIST_OFFSETS:
            topic = rcls.ListOffsetsTopicResponse
            response = cls(throttle_time_ms=0, topics=[
                topic(name=t.name, partitions=[
                    topic.ListOffsetsPartitionResponse(partition_index=p.partition_index, error_code=0,
                                                       old_style_offsets=[0], timestamp=-1, offset=0,
                                                       leader_epoch=0)
                    for p in t.partitions])
                for t in request.topics])
        elif key == ApiKey.FETCH:
            time.sleep(min(request.max_wait_ms, 200) / 1000)  # an empty log: wait like a real broker
            topic = rcls.FetchableTopicResponse
            response = cls(throttle_time_ms=0, error_code=0, session_id=0, responses=[
                topic(topic=t.topic, topic_id=t.topic_id, partitions=[
                    topic.PartitionData(partition_index=p.partition, error_code=0, high_watermark=0,
                                        last_stable_offset=0, log_start_offset=0, aborted_transactions=None,
                                        preferred_read_replica=-1, records=b'')
                    for p in t.partitions])
                for t in request.topics])
        else:
            return None  # the first frame is all we keep; the client gives up on this request
        response.with_header(correlation_id=cid)
        return encode_response(response)


def _read_exactly(sock: socket.socket, n: int) -> bytes | None:
    chunks = bytearray()
    while len(chunks) < n:
        try:
            chunk = sock.recv(n - len(chunks))
        except OSError:
            return None
        if not chunk:
            return None
        chunks += chunk
    return bytes(chunks)


# --- the stock clients ----------------------------------------------------------------------------------

def run_kafka_python(bootstrap: str) -> None:
    from kafka import KafkaProducer

    producer = KafkaProducer(bootstrap_servers=bootstrap, client_id='golden-kafka-python',
                             request_timeout_ms=5000, max_block_ms=5000)
    producer.send(TOPIC, key=b'k', value=b'kafka-python golden').get(timeout=10)
    producer.close(timeout=5)


def run_kafka_python_consumer(bootstrap: str) -> None:
    from kafka import KafkaConsumer, TopicPartition

    consumer = KafkaConsumer(bootstrap_servers=bootstrap, client_id='golden-kafka-python-consumer',
                             enable_auto_commit=False, request_timeout_ms=5000, fetch_max_wait_ms=100)
    consumer.assign([TopicPartition(TOPIC, 0)])
    deadline = time.monotonic() + 1.5
    while time.monotonic() < deadline:
        consumer.poll(timeout_ms=200)
    consumer.close()


def run_confluent_kafka_consumer(bootstrap: str) -> None:
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({'bootstrap.servers': bootstrap, 'client.id': 'golden-librdkafka-consumer',
                         'group.id': 'golden', 'enable.auto.commit': False, 'fetch.wait.max.ms': 100})
    consumer.assign([TopicPartition(TOPIC, 0, 0)])
    deadline = time.monotonic() + 1.5
    while time.monotonic() < deadline:
        consumer.poll(0.2)
    consumer.close()


def run_kcat_consumer(bootstrap: str) -> None:
    subprocess.run([kcat_path(), '-b', bootstrap, '-C', '-t', TOPIC, '-p', '0', '-o', 'beginning', '-e',
                    '-X', 'client.id=golden-kcat-consumer'], check=True, timeout=20, capture_output=True)


def run_confluent_kafka(bootstrap: str) -> None:
    from confluent_kafka import Producer

    producer = Producer({'bootstrap.servers': bootstrap, 'client.id': 'golden-librdkafka',
                         'message.timeout.ms': 5000, 'socket.timeout.ms': 5000})
    producer.produce(TOPIC, key=b'k', value=b'librdkafka golden')
    if producer.flush(10) != 0:
        raise RuntimeError('confluent-kafka did not deliver')


def run_aiokafka(bootstrap: str) -> None:
    from aiokafka import AIOKafkaProducer

    async def produce() -> None:
        producer = AIOKafkaProducer(bootstrap_servers=bootstrap, client_id='golden-aiokafka',
                                    request_timeout_ms=5000)
        await producer.start()
        try:
            await producer.send_and_wait(TOPIC, key=b'k', value=b'aiokafka golden')
        finally:
            await producer.stop()

    asyncio.run(produce())


def run_kcat(bootstrap: str) -> None:
    subprocess.run([kcat_path(), '-b', bootstrap, '-P', '-t', TOPIC, '-X', 'client.id=golden-kcat'],
                   input=b'kcat golden\n', check=True, timeout=20, capture_output=True)


CLIENTS = {
    'kafka-python': run_kafka_python,
    'confluent-kafka': run_confluent_kafka,
    'aiokafka': run_aiokafka,
    'kcat': run_kcat,
    'kafka-python-consumer': run_kafka_python_consumer,
    'confluent-kafka-consumer': run_confluent_kafka_consumer,
    'kcat-consumer': run_kcat_consumer,
}


def capture(client: str) -> list[bytes]:
    with RecordingBroker() as broker:
        CLIENTS[client](broker.bootstrap)
        time.sleep(0.1)
        return list(broker.frames)


def fixture_name(frame: bytes) -> str:
    key, version = struct.unpack_from('>hh', frame, 0)
    return f'{ApiKey(key).name.lower()}_v{version}.bin'


def write_fixtures(clients: list[str]) -> None:
    for client in clients:
        directory = FIXTURES / client
        directory.mkdir(parents=True, exist_ok=True)
        written = set()
        for frame in capture(client):
            name = fixture_name(frame)
            if name not in written:
                (directory / name).write_bytes(frame)
                written.add(name)
        print(client, sorted(written))


if __name__ == '__main__':
    write_fixtures(sys.argv[1:] or list(CLIENTS))

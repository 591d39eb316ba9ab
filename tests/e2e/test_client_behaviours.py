"""Behaviours Kafka users rely on beyond the plain round trip, seen through kafka-python and raw sockets.

- A message larger than the consumer's max.partition.fetch.bytes / fetch.max.bytes is still delivered
  (KIP-74: the first batch is returned whatever the limits).
- A LogAppendTime topic stamps records with the broker's clock, and the producer learns that time.
- acks=0: the broker answers nothing (a stray response would break the client's correlation ids), and every
  message lands.
- A committed offset below the log start offset (after DeleteRecords) resets by auto.offset.reset.
- Idempotent produce on raw sockets: a retried batch (same producer id, epoch, sequence) is answered with
  the original offset and not appended twice; a sequence gap is OUT_OF_ORDER_SEQUENCE_NUMBER.
- A committed offset inside a compressed batch resumes exactly there.
- offsets_for_times (ListOffsets by timestamp) finds the first record at or after the time.
- With auto.create.topics.enable=false, producing to an unknown topic fails and creates nothing.
- min.insync.replicas above the replication factor counts as the replication factor (Kafka 3.7+).
- read_committed consumers read non-transactional data; a position past the log end resets by policy.
- Null and empty keys, values and header values stay distinct; a compressed batch is limited by its
  stored size, not its uncompressed size; one consumer reads 64 partitions.
"""

from __future__ import annotations

import struct
import time
from typing import Any

from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import NewTopic
from kafka.structs import OffsetAndMetadata

from protocol import ApiKey, ErrorCode, decode_response, encode_request, request_class
from protocol.records import build_batch


def create_topic(bootstrap: str, topic: str, partitions: int = 1,
                 configs: dict[str, str] | None = None) -> None:
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        admin.create_topics([NewTopic(topic, partitions, 1, topic_configs=configs or {})])
    finally:
        admin.close()


def read_partition(bootstrap: str, topic: str, expected: int, timeout: float = 20,
                   **config: Any) -> list[Any]:
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, auto_offset_reset="earliest",
                             enable_auto_commit=False, fetch_max_wait_ms=100, **config)
    out: list[Any] = []
    try:
        consumer.assign([TopicPartition(topic, 0)])
        deadline = time.monotonic() + timeout
        while len(out) < expected and time.monotonic() < deadline:
            for records in consumer.poll(timeout_ms=500).values():
                out.extend(records)
    finally:
        consumer.close()
    return out


def test_message_larger_than_fetch_limits_is_delivered(broker: Any) -> None:
    create_topic(broker.bootstrap, "big")
    big = bytes(range(256)) * 1200  # 300 KiB, incompressible enough to stay big
    producer = KafkaProducer(bootstrap_servers=broker.bootstrap, acks="all", max_request_size=1_000_000)
    try:
        for value in (b"small-1", big, b"small-2", big[::-1]):
            producer.send("big", value=value, partition=0).get(timeout=10)
    finally:
        producer.close(5)
    records = read_partition(broker.bootstrap, "big", 4, max_partition_fetch_bytes=1024, fetch_max_bytes=1024)
    assert [r.value for r in records] == [b"small-1", big, b"small-2", big[::-1]]
    assert [r.offset for r in records] == [0, 1, 2, 3]


def test_log_append_time_topic_uses_the_broker_clock(broker: Any) -> None:
    create_topic(broker.bootstrap, "lat", configs={"message.timestamp.type": "LogAppendTime"})
    producer = KafkaProducer(bootstrap_servers=broker.bootstrap, acks="all", compression_type="gzip")
    before = int(time.time() * 1000)
    try:
        metadata = [producer.send("lat", value=f"v{i}".encode(), partition=0, timestamp_ms=1_000 + i)
                    for i in range(5)]
        producer.flush(10)
        metadata = [f.get(timeout=10) for f in metadata]
    finally:
        producer.close(5)
    after = int(time.time() * 1000)
    for md in metadata:
        assert before - 1000 <= md.timestamp <= after + 1000, "the produce response carries log_append_time"
    records = read_partition(broker.bootstrap, "lat", 5)
    assert [r.value for r in records] == [f"v{i}".encode() for i in range(5)]
    for r in records:
        assert r.timestamp_type == 1
        assert before - 1000 <= r.timestamp <= after + 1000


def test_acks_zero_gets_no_response_and_everything_lands(broker: Any) -> None:
    create_topic(broker.bootstrap, "acks0")
    producer = KafkaProducer(bootstrap_servers=broker.bootstrap, acks=0, linger_ms=2)
    try:
        for i in range(500):
            producer.send("acks0", value=f"v{i}".encode(), partition=0)
        producer.flush(10)
        # The same connection keeps working: a stray Produce response would desynchronise it.
        assert producer.partitions_for("acks0") == {0}
        producer.send("acks0", value=b"last", partition=0)
        producer.flush(10)
    finally:
        producer.close(5)
    records = read_partition(broker.bootstrap, "acks0", 501)
    assert [r.value for r in records] == [f"v{i}".encode() for i in range(500)] + [b"last"]


def test_committed_offset_below_log_start_resets_to_earliest(broker: Any) -> None:
    create_topic(broker.bootstrap, "trimmed")
    producer = KafkaProducer(bootstrap_servers=broker.bootstrap, acks="all")
    try:
        for i in range(10):
            producer.send("trimmed", value=f"v{i}".encode(), partition=0)
        producer.flush(10)
    finally:
        producer.close(5)
    tp = TopicPartition("trimmed", 0)
    consumer = KafkaConsumer(bootstrap_servers=broker.bootstrap, group_id="trimmed", enable_auto_commit=False)
    try:
        consumer.commit({tp: OffsetAndMetadata(2, "", -1)})
    finally:
        consumer.close()
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    try:
        admin.delete_records({tp: 6})
    finally:
        admin.close()

    consumer = KafkaConsumer("trimmed", bootstrap_servers=broker.bootstrap, group_id="trimmed",
                             auto_offset_reset="earliest", enable_auto_commit=False, fetch_max_wait_ms=100)
    got: list[tuple[int, bytes]] = []
    try:
        deadline = time.monotonic() + 20
        while len(got) < 4 and time.monotonic() < deadline:
            for records in consumer.poll(timeout_ms=500).values():
                got.extend((r.offset, r.value) for r in records)
        assert consumer.beginning_offsets([tp]) == {tp: 6}
    finally:
        consumer.close()
    assert got == [(i, f"v{i}".encode()) for i in range(6, 10)]


class Raw:
    def __init__(self, bootstrap: str) -> None:
        import socket

        host, port = bootstrap.rsplit(":", 1)
        self.sock = socket.create_connection((host, int(port)), timeout=10)
        self.correlation_id = 0

    def call(self, request: Any) -> Any:
        self.correlation_id += 1
        request.with_header(correlation_id=self.correlation_id, client_id="raw-idempotent")
        frame = encode_request(request)
        self.sock.sendall(struct.pack(">i", len(frame)) + frame)
        (size,) = struct.unpack(">i", self._read(4))
        response = decode_response(self._read(size), request.API_KEY, request.API_VERSION)
        assert response.header.correlation_id == self.correlation_id
        return response

    def _read(self, n: int) -> bytes:
        buf = b""
        while len(buf) < n:
            chunk = self.sock.recv(n - len(buf))
            assert chunk, "connection closed by the broker"
            buf += chunk
        return buf

    def close(self) -> None:
        self.sock.close()


def test_idempotent_retry_is_not_appended_twice(broker: Any) -> None:
    create_topic(broker.bootstrap, "idem")
    raw = Raw(broker.bootstrap)
    try:
        init = raw.call(request_class(ApiKey.INIT_PRODUCER_ID)[4](
            transactional_id=None, transaction_timeout_ms=60000, producer_id=-1, producer_epoch=-1))
        assert init.error_code == 0 and init.producer_id >= 0
        pid, epoch = init.producer_id, init.producer_epoch
        now = int(time.time() * 1000)

        def produce(base_sequence: int, n: int) -> Any:
            records = build_batch([(b"k", f"s{base_sequence + i}".encode(), [], now) for i in range(n)],
                                  producer_id=pid, producer_epoch=epoch, base_sequence=base_sequence)
            cls = request_class(ApiKey.PRODUCE)
            t = cls.TopicProduceData
            response = raw.call(cls[9](transactional_id=None, acks=-1, timeout_ms=5000, topic_data=[
                t(name="idem", partition_data=[t.PartitionProduceData(index=0, records=records)])]))
            [topic] = response.responses
            [partition] = topic.partition_responses
            return partition

        first = produce(0, 3)
        assert (first.error_code, first.base_offset) == (0, 0)
        retry = produce(0, 3)
        assert (retry.error_code, retry.base_offset) == (0, 0), "a duplicate gets the original offset"
        second = produce(3, 2)
        assert (second.error_code, second.base_offset) == (0, 3)
        gap = produce(9, 1)
        assert gap.error_code == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
    finally:
        raw.close()
    records = read_partition(broker.bootstrap, "idem", 5)
    assert [(r.offset, r.value) for r in records] == [(i, f"s{i}".encode()) for i in range(5)]
    consumer = KafkaConsumer(bootstrap_servers=broker.bootstrap)
    try:
        assert consumer.end_offsets([TopicPartition("idem", 0)]) == {TopicPartition("idem", 0): 5}
    finally:
        consumer.close()


def test_fetch_from_the_middle_of_a_compressed_batch(broker: Any) -> None:
    """A committed offset inside a compressed batch: the broker returns the whole batch, the consumer skips
    the records before its position, and nothing is lost or repeated."""
    create_topic(broker.bootstrap, "mid-batch")
    producer = KafkaProducer(bootstrap_servers=broker.bootstrap, acks="all", compression_type="lz4",
                             linger_ms=50, batch_size=1_000_000)
    try:
        futures = [producer.send("mid-batch", value=b"v%03d" % i, partition=0) for i in range(100)]
        producer.flush(10)
        assert [f.get(10).offset for f in futures] == list(range(100))
    finally:
        producer.close(5)
    tp = TopicPartition("mid-batch", 0)
    consumer = KafkaConsumer(bootstrap_servers=broker.bootstrap, group_id="mid-batch",
                             enable_auto_commit=False)
    try:
        consumer.commit({tp: OffsetAndMetadata(37, "", -1)})
    finally:
        consumer.close()
    consumer = KafkaConsumer("mid-batch", bootstrap_servers=broker.bootstrap, group_id="mid-batch",
                             auto_offset_reset="earliest", enable_auto_commit=False, fetch_max_wait_ms=100)
    got: list[tuple[int, bytes]] = []
    try:
        deadline = time.monotonic() + 20
        while len(got) < 63 and time.monotonic() < deadline:
            for records in consumer.poll(timeout_ms=500).values():
                got.extend((r.offset, r.value) for r in records)
    finally:
        consumer.close()
    assert got == [(i, b"v%03d" % i) for i in range(37, 100)]


def test_offsets_for_times(broker: Any) -> None:
    create_topic(broker.bootstrap, "by-time", partitions=2)
    base = int(time.time() * 1000) - 100_000
    producer = KafkaProducer(bootstrap_servers=broker.bootstrap, acks="all", compression_type="snappy")
    try:
        for p in range(2):
            for i in range(20):
                producer.send("by-time", value=b"%d" % i, partition=p, timestamp_ms=base + i * 1000 + p)
        producer.flush(10)
    finally:
        producer.close(5)
    consumer = KafkaConsumer(bootstrap_servers=broker.bootstrap)
    try:
        tp0, tp1 = TopicPartition("by-time", 0), TopicPartition("by-time", 1)
        found = consumer.offsets_for_times({tp0: base + 7500, tp1: base + 3000})
        assert (found[tp0].offset, found[tp0].timestamp) == (8, base + 8000)
        assert (found[tp1].offset, found[tp1].timestamp) == (3, base + 3001)
        assert consumer.offsets_for_times({tp0: base + 10**6}) == {tp0: None}
    finally:
        consumer.close()


def test_auto_create_disabled_rejects_unknown_topics(broker_factory: Any) -> None:
    broker = broker_factory({"auto.create.topics.enable": "false"})
    from confluent_kafka import KafkaError, Producer

    producer = Producer({"bootstrap.servers": broker.bootstrap, "message.timeout.ms": 3000})
    errors: list[Any] = []
    producer.produce("never-created", value=b"x", on_delivery=lambda err, _m: errors.append(err))
    producer.flush(10)
    assert [e.code() for e in errors] in ([KafkaError.UNKNOWN_TOPIC_OR_PART], [KafkaError._MSG_TIMED_OUT])
    consumer = KafkaConsumer(bootstrap_servers=broker.bootstrap)
    try:
        assert not consumer.partitions_for_topic("never-created")
        assert "never-created" not in consumer.topics()
    finally:
        consumer.close()


def test_min_insync_replicas_above_the_replication_factor_counts_as_the_replication_factor(broker: Any) -> None:
    """min.insync.replicas=2 on a one-replica topic: as Kafka 3.7+ (KAFKA-15583's effective min ISR,
    min(min.insync.replicas, replication factor)), acks=all is accepted and the record is visible.
    NOT_ENOUGH_REPLICAS for an ISR really below the minimum is pinned in tests/broker/test_replica_manager.py."""
    create_topic(broker.bootstrap, "isr2", configs={"min.insync.replicas": "2"})
    raw = Raw(broker.bootstrap)
    try:
        cls = request_class(ApiKey.PRODUCE)
        t = cls.TopicProduceData
        now = int(time.time() * 1000)

        def produce(acks: int) -> Any:
            records = build_batch([(None, b"acks=%d" % acks, [], now)])
            response = raw.call(cls[9](transactional_id=None, acks=acks, timeout_ms=2000, topic_data=[
                t(name="isr2", partition_data=[t.PartitionProduceData(index=0, records=records)])]))
            return response.responses[0].partition_responses[0]

        all_ = produce(-1)
        assert (all_.error_code, all_.base_offset) == (0, 0)
        one = produce(1)
        assert (one.error_code, one.base_offset) == (0, 1)
    finally:
        raw.close()
    assert [r.value for r in read_partition(broker.bootstrap, "isr2", 2)] == [b"acks=-1", b"acks=1"]


def test_read_committed_consumer_reads_non_transactional_data(broker: Any) -> None:
    create_topic(broker.bootstrap, "rc")
    producer = KafkaProducer(bootstrap_servers=broker.bootstrap, acks="all", compression_type="zstd")
    try:
        for i in range(100):
            producer.send("rc", value=b"%d" % i, partition=0)
        producer.flush(10)
    finally:
        producer.close(5)
    records = read_partition(broker.bootstrap, "rc", 100, isolation_level="read_committed")
    assert [r.value for r in records] == [b"%d" % i for i in range(100)]


def test_fetch_past_the_log_end_resets_by_policy(broker: Any) -> None:
    """A position beyond the log end offset gets OFFSET_OUT_OF_RANGE; the consumer resets (earliest)."""
    create_topic(broker.bootstrap, "past-end")
    producer = KafkaProducer(bootstrap_servers=broker.bootstrap, acks="all")
    try:
        for i in range(10):
            producer.send("past-end", value=b"%d" % i, partition=0)
        producer.flush(10)
    finally:
        producer.close(5)
    tp = TopicPartition("past-end", 0)
    consumer = KafkaConsumer(bootstrap_servers=broker.bootstrap, auto_offset_reset="earliest",
                             enable_auto_commit=False, fetch_max_wait_ms=100)
    got: list[int] = []
    try:
        consumer.assign([tp])
        consumer.seek(tp, 1000)
        deadline = time.monotonic() + 20
        while len(got) < 10 and time.monotonic() < deadline:
            got += [r.offset for r in consumer.poll(timeout_ms=500).get(tp, [])]
    finally:
        consumer.close()
    assert got == list(range(10))


def test_empty_and_null_are_kept_apart(broker: Any) -> None:
    """Null vs empty key, value and header value round trip distinctly (confluent-kafka)."""
    from confluent_kafka import Consumer, Producer
    from confluent_kafka import TopicPartition as CTopicPartition

    create_topic(broker.bootstrap, "nulls")
    cases = [(None, None, [("h", None)]), (b"", b"", [("h", b"")]), (None, b"", []),
             (b"", None, [("", b"x")]), (b"k", b"v", [("h", None), ("h", b""), ("h", b"dup")])]
    producer = Producer({"bootstrap.servers": broker.bootstrap, "enable.idempotence": True})
    for key, value, headers in cases:
        producer.produce("nulls", key=key, value=value, headers=headers, partition=0)
    assert producer.flush(10) == 0
    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "nulls",
                         "enable.auto.commit": False})
    got: list[tuple[Any, Any, Any]] = []
    try:
        consumer.assign([CTopicPartition("nulls", 0, 0)])
        deadline = time.monotonic() + 15
        while len(got) < len(cases) and time.monotonic() < deadline:
            got += [(m.key(), m.value(), m.headers() or []) for m in consumer.consume(10, 0.3)
                    if m.error() is None]
    finally:
        consumer.close()
    assert got == [(k, v, h) for k, v, h in cases]


def test_compressed_batch_far_larger_uncompressed_than_message_max_bytes(broker: Any) -> None:
    """message.max.bytes limits the batch as stored (compressed), as in Kafka: a 3 MiB value that gzips
    to a few KiB is accepted and read back whole."""
    create_topic(broker.bootstrap, "squeezed")
    value = b"a" * (3 << 20)
    producer = KafkaProducer(bootstrap_servers=broker.bootstrap, acks="all", compression_type="gzip",
                             max_request_size=10 << 20, batch_size=1 << 20)
    try:
        assert producer.send("squeezed", value=value, partition=0).get(10).offset == 0
    finally:
        producer.close(5)
    records = read_partition(broker.bootstrap, "squeezed", 1)
    assert len(records) == 1 and records[0].value == value


def test_many_partitions_in_one_fetch(broker: Any) -> None:
    create_topic(broker.bootstrap, "wide", partitions=64)
    producer = KafkaProducer(bootstrap_servers=broker.bootstrap, acks="all", linger_ms=5)
    try:
        for i in range(64 * 40):
            producer.send("wide", value=b"%d" % i, partition=i % 64)
        producer.flush(20)
    finally:
        producer.close(5)
    consumer = KafkaConsumer("wide", bootstrap_servers=broker.bootstrap, group_id="wide",
                             auto_offset_reset="earliest", enable_auto_commit=False, fetch_max_wait_ms=100)
    got: dict[int, list[int]] = {}
    try:
        deadline = time.monotonic() + 30
        while sum(len(v) for v in got.values()) < 64 * 40 and time.monotonic() < deadline:
            for tp, records in consumer.poll(timeout_ms=500).items():
                got.setdefault(tp.partition, []).extend(int(r.value) for r in records)
    finally:
        consumer.close()
    assert got == {p: list(range(p, 64 * 40, 64)) for p in range(64)}

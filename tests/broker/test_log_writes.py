"""Appends off the event loop (broker.server.log_writes), through real sockets and stock clients: a write that hangs
holds up only the producers of its partition; consumers, metadata and the partitions of the other writer
threads carry on, and the stalled produce is answered once its bytes are written."""

from __future__ import annotations

import threading
import time
import zlib
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from broker.server.log_writes import WRITERS_PER_DIR
from broker.testing import EmbeddedBroker
from storage import log_writer as log_writer_module

TOPIC = "writes"


def partitions_on_two_writers() -> tuple[int, int]:
    """Two partitions of TOPIC that land on different writer threads (the assignment is by name and number)."""
    base = zlib.crc32(TOPIC.encode())
    stalled = 0
    other = next(p for p in range(1, WRITERS_PER_DIR + 1) if (base + p) % WRITERS_PER_DIR != base % WRITERS_PER_DIR)
    return stalled, other


def first_record(broker: EmbeddedBroker, partition: int) -> bytes | None:
    """The value at offset 0 of a partition of TOPIC, read by a stock consumer (None within 15 s: none)."""
    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "read", "enable.auto.commit": False})
    consumer.assign([TopicPartition(TOPIC, partition, 0)])
    try:
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            m = consumer.poll(0.5)
            if m is not None and m.error() is None:
                return m.value()
        return None
    finally:
        consumer.close()


class Stall:
    """Hangs every write of one partition's log until released, as a write stuck in the kernel would."""

    def __init__(self, log_dir_name: str) -> None:
        self.log_dir_name = log_dir_name
        self.entered = threading.Event()
        self.release = threading.Event()

    def __call__(self, log_path: Path) -> None:
        if log_path.parent.name == self.log_dir_name:
            self.entered.set()
            assert self.release.wait(60)


@pytest.fixture
def stall(monkeypatch: pytest.MonkeyPatch) -> Stall:
    stalled, _ = partitions_on_two_writers()
    s = Stall(f"{TOPIC}-{stalled}")
    monkeypatch.setattr(log_writer_module, "injected_stall", s)
    yield s
    s.release.set()


def test_a_stalled_write_holds_only_its_own_partition(broker: EmbeddedBroker, stall: Stall) -> None:
    stalled, other = partitions_on_two_writers()
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.create_topics([NewTopic(TOPIC, num_partitions=max(stalled, other) + 1, replication_factor=1),
                         NewTopic("ready", num_partitions=1, replication_factor=1)])["ready"].result(15)
    ready = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 0})
    for i in range(20):
        ready.produce("ready", value=b"r%d" % i)
    assert ready.flush(15) == 0

    acked: dict[int, Any] = {}

    def delivered(err: Any, msg: Any) -> None:
        acked[msg.partition()] = (err, msg.offset(), time.monotonic())

    producer = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 0, "acks": "1"})
    producer.produce(TOPIC, value=b"stuck", partition=stalled, on_delivery=delivered)
    producer.poll(0)
    assert stall.entered.wait(15), "the write never reached the writer"

    # While that write hangs: metadata, a consumer of another topic and a produce to a partition of another
    # writer thread are all answered (with appends on the event loop, none of them would be).
    md = admin.list_topics(timeout=10)
    assert {"ready", TOPIC} <= set(md.topics)
    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "g", "enable.auto.commit": False})
    consumer.assign([TopicPartition("ready", 0, 0)])
    got: list[bytes] = []
    deadline = time.monotonic() + 20
    while len(got) < 20 and time.monotonic() < deadline:
        m = consumer.poll(0.5)
        if m is not None and m.error() is None:
            got.append(m.value())
    consumer.close()
    assert got == [b"r%d" % i for i in range(20)]
    # (another producer: a broker answers one connection's requests in order, as Kafka does)
    second = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 0, "acks": "1"})
    second.produce(TOPIC, value=b"free", partition=other, on_delivery=delivered)
    assert second.flush(15) == 0
    assert other in acked and acked[other][0] is None
    assert stalled not in acked, "the stalled produce was answered before its bytes were written"

    released_at = time.monotonic()
    stall.release.set()
    deadline = time.monotonic() + 15
    while stalled not in acked and time.monotonic() < deadline:
        producer.poll(0.1)
    err, offset, at = acked[stalled]
    assert err is None and offset == 0 and at >= released_at
    # and it is readable afterwards
    assert first_record(broker, stalled) == b"stuck"


def test_a_producers_next_request_is_appended_while_the_previous_waits(broker: EmbeddedBroker, stall: Stall) -> None:
    """broker.network.socket_server.Deferred: a produce waiting for its write does not hold up the connection's next
    request (Kafka would wait), and the answers still come back in request order."""
    import socket

    from protocol import ApiKey, request_class
    from protocol.records import build_batch

    from .wire import recv, send

    stalled, other = partitions_on_two_writers()
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.create_topics([NewTopic(TOPIC, num_partitions=max(stalled, other) + 1, replication_factor=1)]
                        )[TOPIC].result(15)
    Produce = request_class(ApiKey.PRODUCE)
    T = Produce.TopicProduceData

    def produce(partition: int, value: bytes) -> Any:
        return Produce[9](transactional_id=None, acks=1, timeout_ms=30_000, topic_data=[T(name=TOPIC, partition_data=[
            T.PartitionProduceData(index=partition, records=build_batch([(None, value, [], 0)]))])])

    sock = socket.create_connection(("127.0.0.1", broker.port), timeout=30)
    try:
        send(sock, produce(stalled, b"first"), 1)
        assert stall.entered.wait(15)
        send(sock, produce(other, b"second"), 2)
        send(sock, request_class(ApiKey.API_VERSIONS)[3](client_software_name="t", client_software_version="1"), 3)
        # The second request was appended (and is readable) while the first still waits for its write.
        assert first_record(broker, other) == b"second"
        sock.settimeout(0.5)
        with pytest.raises(TimeoutError):
            sock.recv(1)  # and nothing is answered before the first request's answer
        sock.settimeout(30)
        stall.release.set()
        first = recv(sock, ApiKey.PRODUCE, 9)
        second = recv(sock, ApiKey.PRODUCE, 9)
        third = recv(sock, ApiKey.API_VERSIONS, 3)
        assert [r.header.correlation_id for r in (first, second, third)] == [1, 2, 3]
        assert [r.responses[0].partition_responses[0].base_offset for r in (first, second)] == [0, 0]
    finally:
        sock.close()


def test_a_wait_for_a_write_ends_when_the_log_is_truncated_under_it(tmp_path: Path, stall: Stall) -> None:
    """A leader that becomes a follower truncates a log whose appends were still being written: whoever waited
    for them (a produce answer, a follower's next fetch) is told they are gone instead of waiting forever."""
    import asyncio

    from broker.server.log_writes import LogWrites
    from storage import Log, LogConfig, TopicPartition
    from tests.storage.conftest import build_batch

    stalled, _ = partitions_on_two_writers()

    async def scenario() -> None:
        moved: list[Log] = []
        writes = LogWrites(moved.append)
        log_ = Log.open(tmp_path / f"{TOPIC}-{stalled}", LogConfig(),
                        topic_partition=TopicPartition(TOPIC, stalled))
        writes.attach(log_)
        log_.append_as_leader(build_batch(2), 0, now_ms=0)
        pending = writes.unwritten(log_, 2)
        assert pending is not None
        waited = writes.wait_written([pending])
        assert stall.entered.wait(5)
        stall.release.set()
        log_.truncate_to(1)  # waits for the write, then cuts it
        assert await asyncio.wait_for(waited, 5) == [False]
        assert moved == [log_]
        log_.close()
        writes.close()

    asyncio.run(scenario())


def test_a_new_leader_epoch_starts_after_the_appends_the_writer_still_holds(tmp_path: Path,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """A re-elected leader whose last appends are still being written starts its new epoch after them (as Kafka,
    whose appends are in the log when it becomes leader): an epoch placed below them made followers truncate and
    fetch the same batches again without end."""
    import asyncio

    from broker.server.log_writes import LogWrites

    from .replication import TP, lead, records, replica_manager

    s = Stall(f"{TP.topic}-{TP.partition}")
    monkeypatch.setattr(log_writer_module, "injected_stall", s)

    async def scenario() -> None:
        rm = replica_manager(tmp_path, 0)
        rm.log_writes = LogWrites(rm._on_log_end_offset_moved)
        partition = lead(rm, 1, isr=[0])
        pending = rm.append_records(30_000, 1, {TP: records(3)})
        assert isinstance(pending, asyncio.Future)
        assert s.entered.wait(5)
        threading.Timer(0.2, s.release.set).start()
        lead(rm, 2, isr=[0])  # waits for the write, then starts epoch 2 at offset 3
        assert partition.leader_epoch_start_offset == 3
        assert partition.log.leader_epoch_cache.end_offset_for(1, partition.log.log_end_offset) == (1, 3)
        assert (await asyncio.wait_for(pending, 5))[TP].error == 0
        rm.log_writes.close()

    asyncio.run(scenario())


def test_a_producer_that_vanishes_with_answers_waiting_disturbs_no_one(broker: EmbeddedBroker, stall: Stall,
                                                                        caplog: pytest.LogCaptureFixture) -> None:
    """Three produce requests waiting on a stalled write, then the client is gone: the writes complete, the
    answers are dropped (as Kafka drops them), nothing is logged as an error and others are served."""
    import logging
    import socket

    from protocol import ApiKey, request_class
    from protocol.records import build_batch

    from .wire import roundtrip, send

    stalled, _ = partitions_on_two_writers()
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.create_topics([NewTopic(TOPIC, num_partitions=stalled + 1, replication_factor=1)])[TOPIC].result(15)
    Produce = request_class(ApiKey.PRODUCE)
    T = Produce.TopicProduceData
    caplog.set_level(logging.WARNING)
    sock = socket.create_connection(("127.0.0.1", broker.port), timeout=30)
    for i in range(3):
        send(sock, Produce[9](transactional_id=None, acks=1, timeout_ms=30_000, topic_data=[T(
            name=TOPIC, partition_data=[T.PartitionProduceData(
                index=stalled, records=build_batch([(None, b"gone-%d" % i, [], 0)]))])]), i)
    assert stall.entered.wait(15)
    sock.close()
    stall.release.set()
    other = socket.create_connection(("127.0.0.1", broker.port), timeout=30)
    try:
        Meta = request_class(ApiKey.METADATA)
        md = roundtrip(other, Meta[12](topics=None, allow_auto_topic_creation=False,
                                       include_topic_authorized_operations=False), 1)
        assert TOPIC in {t.name for t in md.topics}
    finally:
        other.close()
    assert first_record(broker, stalled) == b"gone-0"
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR], caplog.records

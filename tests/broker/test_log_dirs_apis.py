"""DescribeLogDirs and AlterReplicaLogDirs against an in-process broker with two log dirs, over real sockets:
kafka-python's admin client for what a user sees (dirs with their partitions' sizes, total and usable bytes),
and requests built with our codec for each error code the handlers' contracts list."""

from __future__ import annotations

import shutil
import socket
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer
from kafka.admin import NewTopic

from protocol import ApiKey, request_class
from protocol.errors import ErrorCode
from tests.broker.wire import roundtrip
from tests.e2e.support import wait_until


@pytest.fixture
def two_dir_broker(broker_factory: Callable[..., Any], tmp_path: Path) -> Any:
    dirs = [tmp_path / "logs-a", tmp_path / "logs-b"]
    return broker_factory({"log.dirs": ",".join(str(d) for d in dirs)})


def describe(port: int, version: int, topics: list[tuple[str, list[int]]] | None) -> Any:
    Req = request_class(ApiKey.DESCRIBE_LOG_DIRS)
    body = None if topics is None else [Req.DescribableLogDirTopic(topic=t, partitions=ps) for t, ps in topics]
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        return roundtrip(s, Req[version](topics=body), 1)


def alter(port: int, version: int, path: str, topic: str, partitions: list[int]) -> dict[int, int]:
    Req = request_class(ApiKey.ALTER_REPLICA_LOG_DIRS)
    Dir = Req.AlterReplicaLogDir
    topics = [Dir.AlterReplicaLogDirTopic(name=topic, partitions=partitions)]
    request = Req[version](dirs=[Dir(path=path, topics=topics)])
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        resp = roundtrip(s, request, 1)
    return {p.partition_index: p.error_code for t in resp.results for p in t.partitions}


def produce(bootstrap: str, topic: str, n: int) -> None:
    producer = KafkaProducer(bootstrap_servers=bootstrap)
    for i in range(n):
        producer.send(topic, value=b"x" * 1000, partition=i % 2)
    producer.flush()
    producer.close()


def test_admin_client_describes_log_dirs_with_sizes(two_dir_broker: Any, tmp_path: Path) -> None:
    admin = KafkaAdminClient(bootstrap_servers=two_dir_broker.bootstrap)
    try:
        admin.create_topics([NewTopic("sized", 2, 1)])
        produce(two_dir_broker.bootstrap, "sized", 200)
        described = admin.describe_log_dirs()
    finally:
        admin.close()
    assert len(described) == 1
    dirs = {d["log_dir"]: d for d in described[0]["log_dirs"]}
    assert set(dirs) == {str(tmp_path / "logs-a"), str(tmp_path / "logs-b")}
    sizes = {}
    for d in dirs.values():
        assert d["error_code"] == 0 and d["total_bytes"] > 0 and 0 <= d["usable_bytes"] <= d["total_bytes"]
        for t in d["topics"]:
            for p in t["partitions"]:
                if t["name"] == "sized":
                    sizes[p["partition_index"]] = p["partition_size"]
                    assert p["offset_lag"] == 0 and p["is_future_key"] is False
    # One partition per dir (new logs go to the dir with fewest), each ~100 KB of records.
    assert sorted(sizes) == [0, 1] and all(100_000 < s < 200_000 for s in sizes.values()), sizes
    on_disk = sum(f.stat().st_size for f in tmp_path.glob("logs-*/sized-*/*.log"))
    assert sum(sizes.values()) == on_disk


@pytest.mark.parametrize("version", range(5))
def test_describe_log_dirs_every_version_and_partition_filter(two_dir_broker: Any, version: int) -> None:
    admin = KafkaAdminClient(bootstrap_servers=two_dir_broker.bootstrap)
    admin.create_topics([NewTopic("filtered", 2, 1)])
    admin.close()
    resp = describe(two_dir_broker.port, version, [("filtered", [1]), ("absent", [0])])
    listed = [(t.name, p.partition_index) for r in resp.results for t in r.topics for p in t.partitions]
    assert listed == [("filtered", 1)]
    assert all(r.error_code == ErrorCode.NONE for r in resp.results)
    if version >= 4:
        assert all(r.total_bytes > 0 for r in resp.results)
    every = describe(two_dir_broker.port, version, None)
    assert sorted((t.name, p.partition_index) for r in every.results for t in r.topics for p in t.partitions
                  if t.name == "filtered") == [("filtered", 0), ("filtered", 1)]


def test_describe_log_dirs_answers_kafka_storage_error_for_a_dir_gone(two_dir_broker: Any, tmp_path: Path) -> None:
    shutil.rmtree(tmp_path / "logs-b")
    resp = describe(two_dir_broker.port, 4, None)
    errors = {r.log_dir: r.error_code for r in resp.results}
    assert errors == {str(tmp_path / "logs-a"): ErrorCode.NONE, str(tmp_path / "logs-b"): ErrorCode.KAFKA_STORAGE_ERROR}


def test_alter_replica_log_dirs_error_codes(two_dir_broker: Any, tmp_path: Path) -> None:
    port = two_dir_broker.port
    a, b = str(tmp_path / "logs-a"), str(tmp_path / "logs-b")
    admin = KafkaAdminClient(bootstrap_servers=two_dir_broker.bootstrap)
    try:
        admin.create_topics([NewTopic("placed", 1, 1)])
        current = next(d["log_dir"] for d in admin.describe_log_dirs()[0]["log_dirs"]
                       if any(t["name"] == "placed" for t in d["topics"]))
        for version in range(3):
            assert alter(port, version, current, "placed", [0]) == {0: ErrorCode.NONE}
            assert alter(port, version, str(tmp_path / "elsewhere"), "placed", [0]) == {0: ErrorCode.LOG_DIR_NOT_FOUND}
            assert alter(port, version, "t" * 230, "placed", [0]) == {0: ErrorCode.LOG_DIR_NOT_FOUND}
            assert alter(port, version, a, "t" * 240, [0]) == {0: ErrorCode.INVALID_TOPIC_EXCEPTION}
        # Not known yet: UNKNOWN_TOPIC_OR_PARTITION, and the log is created in the dir asked for. (A partition
        # the cluster knows but this broker does not host answers REPLICA_NOT_AVAILABLE: see
        # tests/cluster/test_reassignment_api.py.)
        assert alter(port, 2, b, "later", [0]) == {0: ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}
        assert alter(port, 2, a, "later", [1]) == {1: ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}
        admin.create_topics([NewTopic("later", 2, 1)])
        wait_until(lambda: (tmp_path / "logs-b" / "later-0").is_dir() and (tmp_path / "logs-a" / "later-1").is_dir(),
                   10, "the logs of 'later' in the dirs asked for")
        # kafka-python's admin client answers the same codes.
        result = admin.alter_replica_log_dirs({("placed", 0, 0): current})
        assert [e.errno for e in result.values()] == [ErrorCode.NONE]
        result = admin.alter_replica_log_dirs({("placed", 0, 0): str(tmp_path / "x")})
        assert [e.errno for e in result.values()] == [ErrorCode.LOG_DIR_NOT_FOUND]
    finally:
        admin.close()


def log_dir_of(admin: KafkaAdminClient, topic: str, partition: int) -> list[tuple[str, int, bool]]:
    return [(d["log_dir"], p["partition_size"], p["is_future_key"]) for d in admin.describe_log_dirs()[0]["log_dirs"]
            for t in d["topics"] if t["name"] == topic for p in t["partitions"] if p["partition_index"] == partition]


def test_alter_replica_log_dirs_moves_a_replica_while_it_serves(two_dir_broker: Any, tmp_path: Path) -> None:
    admin = KafkaAdminClient(bootstrap_servers=two_dir_broker.bootstrap)
    producer = KafkaProducer(bootstrap_servers=two_dir_broker.bootstrap, linger_ms=0)
    try:
        admin.create_topics([NewTopic("moving", 1, 1, topic_configs={"segment.bytes": "20000"})])
        for i in range(1000):
            producer.send("moving", key=b"%d" % i, value=b"x" * 100, partition=0)
        producer.flush()
        [(source, size, _)] = log_dir_of(admin, "moving", 0)
        destination = str(tmp_path / ("logs-b" if source.endswith("logs-a") else "logs-a"))
        assert alter(two_dir_broker.port, 2, destination, "moving", [0]) == {0: ErrorCode.NONE}
        for i in range(1000, 1200):  # writes go on during the move
            producer.send("moving", key=b"%d" % i, value=b"x" * 100, partition=0)
        producer.flush()
        wait_until(lambda: [d for d, _, _ in log_dir_of(admin, "moving", 0)] == [destination], 20,
                   "the replica to be in the other dir only")
        assert not (Path(source) / "moving-0").exists()
        assert (Path(destination) / "moving-0").is_dir()
        assert not list(Path(destination).glob("*-future"))
        [(_, moved_size, future)] = log_dir_of(admin, "moving", 0)
        assert moved_size > size and not future
    finally:
        producer.close()
        admin.close()
    consumer = KafkaConsumer("moving", bootstrap_servers=two_dir_broker.bootstrap, auto_offset_reset="earliest",
                             consumer_timeout_ms=3000)
    keys = [int(m.key) for m in consumer]
    consumer.close()
    assert keys == list(range(1200))


def test_a_future_replica_is_listed_until_it_is_swapped_in(two_dir_broker: Any, tmp_path: Path) -> None:
    """White-box: start a move and describe in the same event-loop step, before any copying."""
    from broker.apis import describe_log_dirs
    from broker.apis.base import RequestContext
    from storage import TopicPartition

    admin = KafkaAdminClient(bootstrap_servers=two_dir_broker.bootstrap)
    try:
        admin.create_topics([NewTopic("listed", 2, 1)])
    finally:
        admin.close()
    produce(two_dir_broker.bootstrap, "listed", 10)  # 5 records in each partition
    server = two_dir_broker.server
    tp = TopicPartition("listed", 0)
    source = server.log_manager.dir_of(tp)
    destination = next(d for d in server.log_manager.log_dirs if d != source)

    def move_and_describe() -> Any:
        server.log_dir_mover.move(tp, destination)
        Req = request_class(ApiKey.DESCRIBE_LOG_DIRS)
        ctx = RequestContext(server, None, ApiKey.DESCRIBE_LOG_DIRS, 4, 1, "test")
        return describe_log_dirs.handle(ctx, Req[4](topics=None))

    resp = two_dir_broker.call(move_and_describe)
    entries = {(r.log_dir, p.is_future_key): p.offset_lag for r in resp.results for t in r.topics
               if t.name == "listed" for p in t.partitions if p.partition_index == 0}
    assert entries == {(str(source), False): 0, (str(destination), True): 5}
    wait_until(lambda: server.log_manager.dir_of(tp) == destination, 10, "the move to finish")


def test_a_replica_whose_log_starts_inside_a_batch_moves(two_dir_broker: Any, tmp_path: Path) -> None:
    """DeleteRecords left the log start offset inside the first batch; the copy starts at that batch, as the
    current log does, and keeps the log start offset (the move used to fail on that batch)."""
    from confluent_kafka import Producer
    from confluent_kafka import TopicPartition as CKTopicPartition
    from confluent_kafka.admin import AdminClient

    admin = KafkaAdminClient(bootstrap_servers=two_dir_broker.bootstrap)
    try:
        admin.create_topics([NewTopic("trimmed-move", 1, 1)])
        producer = Producer({"bootstrap.servers": two_dir_broker.bootstrap, "linger.ms": 100})
        for i in range(10):
            producer.produce("trimmed-move", value=b"%d" % i, partition=0)
        assert producer.flush(10) == 0  # one batch, offsets 0..9
        ck = AdminClient({"bootstrap.servers": two_dir_broker.bootstrap})
        [deleted] = ck.delete_records([CKTopicPartition("trimmed-move", 0, 5)]).values()
        assert deleted.result().low_watermark == 5
        [(source, _, _)] = log_dir_of(admin, "trimmed-move", 0)
        destination = str(tmp_path / ("logs-b" if source.endswith("logs-a") else "logs-a"))
        assert alter(two_dir_broker.port, 2, destination, "trimmed-move", [0]) == {0: ErrorCode.NONE}
        wait_until(lambda: [d for d, _, _ in log_dir_of(admin, "trimmed-move", 0)] == [destination], 20,
                   "the replica to be in the other dir only")
    finally:
        admin.close()
    consumer = KafkaConsumer("trimmed-move", bootstrap_servers=two_dir_broker.bootstrap,
                             auto_offset_reset="earliest", consumer_timeout_ms=3000)
    assert [(m.offset, m.value) for m in consumer] == [(i, b"%d" % i) for i in range(5, 10)]
    consumer.close()

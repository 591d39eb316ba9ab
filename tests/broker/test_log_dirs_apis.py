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
from kafka import KafkaAdminClient, KafkaProducer
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
        other = b if current == a else a
        for version in range(3):
            assert alter(port, version, current, "placed", [0]) == {0: ErrorCode.NONE}
            assert alter(port, version, str(tmp_path / "elsewhere"), "placed", [0]) == {0: ErrorCode.LOG_DIR_NOT_FOUND}
            assert alter(port, version, "t" * 230, "placed", [0]) == {0: ErrorCode.LOG_DIR_NOT_FOUND}
            assert alter(port, version, a, "t" * 240, [0]) == {0: ErrorCode.INVALID_TOPIC_EXCEPTION}
            # A move between dirs is a documented gap: refused, so no client waits for it.
            assert alter(port, version, other, "placed", [0]) == {0: ErrorCode.KAFKA_STORAGE_ERROR}
        # Not hosted yet: REPLICA_NOT_AVAILABLE, and the log is created in the dir asked for.
        assert alter(port, 2, b, "later", [0]) == {0: ErrorCode.REPLICA_NOT_AVAILABLE}
        assert alter(port, 2, a, "later", [1]) == {1: ErrorCode.REPLICA_NOT_AVAILABLE}
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

"""Helpers for the cluster acceptance tests: a 3-broker `LocalCluster` on a real ZooKeeper, looked at
the way Kafka's own tools and stock clients look at a cluster.

- `start_cluster(tmp_path, overrides)`: a started `LocalCluster` (the caller stops it).
- `Zk(cluster)`: a kazoo client reading Kafka's ZooKeeper layout: `partition_state(topic, p)` (the JSON of
  /brokers/topics/<t>/partitions/<p>/state), `controller()`, `controller_epoch()`, `live_brokers()`.
- `create_topic(...)`, `metadata(...)`: confluent-kafka's admin client (CreateTopics, Metadata).
- `consume_all(bootstrap, topic, partitions)`: every record up to each partition's high watermark, read by
  a fresh assign()ed confluent-kafka consumer (no group), as (partition, offset, key, value).
- `segment_bytes(log_dir)` / `batches(data)` / `prefix_up_to(data, offset)`: the concatenated `.log` segment
  files of a partition directory, walked by record batch headers (independent of our storage package), cut
  at the position of a given offset — to prove replicas hold the same bytes up to the high watermark.
- `raw_request(port, request)`: one request on a plain socket, decoded with our codec;
  `list_offsets_error(port, topic, p)`: ask one broker, as a consumer, whether it leads a partition;
  `init_producer_id(port)`: a producer id handed out by one broker;
  `txn_coordinator(port, transactional_id)` / `group_coordinator(port, group)`: the broker id FindCoordinator
  (key type 1 / 0) names, -1 on error;
  `consumer_group_members(port, group)`: the member ids ConsumerGroupDescribe lists on that broker.
  After a broker dies, tests ask these instead of librdkafka's admin client: its coordinator-based calls can
  abort the whole process when the cluster changes under them (librdkafka#4605, #3663, #5040).
- `wait_until(pred, timeout, what)`: a bounded poll.
"""

from __future__ import annotations

import json
import socket
import struct
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from kazoo.client import KazooClient

from broker.local_cluster import LocalCluster
from protocol import ApiKey, decode_response, encode_request, request_class
from protocol.errors import ErrorCode


def wait_until(pred: Callable[[], Any], timeout: float, what: str, interval: float = 0.1) -> Any:
    deadline = time.monotonic() + timeout
    last_error: BaseException | None = None
    while time.monotonic() < deadline:
        try:
            value = pred()
        except Exception as e:  # a broker restarting may refuse a connection for a moment
            last_error = e
            value = None
        if value:
            return value
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}" +
                         (f" (last error: {last_error!r})" if last_error else ""))


def start_cluster(tmp_path: Path, overrides: dict[str, str], n: int = 3) -> LocalCluster:
    return LocalCluster(n, overrides, data_dir=tmp_path / "cluster").start()


class Zk:
    """Read-only view of the cluster's ZooKeeper znodes (Kafka 3.x ZooKeeper-mode layout)."""

    def __init__(self, cluster: LocalCluster) -> None:
        assert cluster.zookeeper is not None
        self.client = KazooClient(hosts=cluster.zookeeper.connect_string, timeout=10)
        self.client.start(timeout=10)

    def close(self) -> None:
        self.client.stop()
        self.client.close()

    def _json(self, path: str) -> Any:
        data, _ = self.client.get(path)
        return json.loads(data)

    def partition_state(self, topic: str, partition: int) -> dict[str, Any]:
        return self._json(f"/brokers/topics/{topic}/partitions/{partition}/state")

    def controller(self) -> int | None:
        if not self.client.exists("/controller"):
            return None
        return int(self._json("/controller")["brokerid"])

    def controller_epoch(self) -> int:
        return int(self.client.get("/controller_epoch")[0])

    def live_brokers(self) -> set[int]:
        return {int(c) for c in self.client.get_children("/brokers/ids")}


def admin(bootstrap: str) -> AdminClient:
    return AdminClient({"bootstrap.servers": bootstrap})


def create_topic(bootstrap: str, topic: str, partitions: int, replication_factor: int,
                 configs: dict[str, str] | None = None,
                 assignment: list[list[int]] | None = None) -> None:
    if assignment is not None:
        new = NewTopic(topic, num_partitions=len(assignment), replica_assignment=assignment, config=configs or {})
    else:
        new = NewTopic(topic, partitions, replication_factor, config=configs or {})
    client = admin(bootstrap)  # keep a reference: the futures die with their client
    futures = client.create_topics([new], operation_timeout=20, request_timeout=30)
    futures[topic].result(60)
    # The answer means the broker that took the request knows the topic; the others learn it from their next
    # UpdateMetadata, and until then a Metadata request sent to one of them does not list it (as with Kafka).
    wait_until(lambda: all(_lists_topic(port, topic) for port in _ports(bootstrap)), 30,
               f"every live broker's metadata listing {topic}")


def _ports(bootstrap: str) -> list[int]:
    return [int(address.rsplit(":", 1)[1]) for address in bootstrap.split(",")]


def _lists_topic(port: int, topic: str) -> bool:
    """Whether the broker on `port` lists `topic` in its metadata; one that is down or paused (SIGSTOP) and does
    not answer within a second counts as listing it."""
    Req = request_class(ApiKey.METADATA)
    try:
        response = raw_request(port, Req[9](topics=[Req.MetadataRequestTopic(name=topic)],
                                            allow_auto_topic_creation=False), timeout=1.0)
    except OSError:
        return True
    return all(t.error_code == ErrorCode.NONE for t in response.topics)


def metadata(bootstrap: str, topic: str) -> dict[int, Any]:
    """partition -> confluent PartitionMetadata (leader, replicas, isrs)."""
    client = admin(bootstrap)
    md = client.list_topics(topic, timeout=10)
    t = md.topics[topic]
    if t.error is not None:
        raise KafkaException(t.error)
    return dict(t.partitions)


def consume_all(bootstrap: str, topic: str, partitions: int, timeout: float = 60
                ) -> list[tuple[int, int, bytes | None, bytes | None]]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "unused", "enable.auto.commit": False,
                         "fetch.wait.max.ms": 100, "enable.partition.eof": True})
    out: list[tuple[int, int, bytes | None, bytes | None]] = []
    try:
        ends = {p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1]
                for p in range(partitions)}
        consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
        positions = dict.fromkeys(range(partitions), 0)
        deadline = time.monotonic() + timeout
        while any(positions[p] < ends[p] for p in positions) and time.monotonic() < deadline:
            for m in consumer.consume(10000, 0.5):
                if m.error() is not None:
                    continue  # partition EOF events
                out.append((m.partition(), m.offset(), m.key(), m.value()))
                positions[m.partition()] = m.offset() + 1
        missing = {p: (positions[p], ends[p]) for p in positions if positions[p] < ends[p]}
        if missing:
            raise AssertionError(f"consumer did not reach the high watermarks: {missing}")
    finally:
        consumer.close()
    return out


# ---------------------------------------------------------------- raw segment files
# Record batch v2 header: baseOffset int64, batchLength int32, partitionLeaderEpoch int32, magic int8,
# crc uint32, attributes int16, lastOffsetDelta int32, ...
_BATCH_PREFIX = struct.Struct(">qiiBIhi")


def segment_bytes(partition_dir: Path) -> bytes:
    files = sorted(partition_dir.glob("*.log"), key=lambda f: int(f.stem))
    return b"".join(f.read_bytes() for f in files)


def batches(data: bytes) -> list[tuple[int, int, int, int, int]]:
    """(position, size, base_offset, last_offset, partition_leader_epoch) for each whole batch."""
    out = []
    pos = 0
    while pos + _BATCH_PREFIX.size <= len(data):
        base, length, epoch, _magic, _crc, _attrs, last_delta = _BATCH_PREFIX.unpack_from(data, pos)
        size = 12 + length
        if length <= 0 or pos + size > len(data):
            break
        out.append((pos, size, base, base + last_delta, epoch))
        pos += size
    return out


def prefix_up_to(data: bytes, offset: int) -> bytes:
    """The bytes of every batch that ends before `offset` (the HW must fall on a batch boundary)."""
    end = 0
    for pos, size, base, last, _ in batches(data):
        if last >= offset:
            if base < offset:
                raise AssertionError(f"offset {offset} falls inside batch {base}..{last}")
            break
        end = pos + size
    return data[:end]


def wait_isr(zk: Zk, topic: str, partitions: int, isr: set[int], timeout: float) -> None:
    wait_until(lambda: all(set(zk.partition_state(topic, p)["isr"]) == isr for p in range(partitions)),
               timeout, f"ISR {sorted(isr)} for every partition of {topic}")


# ---------------------------------------------------------------- raw requests
def raw_request(port: int, request: Any, timeout: float = 10) -> Any:
    """Send one request on a fresh plain socket (no ApiVersions, no client library) and decode the answer."""
    request.with_header(correlation_id=42, client_id="raw-test")
    frame = encode_request(request)
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        s.sendall(len(frame).to_bytes(4, "big") + frame)
        size = int.from_bytes(_read_exactly(s, 4), "big")
        body = _read_exactly(s, size)
    response = decode_response(body, request.API_KEY, request.API_VERSION)
    assert response.header.correlation_id == 42
    return response


def _read_exactly(s: socket.socket, n: int) -> bytes:
    buf = bytearray()
    while len(buf) < n:
        chunk = s.recv(n - len(buf))
        if not chunk:
            raise ConnectionError("connection closed by the broker")
        buf += chunk
    return bytes(buf)


def list_offsets_error(port: int, topic: str, partition: int, current_leader_epoch: int = -1) -> int:
    """The per-partition error of a ListOffsets(latest) sent as a consumer to one broker."""
    Req = request_class(ApiKey.LIST_OFFSETS)
    T = Req.ListOffsetsTopic
    req = Req[7](replica_id=-1, isolation_level=0, topics=[T(name=topic, partitions=[T.ListOffsetsPartition(
        partition_index=partition, current_leader_epoch=current_leader_epoch, timestamp=-1)])])
    resp = raw_request(port, req)
    return int(resp.topics[0].partitions[0].error_code)


def init_producer_id(port: int) -> int:
    """A fresh idempotent producer id from one broker (InitProducerId without a transactional id), retried
    as a client does while the broker waits for a producer id block from the controller."""
    Req = request_class(ApiKey.INIT_PRODUCER_ID)

    def ask() -> Any:
        resp = raw_request(port, Req[4](transactional_id=None, transaction_timeout_ms=60000, producer_id=-1,
                                        producer_epoch=-1))
        return None if resp.error_code == ErrorCode.COORDINATOR_LOAD_IN_PROGRESS else resp

    resp = wait_until(ask, 30, "a producer id")
    assert resp.error_code == 0, resp
    return int(resp.producer_id)


def txn_coordinator(port: int, transactional_id: str) -> int:
    """The transaction coordinator of `transactional_id` as one broker answers FindCoordinator (key type 1):
    its broker id, or -1 while that broker answers an error (no leader for the id's partition yet)."""
    return _coordinator(port, transactional_id, 1)


def group_coordinator(port: int, group: str) -> int:
    """The group coordinator of `group` as one broker answers FindCoordinator (key type 0), -1 on an error."""
    return _coordinator(port, group, 0)


def _coordinator(port: int, key: str, key_type: int) -> int:
    response = raw_request(port, request_class(ApiKey.FIND_COORDINATOR)[3](key=key, key_type=key_type))
    return int(response.node_id) if response.error_code == ErrorCode.NONE else -1


def consumer_group_members(port: int, group: str) -> list[str]:
    """The member ids of a KIP-848 consumer group as its coordinator (on `port`) describes them."""
    response = raw_request(port, request_class(ApiKey.CONSUMER_GROUP_DESCRIBE)[0](
        group_ids=[group], include_authorized_operations=False))
    [described] = response.groups
    assert described.error_code == ErrorCode.NONE, described
    return [m.member_id for m in described.members]

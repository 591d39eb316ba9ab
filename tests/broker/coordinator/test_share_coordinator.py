"""The share coordinator on one broker: its records, the batch merge rule, the state RPCs over real sockets, the
state surviving a restart (ShareSnapshot and ShareUpdate records replayed), and this broker's RpcPersister
reaching it in-process."""

from __future__ import annotations

import asyncio
import socket
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from broker.coordinator.share.batches import combine
from broker.coordinator.share.persister import PersisterError, PersisterStateBatch, SharePartitionState
from broker.coordinator.share.records import (
    SNAPSHOT,
    UPDATE,
    ShareKey,
    ShareSnapshotValue,
    ShareUpdateValue,
    decode_key,
    decode_snapshot,
    decode_update,
    encode_key,
    encode_snapshot,
    encode_update,
    parse_topic_id,
    topic_id_string,
)
from broker.coordinator.share.state import SHARE_GROUP_STATE_TOPIC
from broker.testing import EmbeddedBroker, free_port
from protocol import ApiKey, request_class
from protocol.errors import ErrorCode
from protocol.records import iter_batches
from storage import TopicPartition
from tests.broker.apis.share_state_support import (
    build_initialize,
    build_read,
    build_summary,
    build_write,
    code,
)
from tests.broker.wire import roundtrip
from tests.e2e.support import wait_until

B = PersisterStateBatch
AVAILABLE, ACKNOWLEDGED, ARCHIVED = 0, 2, 4


# ---- records and merging, no broker
def test_records_round_trip_byte_for_byte() -> None:
    key = ShareKey("group-é", uuid.UUID(int=0x0123456789ABCDEF0123456789ABCDEF), 7)
    raw = encode_key(UPDATE, key)
    # type 1, int16 length, UTF-8 group, the 16 uuid bytes, int32 partition
    assert raw == b"\x00\x01\x00\x08group-\xc3\xa9" + key.topic_id.bytes + b"\x00\x00\x00\x07"
    assert decode_key(raw) == (UPDATE, key)
    assert decode_key(b"\x00\x05\x00\x00") is None
    snap = ShareSnapshotValue(3, 2, 1, 100, 5, 6, (B(100, 109, ACKNOWLEDGED, 1), B(110, 110, AVAILABLE, 2)))
    assert decode_snapshot(encode_snapshot(snap)) == snap
    # version 0, three int32 and three int64 heads, then the compact array of 2 (varint 3)
    assert encode_snapshot(snap)[:2] == b"\x00\x00" and encode_snapshot(snap)[38] == 3
    upd = ShareUpdateValue(3, -1, -1, (B(5, 6, ARCHIVED, 5),))
    assert decode_update(encode_update(upd)) == upd
    # Kafka 4.2's tagged DeliveryCompleteCount (tag 0) is read past
    tagged = encode_update(upd)[:-1] + b"\x01\x00\x04\x00\x00\x00\x09"
    assert decode_update(tagged) == upd


def test_topic_id_text_is_kafkas_base64() -> None:
    tid = uuid.UUID(int=1)
    assert topic_id_string(tid) == "AAAAAAAAAAAAAAAAAAAAAQ"
    assert parse_topic_id("AAAAAAAAAAAAAAAAAAAAAQ") == tid
    with pytest.raises(ValueError):
        parse_topic_id("AAAA")


@pytest.mark.parametrize("so_far, new, start, expected", [
    # a newer state over part of a batch splits it
    ([B(0, 10, AVAILABLE, 1)], [B(3, 5, ACKNOWLEDGED, 1)], -1,
     [B(0, 2, AVAILABLE, 1), B(3, 5, ACKNOWLEDGED, 1), B(6, 10, AVAILABLE, 1)]),
    # a lower rank never wins (same count, lower state)
    ([B(0, 10, ACKNOWLEDGED, 1)], [B(3, 5, AVAILABLE, 1)], -1, [B(0, 10, ACKNOWLEDGED, 1)]),
    # a higher delivery count wins whatever the state; the start offset prunes and cuts
    ([B(0, 10, ACKNOWLEDGED, 1)], [B(8, 15, AVAILABLE, 2)], 4, [B(4, 7, ACKNOWLEDGED, 1), B(8, 15, AVAILABLE, 2)]),
    # contiguous batches of one state become one; gaps stay gaps
    ([B(0, 4, AVAILABLE, 1)], [B(5, 9, AVAILABLE, 1), B(20, 21, ARCHIVED, 1)], -1,
     [B(0, 9, AVAILABLE, 1), B(20, 21, ARCHIVED, 1)]),
    ([B(0, 4, AVAILABLE, 1)], [], 5, []),
])
def test_combine(so_far: list[B], new: list[B], start: int, expected: list[B]) -> None:
    assert combine(so_far, new, start) == expected


# ---- one broker over real sockets
def call(port: int, request: Any) -> Any:
    with socket.create_connection(("127.0.0.1", port), timeout=30) as s:
        return roundtrip(s, request, 5)


def ready_topic(port: int, name: str, partitions: int = 1) -> uuid.UUID:
    find = request_class(ApiKey.FIND_COORDINATOR)
    wait_until(lambda: call(port, find[6](key_type=2, coordinator_keys=["g:AAAAAAAAAAAAAAAAAAAAAA:0"]))
               .coordinators[0].error_code == ErrorCode.NONE, 30, "the share coordinator")
    create = request_class(ApiKey.CREATE_TOPICS)
    T = create.CreatableTopic
    resp = call(port, create[4](topics=[T(name=name, num_partitions=partitions, replication_factor=1,
                                          assignments=[], configs=[])], timeout_ms=30000, validate_only=False))
    assert resp.topics[0].error_code == ErrorCode.NONE, resp
    meta = request_class(ApiKey.METADATA)
    return call(port, meta[12](topics=[meta.MetadataRequestTopic(name=name)], allow_auto_topic_creation=False,
                               include_topic_authorized_operations=False)).topics[0].topic_id


def state_of(port: int, group: str, tid: uuid.UUID, leader_epoch: int = 0) -> tuple[int, int, list[B]]:
    answer = call(port, build_read(group, tid, 0, leader_epoch=leader_epoch))
    p = answer.results[0].partitions[0]
    assert p.error_code == ErrorCode.NONE, answer
    return p.state_epoch, p.start_offset, [B(b.first_offset, b.last_offset, b.delivery_state, b.delivery_count)
                                           for b in p.state_batches]


def kinds_written(broker: EmbeddedBroker, key: ShareKey) -> list[int]:
    """The record types of `key` in its __share_group_state partition's log, in order (tombstones as -1)."""
    def read() -> list[int]:
        service = broker.server.share_coordinator
        tp = TopicPartition(SHARE_GROUP_STATE_TOPIC, service.partition_for(key))
        log = broker.server.replica_manager.get_partition(tp).log
        info = log.read(log.log_start_offset, 1 << 24, max_offset=log.log_end_offset, min_one_message=True)
        out = []
        for batch in iter_batches(memoryview(info.records.read())):
            for rec in batch.records():
                decoded = decode_key(rec.key)
                if decoded is not None and decoded[1] == key:
                    out.append(decoded[0] if rec.value is not None else -1)
        return out
    return broker.call(read)


def test_write_read_and_fencing(broker_factory: Callable[..., EmbeddedBroker]) -> None:
    b = broker_factory()
    tid = ready_topic(b.port, "share-rw")
    # created as Kafka creates it: never compacted (a state is a snapshot plus the updates after it, one key)
    configs = dict(b.server.topic_configs.overrides(SHARE_GROUP_STATE_TOPIC))
    assert {k: configs[k] for k in ("cleanup.policy", "retention.ms", "min.insync.replicas")} == \
        {"cleanup.policy": "delete", "retention.ms": "-1", "min.insync.replicas": "1"}
    assert len(b.server.metadata_cache.topics[SHARE_GROUP_STATE_TOPIC].partitions) == 50
    assert code(call(b.port, build_initialize("rw", tid, 0, state_epoch=2, start_offset=10))) == ErrorCode.NONE
    assert state_of(b.port, "rw", tid) == (2, 10, [])
    assert code(call(b.port, build_write("rw", tid, 0, state_epoch=2, leader_epoch=0,
                                         batches=((10, 19, AVAILABLE, 1),)))) == ErrorCode.NONE
    assert code(call(b.port, build_write("rw", tid, 0, state_epoch=2, leader_epoch=0, start_offset=12,
                                         batches=((15, 16, ACKNOWLEDGED, 1), (17, 17, ARCHIVED, 5))))) == ErrorCode.NONE
    expected = [B(12, 14, AVAILABLE, 1), B(15, 16, ACKNOWLEDGED, 1), B(17, 17, ARCHIVED, 5), B(18, 19, AVAILABLE, 1)]
    assert state_of(b.port, "rw", tid) == (2, 12, expected)
    # a share-partition leader at epoch 4 reads: its epoch is recorded, epoch 3 is fenced from then on
    assert state_of(b.port, "rw", tid, leader_epoch=4) == (2, 12, expected)
    assert code(call(b.port, build_write("rw", tid, 0, state_epoch=2, leader_epoch=3))) == \
        ErrorCode.FENCED_LEADER_EPOCH
    assert code(call(b.port, build_read("rw", tid, 0, leader_epoch=3))) == ErrorCode.FENCED_LEADER_EPOCH
    # a new state epoch (re-initialized) fences writers of the old one and starts afresh
    assert code(call(b.port, build_initialize("rw", tid, 0, state_epoch=3, start_offset=20))) == ErrorCode.NONE
    assert code(call(b.port, build_write("rw", tid, 0, state_epoch=2, leader_epoch=4))) == ErrorCode.FENCED_STATE_EPOCH
    assert state_of(b.port, "rw", tid, leader_epoch=4) == (3, 20, [])
    # as Kafka: the summary shows the snapshot's leader epoch (0 after initialize); fencing uses the highest seen
    summary = call(b.port, build_summary("rw", tid, 0)).results[0].partitions[0]
    assert (summary.state_epoch, summary.leader_epoch, summary.start_offset) == (3, 0, 20)
    assert code(call(b.port, build_read("rw", tid, 0, leader_epoch=3))) == ErrorCode.FENCED_LEADER_EPOCH


def restarted(props: dict[str, str], data_dir: Path, port: int) -> EmbeddedBroker:
    b = EmbeddedBroker(props, data_dir=data_dir, port=port).start()
    wait_until(lambda: len(b.server.share_coordinator.state.owned_partitions()) == 50, 30,
               "the share coordinator to load")
    return b


def test_state_survives_restarts_and_pruning(tmp_path: Path) -> None:
    """Snapshots every 2 updates: the state read after a restart, rebuilt from ShareSnapshot and ShareUpdate
    records, is the state read before it; pruning the records older than the last snapshot, then a cold
    snapshot and pruning again, leaves a log that still rebuilds it."""
    port = free_port()
    props = {"share.coordinator.snapshot.update.records.per.snapshot": "2"}
    key_of: Callable[[uuid.UUID], ShareKey] = lambda tid: ShareKey("restart", tid, 0)  # noqa: E731
    b = EmbeddedBroker(props, data_dir=tmp_path / "b", port=port).start()
    try:
        tid = ready_topic(port, "share-restart")
        key = key_of(tid)
        assert code(call(port, build_initialize("restart", tid, 0, state_epoch=1, start_offset=0))) == ErrorCode.NONE
        for i in range(8):
            batches = ((i * 10, i * 10 + 9, AVAILABLE, 1), (i * 10 + 2, i * 10 + 3, ACKNOWLEDGED, 1))
            start = i * 10 - 5 if i % 3 == 2 else -1
            answer = call(port, build_write("restart", tid, 0, state_epoch=1, leader_epoch=0, start_offset=start,
                                            batches=batches))
            assert code(answer) == ErrorCode.NONE
        before = state_of(port, "restart", tid)
        assert before[1] == 45 and before[2][0] == B(45, 51, AVAILABLE, 1)
        kinds = kinds_written(b, key)
        # initialize, 3 updates, a snapshot, 2 updates, a snapshot, an update
        assert kinds == [SNAPSHOT, UPDATE, UPDATE, UPDATE, SNAPSHOT, UPDATE, UPDATE, SNAPSHOT, UPDATE], kinds
        service = b.server.share_coordinator
        assert b.call(service.prune) == {service.partition_for(key): service.state.redundant_offset(
            service.partition_for(key))}
        assert kinds_written(b, key) == [SNAPSHOT, UPDATE]
    finally:
        b.stop()
    b = restarted(props, tmp_path / "b", port)
    try:
        assert state_of(port, "restart", tid) == before
        service = b.server.share_coordinator
        assert b.call(service.state.snapshot_cold_partitions, 0) == 1
        b.call(service.prune)
        assert kinds_written(b, key) == [SNAPSHOT]
        assert state_of(port, "restart", tid) == before
    finally:
        b.stop()
    b = restarted(props, tmp_path / "b", port)
    try:
        assert state_of(port, "restart", tid) == before
    finally:
        b.stop()


def test_rpc_persister_in_process(broker_factory: Callable[..., EmbeddedBroker]) -> None:
    """This broker's persister finds itself as the coordinator and calls it without a socket."""
    b = broker_factory()
    tid = ready_topic(b.port, "share-persister")
    persister = b.server.share_persister
    raw = tid.bytes
    uninitialized = b.call(persister.read, "pg", raw, 0, 0)
    assert (uninitialized.state_epoch, uninitialized.start_offset, uninitialized.batches) == (0, -1, [])
    b.call(persister.initialize, "pg", raw, 0, 1, 5)
    b.call(persister.write, "pg", raw, 0, SharePartitionState(1, 5, [B(5, 9, ACKNOWLEDGED, 1)], leader_epoch=2))
    got = b.call(persister.read, "pg", raw, 0, 2)
    assert (got.state_epoch, got.start_offset, got.batches) == (1, 5, [B(5, 9, ACKNOWLEDGED, 1)])
    summary = b.call(persister.read_summary, "pg", raw, 0, 2)
    assert (summary.state_epoch, summary.start_offset, summary.leader_epoch) == (1, 5, 2)
    with pytest.raises(PersisterError) as fenced:
        b.call(persister.write, "pg", raw, 0, SharePartitionState(0, 5, [], leader_epoch=2))
    assert fenced.value.error_code == ErrorCode.FENCED_STATE_EPOCH
    b.call(persister.delete, "pg", raw, 0)
    assert b.call(persister.read_summary, "pg", raw, 0, 2).start_offset == -1


def test_a_deleted_topics_state_is_tombstoned(broker_factory: Callable[..., EmbeddedBroker]) -> None:
    b = broker_factory()
    tid = ready_topic(b.port, "share-deleted", partitions=2)
    for p in range(2):
        assert code(call(b.port, build_initialize("deleted", tid, p))) == ErrorCode.NONE
    delete = request_class(ApiKey.DELETE_TOPICS)
    assert call(b.port, delete[4](topic_names=["share-deleted"], timeout_ms=30000)).responses[0].error_code == 0
    keys = [ShareKey("deleted", tid, p) for p in range(2)]
    wait_until(lambda: all(kinds_written(b, k)[-1:] == [-1] for k in keys), 30, "tombstones for the deleted topic")
    state = b.server.share_coordinator.state
    assert b.call(lambda: [k for pid in state.owned_partitions() for k in state._owned[pid].states
                           if k.topic_id == tid]) == []


def test_concurrent_writes_to_one_share_partition(tmp_path: Path) -> None:
    """Writes for one share partition arriving together are served one at a time in arrival order: the state
    holds every one of them, and so does the log (read back after a restart)."""
    port = free_port()
    props = {"share.coordinator.snapshot.update.records.per.snapshot": "3"}
    b = EmbeddedBroker(props, data_dir=tmp_path / "b", port=port).start()
    try:
        tid = ready_topic(port, "share-concurrent")
        persister = b.server.share_persister
        b.call(persister.initialize, "cg", tid.bytes, 0, 1, 0)

        async def together() -> None:
            await asyncio.gather(*(persister.write("cg", tid.bytes, 0, SharePartitionState(
                1, -1, [B(i, i, ACKNOWLEDGED if i % 2 else ARCHIVED, 1 + i % 3)], leader_epoch=0))
                for i in range(40)))
        b.call(together)
        expected = [B(i, i, ACKNOWLEDGED if i % 2 else ARCHIVED, 1 + i % 3) for i in range(40)]
        assert state_of(port, "cg", tid)[2] == expected
    finally:
        b.stop()
    b = restarted(props, tmp_path / "b", port)
    try:
        assert state_of(port, "cg", tid)[2] == expected
    finally:
        b.stop()

"""Helpers for the share-group error paths: topic ids, a topic whose READ is denied on the partial-ACL broker,
a member heartbeating until assigned, and share-session requests through our codec. A share session ends with
the connection that opened it, so the requests of one session go on one connection (`connection`)."""

from __future__ import annotations

import socket
import time
import uuid
from typing import Any

from broker.security.acl import AclOperation, PatternType, PermissionType, ResourceType
from broker.share.manager import share_partition_manager
from protocol import ApiKey, request_class
from protocol.errors import ErrorCode
from protocol.records import build_batch
from storage import TopicPartition
from tests.broker.wire import roundtrip
from tests.e2e.support import wait_until

from .acl_support import partial
from .group_support import coordinator_ready
from .support import Brokers

FETCH = request_class(ApiKey.SHARE_FETCH)
ACK = request_class(ApiKey.SHARE_ACKNOWLEDGE)
METADATA = request_class(ApiKey.METADATA)
SG_HEARTBEAT = request_class(ApiKey.SHARE_GROUP_HEARTBEAT)


def topic_id(b: Brokers, name: str, port: int | None = None) -> uuid.UUID:
    resp = b.call(METADATA[12](topics=[METADATA.MetadataRequestTopic(name=name, topic_id=uuid.UUID(int=0))],
                               allow_auto_topic_creation=False, include_topic_authorized_operations=False), port)
    return resp.topics[0].topic_id


_READ_DENIED: dict[int, uuid.UUID] = {}


def read_denied_topic(b: Brokers) -> tuple[int, uuid.UUID]:
    """(the partial-ACL broker's port, the id of a topic there every principal is denied READ on)."""
    port = partial(b)
    if port in _READ_DENIED:
        return port, _READ_DENIED[port]
    name = b.topic("share-read-denied", port=port)
    tid = _READ_DENIED[port] = topic_id(b, name, port)
    Req = request_class(ApiKey.CREATE_ACLS)
    resp = b.call(Req[3](creations=[Req.AclCreation(
        resource_type=ResourceType.TOPIC, resource_name=name, resource_pattern_type=PatternType.LITERAL,
        principal="User:*", host="*", operation=AclOperation.READ, permission_type=PermissionType.DENY)]), port)
    assert {r.error_code for r in resp.results} == {ErrorCode.NONE}, resp
    return port, tid


def fetch(b: Brokers, group: str, member: str, epoch: int, partitions: list[tuple[uuid.UUID, int]] = (),  # type: ignore[assignment]
          acks: list[tuple[int, int, list[int]]] | None = None, port: int | None = None,
          max_wait_ms: int = 0, sock: socket.socket | None = None) -> Any:
    T = FETCH.FetchTopic
    by_topic: dict[uuid.UUID, list[int]] = {}
    for tid, p in partitions:
        by_topic.setdefault(tid, []).append(p)
    topics = [T(topic_id=tid, partitions=[T.FetchPartition(
        partition_index=p, acknowledgement_batches=[T.FetchPartition.AcknowledgementBatch(
            first_offset=f, last_offset=last, acknowledge_types=types) for f, last, types in acks or []])
        for p in ps]) for tid, ps in by_topic.items()]
    return _call(b, FETCH[1](group_id=group, member_id=member, share_session_epoch=epoch, max_wait_ms=max_wait_ms,
                             min_bytes=1, max_bytes=1 << 20, max_records=100, batch_size=100, topics=topics,
                             forgotten_topics_data=[]), port, sock)


def acknowledge(b: Brokers, group: str, member: str, epoch: int, partitions: list[tuple[uuid.UUID, int]] = (),  # type: ignore[assignment]
                acks: list[tuple[int, int, list[int]]] | None = None, port: int | None = None,
                sock: socket.socket | None = None) -> Any:
    T = ACK.AcknowledgeTopic
    by_topic: dict[uuid.UUID, list[int]] = {}
    for tid, p in partitions:
        by_topic.setdefault(tid, []).append(p)
    topics = [T(topic_id=tid, partitions=[T.AcknowledgePartition(
        partition_index=p, acknowledgement_batches=[T.AcknowledgePartition.AcknowledgementBatch(
            first_offset=f, last_offset=last, acknowledge_types=types) for f, last, types in acks or [(0, 0, [1])]])
        for p in ps]) for tid, ps in by_topic.items()]
    return _call(b, ACK[1](group_id=group, member_id=member, share_session_epoch=epoch, topics=topics), port, sock)


def connection(b: Brokers, port: int | None = None) -> socket.socket:
    """A connection to keep a share session on (closed by the caller)."""
    return socket.create_connection(("127.0.0.1", port or b.single.port), timeout=30)


def assigned_member(b: Brokers, group: str, topic: str, member_id: str = "member-1",
                    port: int | None = None) -> Any:
    """A share member joined on `topic`, heartbeating until it is assigned (the partitions' share state is
    initialized after the join, and only then assigned); the last heartbeat response."""
    coordinator_ready(b, port or b.single.port, group)
    answers = [b.call(SG_HEARTBEAT[1](group_id=group, member_id=member_id, member_epoch=0, rack_id=None,
                                      subscribed_topic_names=[topic]), port)]

    def assigned() -> bool:
        last = answers[-1]
        assert last.error_code == ErrorCode.NONE, last
        if last.assignment is not None and last.assignment.topic_partitions:
            return True
        answers.append(b.call(SG_HEARTBEAT[1](group_id=group, member_id=member_id, member_epoch=last.member_epoch,
                                              rack_id=None, subscribed_topic_names=None), port))
        return False

    wait_until(assigned, 30, f"a share member of {group} to be assigned {topic}", interval=0.1)
    return answers[-1]


def _call(b: Brokers, request: Any, port: int | None, sock: socket.socket | None) -> Any:
    return b.call(request, port) if sock is None else roundtrip(sock, request, 7)


def produce_one(b: Brokers, topic: str, port: int | None = None) -> None:
    Req = request_class(ApiKey.PRODUCE)
    P = Req.TopicProduceData
    records = build_batch([(b"k", b"v", [], int(time.time() * 1000))])
    resp = b.call(Req[9](transactional_id=None, acks=-1, timeout_ms=10000, topic_data=[
        P(name=topic, partition_data=[P.PartitionProduceData(index=0, records=records)])]), port)
    assert resp.responses[0].partition_responses[0].error_code == ErrorCode.NONE, resp


def fenced_state_epoch(b: Brokers, group: str, ack: Any) -> Any:
    """`ack(sock, tid)`'s answer for a record member m1 acquired, after the share partition's state epoch moved
    on in the persister (as an admin's reset of the share group's offsets moves it): FENCED_STATE_EPOCH."""
    tid = topic_id(b, b.topic(group))
    with connection(b) as s:
        assert fetch(b, group, "m1", 0, [(tid, 0)], sock=s).error_code == ErrorCode.NONE  # starts at the end
        produce_one(b, group)
        got = fetch(b, group, "m1", 1, [(tid, 0)], sock=s, max_wait_ms=5000)
        assert got.responses[0].partitions[0].acquired_records, got

        async def reset() -> None:
            manager = share_partition_manager(b.single.server)
            entry = manager.partitions[(group, TopicPartition(group, 0))]
            await manager.persister.initialize(group, tid.bytes, 0, entry.state_epoch + 1, 0)
        b.single.call(reset)
        return ack(s, tid)


def persister_failure(b: Brokers, group: str, failure: str, ack: Any) -> Any:
    """`ack(sock, tid, port)`'s answer for a record member m1 acquired, on a broker of its own whose persister
    then fails: "coordinator" shuts its share coordinator down (the persister retries, quickly here, then gives
    up: COORDINATOR_NOT_AVAILABLE), "deleted" deletes the share partition's state under the leader (the share
    coordinator refuses the write with INVALID_REQUEST, which the leader answers as UNKNOWN_SERVER_ERROR)."""
    with b.throwaway() as broker:
        port = broker.port
        tid = topic_id(b, b.topic(group, port=port), port)
        with socket.create_connection(("127.0.0.1", port), timeout=30) as s:
            assert fetch(b, group, "m1", 0, [(tid, 0)], sock=s).error_code == ErrorCode.NONE  # starts at the end
            produce_one(b, group, port)
            got = fetch(b, group, "m1", 1, [(tid, 0)], sock=s, max_wait_ms=5000)
            assert got.responses[0].partitions[0].acquired_records, got

            async def fail() -> None:
                persister = broker.server.share_persister
                if failure == "coordinator":
                    persister.backoff_ms, persister.backoff_max_ms = 10, 20
                    await broker.server.share_coordinator.shutdown()
                else:
                    await persister.delete(group, tid.bytes, 0)
            broker.call(fail)
            return ack(s, tid)

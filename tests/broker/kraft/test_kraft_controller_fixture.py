"""The test controller's QuorumController rules (tests/kraft_controller.py), each error it can answer, over a
real socket with our codec: what the KRaft broker tests lean on."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

from broker.network.inter_broker import BrokerConnection
from protocol import ApiKey, request_class
from protocol.errors import ErrorCode
from tests.kraft_controller import KRaftController

METADATA_TOPIC_ID = uuid.UUID(int=1)

E = ErrorCode


def run(coro: Any) -> None:
    asyncio.run(asyncio.wait_for(coro, 30))


async def started(**kw: Any) -> tuple[KRaftController, BrokerConnection]:
    c = KRaftController(**kw)
    await c.start()
    return c, BrokerConnection(c.host, c.port, "test")


async def register(conn: BrokerConnection, c: KRaftController, broker_id: int, *, cluster_id: str | None = None,
                   mv: tuple[int, int] = (7, 21), incarnation: uuid.UUID | None = None) -> Any:
    Req = request_class(ApiKey.BROKER_REGISTRATION)
    return await conn.send(lambda v: Req[v](
        broker_id=broker_id, cluster_id=cluster_id or c.cluster_id, incarnation_id=incarnation or uuid.uuid4(),
        listeners=[Req.Listener(name="PLAINTEXT", host="h", port=9000 + broker_id, security_protocol=0)],
        features=[Req.Feature(name="metadata.version", min_supported_version=mv[0], max_supported_version=mv[1])],
        rack=None, log_dirs=[uuid.uuid4()]), ApiKey.BROKER_REGISTRATION)


async def heartbeat(conn: BrokerConnection, broker_id: int, epoch: int, offset: int, *, fence: bool = False,
                    shut_down: bool = False) -> Any:
    return await conn.send(lambda v: request_class(ApiKey.BROKER_HEARTBEAT)[v](
        broker_id=broker_id, broker_epoch=epoch, current_metadata_offset=offset, want_fence=fence,
        want_shut_down=shut_down), ApiKey.BROKER_HEARTBEAT)


async def unfenced(conn: BrokerConnection, c: KRaftController, broker_id: int) -> int:
    epoch = (await register(conn, c, broker_id)).broker_epoch
    resp = await heartbeat(conn, broker_id, epoch, c.end_offset)
    assert resp.is_caught_up and not resp.is_fenced
    return epoch


async def create(conn: BrokerConnection, name: str, partitions: int, rf: int) -> Any:
    Req = request_class(ApiKey.CREATE_TOPICS)
    resp = await conn.send(lambda v: Req[v](timeout_ms=1000, validate_only=False, topics=[Req.CreatableTopic(
        name=name, num_partitions=partitions, replication_factor=rf, assignments=[], configs=[])]),
        ApiKey.CREATE_TOPICS)
    return resp.topics[0]


async def alter(conn: BrokerConnection, broker_id: int, epoch: int, topic_id: uuid.UUID, leader_epoch: int,
                partition_epoch: int, isr: list[tuple[int, int]], version: int = 3) -> Any:
    Req = request_class(ApiKey.ALTER_PARTITION)
    conn.version_caps = {ApiKey.ALTER_PARTITION: version}
    P = Req.TopicData.PartitionData
    part = dict(partition_index=0, leader_epoch=leader_epoch, partition_epoch=partition_epoch,
                leader_recovery_state=0)
    if version >= 3:
        part["new_isr_with_epochs"] = [P.BrokerState(broker_id=b, broker_epoch=e) for b, e in isr]
    else:
        part["new_isr"] = [b for b, _ in isr]
    resp = await conn.send(lambda v: Req[v](broker_id=broker_id, broker_epoch=epoch, topics=[
        Req.TopicData(topic_id=topic_id, topic_name="t", partitions=[P(**part)])]), ApiKey.ALTER_PARTITION)
    return resp


def test_registration_rules() -> None:
    async def main() -> None:
        c, conn = await started()
        try:
            assert (await register(conn, c, 1, cluster_id="other")).error_code == E.INCONSISTENT_CLUSTER_ID
            assert (await register(conn, c, 1, mv=(20, 21))).error_code == E.UNSUPPORTED_VERSION
            first = await register(conn, c, 1)
            assert first.error_code == 0 and first.broker_epoch == c.end_offset - 1
            assert c.image.cluster.broker(1).fenced
            # Another incarnation while the first one's session is alive.
            assert (await register(conn, c, 1)).error_code == E.DUPLICATE_BROKER_REGISTRATION
            # Heartbeats: a stale epoch; not caught up stays fenced; caught up is unfenced.
            assert (await heartbeat(conn, 1, first.broker_epoch + 1, 0)).error_code == E.STALE_BROKER_EPOCH
            behind = await heartbeat(conn, 1, first.broker_epoch, first.broker_epoch - 1)
            assert (behind.is_caught_up, behind.is_fenced) == (False, True)
            assert (await heartbeat(conn, 1, first.broker_epoch, c.end_offset, fence=True)).is_fenced
            up = await heartbeat(conn, 1, first.broker_epoch, c.end_offset)
            assert up.is_caught_up and not up.is_fenced and not c.image.cluster.broker(1).fenced
        finally:
            conn.close()
            await c.stop()
    run(main())


def test_create_topics_and_alter_partition_rules() -> None:
    async def main() -> None:
        c, conn = await started(session_timeout_ms=60000)
        try:
            e1, e2, e3 = [await unfenced(conn, c, i) for i in (1, 2, 3)]
            assert (await create(conn, "t", 0, 1)).error_code == E.INVALID_PARTITIONS
            too_many = await create(conn, "t", 1, 4)
            assert too_many.error_code == E.INVALID_REPLICATION_FACTOR
            assert too_many.error_message == (
                "Unable to replicate the partition 4 time(s): The target replication factor of 4 cannot be reached "
                "because only 3 broker(s) are registered or some brokers have all their log directories cordoned.")
            made = await create(conn, "t", 1, 3)
            assert made.error_code == 0 and made.num_partitions == 1 and made.replication_factor == 3
            assert (await create(conn, "t", 1, 3)).error_code == E.TOPIC_ALREADY_EXISTS
            tid = made.topic_id
            p = c.image.topics.get_partition("t", 0)
            assert p.replicas == (1, 2, 3) and p.leader == 1 and p.isr == (1, 2, 3)
            epochs = {1: e1, 2: e2, 3: e3}

            def errors(resp: Any) -> Any:
                return resp.error_code or resp.topics[0].partitions[0].error_code
            assert errors(await alter(conn, 1, e1 + 100, tid, 0, 0, [(1, e1)])) == E.STALE_BROKER_EPOCH
            assert errors(await alter(conn, 1, e1, uuid.uuid4(), 0, 0, [(1, e1)])) == E.UNKNOWN_TOPIC_ID
            assert errors(await alter(conn, 1, e1, tid, 1, 0, [(1, e1)])) == E.NOT_CONTROLLER
            assert errors(await alter(conn, 2, e2, tid, 0, 0, [(2, e2)])) == E.INVALID_REQUEST  # not the leader
            assert errors(await alter(conn, 1, e1, tid, 0, 0, [(1, e1), (4, -1)])) == E.INVALID_REQUEST
            assert errors(await alter(conn, 1, e1, tid, 0, 0, [(2, e2)])) == E.INVALID_REQUEST  # leader left out
            assert errors(await alter(conn, 1, e1, tid, 0, 0, [(1, e1), (2, e2 + 1)])) == E.INELIGIBLE_REPLICA
            shrunk = (await alter(conn, 1, e1, tid, 0, 0, [(1, e1), (2, e2)])).topics[0].partitions[0]
            assert (shrunk.error_code, shrunk.isr, shrunk.partition_epoch, shrunk.leader_epoch) == (0, [1, 2], 1, 0)
            assert c.image.topics.get_partition("t", 0).isr == (1, 2)
            assert errors(await alter(conn, 1, e1, tid, 0, 0, [(1, e1)])) == E.INVALID_UPDATE_VERSION
            # Fencing broker 1 (its session expired): out of the ISR, leadership to 2 (leader epoch bumped).
            c.fence(1)
            p = c.image.topics.get_partition("t", 0)
            assert (p.leader, p.isr, p.leader_epoch, p.partition_epoch) == (2, (2,), 1, 2)
            assert errors(await alter(conn, 2, e2, tid, 0, 2, [(2, e2)])) == E.FENCED_LEADER_EPOCH
            assert errors(await alter(conn, 2, e2, tid, 1, 2, [(2, e2), (1, e1)])) == E.INELIGIBLE_REPLICA
            assert errors(await alter(conn, 2, e2, tid, 1, 2, [(2, -1), (1, -1)], version=1)) == \
                E.OPERATION_NOT_ATTEMPTED
            grown = (await alter(conn, 2, e2, tid, 1, 2, [(2, epochs[2]), (3, epochs[3])])).topics[0].partitions[0]
            assert (grown.isr, grown.partition_epoch) == ([2, 3], 3)
            # The last ISR member fenced: no leader, the ISR keeps it.
            c.fence(3)
            c.fence(2)
            p = c.image.topics.get_partition("t", 0)
            assert (p.leader, p.isr) == (-1, (2,))
            # Unfencing 2 again elects it.
            again = await heartbeat(conn, 2, e2, c.end_offset)
            assert not again.is_fenced and c.image.topics.get_partition("t", 0).leader == 2
        finally:
            conn.close()
            await c.stop()
    run(main())


def test_controlled_shutdown_and_session_expiry() -> None:
    async def main() -> None:
        c, conn = await started(session_timeout_ms=500)
        try:
            e1, e2 = [await unfenced(conn, c, i) for i in (1, 2)]
            await create(conn, "t", 1, 2)
            assert c.image.topics.get_partition("t", 0).leader == 1
            # Broker 2 has not seen the leadership move yet: no ShouldShutDown.
            first = await heartbeat(conn, 1, e1, c.end_offset, shut_down=True)
            assert not first.should_shut_down and c.image.cluster.broker(1).in_controlled_shutdown
            p = c.image.topics.get_partition("t", 0)
            assert (p.leader, p.isr) == (2, (2,))
            await heartbeat(conn, 2, e2, c.end_offset)
            done = await heartbeat(conn, 1, e1, c.end_offset, shut_down=True)
            assert done.should_shut_down and c.image.cluster.broker(1).fenced
            # Broker 2 stops heartbeating: fenced after the session timeout; the partition has no leader left.
            await asyncio.sleep(1.0)
            assert c.image.cluster.broker(2).fenced
            p = c.image.topics.get_partition("t", 0)
            assert (p.leader, p.isr) == (-1, (2,))
            # AllocateProducerIds: blocks of 1000, with the broker epoch checked.
            e3 = await unfenced(conn, c, 3)
            Req = request_class(ApiKey.ALLOCATE_PRODUCER_IDS)
            stale = await conn.send(lambda v: Req[v](broker_id=3, broker_epoch=e3 + 1), ApiKey.ALLOCATE_PRODUCER_IDS)
            assert stale.error_code == E.STALE_BROKER_EPOCH
            blocks = [await conn.send(lambda v: Req[v](broker_id=3, broker_epoch=e3), ApiKey.ALLOCATE_PRODUCER_IDS)
                      for _ in range(2)]
            assert [(b.producer_id_start, b.producer_id_len) for b in blocks] == [(0, 1000), (1000, 1000)]
            assert c.image.producer_ids.next_producer_id == 2000
        finally:
            conn.close()
            await c.stop()
    run(main())


def test_envelope_errors() -> None:
    from protocol import decode_response, encode_request
    from protocol.envelope import address_bytes, serialize_principal

    async def main() -> None:
        c, conn = await started(admin_principals={"User:admin"})
        Env = request_class(ApiKey.ENVELOPE)
        inner = request_class(ApiKey.CREATE_TOPICS)[7](timeout_ms=1000, validate_only=False, topics=[
            request_class(ApiKey.CREATE_TOPICS).CreatableTopic(name="t", num_partitions=1, replication_factor=1,
                                                              assignments=[], configs=[])])
        inner.with_header(correlation_id=5, client_id="c")
        data, who, where = encode_request(inner), serialize_principal("User", "admin"), address_bytes("10.1.2.3")

        async def send(**fields: Any) -> Any:
            values = {"request_data": data, "request_principal": who, "client_host_address": where, **fields}
            return await conn.send(lambda v: Env[v](**values), ApiKey.ENVELOPE)
        try:
            assert (await send(request_principal=b"\x00\x07")).error_code == E.PRINCIPAL_DESERIALIZATION_FAILURE
            assert (await send(request_principal=None)).error_code == E.PRINCIPAL_DESERIALIZATION_FAILURE
            assert (await send(client_host_address=b"\x01")).error_code == E.INVALID_REQUEST
            assert (await send(request_data=b"\x00\x13")).error_code == E.INVALID_REQUEST
            # The inner response, at the inner request's version and correlation id: handled as if sent directly.
            ok = await send()
            inner_resp = decode_response(bytes(ok.response_data), ApiKey.CREATE_TOPICS, 7)
            assert ok.error_code == E.NONE and inner_resp.header.correlation_id == 5
            assert inner_resp.topics[0].error_code == E.INVALID_REPLICATION_FACTOR  # no broker registered
            refused = await send(request_principal=serialize_principal("User", "eve"))
            inner_resp = decode_response(bytes(refused.response_data), ApiKey.CREATE_TOPICS, 7)
            assert inner_resp.topics[0].error_code == E.TOPIC_AUTHORIZATION_FAILED
            assert c.forwarded == [(ApiKey.CREATE_TOPICS, "User:admin", "10.1.2.3", "c"),
                                   (ApiKey.CREATE_TOPICS, "User:eve", "10.1.2.3", "c")]
        finally:
            conn.close()
            await c.stop()
    run(main())


def test_assign_replicas_to_dirs_rules() -> None:
    async def assign(conn: BrokerConnection, broker_id: int, epoch: int, dir_id: uuid.UUID,
                     parts: list[tuple[uuid.UUID, int]]) -> Any:
        Req = request_class(ApiKey.ASSIGN_REPLICAS_TO_DIRS)
        D = Req.DirectoryData
        return await conn.send(lambda v: Req[v](broker_id=broker_id, broker_epoch=epoch, directories=[D(
            id=dir_id, topics=[D.TopicData(topic_id=t, partitions=[D.TopicData.PartitionData(partition_index=p)])
                               for t, p in parts])]), ApiKey.ASSIGN_REPLICAS_TO_DIRS)

    def codes(resp: Any) -> list[int]:
        return [p.error_code for t in resp.directories[0].topics for p in t.partitions]

    async def main() -> None:
        old, old_conn = await started(metadata_version=15)  # before 3.7-IV2: no directory assignment
        try:
            assert (await assign(old_conn, 1, 0, uuid.uuid4(), [])).error_code == E.UNSUPPORTED_VERSION
        finally:
            old_conn.close()
            await old.stop()
        c, conn = await started()
        try:
            epoch = await unfenced(conn, c, 1)
            await unfenced(conn, c, 2)
            topic_id = (await create(conn, "t", 2, 1)).topic_id
            mine = next(p for p in (0, 1) if c.image.topics.get_partition("t", p).replicas == (1,))
            other = 1 - mine
            online = c.image.cluster.broker(1).directories[0]
            # One registered directory: new replicas are placed in it (ClusterControlManager.defaultDir).
            assert c.image.topics.get_partition("t", mine).directory(1) == online
            assert (await assign(conn, 1, epoch + 1, online, [])).error_code == E.STALE_BROKER_EPOCH
            resp = await assign(conn, 1, epoch, online, [(uuid.uuid4(), 0), (topic_id, 9), (topic_id, other)])
            assert codes(resp) == [E.UNKNOWN_TOPIC_ID, E.UNKNOWN_TOPIC_OR_PARTITION, E.NOT_LEADER_OR_FOLLOWER]
            # An assignment to a directory the broker does not have online moves leadership away.
            gone = uuid.uuid4()
            assert codes(await assign(conn, 1, epoch, gone, [(topic_id, mine)])) == [E.NONE]
            p = c.image.topics.get_partition("t", mine)
            assert p.directory(1) == gone and p.leader == -1
        finally:
            conn.close()
            await c.stop()
    run(main())


def test_metadata_fetch_validation_as_kafkas_raft_leader() -> None:
    """What real Kafka 3.7-4.4 controllers answered our broker's first metadata fetches (last fetched epoch -1 on an
    empty log, issue 29): INVALID_REQUEST for a negative or too new last fetched epoch, a negative fetch offset or
    max wait; a fetch of another topic INVALID_REQUEST at the top level; epoch 0 from an empty log is accepted."""
    Req = request_class(ApiKey.FETCH)

    def build(*, offset: int = 0, last_epoch: int = 0, current_epoch: int = 0, max_wait: int = 0,
              topic_id: uuid.UUID = METADATA_TOPIC_ID) -> Any:
        part = Req.FetchTopic.FetchPartition(partition=0, current_leader_epoch=current_epoch, fetch_offset=offset,
                                             last_fetched_epoch=last_epoch, log_start_offset=-1,
                                             partition_max_bytes=1 << 20)
        return lambda v: Req[v](replica_id=-1, replica_state=Req.ReplicaState(replica_id=5, replica_epoch=-1),
                                max_wait_ms=max_wait, min_bytes=0, max_bytes=1 << 20, isolation_level=0,
                                session_id=0, session_epoch=-1, topics=[Req.FetchTopic(topic_id=topic_id,
                                                                                       partitions=[part])],
                                forgotten_topics_data=[], rack_id="", cluster_id=c.cluster_id)

    def partition_error(resp: Any) -> int:
        return resp.error_code or resp.responses[0].partitions[0].error_code

    async def main() -> None:
        nonlocal c
        c, conn = await started()
        try:
            epoch = c.epoch
            for bad in (dict(last_epoch=-1), dict(last_epoch=epoch + 1), dict(offset=-1), dict(max_wait=-1)):
                assert partition_error(await conn.send(build(current_epoch=epoch, **bad), ApiKey.FETCH)) \
                    == E.INVALID_REQUEST, bad
            other = await conn.send(build(topic_id=uuid.uuid4()), ApiKey.FETCH)
            assert other.error_code == E.INVALID_REQUEST and other.responses == []
            # An empty log's fetch (offset 0, last epoch 0) at an older current epoch: fenced, with the leader.
            fenced = (await conn.send(build(current_epoch=0), ApiKey.FETCH)).responses[0].partitions[0]
            assert epoch == 0 or (fenced.error_code == E.FENCED_LEADER_EPOCH
                                  and fenced.current_leader.leader_epoch == epoch)
            ok = await conn.send(build(current_epoch=epoch), ApiKey.FETCH)
            assert partition_error(ok) == E.NONE and ok.responses[0].partitions[0].high_watermark > 0
        finally:
            conn.close()
            await c.stop()

    c: Any = None
    run(main())


def test_cordoned_log_dirs_take_no_new_replicas() -> None:
    """KIP-1066 at metadata.version 4.3-IV0+: a heartbeat (v2) naming cordoned directories is recorded when they
    change (BrokerRegistrationChangeRecord v3), a broker whose directories are all cordoned gets no new replicas,
    and with none left Kafka 4.4's message; uncordoned, it takes them again. Before 4.3-IV0 the field is ignored."""
    async def cordon(conn: BrokerConnection, c: KRaftController, broker_id: int, epoch: int,
                     dirs: list[uuid.UUID]) -> Any:
        return await conn.send(lambda v: request_class(ApiKey.BROKER_HEARTBEAT)[v](
            broker_id=broker_id, broker_epoch=epoch, current_metadata_offset=c.end_offset, want_fence=False,
            want_shut_down=False, cordoned_log_dirs=dirs), ApiKey.BROKER_HEARTBEAT)

    async def main() -> None:
        c, conn = await started(metadata_version=33)
        try:
            epochs = {i: (await register(conn, c, i, mv=(7, 33))).broker_epoch for i in (1, 2)}
            for i, epoch in epochs.items():
                assert not (await heartbeat(conn, i, epoch, c.end_offset)).is_fenced
            assert conn._versions[ApiKey.BROKER_HEARTBEAT] == (0, 2)  # the controller serves v2
            dirs = c.image.cluster.broker(1).directories
            end = c.end_offset
            assert (await cordon(conn, c, 1, epochs[1], list(dirs))).error_code == 0
            assert c.end_offset == end + 1 and c.image.cluster.broker(1).cordoned_directories == dirs
            await cordon(conn, c, 1, epochs[1], list(dirs))  # unchanged: nothing recorded
            assert c.end_offset == end + 1
            made = await create(conn, "only-on-2", 2, 1)
            assert made.error_code == 0
            topic = c.image.topics.get_topic("only-on-2")
            assert {r for p in topic.partitions.values() for r in p.replicas} == {2}
            too_many = await create(conn, "two-replicas", 1, 2)
            assert too_many.error_code == E.INVALID_REPLICATION_FACTOR and "cordoned" in too_many.error_message
            await cordon(conn, c, 2, epochs[2], list(c.image.cluster.broker(2).directories))
            none_left = await create(conn, "nowhere", 1, 1)
            assert (none_left.error_code, none_left.error_message) == (
                E.INVALID_REPLICATION_FACTOR,
                "All brokers are currently fenced, or have all their log directories cordoned.")
            await cordon(conn, c, 1, epochs[1], [])
            assert c.image.cluster.broker(1).cordoned_directories == ()
            assert (await create(conn, "back-on-1", 1, 1)).error_code == 0
        finally:
            conn.close()
            await c.stop()

        old, conn = await started(metadata_version=27)  # 4.1-IV1: no cordoned log dirs yet
        try:
            epoch = (await register(conn, old, 1, mv=(7, 27))).broker_epoch
            await heartbeat(conn, 1, epoch, old.end_offset)
            end = old.end_offset
            await cordon(conn, old, 1, epoch, list(old.image.cluster.broker(1).directories))
            assert old.end_offset == end and old.image.cluster.broker(1).cordoned_directories is None
        finally:
            conn.close()
            await old.stop()
    run(main())

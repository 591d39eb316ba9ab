"""The test controller (tests/kraft_controller.py), a stand-in the KRaft tests use for speed and for faults a real
controller cannot be made to show, kept honest: the same requests go to it and to a real Kafka 4.4 controller
formatted with Kafka 4.4's defaults, and both must answer alike (error codes and the states a broker acts on). A
controller of ours (process.roles=controller, broker/quorum/: one voter in its own process, formatted with the same
metadata.version and features) is the third target and must answer alike too.

The steps are what our broker's start-up and a misbehaving broker send: registrations refused for another cluster
id or for feature levels the broker does not support, a registration accepted, heartbeats (a stale broker epoch,
fenced until caught up, then unfenced), metadata log fetches the Raft leader refuses (a negative last fetched
epoch, another topic, an old or a future leader epoch), CreateTopics' refusals and success, and an AlterPartition
with a stale broker epoch.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable
from typing import Any

import pytest

from broker.kraft.lifecycle import SUPPORTED_FEATURES
from broker.network.inter_broker import BrokerConnection
from protocol import ApiKey, request_class
from realkafka import KRAFT_KAFKA_LATEST
from tests.cluster.support import wait_until
from tests.interop.support import Nodes
from tests.kraft_controller import KRaftController
from tests.our_quorum import OurQuorum

METADATA_TOPIC_ID = uuid.UUID(int=1)
# Kafka 4.4's `kafka-storage.sh format` defaults (read off its bootstrap metadata): what the stand-in is given.
KAFKA_44_LEVEL = 33
KAFKA_44_FEATURES = {"eligible.leader.replicas.version": 1, "group.version": 1, "share.version": 2,
                     "streams.version": 1, "transaction.version": 2}


class Target:
    def __init__(self, conn: BrokerConnection, cluster_id: str, epoch: int) -> None:
        self.conn, self.cluster_id, self.epoch = conn, cluster_id, epoch


async def register(t: Target, broker_id: int, *, cluster_id: str | None = None,
                   features: dict[str, tuple[int, int]] | None = None) -> Any:
    Req = request_class(ApiKey.BROKER_REGISTRATION)
    ranges = SUPPORTED_FEATURES if features is None else features
    return await t.conn.send(lambda v: Req[v](
        broker_id=broker_id, cluster_id=cluster_id or t.cluster_id, incarnation_id=uuid.uuid4(),
        listeners=[Req.Listener(name="PLAINTEXT", host="127.0.0.1", port=9000 + broker_id, security_protocol=0)],
        features=[Req.Feature(name=n, min_supported_version=lo, max_supported_version=hi)
                  for n, (lo, hi) in sorted(ranges.items())],
        rack=None, is_migrating_zk_broker=False, log_dirs=[uuid.uuid4()], previous_broker_epoch=-1),
        ApiKey.BROKER_REGISTRATION)


async def heartbeat(t: Target, broker_id: int, epoch: int, offset: int) -> Any:
    return await t.conn.send(lambda v: request_class(ApiKey.BROKER_HEARTBEAT)[v](
        broker_id=broker_id, broker_epoch=epoch, current_metadata_offset=offset, want_fence=False,
        want_shut_down=False), ApiKey.BROKER_HEARTBEAT)


async def fetch(t: Target, *, last_epoch: int = 0, current_epoch: int | None = None,
                topic_id: uuid.UUID = METADATA_TOPIC_ID) -> tuple[int, int]:
    """(top-level error, partition error) of a metadata log fetch from offset 0."""
    Req = request_class(ApiKey.FETCH)
    part = Req.FetchTopic.FetchPartition(
        partition=0, current_leader_epoch=t.epoch if current_epoch is None else current_epoch, fetch_offset=0,
        last_fetched_epoch=last_epoch, log_start_offset=-1, partition_max_bytes=1 << 20)
    resp = await t.conn.send(lambda v: Req[v](
        replica_id=-1, replica_state=Req.ReplicaState(replica_id=99, replica_epoch=-1), max_wait_ms=0, min_bytes=0,
        max_bytes=1 << 20, isolation_level=0, session_id=0, session_epoch=-1,
        topics=[Req.FetchTopic(topic_id=topic_id, partitions=[part])], forgotten_topics_data=[], rack_id="",
        cluster_id=t.cluster_id), ApiKey.FETCH)
    partition_error = resp.responses[0].partitions[0].error_code if resp.responses else None
    return resp.error_code, partition_error


async def create(t: Target, name: str, partitions: int, rf: int) -> int:
    Req = request_class(ApiKey.CREATE_TOPICS)
    resp = await t.conn.send(lambda v: Req[v](timeout_ms=5000, validate_only=False, topics=[Req.CreatableTopic(
        name=name, num_partitions=partitions, replication_factor=rf, assignments=[], configs=[])]),
        ApiKey.CREATE_TOPICS)
    return resp.topics[0].error_code


async def alter_partition(t: Target, broker_id: int, broker_epoch: int) -> int:
    Req = request_class(ApiKey.ALTER_PARTITION)
    P = Req.TopicData.PartitionData
    resp = await t.conn.send(lambda v: Req[v](broker_id=broker_id, broker_epoch=broker_epoch, topics=[Req.TopicData(
        topic_id=uuid.uuid4(), topic_name="x", partitions=[P(partition_index=0, leader_epoch=0, partition_epoch=0,
                                                              new_isr_with_epochs=[], leader_recovery_state=0)])]),
        ApiKey.ALTER_PARTITION)
    return resp.error_code


async def scenario(t: Target) -> dict[str, Any]:
    """Every step's answer, as a broker would read it."""
    out: dict[str, Any] = {}
    out["register: another cluster id"] = (await register(t, 7, cluster_id="AAAAAAAAAAAAAAAAAAAAAA")).error_code
    no_elr = {**SUPPORTED_FEATURES, "eligible.leader.replicas.version": (0, 0)}
    out["register: ELR 1 finalized, not supported"] = (await register(t, 7, features=no_elr)).error_code
    old = {**SUPPORTED_FEATURES, "metadata.version": (7, 27)}
    out["register: finalized metadata.version above the broker's"] = (await register(t, 7, features=old)).error_code
    accepted = await register(t, 7)
    out["register"] = (accepted.error_code, accepted.broker_epoch >= 0)
    epoch = accepted.broker_epoch
    out["heartbeat: stale broker epoch"] = (await heartbeat(t, 7, epoch + 1, 0)).error_code
    behind = await heartbeat(t, 7, epoch, 0)
    out["heartbeat: not caught up"] = (behind.error_code, behind.is_caught_up, behind.is_fenced)
    state = None
    for _ in range(20):  # Kafka unfences once the heartbeat's offset passed the registration and it committed
        up = await heartbeat(t, 7, epoch, 1 << 40)
        state = (up.error_code, up.is_caught_up, up.is_fenced)
        if not up.is_fenced:
            break
        await asyncio.sleep(0.2)
    out["heartbeat: caught up, unfenced"] = state
    out["fetch: last fetched epoch -1"] = await fetch(t, last_epoch=-1)
    out["fetch: last fetched epoch above the current"] = await fetch(t, last_epoch=t.epoch + 1)
    out["fetch: another topic"] = (await fetch(t, topic_id=uuid.uuid4()))[0]
    out["fetch: an older leader epoch"] = await fetch(t, current_epoch=t.epoch - 1) if t.epoch > 0 else "n/a"
    out["fetch: a future leader epoch"] = await fetch(t, current_epoch=t.epoch + 1)
    out["fetch: from an empty log"] = await fetch(t)
    out["create: replication factor above the brokers"] = await create(t, "double-rf", 1, 3)
    out["create: zero partitions"] = await create(t, "double-zero", 0, 1)
    out["create"] = await create(t, "double-ok", 2, 1)
    out["create: again"] = await create(t, "double-ok", 2, 1)
    out["alter partition: stale broker epoch"] = await alter_partition(t, 7, epoch + 5)
    return out


def run(coro: Callable[[], Any]) -> Any:
    return asyncio.run(asyncio.wait_for(coro(), 120))


def test_the_test_controller_answers_as_a_real_kafka_controller(nodes: Nodes) -> None:
    quorum = nodes.kraft_quorum(KRAFT_KAFKA_LATEST)

    async def real() -> dict[str, Any]:
        conn = BrokerConnection("127.0.0.1", quorum.controller.controller_port, "double-check")
        try:
            return await scenario(Target(conn, quorum.cluster_id, await _raft_epoch(conn, quorum.cluster_id)))
        finally:
            conn.close()

    async def double() -> dict[str, Any]:
        c = KRaftController(metadata_version=KAFKA_44_LEVEL, features=KAFKA_44_FEATURES)
        await c.start()
        conn = BrokerConnection(c.host, c.port, "double-check")
        try:
            return await scenario(Target(conn, c.cluster_id, c.epoch))
        finally:
            conn.close()
            await c.stop()

    our_quorum = OurQuorum(nodes.directory / "our-controller", 1, release_version="4.4-IV2",
                           features=KAFKA_44_FEATURES).start()
    wait_until(our_quorum.active, 60, "our controller active")

    async def controller_of_ours() -> dict[str, Any]:
        conn = BrokerConnection("127.0.0.1", our_quorum.ports[1], "double-check")
        try:
            return await scenario(Target(conn, our_quorum.cluster_id, await _raft_epoch(conn, our_quorum.cluster_id)))
        finally:
            conn.close()

    try:
        kafka, ours, quorum_controller = run(real), run(double), run(controller_of_ours)
    finally:
        our_quorum.close()
    differing = {step: (kafka[step], ours[step]) for step in kafka if kafka[step] != ours[step]}
    assert differing == {}, f"step: (Kafka {KRAFT_KAFKA_LATEST}'s answer, the test controller's): {differing}"
    differing = {step: (kafka[step], quorum_controller[step]) for step in kafka
                 if kafka[step] != quorum_controller[step]}
    assert differing == {}, f"step: (Kafka {KRAFT_KAFKA_LATEST}'s answer, our quorum controller's): {differing}"
    print(kafka)


async def _raft_epoch(conn: BrokerConnection, cluster_id: str) -> int:
    """The real quorum's leader epoch, as an observer learns it: from the leader named in a fenced fetch."""
    Req = request_class(ApiKey.FETCH)
    part = Req.FetchTopic.FetchPartition(partition=0, current_leader_epoch=0, fetch_offset=0, last_fetched_epoch=0,
                                         log_start_offset=-1, partition_max_bytes=1024)
    resp = await conn.send(lambda v: Req[v](
        replica_id=-1, replica_state=Req.ReplicaState(replica_id=99, replica_epoch=-1), max_wait_ms=0, min_bytes=0,
        max_bytes=1024, isolation_level=0, session_id=0, session_epoch=-1,
        topics=[Req.FetchTopic(topic_id=METADATA_TOPIC_ID, partitions=[part])], forgotten_topics_data=[],
        rack_id="", cluster_id=cluster_id), ApiKey.FETCH)
    leader = resp.responses[0].partitions[0].current_leader
    if leader is None or leader.leader_epoch < 0:
        pytest.fail(f"the real controller named no leader: {resp}")
    return int(leader.leader_epoch)

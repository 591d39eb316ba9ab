"""The test controller's reassignment rules (broker/quorum/reassignment.py) over a real socket with our codec:
the stages of Kafka's ReplicationControlManager.changePartitionReassignment, completion by AlterPartition
(PartitionChangeBuilder.completeReassignmentIfNeeded, NEW_LEADER_ELECTED), a reordering completed at once, a
cancel (PartitionReassignmentRevert), each validation error, NOT_CONTROLLER after a resignation."""

from __future__ import annotations

from typing import Any

from broker.network.inter_broker import BrokerConnection
from protocol import ApiKey, request_class
from protocol.errors import ErrorCode
from tests.broker.kraft.test_kraft_controller_fixture import alter, create, run, started, unfenced

E = ErrorCode


async def reassign(conn: BrokerConnection, topic: str, partition: int, replicas: list[int] | None) -> Any:
    Req = request_class(ApiKey.ALTER_PARTITION_REASSIGNMENTS)
    T = Req.ReassignableTopic
    return await conn.send(lambda v: Req[v](timeout_ms=1000, topics=[T(name=topic, partitions=[
        T.ReassignablePartition(partition_index=partition, replicas=replicas)])]), ApiKey.ALTER_PARTITION_REASSIGNMENTS)


def outcome(resp: Any) -> tuple[int, str | None]:
    p = resp.responses[0].partitions[0]
    return p.error_code, p.error_message


async def listed(conn: BrokerConnection) -> dict[tuple[str, int], tuple[list[int], list[int], list[int]]]:
    Req = request_class(ApiKey.LIST_PARTITION_REASSIGNMENTS)
    resp = await conn.send(lambda v: Req[v](timeout_ms=1000, topics=None), ApiKey.LIST_PARTITION_REASSIGNMENTS)
    return {(t.name, p.partition_index): (list(p.replicas), list(p.adding_replicas), list(p.removing_replicas))
            for t in resp.topics for p in t.partitions}


def test_a_reassignment_runs_through_its_stages() -> None:
    async def main() -> None:
        c, conn = await started()
        try:
            epochs = {b: await unfenced(conn, c, b) for b in (1, 2, 3, 4, 5)}
            await create(conn, "t", 1, 3)
            p = c.image.topics.get_partition("t", 0)
            assert (p.replicas, p.leader) == ((1, 2, 3), 1)
            # Stage 1: target then the removed replicas; adding and removing sorted; same leader and leader epoch.
            assert outcome(await reassign(conn, "t", 0, [3, 5, 4])) == (0, None)
            q = c.image.topics.get_partition("t", 0)
            assert (q.replicas, q.adding_replicas, q.removing_replicas) == ((3, 5, 4, 1, 2), (4, 5), (1, 2))
            assert (q.leader, q.leader_epoch, q.partition_epoch) == (1, p.leader_epoch, p.partition_epoch + 1)
            assert await listed(conn) == {("t", 0): ([3, 5, 4, 1, 2], [4, 5], [1, 2])}
            # Each replica in its broker's one directory, the added ones too (defaultDir, KIP-858).
            assert [q.directory(b) for b in q.replicas] == [c.image.cluster.broker(b).directories[0]
                                                            for b in q.replicas]
            # Stage 2: an ISR without every adding replica is only an ISR change.
            topic_id = c.image.topics.get_topic("t").topic_id
            isr = [(b, epochs[b]) for b in (1, 2, 3, 4)]
            resp = await alter(conn, 1, epochs[1], topic_id, q.leader_epoch, q.partition_epoch, isr)
            assert resp.topics[0].partitions[0].error_code == 0
            q = c.image.topics.get_partition("t", 0)
            assert q.isr == (1, 2, 3, 4) and q.is_reassigning()
            # Stage 3: the ISR holds every target replica: the move completes in the same record; the leader (1)
            # is removed, so 3 leads at a new epoch and the sender hears NEW_LEADER_ELECTED.
            isr = [(b, epochs[b]) for b in (1, 2, 3, 4, 5)]
            resp = await alter(conn, 1, epochs[1], topic_id, q.leader_epoch, q.partition_epoch, isr)
            assert resp.topics[0].partitions[0].error_code == E.NEW_LEADER_ELECTED
            r = c.image.topics.get_partition("t", 0)
            assert (r.replicas, r.isr, r.leader, r.adding_replicas, r.removing_replicas) == \
                ((3, 5, 4), (3, 4, 5), 3, (), ())
            assert r.leader_epoch == q.leader_epoch + 1
            assert await listed(conn) == {}
        finally:
            conn.close()
            await c.stop()
    run(main())


def test_reordering_completes_at_once_and_cancel_reverts() -> None:
    async def main() -> None:
        c, conn = await started()
        try:
            for b in (1, 2, 3):
                await unfenced(conn, c, b)
            await create(conn, "t", 1, 3)
            p = c.image.topics.get_partition("t", 0)
            # Only a new order: done at once, no replica removed, so no new leader epoch.
            assert outcome(await reassign(conn, "t", 0, [3, 2, 1])) == (0, None)
            q = c.image.topics.get_partition("t", 0)
            assert (q.replicas, q.leader, q.leader_epoch, q.is_reassigning()) == ((3, 2, 1), 1, p.leader_epoch, False)
            # The same target again writes nothing.
            end = c.end_offset
            assert outcome(await reassign(conn, "t", 0, [3, 2, 1])) == (0, None)
            assert c.end_offset == end
            # Shrinking to a replica already in the ISR: also at once; the leader epoch moves (replicas removed).
            assert outcome(await reassign(conn, "t", 0, [2])) == (0, None)
            r = c.image.topics.get_partition("t", 0)
            assert (r.replicas, r.isr, r.leader, r.leader_epoch) == ((2,), (2,), 2, q.leader_epoch + 1)
            # Adding a replica, then cancelling: back to the original replicas and ISR; replicas removed, new epoch.
            assert outcome(await reassign(conn, "t", 0, [2, 3])) == (0, None)
            s = c.image.topics.get_partition("t", 0)
            assert (s.replicas, s.adding_replicas) == ((2, 3), (3,))
            assert outcome(await reassign(conn, "t", 0, None)) == (0, None)
            t = c.image.topics.get_partition("t", 0)
            assert (t.replicas, t.isr, t.adding_replicas, t.leader, t.leader_epoch) == ((2,), (2,), (), 2,
                                                                                         s.leader_epoch + 1)
        finally:
            conn.close()
            await c.stop()
    run(main())


def test_reassignment_errors() -> None:
    async def main() -> None:
        c, conn = await started()
        try:
            await unfenced(conn, c, 1)
            await create(conn, "t", 1, 1)
            bad = E.INVALID_REPLICA_ASSIGNMENT
            assert outcome(await reassign(conn, "t", 0, [])) == (
                bad, "The manual partition assignment includes an empty replica list.")
            assert outcome(await reassign(conn, "t", 0, [1, 9])) == (
                bad, "The manual partition assignment includes broker 9, but no such broker is registered.")
            assert outcome(await reassign(conn, "t", 0, [1, 1])) == (
                bad, "The manual partition assignment includes the broker 1 more than once.")
            assert outcome(await reassign(conn, "nope", 0, [1])) == (
                E.UNKNOWN_TOPIC_OR_PARTITION, "Unable to find a topic named nope.")
            assert outcome(await reassign(conn, "t", 3, [1])) == (
                E.UNKNOWN_TOPIC_OR_PARTITION, "Unable to find partition t:3.")
            assert outcome(await reassign(conn, "t", 0, None))[0] == E.NO_REASSIGNMENT_IN_PROGRESS
            c.resign(3001, c.epoch + 1)
            resp = await reassign(conn, "t", 0, [1])
            assert resp.error_code == E.NOT_CONTROLLER
        finally:
            conn.close()
            await c.stop()
    run(main())

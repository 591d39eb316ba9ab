"""ReplicaManager without sockets: acks=all produces (DelayedProduce), where each produce check answers,
and LeaderAndIsr (`become_leader_or_follower`).

Real logs in a temporary directory; followers are simulated by their Fetch requests to the leader's
ReplicaManager (`fetch_messages` with a replica id), which is how a leader learns their log end offsets.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from broker.cluster.partition import FETCH_LOG_END, Partition
from broker.server.delayed_fetch import FetchParams, PartitionFetchInfo
from broker.server.delayed_produce import ProducePartitionResult
from broker.server.replica_manager import ReplicaManager
from protocol.errors import ErrorCode
from storage import TopicPartition

from .replication import LAG_MS, TOPIC_ID, TP, follow, lead, records, replica_manager, state

ALL = -1


def follower_fetch(rm: ReplicaManager, replica_id: int, offset: int, epoch: int) -> None:
    result = rm.fetch_messages(
        FetchParams(replica_id=replica_id, max_wait_ms=0, min_bytes=1, max_bytes=1 << 20, isolation=FETCH_LOG_END),
        [(TP, PartitionFetchInfo(offset, 1 << 20, current_leader_epoch=epoch, log_start_offset=0,
                                 last_fetched_epoch=epoch))])
    assert isinstance(result, list) and result[0][1].error == ErrorCode.NONE


class Store:
    """Version-checked ISR writes, as the metadata store does them."""

    def __init__(self) -> None:
        self.version = 0

    async def update(self, partition: Partition, new_isr: list[int], version: int) -> tuple[list[int], int] | None:
        if version != self.version:
            return None
        self.version += 1
        return list(new_isr), self.version


def produce(rm: ReplicaManager, acks: int, n: int = 3, tp: TopicPartition = TP, timeout_ms: int = 30_000,
            **kw: bool) -> dict[TopicPartition, ProducePartitionResult] | asyncio.Future:
    return rm.append_records(timeout_ms, acks, {tp: records(n)}, **kw)


# ---------------------------------------------------------------- DelayedProduce
def test_acks_all_completes_when_the_high_watermark_passes_the_batch(tmp_path: Path) -> None:
    async def scenario() -> None:
        rm = replica_manager(tmp_path, 0)
        lead(rm, 1, isr=[0, 1], replicas=[0, 1])
        pending = produce(rm, ALL)
        assert isinstance(pending, asyncio.Future) and not pending.done()
        follower_fetch(rm, 1, 2, 1)  # the follower has offsets 0..1: the HW is 2, the batch ends at 2
        assert not pending.done()
        follower_fetch(rm, 1, 3, 1)
        assert pending.done()
        result = pending.result()[TP]
        assert (result.error, result.base_offset, result.last_offset) == (ErrorCode.NONE, 0, 2)
        assert rm.partitions[TP].high_watermark == 3

    asyncio.run(scenario())


def test_acks_all_times_out_with_request_timed_out(tmp_path: Path) -> None:
    async def scenario() -> None:
        rm = replica_manager(tmp_path, 0)
        lead(rm, 1, isr=[0, 1], replicas=[0, 1])
        pending = produce(rm, ALL, timeout_ms=1)
        assert isinstance(pending, asyncio.Future)
        result = (await pending)[TP]
        assert result.error == ErrorCode.REQUEST_TIMED_OUT
        assert rm.partitions[TP].log_end_offset == 3  # appended: only the acknowledgement failed

    asyncio.run(scenario())


def test_isr_shrinking_below_min_insync_replicas_holds_parked_acks_all_produces(tmp_path: Path) -> None:
    async def scenario() -> None:
        rm = replica_manager(tmp_path, 0, min_insync_replicas=2)
        partition = lead(rm, 1, isr=[0, 1], replicas=[0, 1])
        pending = produce(rm, ALL, timeout_ms=200)
        assert isinstance(pending, asyncio.Future) and not pending.done()
        # Follower 1's broker dies; the controller takes it out of the ISR at a new epoch. Below
        # min.insync.replicas the leader no longer moves the HW (Kafka 3.7+, KAFKA-15583): the write is in
        # the log but not committed, and the producer hears REQUEST_TIMED_OUT, so it retries.
        lead(rm, 2, isr=[0], replicas=[0, 1])
        assert partition.high_watermark == 0 and partition.log_end_offset == 3
        assert (await pending)[TP].error == ErrorCode.REQUEST_TIMED_OUT

    asyncio.run(scenario())


def test_committed_isr_shrink_completes_parked_produces(tmp_path: Path) -> None:
    async def scenario() -> None:
        rm = replica_manager(tmp_path, 0)
        rm.isr_updater = Store().update
        partition = lead(rm, 1, isr=[0, 1, 2], replicas=[0, 1, 2])
        pending = produce(rm, ALL)
        assert isinstance(pending, asyncio.Future)
        follower_fetch(rm, 1, 3, 1)
        assert not pending.done()  # replica 2 is in the ISR and has nothing yet
        # Lead and fetch may fall in the same millisecond: put replica 2's last catch-up strictly before
        # replica 1's, so exactly one of them is past replica.lag.time.max.ms.
        caught_up = partition.remote_replicas[1].last_caught_up_time_ms
        partition.remote_replicas[2].last_caught_up_time_ms = caught_up - 1
        partition.maybe_shrink_isr(caught_up + LAG_MS)
        assert partition.pending_isr == [0, 1]
        # Replica 2 is still "caught up" in wall-clock time, so only the ISR change itself can free the
        # produce: once committed, the partition checks the purgatories for it (on_isr_change).
        partition.remote_replicas[2].last_caught_up_time_ms = 0
        await partition.wait_for_isr_updates()
        assert partition.isr == [0, 1] and partition.high_watermark == 3
        assert pending.done() and pending.result()[TP].error == ErrorCode.NONE

    asyncio.run(scenario())


def test_isr_below_min_insync_replicas_refuses_acks_all_before_the_append(tmp_path: Path) -> None:
    async def scenario() -> None:
        rm = replica_manager(tmp_path, 0, min_insync_replicas=2)
        partition = lead(rm, 1, isr=[0], replicas=[0, 1])
        refused = produce(rm, ALL)
        assert isinstance(refused, dict) and refused[TP].error == ErrorCode.NOT_ENOUGH_REPLICAS
        assert partition.log_end_offset == 0
        accepted = produce(rm, 1)  # min.insync.replicas is for acks=all only
        assert isinstance(accepted, dict) and accepted[TP].error == ErrorCode.NONE
        assert partition.log_end_offset == 3

    asyncio.run(scenario())


def test_losing_leadership_answers_a_parked_produce(tmp_path: Path) -> None:
    async def scenario() -> None:
        rm = replica_manager(tmp_path, 0)
        lead(rm, 1, isr=[0, 1], replicas=[0, 1])
        pending = produce(rm, ALL)
        assert isinstance(pending, asyncio.Future)
        follow(rm, 1, 2, isr=[1], replicas=[0, 1])
        assert pending.done() and pending.result()[TP].error == ErrorCode.NOT_LEADER_OR_FOLLOWER

    asyncio.run(scenario())


# ---------------------------------------------------------------- where each produce check answers
def test_produce_errors_come_from_the_layer_that_owns_the_check(tmp_path: Path) -> None:
    async def scenario() -> None:
        offsets = TopicPartition("__consumer_offsets", 0)
        hosted_elsewhere = TopicPartition("t", 1)
        rm = replica_manager(tmp_path, 0, known=(TP, hosted_elsewhere, offsets))
        lead(rm, 1, isr=[0], replicas=[0])
        lead(rm, 1, isr=[0], replicas=[0], tp=offsets)

        def error(tp: TopicPartition, **kw: bool) -> ErrorCode:
            result = produce(rm, 1, tp=tp, **kw)
            assert isinstance(result, dict)
            return result[tp].error

        assert error(TopicPartition("nowhere", 0)) == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        # Known to the metadata but not hosted here: clients must refresh their metadata.
        assert error(hosted_elsewhere) == ErrorCode.NOT_LEADER_OR_FOLLOWER
        assert error(offsets) == ErrorCode.INVALID_TOPIC_EXCEPTION
        assert error(offsets, internal_topics_allowed=True) == ErrorCode.NONE
        empty = rm.append_records(1000, 1, {TP: memoryview(bytearray())})
        assert isinstance(empty, dict) and empty[TP].error == ErrorCode.INVALID_RECORD
        follow(rm, 1, 2, isr=[1], replicas=[0, 1])
        assert error(TP) == ErrorCode.NOT_LEADER_OR_FOLLOWER

    asyncio.run(scenario())


# ---------------------------------------------------------------- LeaderAndIsr
def test_stale_controller_epoch_is_refused(tmp_path: Path) -> None:
    rm = replica_manager(tmp_path, 0)
    assert rm.become_leader_or_follower(0, 5, {TP: state(0, 1, [0])}) == {TP: ErrorCode.NONE}
    stale = state(1, 2, [1], controller_epoch=4)
    assert rm.become_leader_or_follower(1, 4, {TP: stale}) == {TP: ErrorCode.STALE_CONTROLLER_EPOCH}
    partition = rm.partitions[TP]
    assert partition.is_leader and partition.leader_epoch == 1


def test_leader_epoch_that_is_not_newer_is_ignored(tmp_path: Path) -> None:
    rm = replica_manager(tmp_path, 0)
    lead(rm, 3, isr=[0, 1], replicas=[0, 1])
    older = rm.become_leader_or_follower(0, 1, {TP: state(1, 2, [1], [0, 1])})
    assert older == {TP: ErrorCode.STALE_CONTROLLER_EPOCH}
    same = rm.become_leader_or_follower(0, 1, {TP: state(1, 3, [1], [0, 1])}, {TP.topic: TOPIC_ID})
    assert same == {TP: ErrorCode.STALE_CONTROLLER_EPOCH}  # Kafka's answer at an equal epoch too
    partition = rm.partitions[TP]
    assert partition.is_leader and partition.leader_epoch == 3 and partition.isr == [0, 1]


def test_same_leader_epoch_hands_over_a_missing_topic_id(tmp_path: Path) -> None:
    """A controller moving to topic ids (an IBP upgrade) sends them without bumping the leader epoch: a log
    without one takes it and the answer is NONE, as Kafka's."""
    rm = replica_manager(tmp_path, 0)
    assert rm.become_leader_or_follower(0, 1, {TP: state(0, 3, [0, 1], [0, 1])}) == {TP: ErrorCode.NONE}
    partition = rm.partitions[TP]
    assert partition.log.topic_id is None
    again = rm.become_leader_or_follower(0, 1, {TP: state(0, 3, [0, 1], [0, 1])}, {TP.topic: TOPIC_ID})
    assert again == {TP: ErrorCode.NONE}
    assert partition.log.topic_id == TOPIC_ID and partition.topic_id == TOPIC_ID
    assert rm.become_leader_or_follower(0, 1, {TP: state(0, 3, [0, 1], [0, 1])}, {TP.topic: TOPIC_ID}) == {
        TP: ErrorCode.STALE_CONTROLLER_EPOCH}


def test_new_leader_opens_its_log_at_the_checkpointed_high_watermark(tmp_path: Path) -> None:
    async def scenario() -> None:
        rm = replica_manager(tmp_path, 0)
        lead(rm, 1, isr=[0], replicas=[0, 1])
        for _ in range(4):
            produce(rm, 1)
        rm.high_watermarks = {TP: 7}  # as if checkpointed at 7 before a restart; the log has 12
        rm.checkpoint_high_watermarks()
        rm.shutdown()
        rm.log_manager.shutdown()

        restarted = replica_manager(tmp_path, 0)
        restarted.high_watermarks = restarted.log_manager.read_high_watermarks()
        changes: list[tuple[list[TopicPartition], list[TopicPartition]]] = []
        restarted.on_leadership_change.append(
            lambda leaders, followers: changes.append(([p.topic_partition for p in leaders],
                                                       [p.topic_partition for p in followers])))
        partition = lead(restarted, 2, isr=[0, 1], replicas=[0, 1])
        assert partition.log_end_offset == 12 and partition.high_watermark == 12
        assert changes == [([TP], [])]
        assert partition.log is not None and partition.log.topic_id == TOPIC_ID
        assert partition.log.leader_epoch_cache.entries() == [(1, 0), (2, 12)]
        assert partition.leader_epoch_start_offset == 12

    asyncio.run(scenario())


def test_new_follower_keeps_its_high_watermark_within_its_log(tmp_path: Path) -> None:
    rm = replica_manager(tmp_path, 1)
    rm.high_watermarks = {TP: 50}  # a checkpoint from a longer log
    changes: list[tuple[list[TopicPartition], list[TopicPartition]]] = []
    rm.on_leadership_change.append(lambda leaders, followers: changes.append(
        ([p.topic_partition for p in leaders], [p.topic_partition for p in followers])))
    partition = follow(rm, 0, 4, isr=[0, 1], replicas=[0, 1])
    assert not partition.is_leader and partition.leader_id == 0 and partition.leader_epoch == 4
    assert partition.log is not None and partition.high_watermark == 0 == partition.log_end_offset
    assert changes == [([], [TP])]
    partition.append_records_to_follower(records(5, partition_leader_epoch=4))
    partition.update_follower_high_watermark(3)
    assert partition.high_watermark == 3
    # A newer epoch, even with the same leader, restarts fetching: the listeners hear of it (as in Kafka).
    assert rm.become_leader_or_follower(0, 1, {TP: state(0, 5, [0, 1], [0, 1])}) == {TP: ErrorCode.NONE}
    assert changes == [([], [TP]), ([], [TP])] and partition.leader_epoch == 5


def test_replica_not_in_the_assignment_is_refused(tmp_path: Path) -> None:
    rm = replica_manager(tmp_path, 2)
    errors = rm.become_leader_or_follower(0, 1, {TP: state(0, 1, [0, 1], [0, 1])})
    assert errors == {TP: ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}
    assert rm.partitions[TP].log is None
    assert rm.log_manager.get_log(TP) is None

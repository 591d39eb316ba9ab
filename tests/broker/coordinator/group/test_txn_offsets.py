"""Transactional offset commits in the group coordinator (KIP-98, KIP-447): staged per producer id, visible
once the transaction's COMMIT marker is written, dropped on ABORT, replayed with the markers on reload.

`TxnOffsetsLog` is an in-memory `__consumer_offsets` that keeps whole batches (producer id, transactional
bit) and markers, fed back to a new coordinator as the runtime feeds a `BatchLoadingShard`.
"""

from __future__ import annotations

import asyncio
from collections import defaultdict
from dataclasses import replace

from broker.coordinator.group import GroupCoordinator, GroupCoordinatorConfig, OffsetCommitEntry
from broker.coordinator.group import GroupErrorCode as E
from broker.coordinator.runtime import LoadedBatch, TransactionalAppend
from storage.values import TopicPartition
from tests.broker.coordinator.group.harness import TEST_CONFIG, AppendFailed, join_and_sync_all, run

TP0 = TopicPartition("t", 0)
TP1 = TopicPartition("t", 1)
PID = 4000


class TxnOffsetsLog:
    def __init__(self) -> None:
        self.batches: dict[int, list[LoadedBatch]] = defaultdict(list)
        self.end: dict[int, int] = defaultdict(int)
        self.fail_with: BaseException | None = None
        self.hold: asyncio.Event | None = None  # set: appends wait for it
        self.txn_appends: list[TransactionalAppend] = []

    async def append_records(self, partition: int, records: list[tuple[bytes, bytes | None]],
                             txn: TransactionalAppend | None = None) -> int:
        if self.hold is not None:
            await self.hold.wait()
        if self.fail_with is not None:
            raise self.fail_with
        if txn is not None:
            self.txn_appends.append(txn)
        base = self.end[partition]
        self.end[partition] += len(records)
        self.batches[partition].append(LoadedBatch(base, txn.producer_id if txn else -1, txn is not None, None,
                                                   list(records)))
        return base + len(records) - 1

    def write_marker(self, partition: int, producer_id: int, commit: bool) -> None:
        self.batches[partition].append(LoadedBatch(self.end[partition], producer_id, True, 1 if commit else 0, []))
        self.end[partition] += 1

    def new_coordinator(self, config: GroupCoordinatorConfig = TEST_CONFIG) -> GroupCoordinator:
        coordinator = GroupCoordinator(self.append_records, config)
        for partition in range(config.offsets_topic_num_partitions):
            coordinator.manager.load_batches(partition, list(self.batches.get(partition, [])))
            coordinator.manager.on_partition_loaded(partition)
        return coordinator


def offsets(*specs: tuple[TopicPartition, int]) -> list[OffsetCommitEntry]:
    return [OffsetCommitEntry(tp.topic, tp.partition, o, leader_epoch=3, metadata="m") for tp, o in specs]


async def txn_commit(c: GroupCoordinator, group: str, *specs: tuple[TopicPartition, int], pid: int = PID,
                     member_id: str = "", generation: int = -1) -> dict[TopicPartition, int]:
    return await c.commit_txn_offsets(group, pid, 0, member_id, None, generation, offsets(*specs))


async def fetched(c: GroupCoordinator, group: str, *tps: TopicPartition, stable: bool = False) -> list[tuple[int, int]]:
    result = await c.fetch_offsets(group, [(tp.topic, tp.partition) for tp in tps], require_stable=stable)
    return [(f.offset, f.error_code) for f in result.partitions]


def end_txn(log: TxnOffsetsLog, c: GroupCoordinator, group: str, pid: int, commit: bool) -> None:
    """What WriteTxnMarkers does for the group's partition: the marker, then the completion hook."""
    partition = c.partition_for(group)
    log.write_marker(partition, pid, commit)
    c.manager.handle_txn_completion(pid, [partition], commit)


def test_offsets_stay_pending_until_commit_marker_then_become_visible() -> None:
    async def scenario() -> None:
        log = TxnOffsetsLog()
        c = log.new_coordinator()
        assert await c.commit_offsets("g", "", None, -1, offsets((TP0, 5))) == {TP0: E.NONE}
        assert await txn_commit(c, "g", (TP0, 10), (TP1, 20)) == {TP0: E.NONE, TP1: E.NONE}
        # one transactional batch with the producer's id and epoch
        assert log.txn_appends == [TransactionalAppend(PID, 0, None)]
        assert log.batches[c.partition_for("g")][-1].is_transactional
        assert await fetched(c, "g", TP0, TP1) == [(5, E.NONE), (-1, E.NONE)]
        assert await fetched(c, "g", TP0, TP1, stable=True) == [(-1, E.UNSTABLE_OFFSET_COMMIT)] * 2
        end_txn(log, c, "g", PID, commit=True)
        assert await fetched(c, "g", TP0, TP1, stable=True) == [(10, E.NONE), (20, E.NONE)]
        assert c.group("g").pending_txn_offsets == {}
    run(scenario)


def test_abort_marker_drops_the_pending_offsets() -> None:
    async def scenario() -> None:
        log = TxnOffsetsLog()
        c = log.new_coordinator()
        await c.commit_offsets("g", "", None, -1, offsets((TP0, 5)))
        await txn_commit(c, "g", (TP0, 10))
        end_txn(log, c, "g", PID, commit=False)
        assert await fetched(c, "g", TP0, stable=True) == [(5, E.NONE)]
    run(scenario)


def test_completion_only_touches_its_producer_and_the_partitions_it_names() -> None:
    async def scenario() -> None:
        log = TxnOffsetsLog()
        c = log.new_coordinator()
        await txn_commit(c, "g", (TP0, 10), pid=1)
        await txn_commit(c, "g", (TP1, 11), pid=2)
        other = (c.partition_for("g") + 1) % TEST_CONFIG.offsets_topic_num_partitions
        c.manager.handle_txn_completion(1, [other], True)  # a marker elsewhere completes nothing here
        assert await fetched(c, "g", TP0, TP1, stable=True) == [(-1, E.UNSTABLE_OFFSET_COMMIT)] * 2
        end_txn(log, c, "g", 1, commit=True)
        assert await fetched(c, "g", TP0, TP1, stable=True) == [(10, E.NONE), (-1, E.UNSTABLE_OFFSET_COMMIT)]
        end_txn(log, c, "g", 2, commit=True)
        assert await fetched(c, "g", TP0, TP1, stable=True) == [(10, E.NONE), (11, E.NONE)]
    run(scenario)


def test_a_commit_written_after_the_transactional_one_wins_when_the_transaction_commits() -> None:
    async def scenario() -> None:
        log = TxnOffsetsLog()
        c = log.new_coordinator()
        await txn_commit(c, "g", (TP0, 10))
        await c.commit_offsets("g", "", None, -1, offsets((TP0, 99)))
        end_txn(log, c, "g", PID, commit=True)
        assert await fetched(c, "g", TP0) == [(99, E.NONE)]
        # and the same order survives a reload (Kafka's olderThan by batch offset)
        assert await fetched(log.new_coordinator(), "g", TP0) == [(99, E.NONE)]
    run(scenario)


def test_reload_replays_committed_aborted_and_open_transactions() -> None:
    async def scenario() -> None:
        log = TxnOffsetsLog()
        c = log.new_coordinator()
        await c.commit_offsets("g", "", None, -1, offsets((TP0, 1), (TP1, 1)))
        await txn_commit(c, "g", (TP0, 10), pid=1)
        await txn_commit(c, "g", (TP1, 20), pid=2)
        await txn_commit(c, "h", (TP0, 30), pid=3)  # a group that only ever committed in a transaction
        end_txn(log, c, "g", 1, commit=True)
        end_txn(log, c, "g", 2, commit=False)
        reloaded = log.new_coordinator()
        assert await fetched(reloaded, "g", TP0, TP1, stable=True) == [(10, E.NONE), (1, E.NONE)]
        # producer 3's transaction is still open: pending after the reload, completed by its marker
        assert await fetched(reloaded, "h", TP0) == [(-1, E.NONE)]
        assert await fetched(reloaded, "h", TP0, stable=True) == [(-1, E.UNSTABLE_OFFSET_COMMIT)]
        end_txn(log, reloaded, "h", 3, commit=True)
        assert await fetched(reloaded, "h", TP0, stable=True) == [(30, E.NONE)]
        assert await fetched(log.new_coordinator(), "h", TP0, stable=True) == [(30, E.NONE)]
    run(scenario)


def test_kip_447_member_checks_and_the_v0_to_v2_exemption() -> None:
    async def scenario() -> None:
        log = TxnOffsetsLog()
        c = log.new_coordinator()
        joins, _ = await join_and_sync_all(c, "g", [""])
        member, generation = joins[0].member_id, joins[0].generation_id
        assert await txn_commit(c, "g", (TP0, 1), member_id="nobody", generation=generation) == {
            TP0: E.UNKNOWN_MEMBER_ID}
        assert await txn_commit(c, "g", (TP0, 1), member_id=member, generation=generation + 1) == {
            TP0: E.ILLEGAL_GENERATION}
        assert await txn_commit(c, "g", (TP0, 1), member_id=member, generation=generation) == {TP0: E.NONE}
        # v0-v2 producers send no member id nor generation: accepted by a group with members
        assert await txn_commit(c, "g", (TP1, 2), pid=PID + 1) == {TP1: E.NONE}
        # a plain OffsetCommit without a member is not
        assert await c.commit_offsets("g", "", None, -1, offsets((TP1, 3))) == {TP1: E.UNKNOWN_MEMBER_ID}
        assert await txn_commit(c, "", (TP0, 1)) == {TP0: E.INVALID_GROUP_ID}
    run(scenario)


def test_a_failed_append_leaves_nothing_pending_and_verification_errors_answer_every_partition() -> None:
    async def scenario() -> None:
        log = TxnOffsetsLog()
        c = log.new_coordinator()
        log.fail_with = AppendFailed(E.NOT_ENOUGH_REPLICAS)
        assert await txn_commit(c, "g", (TP0, 10)) == {TP0: E.COORDINATOR_NOT_AVAILABLE}
        assert c.group("g").pending_txn_offsets == {}
        assert await fetched(c, "g", TP0, stable=True) == [(-1, E.NONE)]
        log.fail_with = None

        asked: list[int] = []

        async def not_in_txn(partition: int) -> tuple[int, object]:
            asked.append(partition)
            return E.INVALID_TXN_STATE, None
        result = await c.commit_txn_offsets("g", PID, 0, "", None, -1, offsets((TP0, 1), (TP1, 1)), not_in_txn)
        assert result == {TP0: E.INVALID_TXN_STATE, TP1: E.INVALID_TXN_STATE}
        assert asked == [c.partition_for("g")] and log.txn_appends == []
    run(scenario)


def test_deleting_offsets_drops_their_pending_commits_and_expiry_keeps_a_group_with_open_transactions() -> None:
    async def scenario() -> None:
        log = TxnOffsetsLog()
        c = log.new_coordinator(replace(TEST_CONFIG, offsets_retention_ms=0))
        await txn_commit(c, "g", (TP0, 10), (TP1, 11))
        await c.commit_offsets("g", "", None, -1, offsets((TP0, 1)))
        assert (await c.delete_offsets("g", [("t", 0)])).error_code == E.NONE
        assert await fetched(c, "g", TP0, TP1, stable=True) == [(-1, E.NONE), (-1, E.UNSTABLE_OFFSET_COMMIT)]
        await c.manager.expire_offsets()
        assert c.group("g") is not None  # no committed offsets left, but a transaction still open
    run(scenario)


def test_a_plain_commit_in_flight_is_unstable_too() -> None:
    async def scenario() -> None:
        log = TxnOffsetsLog()
        c = log.new_coordinator()
        await c.commit_offsets("g", "", None, -1, offsets((TP0, 5)))
        log.hold = asyncio.Event()
        commit = asyncio.ensure_future(c.commit_offsets("g", "", None, -1, offsets((TP0, 6))))
        await asyncio.sleep(0)
        assert await fetched(c, "g", TP0) == [(5, E.NONE)]
        assert await fetched(c, "g", TP0, stable=True) == [(-1, E.UNSTABLE_OFFSET_COMMIT)]
        log.hold.set()
        assert await commit == {TP0: E.NONE}
        assert await fetched(c, "g", TP0, stable=True) == [(6, E.NONE)]
        assert c.group("g").pending_offset_commits == {}
    run(scenario)

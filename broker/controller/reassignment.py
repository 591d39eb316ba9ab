"""Partition reassignment (Kafka's KafkaController.onPartitionReassignment, with KIP-455's adding/removing sets).

Contract (runs inside controller events only):
- A request (`/admin/reassign_partitions`, kafka-reassign-partitions --zookeeper) asks for target replicas TRS
  of some partitions. A target that is empty, repeats a broker, names a negative broker, or names an unknown
  partition is rejected (logged, removed from the request).
- Phase one (`start`): the assignment becomes RS = ORS ∪ TRS on the topic znode, with adding (TRS − ORS) and
  removing (ORS − TRS) replicas, the leader epoch is bumped and LeaderAndIsr goes to RS, so the new replicas
  start fetching. A reassignment replacing one in progress starts from the original replicas, not the union;
  the replicas the replaced one was adding and the new one does not want leave the ISR and are stopped
  (StopReplica with delete).
- Phase two (`maybe_complete`, on every ISR change of the partition): once all of TRS is in the ISR, a
  leader from TRS is elected if needed (election.elect_for_reassignment), the ISR becomes ISR ∩ TRS, the
  assignment becomes TRS, the new state goes to the replicas before the removed ones get
  StopReplica(delete), and the partition leaves the request znode (deleted when empty).
- A new controller resumes (`resume`) from the topics' adding/removing sets and the request znode.
- The admin API (KIP-455; active controller only, NOT_CONTROLLER elsewhere): `alter_from_api` takes a target
  per partition or None to cancel (the target becomes the original replicas ORS). A target that is
  empty, repeats a broker, names a negative broker or adds a broker that is not live is
  INVALID_REPLICA_ASSIGNMENT; cancelling a partition not being reassigned NO_REASSIGNMENT_IN_PROGRESS; an
  unknown partition UNKNOWN_TOPIC_OR_PARTITION. The API's reassignments replace any the request znode holds
  for the same partitions. `ongoing` answers replicas, adding and removing replicas of the partitions being
  reassigned (of those asked, or all).
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Collection, Mapping, Sequence
from typing import TYPE_CHECKING

from broker.controller import election
from broker.metadata import BadVersionError, LeaderAndIsr, TopicInfo
from protocol.errors import ErrorCode
from storage import TopicPartition

if TYPE_CHECKING:
    from broker.controller.controller import Controller

log = logging.getLogger("broker.controller")


class PartitionReassignment:
    def __init__(self, controller: Controller) -> None:
        self.controller = controller
        self.ctx = controller.ctx
        self.store = controller.store

    async def resume(self) -> None:
        """On election: partitions whose topic znode carries adding/removing replicas are mid-reassignment
        (their target is the assignment without the removing replicas); the request znode may add more."""
        self.ctx.reassigning = {}
        for name, info in self.ctx.topics.items():
            for p, replicas in info.assignment.items():
                if info.adding_replicas.get(p) or info.removing_replicas.get(p):
                    removing = info.removing_replicas.get(p, ())
                    self.ctx.reassigning[TopicPartition(name, p)] = tuple(r for r in replicas if r not in removing)
        request = await self.controller.call(self.store.partition_reassignment_request)
        await self.on_request(request)

    async def on_request(self, request: Mapping[TopicPartition, Sequence[int]] | None) -> None:
        if not self.controller.active:
            return
        wanted = {tp: tuple(r) for tp, r in (request or {}).items()}
        finished: list[TopicPartition] = []
        for tp, target in sorted(wanted.items()):
            error = self._error(tp, target)
            if error is not None:
                log.warning("controller: reassignment of %s to %s rejected: %s", tp, list(target), error)
                finished.append(tp)
            elif self.ctx.reassigning.get(tp) != target:
                if await self.start(tp, target):
                    finished.append(tp)
        for tp in sorted(self.ctx.reassigning):
            if await self.maybe_complete(tp):
                finished.append(tp)
        if finished and request is not None:
            await self.remove_from_request(finished)

    # ------------------------------------------------------------------ the admin API (KIP-455)
    async def alter_from_api(self, reassignments: Mapping[TopicPartition, Sequence[int] | None]
                    ) -> dict[TopicPartition, tuple[ErrorCode, str | None]]:
        """Start, replace or cancel (target None) reassignments; per partition Kafka's error and message."""
        results: dict[TopicPartition, tuple[ErrorCode, str | None]] = {}
        targets: dict[TopicPartition, tuple[int, ...]] = {}
        for tp, replicas in reassignments.items():
            if replicas is not None:
                invalid = self._invalid_target(tp, tuple(replicas))
                if invalid is not None:
                    results[tp] = (ErrorCode.INVALID_REPLICA_ASSIGNMENT, invalid)
                    continue
            target = tuple(replicas) if replicas is not None else self._original_if_reassigning(tp)
            if target is None:
                results[tp] = (ErrorCode.NO_REASSIGNMENT_IN_PROGRESS, None)
            else:
                targets[tp] = target
        if targets:
            await self._drop_from_request(targets)
        for tp, target in sorted(targets.items()):
            info = self.ctx.topics.get(tp.topic)
            if info is None or tp.partition not in info.assignment or tp not in self.ctx.states:
                results[tp] = (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "The partition does not exist.")
                continue
            try:
                if not await self.start(tp, target):
                    await self.maybe_complete(tp)  # a target already in the ISR completes at once
                results[tp] = (ErrorCode.NONE, None)
            except Exception:
                log.exception("controller: reassignment of %s to %s failed", tp, list(target))
                results[tp] = (ErrorCode.UNKNOWN_SERVER_ERROR, None)
        return results

    def ongoing(self, tps: Sequence[TopicPartition] | None
             ) -> dict[TopicPartition, tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]]:
        """Replicas, adding replicas and removing replicas of each partition being reassigned."""
        out = {}
        for tp in (sorted(self.ctx.reassigning) if tps is None else tps):
            info = self.ctx.topics.get(tp.topic)
            if tp not in self.ctx.reassigning or info is None or tp.partition not in info.assignment:
                continue
            out[tp] = (tuple(info.assignment[tp.partition]), tuple(info.adding_replicas.get(tp.partition, ())),
                       tuple(info.removing_replicas.get(tp.partition, ())))
        return out

    def _original_if_reassigning(self, tp: TopicPartition) -> tuple[int, ...] | None:
        info = self.ctx.topics.get(tp.topic)
        if tp not in self.ctx.reassigning or info is None or tp.partition not in info.assignment:
            return None
        adding = info.adding_replicas.get(tp.partition, ())
        return tuple(r for r in info.assignment[tp.partition] if r not in adding)

    def _invalid_target(self, tp: TopicPartition, target: tuple[int, ...]) -> str | None:
        if not target:
            return "Empty replica list specified in partition reassignment."
        if len(set(target)) != len(target):
            return f"Duplicate replica ids in partition reassignment replica list: {list(target)}"
        if any(r < 0 for r in target):
            return f"Invalid broker id in replica list: {list(target)}"
        original = self._original_if_reassigning(tp) or self.ctx.replicas(tp)
        adding = [r for r in target if r not in original]
        live = sorted(self.ctx.live_brokers)
        if any(r not in live for r in adding):
            return (f"Replica assignment has brokers that are not alive. Replica list: {adding}, "
                    f"live broker list: {live}")
        return None

    async def _drop_from_request(self, tps: Collection[TopicPartition]) -> None:
        """The latest reassignment wins: the API's partitions leave the request znode's."""
        request = await self.controller.call(self.store.partition_reassignment_request)
        if request and any(tp in request for tp in tps):
            await self.remove_from_request(list(tps))

    def _error(self, tp: TopicPartition, target: tuple[int, ...]) -> str | None:
        info = self.ctx.topics.get(tp.topic)
        if info is None or tp.partition not in info.assignment or tp not in self.ctx.states:
            return "unknown topic or partition"
        if not target or len(set(target)) != len(target):
            return "the target replicas are empty or repeat a broker"
        if any(r < 0 for r in target):
            return "negative broker id"
        return None

    async def start(self, tp: TopicPartition, target: tuple[int, ...]) -> bool:
        """Phase one. Returns True if there was nothing to do (the assignment already is TRS)."""
        ctx = self.ctx
        for _ in range(3):  # a lost version race (CreatePartitions, another partition) re-reads the topic
            info = ctx.topics[tp.topic]
            current = info.assignment[tp.partition]
            adding_now = info.adding_replicas.get(tp.partition, ())
            original = tuple(r for r in current if r not in adding_now)
            if target == current and not adding_now and not info.removing_replicas.get(tp.partition):
                ctx.reassigning.pop(tp, None)
                return True
            union = tuple(dict.fromkeys(target + original))
            adding = tuple(r for r in target if r not in original)
            removing = tuple(r for r in original if r not in target)
            assignment = dict(info.assignment)
            assignment[tp.partition] = union
            adding_map = {p: r for p, r in info.adding_replicas.items() if p != tp.partition}
            removing_map = {p: r for p, r in info.removing_replicas.items() if p != tp.partition}
            adding_map[tp.partition] = adding
            removing_map[tp.partition] = removing
            if await self._write_assignment(info, assignment, adding_map, removing_map):
                break
        else:
            log.warning("controller: cannot start the reassignment of %s (assignment kept changing)", tp)
            return False
        ctx.reassigning[tp] = target
        # Replicas a replaced reassignment was adding that the new one does not want: out of the ISR, then
        # stopped and deleted (Kafka's updateCurrentReassignment).
        unneeded = [r for r in current if r not in union]
        log.info("controller: reassigning %s from %s to %s (replicas now %s, adding %s, removing %s)", tp,
                 list(original), list(target), list(union), list(adding), list(removing))
        live = ctx.live_broker_ids()
        await self.controller.partition_states.update_with_retries(
            tp, lambda st: election.drop_from_isr(st, unneeded, union, live, ctx.epoch))
        await self.controller.channels.send_partition_states([tp])
        for r in unneeded:
            if r in ctx.live_brokers:
                await self.controller.channels.stop_replica(r, [tp], True)
        return False

    async def _write_assignment(self, info: TopicInfo, assignment: dict[int, tuple[int, ...]],
                                adding: dict[int, tuple[int, ...]], removing: dict[int, tuple[int, ...]]) -> bool:
        try:
            version = await self.controller.call(
                self.store.set_assignment, info.name, assignment, adding_replicas=adding, removing_replicas=removing,
                expected_version=info.zk_version, controller_epoch_zk_version=self.store.controller_epoch_zk_version)
        except BadVersionError:
            fresh = await self.controller.call(self.store.topic, info.name)
            if fresh is not None:
                self.ctx.topics[info.name] = fresh
            return False
        self.ctx.topics[info.name] = dataclasses.replace(
            info, assignment=assignment, adding_replicas={p: r for p, r in adding.items() if r},
            removing_replicas={p: r for p, r in removing.items() if r}, zk_version=version)
        return True

    async def maybe_complete(self, tp: TopicPartition) -> bool:
        """Phase two, once every target replica is in the ISR. Returns True when the partition is done."""
        ctx = self.ctx
        target = ctx.reassigning.get(tp)
        info = ctx.topics.get(tp.topic)
        if target is None or info is None or tp not in ctx.states:
            ctx.reassigning.pop(tp, None)
            return target is not None
        live = ctx.live_broker_ids()

        def complete(st: LeaderAndIsr) -> LeaderAndIsr | None:
            if not all(r in st.isr for r in target):
                return None
            new = election.elect_for_reassignment(st, target, live, ctx.epoch)
            if new is None:
                log.warning("controller: reassignment of %s waits for a live target replica in the ISR", tp)
            return new

        if not await self.controller.partition_states.update_with_retries(tp, complete):
            return False
        removed = [r for r in info.assignment[tp.partition] if r not in target]
        for _ in range(3):
            info = ctx.topics[tp.topic]
            assignment = dict(info.assignment)
            assignment[tp.partition] = target
            adding = {p: r for p, r in info.adding_replicas.items() if p != tp.partition}
            removing = {p: r for p, r in info.removing_replicas.items() if p != tp.partition}
            if await self._write_assignment(info, assignment, adding, removing):
                break
        else:
            log.warning("controller: cannot record the new assignment of %s (topic znode kept changing)", tp)
            return False
        # The new leader and followers learn RS = TRS before the removed replicas stop, so no leader keeps
        # waiting for (or takes back into the ISR) a replica that is going away.
        channels = self.controller.channels
        await channels.send_partition_states([tp])
        for r in removed:
            if r in ctx.live_brokers:
                await channels.stop_replica(r, [tp], True)
        del ctx.reassigning[tp]
        log.info("controller: reassignment of %s complete: replicas %s, leader %d, ISR %s", tp, list(target),
                 ctx.states[tp].leader, list(ctx.states[tp].isr))
        return True

    async def remove_from_request(self, done: Sequence[TopicPartition]) -> None:
        request = await self.controller.call(self.store.partition_reassignment_request)
        if request is None:
            return
        remaining = {tp: r for tp, r in request.items() if tp not in done}
        await self.controller.call(self.store.update_partition_reassignment_request, remaining)

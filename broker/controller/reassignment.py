"""Partition reassignment (Kafka's KafkaController.onPartitionReassignment, with KIP-455's adding/removing sets).

Contract (runs inside controller events only):
- A request (`/admin/reassign_partitions`, kafka-reassign-partitions --zookeeper) asks for target replicas TRS
  of some partitions. A target that is empty, repeats a broker, names a negative broker, or names an unknown
  partition is rejected (logged, removed from the request).
- Phase one (`start`): the assignment becomes RS = ORS ∪ TRS on the topic znode, with adding (TRS − ORS) and
  removing (ORS − TRS) replicas, the leader epoch is bumped and LeaderAndIsr goes to RS, so the new replicas
  start fetching. A reassignment replacing one in progress starts from the original replicas, not the union.
- Phase two (`maybe_complete`, on every ISR change of the partition): once all of TRS is in the ISR, a
  leader from TRS is elected if needed (election.elect_for_reassignment), the ISR becomes ISR ∩ TRS, the
  assignment becomes TRS, the new state goes to the replicas before the removed ones get
  StopReplica(delete), and the partition leaves the request znode (deleted when empty).
- A new controller resumes (`resume`) from the topics' adding/removing sets and the request znode.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from broker.controller import election
from broker.metadata import BadVersionError, LeaderAndIsr, TopicInfo
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
        log.info("controller: reassigning %s from %s to %s (replicas now %s, adding %s, removing %s)", tp,
                 list(original), list(target), list(union), list(adding), list(removing))
        await self.controller.partition_states.update_with_retries(
            tp, lambda st: election.bump_leader_epoch(st, ctx.epoch))
        await self.controller.channels.send_partition_states([tp])
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

"""Preferred replica election: on request, and Kafka's auto leader rebalance.

Contract:
- `elect_preferred_leaders(tps)` (a controller event): the first replica of each partition's assignment
  leads again if it is live, not shutting down and in the ISR (election.elect_for_preferred_replica);
  LeaderAndIsr/UpdateMetadata go out for the partitions that moved, which are returned.
- `on_request(tps)`: /admin/preferred_replica_election (kafka-preferred-replica-election --zookeeper) elects
  the listed partitions, then deletes the request.
- With `auto.leader.rebalance.enable`, `start()` runs a task that every
  `leader.imbalance.check.interval.seconds`, while this controller is active, elects the preferred leaders of
  brokers whose share of partitions led by someone else is over `leader.imbalance.per.broker.percentage`
  (Kafka's checkAndTriggerAutoLeaderRebalance). `stop()` cancels it and waits for it.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING

from broker.controller import election
from broker.metadata import LeaderAndIsr
from storage import TopicPartition

if TYPE_CHECKING:
    from broker.controller.controller import Controller

log = logging.getLogger("broker.controller")


class PreferredReplicaElection:
    def __init__(self, controller: Controller) -> None:
        self.controller = controller
        self.ctx = controller.ctx
        self._rebalance_task: asyncio.Task | None = None

    def start(self) -> None:
        if self._rebalance_task is None and self.controller.server.config["auto.leader.rebalance.enable"]:
            self._rebalance_task = asyncio.get_running_loop().create_task(self._rebalance_periodically())

    async def stop(self) -> None:
        task, self._rebalance_task = self._rebalance_task, None
        if task is not None:
            task.cancel()
            await asyncio.wait({task})

    async def _rebalance_periodically(self) -> None:
        interval = self.controller.server.config["leader.imbalance.check.interval.seconds"]
        while True:
            await asyncio.sleep(interval)
            if not self.controller.active:
                continue
            try:
                await self.controller.enqueue(self._auto_rebalance)
            except Exception:
                log.exception("controller: preferred leader check failed")

    def imbalanced_partitions(self) -> dict[int, list[TopicPartition]]:
        """Per preferred replica (first in the assignment) over leader.imbalance.per.broker.percentage: the
        partitions it should lead and does not."""
        preferred_of: dict[int, int] = {}
        not_leading: dict[int, list[TopicPartition]] = {}
        for tp, st in self.ctx.states.items():
            replicas = self.ctx.replicas(tp)
            if not replicas:
                continue
            preferred = replicas[0]
            preferred_of[preferred] = preferred_of.get(preferred, 0) + 1
            if st.leader != preferred:
                not_leading.setdefault(preferred, []).append(tp)
        limit = self.controller.server.config["leader.imbalance.per.broker.percentage"] / 100
        return {b: tps for b, tps in not_leading.items() if len(tps) / preferred_of[b] > limit}

    async def _auto_rebalance(self) -> None:
        if not self.controller.active:
            return
        live = self.ctx.live_broker_ids()
        candidates = [tp for b, tps in self.imbalanced_partitions().items() if b in live for tp in tps]
        if candidates:
            await self.elect_preferred_leaders(candidates)

    async def elect_preferred_leaders(self, tps: Sequence[TopicPartition]) -> list[TopicPartition]:
        ctx = self.ctx
        live = ctx.live_broker_ids()
        moved: list[TopicPartition] = []
        for tp in tps:
            replicas = ctx.replicas(tp)

            def elect(st: LeaderAndIsr, replicas: tuple[int, ...] = replicas) -> LeaderAndIsr | None:
                return election.elect_for_preferred_replica(st, replicas, live, ctx.epoch)

            if await self.controller.partition_states.update_with_retries(tp, elect):
                moved.append(tp)
        if moved:
            log.info("controller: preferred leader election moved %s", ", ".join(str(tp) for tp in moved))
            await self.controller.channels.send_partition_states(moved)
        return moved

    async def on_request(self, tps: list[TopicPartition] | None) -> None:
        if not self.controller.active or not tps:
            return
        log.info("controller: preferred replica election requested for %s", ", ".join(str(tp) for tp in tps))
        await self.elect_preferred_leaders(list(tps))
        await self.controller.call(self.controller.store.clear_preferred_replica_election_request)

"""Preferred replica election: on request, and Kafka's auto leader rebalance.

Contract:
- `elect_preferred_leaders(tps)` (a controller event): the first replica of each partition's assignment
  leads again if it is live, not shutting down and in the ISR (election.elect_for_preferred_replica);
  LeaderAndIsr/UpdateMetadata go out for the partitions that moved, which are returned.
- `on_request(tps)`: /admin/preferred_replica_election (kafka-preferred-replica-election --zookeeper) elects
  the listed partitions, then deletes the request.
- `elect_leaders(tps, election_type)` (ElectLeaders, kafka-leader-election.sh; Kafka's
  processReplicaLeaderElection for an admin client): per partition the new leader, or the error Kafka answers:
  UNKNOWN_TOPIC_OR_PARTITION (no such partition), INVALID_TOPIC_EXCEPTION (topic being deleted),
  ELECTION_NOT_NEEDED (preferred: the preferred replica already leads; unclean: the leader is live),
  PREFERRED_LEADER_NOT_AVAILABLE / ELIGIBLE_LEADERS_NOT_AVAILABLE (no replica may lead), NOT_CONTROLLER.
  Unclean elections take the first live in-sync replica, else the first live replica (its ISR is then just
  itself), as Kafka's OfflinePartitionLeaderElectionStrategy(allowUnclean = true).
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
from protocol.errors import ErrorCode
from storage import TopicPartition

if TYPE_CHECKING:
    from broker.controller.controller import Controller

log = logging.getLogger("broker.controller")

PREFERRED, UNCLEAN = 0, 1  # ElectLeaders' ElectionType


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

    async def elect_leaders(self, tps: Sequence[TopicPartition], election_type: int
                            ) -> dict[TopicPartition, int | ErrorCode]:
        """ElectLeaders as a controller event; see the module docstring."""
        return await self.controller.enqueue(lambda: self._elect_leaders(tps, election_type))

    async def _elect_leaders(self, tps: Sequence[TopicPartition], election_type: int
                             ) -> dict[TopicPartition, int | ErrorCode]:
        ctx = self.ctx
        if not self.controller.active:
            return dict.fromkeys(tps, ErrorCode.NOT_CONTROLLER)
        deleting = await self.controller.call(self.controller.store.topics_pending_deletion)
        live = ctx.live_broker_ids()
        results: dict[TopicPartition, int | ErrorCode] = {}
        electable = []
        for tp in tps:
            st = ctx.states.get(tp)
            if st is None or tp.topic not in ctx.topics:
                results[tp] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            elif tp.topic in deleting:
                results[tp] = ErrorCode.INVALID_TOPIC_EXCEPTION
            elif (st.leader == ctx.replicas(tp)[0]) if election_type == PREFERRED else (st.leader in live):
                results[tp] = ErrorCode.ELECTION_NOT_NEEDED
            else:
                electable.append(tp)
        moved = []
        for tp in electable:
            replicas = ctx.replicas(tp)

            def elect(st: LeaderAndIsr, replicas: tuple[int, ...] = replicas) -> LeaderAndIsr | None:
                if election_type == PREFERRED:
                    return election.elect_for_preferred_replica(st, replicas, live, ctx.epoch)
                new = election.elect_for_offline(st, replicas, live, True, ctx.epoch,
                                                 self.controller.partition_states.leader_recovery_supported)
                return new if new.leader != election.NO_LEADER else None

            if await self.controller.partition_states.update_with_retries(tp, elect):
                moved.append(tp)
                results[tp] = ctx.states[tp].leader
            else:
                results[tp] = ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE if election_type == PREFERRED \
                    else ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE
        if moved:
            kind = "preferred" if election_type == PREFERRED else "unclean"
            log.info("controller: %s leader election (ElectLeaders) moved %s", kind,
                     ", ".join(str(tp) for tp in moved))
            await self.controller.channels.send_partition_states(moved)
        return results

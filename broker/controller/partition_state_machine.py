"""Partition states in the metadata store: reading, creating, and writing elections (Kafka's
PartitionStateMachine).

Contract (runs inside controller events only):
- Every write is conditional on the state znode version the controller last saw (the partition epoch) and
  fenced by the controller epoch: a lost version race re-reads the topic's states and reports False, a
  replaced controller gets ControllerMovedError. The context (`ctx.states`, `ctx.versions`) follows every
  successful write.
- `update_with_retries(tp, next_state)` writes `next_state(current)`, recomputing from the re-read state after
  a lost race, at most WRITE_ATTEMPTS times.
- `create_missing_states(topics)`: partitions without a state get one (election.new_partition_state), in one
  pipelined batch of store writes.
- `elect_offline_leaders(exclude)`: partitions whose leader or ISR members are not live (or in `exclude`) get
  election.elect_for_offline; unclean election where the broker enables it or the topic's override does.
- `elect_for_controlled_shutdown(broker_id)`: election.elect_for_controlled_shutdown for every partition the
  broker hosts; returns what moved and what could not.
Nothing here sends requests: callers send LeaderAndIsr/UpdateMetadata for what changed.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Collection
from typing import TYPE_CHECKING

from broker.controller import election
from broker.controller.election import NO_LEADER
from broker.metadata import BadVersionError, LeaderAndIsr, MetadataError
from storage import TopicPartition

if TYPE_CHECKING:
    from broker.controller.controller import Controller

log = logging.getLogger("broker.controller")

WRITE_ATTEMPTS = 3


class PartitionStateMachine:
    def __init__(self, controller: Controller) -> None:
        self.controller = controller
        self.ctx = controller.ctx
        self.store = controller.store

    async def load_states(self, topic: str) -> None:
        states = await self.controller.call(self.store.partition_states, topic)
        for p, (state, version) in states.items():
            tp = TopicPartition(topic, p)
            self.ctx.states[tp] = state
            self.ctx.versions[tp] = version

    async def write_state(self, tp: TopicPartition, state: LeaderAndIsr) -> bool:
        try:
            version = await self.controller.call(self.store.update_partition_state, tp.topic, tp.partition, state,
                                                 self.ctx.versions.get(tp, 0),
                                                 controller_epoch_zk_version=self.store.controller_epoch_zk_version)
        except BadVersionError:
            await self.load_states(tp.topic)
            return False
        self.ctx.states[tp] = state
        self.ctx.versions[tp] = version
        return True

    async def update_with_retries(self, tp: TopicPartition,
                                  next_state: Callable[[LeaderAndIsr], LeaderAndIsr | None]) -> bool | None:
        """True: written. None: the partition has no state or `next_state` had nothing to write. False: every
        attempt lost its version race."""
        for _ in range(WRITE_ATTEMPTS):
            current = self.ctx.states.get(tp)
            if current is None:
                return None
            new = next_state(current)
            if new is None:
                return None
            if await self.write_state(tp, new):
                return True
        return False

    async def create_missing_states(self, topics: list[str]) -> list[TopicPartition]:
        """New partitions: leader = first live replica, ISR = live replicas, epoch 0 — written in one
        pipelined batch (a 1,000-partition topic is one round of store writes, not 1,000)."""
        ctx = self.ctx
        live = set(ctx.live_brokers)
        pending: dict[TopicPartition, LeaderAndIsr] = {}
        for name in topics:
            info = ctx.topics.get(name)
            if info is None:
                continue
            for p, replicas in sorted(info.assignment.items()):
                tp = TopicPartition(name, p)
                if tp not in ctx.states:
                    pending[tp] = election.new_partition_state(replicas, live, ctx.epoch)
        if not pending:
            return []
        results = await self.controller.call(self.store.create_partition_states, pending,
                                             controller_epoch_zk_version=self.store.controller_epoch_zk_version)
        created = []
        reload: set[str] = set()
        for tp, result in results.items():
            if isinstance(result, MetadataError):
                log.warning("%s: cannot create partition state: %s", tp, result)
                reload.add(tp.topic)
                continue
            ctx.states[tp] = pending[tp]
            ctx.versions[tp] = result
            created.append(tp)
        for name in sorted(reload):
            await self.load_states(name)
        return sorted(created)

    @property
    def leader_recovery_supported(self) -> bool:
        """Unclean leaders mark their partition RECOVERING (KIP-704) from inter.broker.protocol.version 3.2."""
        return self.controller.server.config.inter_broker_protocol_version.is_leader_recovery_supported

    def topic_enables_unclean(self, topic: str) -> bool:
        """The topic's own unclean.leader.election.enable override is true."""
        v = self.controller.server.topic_configs.overrides(topic).get("unclean.leader.election.enable")
        return v is not None and v.lower() == "true"

    async def elect_offline_leaders(self, exclude: Collection[int] = frozenset()) -> list[TopicPartition]:
        """Partitions whose leader or ISR members are not live (or in `exclude`) get a new leader and ISR."""
        changed: list[TopicPartition] = []
        for _ in range(WRITE_ATTEMPTS):  # a lost version race re-reads the state and tries again
            if not await self._elect_offline_leaders_once(changed, exclude):
                break
        return changed

    async def _elect_offline_leaders_once(self, changed: list[TopicPartition], exclude: Collection[int]) -> bool:
        """One pass; returns True if some write lost a race and another pass is needed."""
        ctx = self.ctx
        retry = False
        live = ctx.live_broker_ids(exclude)
        unclean = self.controller.server.config["unclean.leader.election.enable"]
        for tp, state in list(ctx.states.items()):
            if tp.topic not in ctx.topics or not election.needs_offline_election(state, live):
                continue
            new_state = election.elect_for_offline(state, ctx.replicas(tp), live,
                                                   unclean or self.topic_enables_unclean(tp.topic), ctx.epoch,
                                                   self.leader_recovery_supported)
            if await self.write_state(tp, new_state):
                if tp not in changed:
                    changed.append(tp)
                if new_state.leader == NO_LEADER:
                    log.warning("%s: no live in-sync replica can lead (ISR %s); partition offline", tp,
                                list(state.isr))
                else:
                    log.info("%s: leader %d at epoch %d, ISR %s", tp, new_state.leader, new_state.leader_epoch,
                             list(new_state.isr))
            else:
                retry = True
        return retry

    async def elect_for_controlled_shutdown(self, broker_id: int) -> tuple[list[TopicPartition], list[TopicPartition]]:
        """Move leadership off `broker_id` (already in `ctx.shutting_down`) and take it out of every ISR.
        Returns (partitions changed, partitions it still leads)."""
        ctx = self.ctx
        changed: list[TopicPartition] = []
        remaining: list[TopicPartition] = []
        for tp in list(ctx.states):
            replicas = ctx.replicas(tp)
            if broker_id not in replicas:
                continue
            written = await self.update_with_retries(tp, lambda st, replicas=replicas: (
                election.elect_for_controlled_shutdown(st, replicas, broker_id, ctx.live_brokers,
                                                       ctx.shutting_down, ctx.epoch)))
            if written:
                changed.append(tp)
            elif written is False or ctx.states[tp].leader == broker_id:
                remaining.append(tp)
        return changed, remaining

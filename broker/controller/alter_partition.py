"""AlterPartition (KIP-497): leaders propose ISR changes to the controller instead of writing them.

Contract:
- Controller side, active controller only, inside one controller event (`AlterPartitionService.alter`, Kafka's
  KafkaController.processAlterPartition): the request as a whole is refused with STALE_BROKER_EPOCH when the
  broker is not live or its epoch is not the current one. Each partition is then judged against the state the
  controller holds, in Kafka's order: a higher partition or leader epoch than ours -> NOT_CONTROLLER (we are
  probably a stale controller); an older leader epoch -> FENCED_LEADER_EPOCH; a request from a broker that is
  not the leader -> INVALID_REQUEST (KRaft's rule; ZooKeeper-mode Kafka does not check); already the state
  asked for (partition epoch may be stale) -> success with the current state; an older partition epoch ->
  INVALID_UPDATE_VERSION; RECOVERING with more than one replica, or RECOVERED -> RECOVERING -> INVALID_REQUEST;
  an ISR naming a broker that is not live or is shutting down -> INELIGIBLE_REPLICA (OPERATION_NOT_ATTEMPTED
  for v0-1); unknown partition -> UNKNOWN_TOPIC_OR_PARTITION, unknown topic id -> UNKNOWN_TOPIC_ID. The rest is
  written to the metadata store (conditional on the partition epoch, fenced by the controller epoch; a lost
  race -> INVALID_UPDATE_VERSION), UpdateMetadata for every partition asked about goes to every live broker,
  and reassignments the new ISRs complete are completed. NEW_LEADER_ELECTED is KRaft's and never answered in
  ZooKeeper mode.
- Leader side, any broker (`RpcAlterPartitionManager`, Kafka's AlterPartitionManager at
  inter.broker.protocol.version 2.7-IV2+): `submit(partition, new_isr, partition_epoch)` sends the proposal to
  the active controller (directly when that is us) and answers the ISR and partition epoch the controller
  committed, or None when it refused (the partition forgets the proposal and waits for the controller's
  LeaderAndIsr or proposes again). Top-level errors and unreachable controllers are retried with backoff
  while this broker still leads the partition at the same leader epoch.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from broker.controller.controller_client import ControllerClient
from broker.metadata import BadVersionError, ControllerMovedError, LeaderAndIsr, MetadataError
from protocol import ApiKey, request_class
from protocol.errors import ErrorCode
from storage import TopicPartition

if TYPE_CHECKING:
    from broker.controller.controller import Controller

log = logging.getLogger("broker.controller")

RECOVERED, RECOVERING = 0, 1
RETRY_BACKOFF_S = 0.05
MAX_RETRY_BACKOFF_S = 1.0


@dataclass(frozen=True)
class IsrProposal:
    """One partition of an AlterPartition request: `topic` is a name (v0-1) or a topic id (v2+)."""

    topic: str | uuid.UUID
    partition: int
    leader_epoch: int
    new_isr: tuple[int, ...]
    leader_recovery_state: int
    partition_epoch: int


Outcome = ErrorCode | LeaderAndIsr  # an error, or the state now committed (partition_epoch set)


class AlterPartitionService:
    def __init__(self, controller: Controller) -> None:
        self.controller = controller
        self.ctx = controller.ctx

    async def alter(self, broker_id: int, broker_epoch: int, version: int, proposals: list[IsrProposal]
                    ) -> tuple[ErrorCode, list[tuple[IsrProposal, TopicPartition | None, Outcome]]]:
        """Judge and apply the proposals inside one controller event; see the module docstring."""
        return await self.controller.enqueue(lambda: self._alter(broker_id, broker_epoch, version, proposals))

    async def _alter(self, broker_id: int, broker_epoch: int, version: int, proposals: list[IsrProposal]
                     ) -> tuple[ErrorCode, list[tuple[IsrProposal, TopicPartition | None, Outcome]]]:
        ctx = self.ctx
        if not self.controller.active:
            return ErrorCode.NOT_CONTROLLER, []
        if ctx.broker_epochs.get(broker_id) != broker_epoch:
            log.info("ignoring AlterPartition from broker %d: broker epoch %d is not the current %s", broker_id,
                     broker_epoch, ctx.broker_epochs.get(broker_id))
            return ErrorCode.STALE_BROKER_EPOCH, []
        names_by_id = {info.topic_id: name for name, info in ctx.topics.items() if info.topic_id is not None}
        results: list[tuple[IsrProposal, TopicPartition | None, Outcome]] = []
        writes: dict[TopicPartition, tuple[LeaderAndIsr, int]] = {}
        for p in proposals:
            name = names_by_id.get(p.topic) if isinstance(p.topic, uuid.UUID) else p.topic
            if name is None:
                results.append((p, None, ErrorCode.UNKNOWN_TOPIC_ID))
                continue
            tp = TopicPartition(name, p.partition)
            outcome = self._judge(broker_id, version, tp, p)
            if outcome is None:
                new = LeaderAndIsr(broker_id, p.leader_epoch, p.new_isr, ctx.epoch, p.partition_epoch,
                                   p.leader_recovery_state)
                writes[tp] = (new, p.partition_epoch)
            results.append((p, tp, outcome if outcome is not None else new))
        written = await self._write(writes)
        results = [(p, tp, written.get(tp, o) if tp is not None else o) for p, tp, o in results]
        asked = [tp for _, tp, _ in results if tp is not None and tp in ctx.states]
        if asked:
            await self.controller.channels.send_update_metadata(asked)
        reassignment = self.controller.reassignment
        done = [tp for _, tp, o in results if tp is not None and isinstance(o, LeaderAndIsr)
                and tp in ctx.reassigning and await reassignment.maybe_complete(tp)]
        if done:
            await reassignment.remove_from_request(done)
        return ErrorCode.NONE, results

    def _judge(self, broker_id: int, version: int, tp: TopicPartition, p: IsrProposal) -> Outcome | None:
        """The error or already-current state answering this proposal, or None to write it."""
        ctx = self.ctx
        current = ctx.states.get(tp)
        if current is None:
            return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        current_epoch = ctx.versions.get(tp, 0)
        if p.partition_epoch > current_epoch or p.leader_epoch > current.leader_epoch:
            return ErrorCode.NOT_CONTROLLER
        if p.leader_epoch < current.leader_epoch:
            return ErrorCode.FENCED_LEADER_EPOCH
        if broker_id != current.leader:
            return ErrorCode.INVALID_REQUEST
        if tuple(p.new_isr) == tuple(current.isr) and p.leader_recovery_state == current.leader_recovery_state:
            return LeaderAndIsr(current.leader, current.leader_epoch, current.isr, current.controller_epoch,
                                current_epoch, current.leader_recovery_state)
        if p.partition_epoch < current_epoch:
            return ErrorCode.INVALID_UPDATE_VERSION
        if p.leader_recovery_state == RECOVERING and len(p.new_isr) > 1:
            return ErrorCode.INVALID_REQUEST
        if current.leader_recovery_state == RECOVERED and p.leader_recovery_state == RECOVERING:
            return ErrorCode.INVALID_REQUEST
        ineligible = set(p.new_isr) - ctx.live_broker_ids()
        if ineligible:
            log.info("rejecting AlterPartition from broker %d for %s: ineligible replicas %s in ISR %s", broker_id,
                     tp, sorted(ineligible), list(p.new_isr))
            return ErrorCode.INELIGIBLE_REPLICA if version > 1 else ErrorCode.OPERATION_NOT_ATTEMPTED
        return None

    async def _write(self, writes: dict[TopicPartition, tuple[LeaderAndIsr, int]]) -> dict[TopicPartition, Outcome]:
        if not writes:
            return {}
        store, ctx = self.controller.store, self.ctx
        outcomes = await self.controller.call(store.update_partition_states, writes,
                                              controller_epoch_zk_version=store.controller_epoch_zk_version)
        out: dict[TopicPartition, Outcome] = {}
        for tp, result in outcomes.items():
            state = writes[tp][0]
            if isinstance(result, MetadataError):
                log.info("AlterPartition for %s not written: %s", tp, result)
                out[tp] = ErrorCode.INVALID_UPDATE_VERSION if isinstance(result, BadVersionError) \
                    else ErrorCode.NOT_CONTROLLER if isinstance(result, ControllerMovedError) \
                    else ErrorCode.UNKNOWN_SERVER_ERROR
                continue
            committed = LeaderAndIsr(state.leader, state.leader_epoch, state.isr, state.controller_epoch, result,
                                     state.leader_recovery_state)
            ctx.states[tp] = committed
            ctx.versions[tp] = result
            log.info("controller: ISR of %s is now %s (partition epoch %d), proposed by its leader", tp,
                     list(state.isr), result)
            out[tp] = committed
        return out


class RpcAlterPartitionManager:
    """The leader's side: proposals sent to the controller; see the module docstring."""

    def __init__(self, controller: Controller) -> None:
        self.controller = controller
        self.broker_id = controller.broker_id
        self._client = ControllerClient(controller.server, "alter-partition")

    async def submit(self, partition: Any, new_isr: list[int], partition_epoch: int) -> tuple[list[int], int] | None:
        leader_epoch = partition.leader_epoch
        backoff = RETRY_BACKOFF_S
        while partition.is_leader and partition.leader_epoch == leader_epoch:
            try:
                top, outcome = await self._send(partition, new_isr, partition_epoch)
            except asyncio.CancelledError:
                raise
            except Exception as e:
                log.info("%s: AlterPartition not answered (%s); retrying", partition.topic_partition, e)
                top, outcome = ErrorCode.NOT_CONTROLLER, None
                self._client.reset()
            if top == ErrorCode.NONE:
                if isinstance(outcome, tuple):
                    return outcome
                log.info("%s: controller refused ISR %s: %s", partition.topic_partition, new_isr,
                         ErrorCode(outcome).name if outcome is not None else "no answer")
                return None
            await asyncio.sleep(backoff)
            backoff = min(backoff * 2, MAX_RETRY_BACKOFF_S)
        return None

    async def _send(self, partition: Any, new_isr: list[int], partition_epoch: int
                    ) -> tuple[ErrorCode, tuple[list[int], int] | ErrorCode | None]:
        controller = self.controller
        tp = partition.topic_partition
        epoch = controller.store.broker_epoch
        if controller.active:
            proposal = IsrProposal(tp.topic, tp.partition, partition.leader_epoch, tuple(new_isr), RECOVERED,
                                   partition_epoch)
            top, results = await controller.alter_partition_service.alter(self.broker_id, epoch, 1, [proposal])
            if top != ErrorCode.NONE or not results:
                return top, None
            outcome = results[0][2]
            if isinstance(outcome, LeaderAndIsr):
                return top, (list(outcome.isr), outcome.partition_epoch)
            return top, outcome
        topic_id = partition.topic_id

        def build(v: int) -> Any:
            Req = request_class(ApiKey.ALTER_PARTITION)
            T = Req.TopicData
            P = T.PartitionData
            if v >= 3:
                part = P(partition_index=tp.partition, leader_epoch=partition.leader_epoch, new_isr_with_epochs=[
                    P.BrokerState(broker_id=b, broker_epoch=-1) for b in new_isr], leader_recovery_state=RECOVERED,
                    partition_epoch=partition_epoch)
            else:
                part = P(partition_index=tp.partition, leader_epoch=partition.leader_epoch, new_isr=list(new_isr),
                         leader_recovery_state=RECOVERED, partition_epoch=partition_epoch)
            topic = T(topic_id=topic_id, partitions=[part]) if v >= 2 else T(topic_name=tp.topic, partitions=[part])
            return Req[v](broker_id=self.broker_id, broker_epoch=epoch, topics=[topic])

        # Topic ids from v2: without one (a topic created before them), stay at v1 as Kafka does.
        caps = {ApiKey.ALTER_PARTITION: 1} if topic_id is None else None
        resp = await self._client.send(build, ApiKey.ALTER_PARTITION, caps)
        if resp.error_code != ErrorCode.NONE:
            return ErrorCode(resp.error_code), None
        for t in resp.topics:
            for p in t.partitions:
                if p.partition_index == tp.partition:
                    if p.error_code != ErrorCode.NONE:
                        return ErrorCode.NONE, ErrorCode(p.error_code)
                    return ErrorCode.NONE, (list(p.isr), p.partition_epoch)
        return ErrorCode.NONE, ErrorCode.UNKNOWN_SERVER_ERROR

    def close(self) -> None:
        self._client.reset()

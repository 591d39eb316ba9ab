"""ISR changes: the leader's write of a new ISR, and the controller's handling of the notifications.

Contract:
- Leader side, any broker (`ZkAlterPartitionManager`, as Kafka's in ZooKeeper mode): `submit(partition,
  new_isr, partition_epoch)` writes the partition state with the new ISR, conditional on `partition_epoch`
  (the state znode version, Kafka's zkVersion), then creates an ISR change notification for the controller.
  It answers (ISR, new partition epoch) as now stored, or None when the leader must wait for the controller's
  LeaderAndIsr (the partition's state is gone, or another leader or leader epoch is recorded). A lost race
  under the same leader and epoch answers what the store holds, so the leader adopts it. AlterPartition to
  the controller (KIP-497) is the other implementation of this seam.
- Controller side (`IsrChangeNotificationHandler`), active controller only: for each notified topic it
  re-reads the partition states, sends UpdateMetadata for the notified partitions and for any other partition
  of those topics whose state moved unnoticed (a lost notification), then lets reassignments whose target
  replicas are now all in the ISR complete.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from broker.metadata import BadVersionError, LeaderAndIsr
from storage import TopicPartition

if TYPE_CHECKING:
    from broker.controller.controller import Controller

log = logging.getLogger("broker.controller")


class ZkAlterPartitionManager:
    def __init__(self, controller: Controller) -> None:
        self.controller = controller
        self.store = controller.store
        self.broker_id = controller.broker_id

    async def submit(self, partition: Any, new_isr: list[int], partition_epoch: int) -> tuple[list[int], int] | None:
        tp = partition.topic_partition
        state = LeaderAndIsr(self.broker_id, partition.leader_epoch, tuple(new_isr), partition.controller_epoch,
                             partition_epoch)
        call = self.controller.call
        try:
            version = await call(self.store.update_partition_state, tp.topic, tp.partition, state, partition_epoch)
        except BadVersionError:
            current = await call(self.store.partition_state, tp.topic, tp.partition)
            if current is None:
                return None
            st, version = current
            if st.leader != self.broker_id or st.leader_epoch != partition.leader_epoch:
                return None  # the controller moved on; its LeaderAndIsr will tell us
            log.info("%s: ISR update lost a race (partition epoch %d is stale); now %s at %d", tp,
                     partition_epoch, list(st.isr), version)
            return list(st.isr), version
        await call(self.store.propagate_isr_change, [tp])
        return list(new_isr), version


class IsrChangeNotificationHandler:
    def __init__(self, controller: Controller) -> None:
        self.controller = controller
        self.ctx = controller.ctx

    async def on_isr_changes(self, tps: Sequence[TopicPartition]) -> None:
        if not self.controller.active:
            # A former controller (session expired while paused) still watches — the store's watches cannot
            # be withdrawn — and its read deleted the notification: the metadata caches miss this change
            # until the controller handles the next notification for the same topic (which also resends
            # what drifted). Handing it back on was tried: the former controller, being quickest to see
            # its own re-creation, kept winning the race.
            log.warning("controller: ISR change notification for %s reached a former controller", tps)
            return
        ctx = self.ctx
        changed = set(tps)
        for t in {tp.topic for tp in tps}:
            before = {tp: st for tp, st in ctx.states.items() if tp.topic == t}
            await self.controller.partition_states.load_states(t)
            # Also any other partition of the topic whose state moved without our knowing: its notification
            # was lost (see above), and this is the earliest we can tell.
            changed |= {tp for tp, st in ctx.states.items() if tp.topic == t and before.get(tp) != st}
        await self.controller.channels.send_update_metadata(sorted(changed))
        reassignment = self.controller.reassignment
        done = [tp for tp in sorted(changed) if tp in ctx.reassigning and await reassignment.maybe_complete(tp)]
        if done:
            await reassignment.remove_from_request(done)

"""Topic deletion (Kafka's TopicDeletionManager, ZooKeeper mode).

Contract (runs inside controller events only): a topic marked for deletion (/admin/delete_topics/<name>, by
DeleteTopics on any broker) is deleted by the active controller, on the marker's watch or on election for
markers left by a previous controller:
1. StopReplica(delete) to every live replica of the topic (their logs go);
2. the topic's znodes, config and marker are removed from the store in one fenced transaction;
3. the controller forgets the topic's partitions, and UpdateMetadata with leader LEADER_DURING_DELETE tells
   every live broker to drop the topic from its metadata.
Replicas on dead brokers are not waited for: unlike Kafka, which keeps the topic "ineligible for deletion"
and retries until they come back, the deletion completes with the live replicas.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Collection
from typing import TYPE_CHECKING

from broker.metadata import UnknownTopicError
from storage import TopicPartition

if TYPE_CHECKING:
    from broker.controller.controller import Controller

log = logging.getLogger("broker.controller")


class TopicDeletionManager:
    def __init__(self, controller: Controller) -> None:
        self.controller = controller
        self.ctx = controller.ctx
        self.store = controller.store

    async def on_deletions(self, names: Collection[str]) -> None:
        if self.controller.active and names:
            await self.delete_topics(set(names))

    async def delete_topics(self, names: set[str]) -> None:
        ctx = self.ctx
        channels = self.controller.channels
        for name in sorted(names):
            info = ctx.topics.get(name)
            tps = ctx.partitions_of(name)
            replicas_by_broker: dict[int, list[TopicPartition]] = {}
            if info is not None:
                for p, replicas in info.assignment.items():
                    for r in replicas:
                        replicas_by_broker.setdefault(r, []).append(TopicPartition(name, p))
            for bid, bt in replicas_by_broker.items():
                if bid in ctx.live_brokers:
                    await channels.stop_replica(bid, bt, True)
            try:
                await self.controller.call(self.store.delete_topic, name,
                                           controller_epoch_zk_version=self.store.controller_epoch_zk_version)
            except UnknownTopicError:
                pass
            tid = info.topic_id if info is not None and info.topic_id else uuid.UUID(int=0)
            for tp in tps:
                ctx.states.pop(tp, None)
                ctx.versions.pop(tp, None)
            ctx.topics.pop(name, None)
            await channels.send_update_metadata([], [(tp, tid) for tp in tps])
            log.info("controller: deleted topic %s", name)

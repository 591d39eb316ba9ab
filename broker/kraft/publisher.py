"""Publishing metadata images to the broker (Kafka 3.9's BrokerMetadataPublisher, the parts we have).

Contract: `MetadataPublisher.publish(delta, image)` is the MetadataLoader's `on_publish`:
- The MetadataCache takes the image: the unfenced brokers (Kafka's KRaft cache lists only those) with their
  registered listeners; every topic whose TopicImage changed gets its partitions (leader, leader epoch,
  replicas, ISR, partition epoch); topics gone from the image are removed. The cache names this broker as
  the controller (a KRaft broker takes admin requests itself and forwards them; Kafka names a random live
  broker) and its controller epoch is set so Metadata and DescribeCluster list brokers.
- Topic configs (ConfigRecords of topics) become the topics' overrides; a changed one reaches the open logs.
- `delta.topics.local_changes(node_id)` drives the ReplicaManager: deleted replicas through the StopReplica
  path (coordinators resign, logs deleted), leaders and followers through become_leader_or_follower with
  Kafka's toLeaderAndIsrPartitionState (controller epoch -1). A partition we keep leading whose partition
  epoch moved without a new leader epoch (an ISR change the controller made, e.g. fencing a follower) takes
  the new ISR in place (`_isr_change`), as Kafka's makeLeader does at an unchanged epoch; so do the replicas a
  reassignment adds (Kafka's controller bumps the leader epoch only when replicas go): the leader tracks them
  as out-of-sync followers, which join the ISR through AlterPartition once caught up.
- Caught-up followers count for the HW of partitions we lead, and join their ISR, only while their broker is
  unfenced, not in controlled shutdown and fetching with its current broker epoch (Kafka's
  isReplicaIsrEligible, `Partition.replica_eligible`); a cluster change lets the HW move past a follower that
  stopped counting.
- Nothing reaches the ReplicaManager before the start-up has caught up with the metadata log (Kafka publishes
  only then): an older image from disk could delete a log the quorum's image keeps. `start_replicas` then
  moves aside the logs on disk that no partition of ours in the image accounts for (Kafka's stray replicas):
  a topic deleted, or deleted and created again, or reassigned away while this broker was down leaves its
  old log renamed `*-stray`, and a partition of the new topic starts empty instead of serving it; every
  partition of ours in the image is then led or followed, and later images apply as deltas.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from broker.kraft.delta import LocalReplicaChanges, MetadataDelta, PartitionInfo
from broker.kraft.image import MetadataImage
from broker.metadata.metadata_cache import BrokerEndpoint, ListenerEndpoint, PartitionMetadata
from storage import TopicPartition

if TYPE_CHECKING:
    from broker.kraft.broker_server import KRaftServer

log = logging.getLogger("broker.kraft.publisher")

SECURITY_PROTOCOL_NAMES = {0: "PLAINTEXT", 1: "SSL", 2: "SASL_PLAINTEXT", 3: "SASL_SSL"}


def broker_endpoint(broker: Any, inter_broker_listener: str) -> BrokerEndpoint:
    listeners = tuple(ListenerEndpoint(e.name, e.host, e.port, SECURITY_PROTOCOL_NAMES.get(e.security_protocol,
                                                                                            "PLAINTEXT"))
                      for e in broker.listeners.values())
    main = next((e for e in listeners if e.listener == inter_broker_listener), listeners[0] if listeners else None)
    return BrokerEndpoint(broker.id, main.host if main else "", main.port if main else -1, broker.rack, listeners)


class MetadataPublisher:
    def __init__(self, server: KRaftServer, node_id: int) -> None:
        self.server = server
        self.node_id = node_id
        self.image: MetadataImage | None = None
        self.follower_epochs: dict[int, int] = {}  # broker id -> the epoch its last Fetch carried (v15+)
        self.on_local_changes: Callable[[LocalReplicaChanges], None] | None = None
        # Kafka applies nothing to the replicas before the start-up has caught up with the metadata log: an
        # image from disk (our own older snapshot, the batches after it) may name topics since deleted or
        # created again, and acting on it could cut a log the quorum's image keeps. Set by `start_replicas`.
        self.replicas_started = False

    def publish(self, delta: MetadataDelta, image: MetadataImage) -> None:
        previous, self.image = self.image, image
        try:
            self._publish_cache(previous, image)
            self._publish_configs(previous, image)
            if delta.topics_delta is not None and self.replicas_started:
                self._apply_local_changes(delta)
            if previous is not None and previous.cluster is not image.cluster:
                self._on_cluster_change()
        except Exception:
            log.exception("publishing metadata image at offset %d failed", image.offset)

    def _publish_cache(self, previous: MetadataImage | None, image: MetadataImage) -> None:
        cache = self.server.metadata_cache
        if previous is None or previous.cluster is not image.cluster:
            inter = self.server.config.inter_broker_listener_name
            cache.set_brokers([broker_endpoint(b, inter) for b in image.cluster.unfenced_brokers()])
        cache.controller_id = self.node_id
        cache.controller_epoch = max(cache.controller_epoch, 0)
        old_topics = previous.topics.by_id if previous is not None else {}
        # Deleted topics leave first: a topic deleted and created again under its name in the same delta must
        # not lose the new one's entry to the old one's removal.
        for topic_id, topic in old_topics.items():
            if topic_id not in image.topics.by_id:
                cache.remove_topic(topic.name)
        for topic_id, topic in image.topics.by_id.items():
            if old_topics.get(topic_id) is topic:
                continue
            if topic.name in cache.topics:
                gone = set(cache.topics[topic.name].partitions) - set(topic.partitions)
                for p in gone:
                    cache.topics[topic.name].partitions.pop(p, None)
            for pid, p in topic.partitions.items():
                cache.update_partition(topic.name, topic_id, PartitionMetadata(
                    pid, p.leader, p.leader_epoch, tuple(p.replicas), tuple(p.isr), (), p.partition_epoch,
                    tuple(p.elr), tuple(p.last_known_elr)))

    def _publish_configs(self, previous: MetadataImage | None, image: MetadataImage) -> None:
        if previous is not None and previous.configs is image.configs:
            return
        configs = self.server.topic_configs
        for topic in image.topics.by_name:
            stored = dict(image.configs.topic_config(topic))
            if stored != dict(configs.overrides(topic)):
                try:
                    configs.set_overrides(topic, stored)
                except ValueError as e:
                    log.warning("topic %s has an invalid config in the metadata log: %s", topic, e)
                    continue
                self.server.on_topic_config_change(topic)

    def _apply_local_changes(self, delta: MetadataDelta) -> None:
        assert delta.topics_delta is not None
        changes = delta.topics_delta.local_changes(self.node_id)
        if self.on_local_changes is not None:
            self.on_local_changes(changes)  # before any log is created: the directories assigned (KIP-858)
        server = self.server
        if changes.deletes:
            server.apply_stop_replica(-1, -1, sorted(changes.deletes), True)
        self._apply_replica_changes(changes)

    def start_replicas(self) -> None:
        """Once the start-up has caught up with the metadata log (Kafka's first publication to the
        ReplicaManager): the logs on disk that no partition of ours in the image accounts for are moved aside
        as Kafka's stray replicas (LogManager.isStrayKraftReplica: no topic id; a topic id the image does not
        have, because the topic was deleted while we were away, perhaps created again under its name; or a
        partition no longer assigned to us), never served as the partition of that name; then every partition
        of ours in the image becomes a leader or follower, and later images apply as deltas."""
        image = self.image
        self.replicas_started = True
        if image is None:
            return
        rm = self.server.replica_manager
        for lg in rm.unhosted_logs():
            tp, topic_id = lg.topic_partition, lg.topic_id
            registration = image.topics.get_partition(topic_id, tp.partition) if topic_id is not None else None
            if topic_id is None:
                why = "no topic id"
            elif registration is None:
                why = f"topic id {topic_id} is not in the metadata"
            elif self.node_id not in registration.replicas:
                why = f"the replicas {list(registration.replicas)} do not include this broker"
            else:
                continue
            rm.set_aside_stray_log(tp, why)
        changes = LocalReplicaChanges()
        for topic in image.topics.by_id.values():
            for partition_id, registration in topic.partitions.items():
                tp = TopicPartition(topic.name, partition_id)
                hosted = rm.partitions.get(tp)
                if self.node_id in registration.replicas and (hosted is None or hosted.log is None):
                    info = PartitionInfo(topic.topic_id, registration)
                    (changes.leaders if registration.leader == self.node_id else changes.followers)[tp] = info
                    changes.topic_ids[topic.name] = topic.topic_id
                    changes.directory_ids[tp] = registration.directory(self.node_id)
        if self.on_local_changes is not None:
            self.on_local_changes(changes)  # before any log is created: the directories assigned (KIP-858)
        self._apply_replica_changes(changes)

    def _apply_replica_changes(self, changes: LocalReplicaChanges) -> None:
        rm = self.server.replica_manager
        states = {}
        for tp, info in {**changes.leaders, **changes.followers}.items():
            partition = rm.partitions.get(tp)
            state = info.partition_state(is_new=partition is None)
            if partition is not None and partition.log is not None and state.leader_epoch == partition.leader_epoch \
                    and state.leader == partition.leader_id:
                # Same leader, same epoch: the ISR, the partition epoch and, while a reassignment adds replicas
                # (Kafka bumps the leader epoch only when replicas go), the replica set moved.
                if partition.is_leader and state.partition_epoch > partition.partition_epoch:
                    self._isr_change(partition, state)
                elif not partition.is_leader:
                    partition.isr, partition.partition_epoch = list(state.isr), state.partition_epoch
                    partition.assigned_replicas = list(state.replicas)
                continue
            states[tp] = state
        if states:
            # No controller epoch in KRaft (the states carry -1): the ZooKeeper-mode staleness check must pass.
            errors = rm.become_leader_or_follower(-1, rm.controller_epoch, states, dict(changes.topic_ids))
            failed = {tp: e for tp, e in errors.items() if e != 0}
            if failed:
                log.warning("applying leadership from the metadata log: %s", failed)
            for tp in states:
                if tp in rm.partitions:
                    rm.partitions[tp].replica_eligible = self.replica_eligible

    def replica_eligible(self, broker_id: int) -> bool:
        """Kafka's isReplicaIsrEligible in KRaft: the broker is registered, unfenced, not shutting down, and
        its fetches carry its current broker epoch (or -1, which Kafka accepts too)."""
        broker = self.image.cluster.broker(broker_id) if self.image is not None else None
        epoch = self.follower_epochs.get(broker_id, -1)
        return broker is not None and not broker.fenced and not broker.in_controlled_shutdown and \
            epoch in (-1, broker.epoch)

    def _on_cluster_change(self) -> None:
        """A fenced or shutting-down follower no longer holds back the HW of the partitions we lead."""
        from broker.server.replica_manager import now_ms

        now = now_ms()
        for partition in list(self.server.replica_manager.partitions.values()):
            if partition.is_leader and partition.log is not None and partition.maybe_increment_leader_hw(now) \
                    and partition.on_isr_change is not None:
                partition.on_isr_change(partition)

    def _isr_change(self, partition: Any, state: Any) -> None:
        """An ISR the controller changed while we stay leader in the same epoch (Kafka's makeLeader with an
        unchanged leader epoch): the new ISR and partition epoch, the followers it dropped no longer counted as
        caught up, the HW moved if it can. No new epoch starts, so the log's pending writes need no wait."""
        from broker.cluster.replica import Replica
        from broker.server.replica_manager import now_ms

        now = now_ms()
        partition.isr = list(state.isr)
        partition.pending_isr = None
        partition.partition_epoch = state.partition_epoch
        if list(state.replicas) != partition.assigned_replicas:
            # Replicas a reassignment adds: followers to track from their first fetch, out of sync until then.
            partition.assigned_replicas = list(state.replicas)
            for rid in state.replicas:
                if rid != partition.local_broker_id and rid not in partition.remote_replicas:
                    replica = Replica(rid)
                    replica.reset(now, partition.log_end_offset, False)
                    partition.remote_replicas[rid] = replica
        for rid, replica in partition.remote_replicas.items():
            replica.last_caught_up_time_ms = now if rid in partition.isr else 0
        partition.maybe_increment_leader_hw(now)
        if partition.on_isr_change is not None:
            partition.on_isr_change(partition)
        log.info("%s: ISR %s at partition epoch %d from the metadata log", partition.topic_partition, state.isr,
                 state.partition_epoch)

"""The controller's requests to brokers: LeaderAndIsr, UpdateMetadata and StopReplica, built and parsed.

Contract: `build_*(version, ...)` turns the broker's own values (PartitionState, BrokerEndpoint,
PartitionMetadata, TopicPartition) into the request Kafka's ZooKeeper-mode controller sends at that version;
`parse_*(request)` turns a decoded request back into those values (the receiving handlers in broker/apis use
them). Fields a version lacks get Kafka's defaults (zero topic id, no rack, no offline replicas). The
channel manager (channel_manager.py) sends what these build.
"""

from __future__ import annotations

import uuid
from typing import Any

from broker.cluster.partition import PartitionState
from broker.metadata.metadata_cache import SECURITY_PROTOCOL_IDS, BrokerEndpoint, ListenerEndpoint, PartitionMetadata
from protocol import ApiKey, request_class
from storage import TopicPartition

ZERO_UUID = uuid.UUID(int=0)
PLAINTEXT = 0  # SecurityProtocol id


# ---------------------------------------------------------------- LeaderAndIsr
def build_leader_and_isr(version: int, controller_id: int, controller_epoch: int,
                         states: dict[TopicPartition, PartitionState], topic_ids: dict[str, uuid.UUID],
                         leaders: list[BrokerEndpoint], broker_epoch: int = -1) -> Any:
    Req = request_class(ApiKey.LEADER_AND_ISR)
    PS = Req.LeaderAndIsrPartitionState

    def ps(tp: TopicPartition, s: PartitionState) -> Any:
        return PS(topic_name=tp.topic, partition_index=tp.partition, controller_epoch=s.controller_epoch,
                  leader=s.leader, leader_epoch=s.leader_epoch, isr=list(s.isr), partition_epoch=s.partition_epoch,
                  replicas=list(s.replicas), adding_replicas=list(s.adding_replicas),
                  removing_replicas=list(s.removing_replicas), is_new=s.is_new,
                  leader_recovery_state=s.leader_recovery_state)

    live = [Req.LeaderAndIsrLiveLeader(broker_id=b.broker_id, host_name=b.host, port=b.port) for b in leaders]
    fields: dict[str, Any] = dict(controller_id=controller_id,
                                  controller_epoch=controller_epoch, broker_epoch=broker_epoch, request_type=0,
                                  live_leaders=live)
    if version < 2:
        fields["ungrouped_partition_states"] = [ps(tp, s) for tp, s in states.items()]
    else:
        by_topic: dict[str, list] = {}
        for tp, s in states.items():
            by_topic.setdefault(tp.topic, []).append(ps(tp, s))
        fields["topic_states"] = [Req.LeaderAndIsrTopicState(topic_name=t, topic_id=topic_ids.get(t, ZERO_UUID),
                                                             partition_states=p) for t, p in by_topic.items()]
    return Req[version](**fields)


def parse_leader_and_isr(request: Any) -> tuple[dict[TopicPartition, PartitionState], dict[str, uuid.UUID],
                                                list[BrokerEndpoint]]:
    states: dict[TopicPartition, PartitionState] = {}
    topic_ids: dict[str, uuid.UUID] = {}
    if request.API_VERSION < 2:
        entries = [(p.topic_name, p) for p in request.ungrouped_partition_states]
    else:
        entries = []
        for t in request.topic_states:
            if request.API_VERSION >= 5 and t.topic_id is not None and t.topic_id != ZERO_UUID:
                topic_ids[t.topic_name] = t.topic_id
            entries.extend((t.topic_name, p) for p in t.partition_states)
    for topic, p in entries:
        states[TopicPartition(topic, p.partition_index)] = PartitionState(
            leader=p.leader, leader_epoch=p.leader_epoch, isr=list(p.isr), replicas=list(p.replicas),
            partition_epoch=p.partition_epoch, controller_epoch=p.controller_epoch,
            adding_replicas=list(p.adding_replicas or []), removing_replicas=list(p.removing_replicas or []),
            is_new=bool(p.is_new), leader_recovery_state=p.leader_recovery_state if request.API_VERSION >= 6 else 0)
    leaders = [BrokerEndpoint(b.broker_id, b.host_name, b.port) for b in request.live_leaders]
    return states, topic_ids, leaders


# ---------------------------------------------------------------- UpdateMetadata
def build_update_metadata(version: int, controller_id: int, controller_epoch: int, brokers: list[BrokerEndpoint],
                          partitions: list[tuple[TopicPartition, uuid.UUID, PartitionMetadata]],
                          broker_epoch: int = -1) -> Any:
    Req = request_class(ApiKey.UPDATE_METADATA)
    PS = Req.UpdateMetadataPartitionState
    B = Req.UpdateMetadataBroker

    def ps(tp: TopicPartition, pm: PartitionMetadata) -> Any:
        return PS(topic_name=tp.topic, partition_index=tp.partition, controller_epoch=controller_epoch,
                  leader=pm.leader, leader_epoch=pm.leader_epoch, isr=list(pm.isr), zk_version=pm.partition_epoch,
                  replicas=list(pm.replicas), offline_replicas=list(pm.offline_replicas))

    live = []
    for b in brokers:
        if version == 0:
            live.append(B(id=b.broker_id, v0_host=b.host, v0_port=b.port))
        else:
            listeners = b.listeners or (ListenerEndpoint("PLAINTEXT", b.host, b.port, "PLAINTEXT"),)
            if version < 3:  # no listener names before v3: one endpoint per security protocol
                first: dict[str, ListenerEndpoint] = {}
                for ep in listeners:
                    first.setdefault(ep.security_protocol, ep)
                listeners = tuple(first.values())
            live.append(B(id=b.broker_id, rack=b.rack, endpoints=[B.UpdateMetadataEndpoint(
                port=ep.port, host=ep.host, listener=ep.listener,
                security_protocol=SECURITY_PROTOCOL_IDS.get(ep.security_protocol, PLAINTEXT)) for ep in listeners]))
    fields: dict[str, Any] = dict(controller_id=controller_id, request_type=0,
                                  controller_epoch=controller_epoch, broker_epoch=broker_epoch, live_brokers=live)
    if version < 5:
        fields["ungrouped_partition_states"] = [ps(tp, pm) for tp, _, pm in partitions]
    else:
        by_topic: dict[str, tuple[uuid.UUID, list]] = {}
        for tp, tid, pm in partitions:
            by_topic.setdefault(tp.topic, (tid, []))[1].append(ps(tp, pm))
        fields["topic_states"] = [Req.UpdateMetadataTopicState(topic_name=t, topic_id=tid, partition_states=p)
                                  for t, (tid, p) in by_topic.items()]
    return Req[version](**fields)


def parse_update_metadata(request: Any, inter_broker_listener: str = "PLAINTEXT"
                          ) -> tuple[list[BrokerEndpoint], list[tuple[TopicPartition, uuid.UUID, PartitionMetadata]]]:
    """The live brokers (each with every endpoint it advertises; host/port those of `inter_broker_listener`,
    this broker's, as Kafka's brokers share one) and the partition states of an UpdateMetadata request."""
    brokers = []
    protocols = {v: k for k, v in SECURITY_PROTOCOL_IDS.items()}
    for b in request.live_brokers:
        if request.API_VERSION == 0:
            brokers.append(BrokerEndpoint(b.id, b.v0_host, b.v0_port))
            continue
        listeners = tuple(ListenerEndpoint(
            e.listener or protocols.get(e.security_protocol, "PLAINTEXT"), e.host, e.port,
            protocols.get(e.security_protocol, "PLAINTEXT")) for e in b.endpoints)
        ep = next((e for e in listeners if e.listener == inter_broker_listener), None)
        if ep is not None:
            brokers.append(BrokerEndpoint(b.id, ep.host, ep.port, b.rack if request.API_VERSION >= 2 else None,
                                          listeners))
    if request.API_VERSION < 5:
        entries = [(p.topic_name, ZERO_UUID, p) for p in request.ungrouped_partition_states]
    else:
        entries = [(t.topic_name, t.topic_id if request.API_VERSION >= 7 and t.topic_id else ZERO_UUID, p)
                   for t in request.topic_states for p in t.partition_states]
    partitions = []
    for topic, tid, p in entries:
        partitions.append((TopicPartition(topic, p.partition_index), tid, PartitionMetadata(
            p.partition_index, p.leader, p.leader_epoch, tuple(p.replicas), tuple(p.isr),
            tuple(p.offline_replicas or ()) if request.API_VERSION >= 4 else (), p.zk_version)))
    return brokers, partitions


# ---------------------------------------------------------------- StopReplica
def build_stop_replica(version: int, controller_id: int, controller_epoch: int, partitions: list[TopicPartition],
                       delete: bool, broker_epoch: int = -1) -> Any:
    Req = request_class(ApiKey.STOP_REPLICA)
    fields: dict[str, Any] = dict(controller_id=controller_id,
                                  controller_epoch=controller_epoch, broker_epoch=broker_epoch)
    by_topic: dict[str, list[int]] = {}
    for tp in partitions:
        by_topic.setdefault(tp.topic, []).append(tp.partition)
    if version == 0:
        fields.update(delete_partitions=delete, ungrouped_partitions=[
            Req.StopReplicaPartitionV0(topic_name=tp.topic, partition_index=tp.partition) for tp in partitions])
    elif version <= 2:
        fields.update(delete_partitions=delete, topics=[
            Req.StopReplicaTopicV1(name=t, partition_indexes=ps) for t, ps in by_topic.items()])
    else:
        TS = Req.StopReplicaTopicState
        fields["topic_states"] = [TS(topic_name=t, partition_states=[
            TS.StopReplicaPartitionState(partition_index=p, leader_epoch=-2 if delete else -1, delete_partition=delete)
            for p in ps]) for t, ps in by_topic.items()]
    return Req[version](**fields)


def parse_stop_replica(request: Any) -> list[tuple[TopicPartition, bool]]:
    v = request.API_VERSION
    if v == 0:
        return [(TopicPartition(p.topic_name, p.partition_index), bool(request.delete_partitions))
                for p in request.ungrouped_partitions]
    if v <= 2:
        return [(TopicPartition(t.name, p), bool(request.delete_partitions))
                for t in request.topics for p in t.partition_indexes]
    return [(TopicPartition(t.topic_name, p.partition_index), bool(p.delete_partition))
            for t in request.topic_states for p in t.partition_states]

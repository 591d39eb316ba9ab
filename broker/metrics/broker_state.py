"""Kafka's broker gauges, read from a running broker at scrape time (on its event loop, which owns that state).

Contract: `metric_families(server)` returns every family a scrape serves: the counters of `server.metrics`
(broker_metrics.py), then these gauges, then the pushed client metrics (`server.client_metrics`, KIP-714). The
server is read by duck typing (no import of it: it builds and calls this package), so one shape is assumed:
`replica_manager.partitions` (Partition: is_leader, isr, assigned_replicas, min_insync_replicas, log),
`metadata_cache.topics`, `controller.active`, `socket_servers`, the purgatories and the group coordinator.

Gauges, with the names the Prometheus JMX exporter's Kafka rules give Kafka's MBeans:
- kafka.server ReplicaManager: PartitionCount, LeaderCount, UnderReplicatedPartitions (led here with fewer
  in-sync replicas than assigned), UnderMinIsrPartitionCount, AtMinIsrPartitionCount, OfflineReplicaCount (0:
  a failed log write is answered KAFKA_STORAGE_ERROR, no replica goes offline here), ProducerIdCount.
- kafka.log Log: Size, LogStartOffset, LogEndOffset, NumLogSegments {topic, partition} of each local replica.
- kafka.controller KafkaController: ActiveControllerCount, and on the active controller OfflinePartitionsCount
  (no live leader), GlobalTopicCount, GlobalPartitionCount (0 elsewhere, as in Kafka).
- kafka.network RequestChannel: RequestQueueSize (frames received, not yet handled), ResponseQueueSize (answers
  waiting behind an earlier one of their connection).
- kafka.server DelayedOperationPurgatory: PurgatorySize {delayedoperation: Produce, Fetch, DeleteRecords}.
- kafka.coordinator.group GroupMetadataManager: NumGroups, NumOffsets (of the groups this broker coordinates).
- kafka.server socket-server-metrics: connection_count {listener, networkprocessor="0"}.
"""

from __future__ import annotations

from typing import Any

from broker.metrics.broker_metrics import Family


def _gauge(name: str, help_: str, value: float, labels: dict[str, str] | None = None) -> Family:
    return name, "gauge", help_, [(labels or {}, float(value))]


def metric_families(server: Any) -> list[Family]:
    metrics = server.metrics
    cache = server.metadata_cache
    metrics.remove_deleted_topics(cache.topics)
    out = metrics.families()
    out.extend(_replica_manager(server))
    out.extend(_logs(server))
    out.extend(_controller(server))
    out.extend(_network(server))
    out.extend(_coordinators(server))
    client_metrics = getattr(server, "client_metrics", None)  # made when a client first asks (KIP-714)
    if client_metrics is not None:
        out.extend(client_metrics.families())
    else:
        out.append(_gauge("kafka_server_client_metrics_instance_count", "Kafka's client-metrics instance-count", 0))
    return out


def _replica_manager(server: Any) -> list[Family]:
    partitions = server.replica_manager.partitions
    leaders = [p for p in partitions.values() if p.is_leader]
    under = sum(1 for p in leaders if len(p.isr) < len(p.assigned_replicas))
    under_min = sum(1 for p in leaders if len(p.isr) < p.min_insync_replicas)
    at_min = sum(1 for p in leaders if len(p.isr) == p.min_insync_replicas)
    producers = sum(len(p.log.producer_state.producers) for p in partitions.values() if p.log is not None)
    rm = "kafka_server_replicamanager_"
    return [
        _gauge(rm + "partitioncount", "Kafka's ReplicaManager PartitionCount", len(partitions)),
        _gauge(rm + "leadercount", "Kafka's ReplicaManager LeaderCount", len(leaders)),
        _gauge(rm + "underreplicatedpartitions", "Kafka's ReplicaManager UnderReplicatedPartitions", under),
        _gauge(rm + "underminisrpartitioncount", "Kafka's ReplicaManager UnderMinIsrPartitionCount", under_min),
        _gauge(rm + "atminisrpartitioncount", "Kafka's ReplicaManager AtMinIsrPartitionCount", at_min),
        _gauge(rm + "offlinereplicacount", "Kafka's ReplicaManager OfflineReplicaCount", 0),
        _gauge(rm + "produceridcount", "Kafka's ReplicaManager ProducerIdCount", producers),
    ]


def _logs(server: Any) -> list[Family]:
    sizes: list[tuple[dict[str, str], float]] = []
    starts: list[tuple[dict[str, str], float]] = []
    ends: list[tuple[dict[str, str], float]] = []
    segments: list[tuple[dict[str, str], float]] = []
    for tp, p in sorted(server.replica_manager.partitions.items(), key=lambda item: (item[0].topic, item[0].partition)):
        log = p.log
        if log is None:
            continue
        labels = {"topic": tp.topic, "partition": str(tp.partition)}
        sizes.append((labels, float(log.size_in_bytes())))
        starts.append((labels, float(log.log_start_offset)))
        ends.append((labels, float(log.log_end_offset)))
        segments.append((labels, float(len(log.segments))))
    return [("kafka_log_log_size", "gauge", "Kafka's Log Size", sizes),
            ("kafka_log_log_logstartoffset", "gauge", "Kafka's Log LogStartOffset", starts),
            ("kafka_log_log_logendoffset", "gauge", "Kafka's Log LogEndOffset", ends),
            ("kafka_log_log_numlogsegments", "gauge", "Kafka's Log NumLogSegments", segments)]


def _controller(server: Any) -> list[Family]:
    active = bool(getattr(server.controller, "active", False))
    offline = topics = partitions = 0
    if active:
        cache = server.metadata_cache
        topics = len(cache.topics)
        for tm in cache.topics.values():
            partitions += len(tm.partitions)
            offline += sum(1 for pm in tm.partitions.values() if cache.live_leader(pm) < 0)
    kc = "kafka_controller_kafkacontroller_"
    return [
        _gauge(kc + "activecontrollercount", "Kafka's KafkaController ActiveControllerCount", int(active)),
        _gauge(kc + "offlinepartitionscount", "Kafka's KafkaController OfflinePartitionsCount", offline),
        _gauge(kc + "globaltopiccount", "Kafka's KafkaController GlobalTopicCount", topics),
        _gauge(kc + "globalpartitioncount", "Kafka's KafkaController GlobalPartitionCount", partitions),
    ]


def _network(server: Any) -> list[Family]:
    requests = responses = 0
    connections: list[tuple[dict[str, str], float]] = []
    for listener, socket_server in server.socket_servers.items():
        conns = list(socket_server.connections.values())
        connections.append(({"listener": listener, "networkprocessor": "0"}, float(len(conns))))
        for conn in conns:
            requests += len(getattr(conn, "_frames", ()))
            responses += len(getattr(conn, "_answers", ()))
    rm = server.replica_manager
    purgatories = [({"delayedoperation": name}, float(purgatory.watched()))
                   for name, purgatory in (("Produce", rm.produce_purgatory), ("Fetch", rm.fetch_purgatory),
                                           ("DeleteRecords", rm.delete_records_purgatory))]
    return [
        _gauge("kafka_network_requestchannel_requestqueuesize", "Kafka's RequestChannel RequestQueueSize", requests),
        _gauge("kafka_network_requestchannel_responsequeuesize", "Kafka's RequestChannel ResponseQueueSize",
               responses),
        ("kafka_server_delayedoperationpurgatory_purgatorysize", "gauge",
         "Kafka's DelayedOperationPurgatory PurgatorySize", purgatories),
        ("kafka_server_socket_server_metrics_connection_count", "gauge",
         "Kafka's socket-server-metrics connection-count", connections),
    ]


def _coordinators(server: Any) -> list[Family]:
    # the coordinator as it is: a scrape must not start it (KafkaServer starts it on first use)
    coordinator = server.started_group_coordinator()
    manager = getattr(getattr(coordinator, "coordinator", None), "manager", None)
    groups = list(manager.groups.values()) if manager is not None else []
    offsets = sum(len(getattr(g, "offsets", ())) for g in groups)
    gm = "kafka_coordinator_group_groupmetadatamanager_"
    return [_gauge(gm + "numgroups", "Kafka's GroupMetadataManager NumGroups", len(groups)),
            _gauge(gm + "numoffsets", "Kafka's GroupMetadataManager NumOffsets", offsets)]

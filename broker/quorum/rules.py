"""The QuorumController rules (tests/kraft_controller.py's header lists them): broker
registration and heartbeats, fencing, topics, configs, elections, AlterPartition and producer ids, each writing
the metadata records Kafka 3.9's controller writes. A mixin of the quorum controller
(broker/quorum/controller.py) and of the test controller (tests/kraft_controller.py).
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from broker.kraft.image import NO_LEADER, PartitionRegistration
from broker.kraft.snapshot import IBP_4_3_IV0, partition_record_version, register_broker_record_version
from broker.quorum.reassignment import NO_LEADER_CHANGE, ReassignmentRules
from protocol import ApiKey, response_class
from protocol.errors import ErrorCode
from protocol.metadata_records import (
    BrokerRegistrationChangeRecord,
    ConfigRecord,
    FenceBrokerRecord,
    MetadataRecord,
    PartitionChangeRecord,
    ProducerIdsRecord,
    RegisterBrokerRecord,
    TopicRecord,
    UnfenceBrokerRecord,
)

log = logging.getLogger("tests.kraft_controller")

PRODUCER_ID_BLOCK = 1000
IBP_3_3_IV2, IBP_3_3_IV3, IBP_3_6_IV0 = 6, 7, 12


def _placement_refusal(replication_factor: int, placeable: int) -> str | None:
    """Why `replication_factor` replicas cannot be placed on `placeable` brokers (Kafka 4.4's StripedReplicaPlacer
    messages), or None."""
    if replication_factor <= 0:
        return "Replication factor must be larger than 0."
    if placeable == 0:
        return "All brokers are currently fenced, or have all their log directories cordoned."
    if replication_factor > placeable:
        return (f"Unable to replicate the partition {replication_factor} time(s): The target replication factor of "
                f"{replication_factor} cannot be reached because only {placeable} broker(s) are registered or some "
                "brokers have all their log directories cordoned.")
    return None


@dataclass
class BrokerState:
    epoch: int
    incarnation_id: uuid.UUID
    last_heartbeat: float
    metadata_offset: int = -1
    shutdown_offset: int | None = None  # the log end after its controlled shutdown's records


class QuorumRules(ReassignmentRules):
    """What the rules need from the controller they are mixed into."""

    cluster_id: str
    level: int
    session_timeout_s: float
    default_partitions: int
    default_replication_factor: int
    brokers: dict[int, BrokerState]
    end_offset: int
    image: Any
    is_leader: bool

    # From broker/quorum/jbod.py (annotations only: a stub here would shadow it).
    _directories_offline: Callable[[int, int, list[uuid.UUID]], None]
    default_dir: Callable[[int], uuid.UUID]

    def append(self, messages: list[MetadataRecord]) -> int:
        raise NotImplementedError

    @staticmethod
    def _response(request: Any, **fields: Any) -> Any:
        return response_class(request.API_KEY)[request.API_VERSION](**fields)

    # ------------------------------------------------------------------ broker lifecycle
    def _controller_error(self, request: Any, error: int, **fields: Any) -> Any:
        return self._response(request, throttle_time_ms=0, error_code=error, **fields)

    async def _broker_registration(self, request: Any) -> Any:
        if not self.is_leader:
            return self._controller_error(request, ErrorCode.NOT_CONTROLLER)
        if request.cluster_id != self.cluster_id:
            return self._controller_error(request, ErrorCode.INCONSISTENT_CLUSTER_ID)
        features = {f.name: (f.min_supported_version, f.max_supported_version) for f in request.features}
        lo, hi = features.get("metadata.version", (0, -1))
        if not lo <= self.level <= hi:
            return self._controller_error(request, ErrorCode.UNSUPPORTED_VERSION)
        for name, level in self.image.features.finalized_versions.items():
            lo, hi = features.get(name, (0, 0))  # a feature the broker does not list: it supports level 0 only
            if not lo <= level <= hi:
                return self._controller_error(request, ErrorCode.UNSUPPORTED_VERSION)
        existing = self.brokers.get(request.broker_id)
        now = time.monotonic()
        if existing is not None and existing.incarnation_id != request.incarnation_id and \
                now - existing.last_heartbeat < self.session_timeout_s:
            return self._controller_error(request, ErrorCode.DUPLICATE_BROKER_REGISTRATION)
        version = register_broker_record_version(self.level)
        fields: dict[str, Any] = dict(
            broker_id=request.broker_id, incarnation_id=request.incarnation_id, broker_epoch=self.end_offset,
            end_points=[RegisterBrokerRecord.BrokerEndpoint(name=li.name, host=li.host, port=li.port,
                                                            security_protocol=li.security_protocol)
                        for li in request.listeners],
            features=[RegisterBrokerRecord.BrokerFeature(name=n, min_supported_version=a, max_supported_version=b)
                      for n, (a, b) in sorted(features.items())],
            rack=request.rack, fenced=True)
        if version >= 1:
            fields["in_controlled_shutdown"] = False
        if version >= 3:
            fields["log_dirs"] = list(request.log_dirs) if request.API_VERSION >= 2 else []
        epoch = self.append([RegisterBrokerRecord(**fields, version=version)])
        self.brokers[request.broker_id] = BrokerState(epoch, request.incarnation_id, now)
        return self._controller_error(request, ErrorCode.NONE, broker_epoch=epoch)

    def _check_broker_epoch(self, broker_id: int, epoch: int) -> ErrorCode:
        state = self.brokers.get(broker_id)
        reg = self.image.cluster.broker(broker_id)
        if state is None or reg is None or reg.epoch != epoch:
            return ErrorCode.STALE_BROKER_EPOCH
        return ErrorCode.NONE

    def _fence_record(self, broker_id: int, fence: bool) -> MetadataRecord:
        epoch = self.brokers[broker_id].epoch
        if self.level >= IBP_3_3_IV2:
            return BrokerRegistrationChangeRecord(broker_id=broker_id, broker_epoch=epoch, fenced=1 if fence else -1,
                                                  version=0)
        cls = FenceBrokerRecord if fence else UnfenceBrokerRecord
        return cls(id=broker_id, epoch=epoch, version=0)

    def _placeable_brokers(self) -> list[int]:
        """The brokers new replicas go to, in id order: unfenced, with a directory that is not cordoned (Kafka's
        ClusterControlManager.usableBrokers)."""
        return sorted(b.id for b in self.image.cluster.unfenced_brokers() if b.has_uncordoned_dirs())

    def _acceptable(self, broker_id: int) -> bool:
        reg = self.image.cluster.broker(broker_id)
        return reg is not None and not reg.fenced and not reg.in_controlled_shutdown

    def _leader_and_isr_updates(self, remove: int = NO_LEADER, add: int = NO_LEADER,
                                only: set[tuple[uuid.UUID, int]] | None = None) -> list[MetadataRecord]:
        """generateLeaderAndIsrUpdates for the partitions with `remove` in their ISR (or, when adding, every
        partition without a leader that has `add` in its ISR); `only` those (topic id, partition) if given."""
        out: list[MetadataRecord] = []
        for topic in self.image.topics.by_id.values():
            for pid, p in sorted(topic.partitions.items()):
                if only is not None and (topic.topic_id, pid) not in only:
                    continue
                if remove != NO_LEADER and remove not in p.isr:
                    continue
                if add != NO_LEADER and (add not in p.isr or p.leader != NO_LEADER):
                    continue
                target = [r for r in p.isr if r != remove] or list(p.isr)

                def ok(r: int, target: list[int] = target) -> bool:
                    return r != remove and (r == add or self._acceptable(r)) and r in target
                record = self.partition_change(topic.topic_id, pid, p, isr=target, acceptable=ok)
                if record is not None:
                    out.append(record)
        return out

    async def _broker_heartbeat(self, request: Any) -> Any:
        def answer(error: int = 0, caught_up: bool = False, fenced: bool = True, shut_down: bool = False) -> Any:
            return self._response(request, throttle_time_ms=0, error_code=error, is_caught_up=caught_up,
                                  is_fenced=fenced, should_shut_down=shut_down)
        if not self.is_leader:
            return answer(ErrorCode.NOT_CONTROLLER)
        error = self._check_broker_epoch(request.broker_id, request.broker_epoch)
        if error:
            return answer(error)
        state = self.brokers[request.broker_id]
        state.last_heartbeat = time.monotonic()
        state.metadata_offset = request.current_metadata_offset
        if request.API_VERSION >= 1 and request.offline_log_dirs:
            self._directories_offline(request.broker_id, state.epoch, list(request.offline_log_dirs))
        if request.API_VERSION >= 2 and self.level >= IBP_4_3_IV0 and request.cordoned_log_dirs is not None:
            self._directories_cordoned(request.broker_id, state.epoch, list(request.cordoned_log_dirs))
        reg = self.image.cluster.broker(request.broker_id)
        caught_up = request.current_metadata_offset >= state.epoch
        if reg.fenced:
            if request.want_shut_down:
                return answer(caught_up=caught_up, fenced=True, shut_down=True)
            if caught_up and not request.want_fence:
                self.append([*self._leader_and_isr_updates(add=request.broker_id),
                             self._fence_record(request.broker_id, fence=False)])
                return answer(caught_up=True, fenced=False)
            return answer(caught_up=caught_up, fenced=True)
        if request.want_shut_down:
            if state.shutdown_offset is None:
                records: list[MetadataRecord] = []
                if self.level >= IBP_3_3_IV3:
                    records.append(BrokerRegistrationChangeRecord(
                        broker_id=request.broker_id, broker_epoch=state.epoch, in_controlled_shutdown=1, version=1))
                self.append(records or [self._fence_record(request.broker_id, fence=True)])
                moves = self._leader_and_isr_updates(remove=request.broker_id)
                if moves:
                    self.append(moves)
                state.shutdown_offset = self.end_offset - 1
            active = [s.metadata_offset for i, s in self.brokers.items()
                      if (r := self.image.cluster.broker(i)) is not None and not r.fenced]
            if min(active, default=state.shutdown_offset) >= state.shutdown_offset:
                self.append([self._fence_record(request.broker_id, fence=True)])
                return answer(caught_up=caught_up, fenced=True, shut_down=True)
            return answer(caught_up=caught_up, fenced=False)
        if request.want_fence:
            self.append([*self._leader_and_isr_updates(remove=request.broker_id),
                         self._fence_record(request.broker_id, fence=True)])
            return answer(caught_up=caught_up, fenced=True)
        return answer(caught_up=caught_up, fenced=False)

    async def _expire_sessions(self) -> None:
        while True:
            await asyncio.sleep(0.1)
            if not self.is_leader:
                continue
            now = time.monotonic()
            for broker_id, state in self.brokers.items():
                reg = self.image.cluster.broker(broker_id)
                if reg is not None and not reg.fenced and now - state.last_heartbeat > self.session_timeout_s:
                    log.info("controller: broker %d session expired: fencing it", broker_id)
                    self.append([*self._leader_and_isr_updates(remove=broker_id),
                                 self._fence_record(broker_id, fence=True)])

    def fence(self, broker_id: int) -> None:
        """Fence a broker now, as its session expiring would."""
        self.append([*self._leader_and_isr_updates(remove=broker_id), self._fence_record(broker_id, fence=True)])

    # ------------------------------------------------------------------ topics
    async def _create_topics(self, request: Any) -> Any:
        Resp = response_class(ApiKey.CREATE_TOPICS)
        results = []
        for t in request.topics:
            def result(error: int, message: str | None = None, name: str = t.name, **fields: Any) -> Any:
                return Resp.CreatableTopicResult(name=name, error_code=error, error_message=message, **fields)
            if not self.is_leader:
                results.append(result(ErrorCode.NOT_CONTROLLER))
                continue
            if self.image.topics.get_topic(t.name) is not None:
                results.append(result(ErrorCode.TOPIC_ALREADY_EXISTS, f"Topic '{t.name}' already exists."))
                continue
            placeable = self._placeable_brokers()
            if t.assignments:
                assignment = {a.partition_index: list(a.broker_ids) for a in t.assignments}
            else:
                partitions = self.default_partitions if t.num_partitions == -1 else t.num_partitions
                rf = self.default_replication_factor if t.replication_factor == -1 else t.replication_factor
                if partitions <= 0:
                    results.append(result(ErrorCode.INVALID_PARTITIONS,
                                          "Number of partitions was set to an invalid non-positive value."))
                    continue
                refusal = _placement_refusal(rf, len(placeable))
                if refusal:
                    results.append(result(ErrorCode.INVALID_REPLICATION_FACTOR, refusal))
                    continue
                assignment = {p: [placeable[(p + i) % len(placeable)] for i in range(rf)]
                              for p in range(partitions)}
            topic_id = uuid.uuid4()
            configs = {c.name: c.value for c in (t.configs or [])}
            if not request.validate_only:
                records: list[MetadataRecord] = [TopicRecord(name=t.name, topic_id=topic_id, version=0)]
                records += [ConfigRecord(resource_type=2, resource_name=t.name, name=k, value=v, version=0)
                            for k, v in configs.items()]
                self.append(records + self._partition_records(topic_id, assignment))
            fields: dict[str, Any] = {}
            if request.API_VERSION >= 5:
                fields.update(num_partitions=len(assignment), replication_factor=len(assignment[0]),
                              configs=[], topic_config_error_code=0)
            if request.API_VERSION >= 7:
                fields["topic_id"] = topic_id
            results.append(result(ErrorCode.NONE, None, **fields))
        return self._response(request, throttle_time_ms=0, topics=results)

    def delete_topic(self, name: str) -> None:
        """A RemoveTopicRecord, as ReplicationControlManager.deleteTopics writes (DeleteTopics is not served)."""
        from protocol.metadata_records import RemoveTopicRecord

        topic = self.image.topics.get_topic(name)
        assert topic is not None, name
        self.append([RemoveTopicRecord(topic_id=topic.topic_id, version=0)])

    def _partition_records(self, topic_id: uuid.UUID, assignment: dict[int, list[int]]) -> list[MetadataRecord]:
        version = partition_record_version(self.level)
        out: list[MetadataRecord] = []
        for p, replicas in sorted(assignment.items()):
            isr = [r for r in replicas if self._acceptable(r)] or replicas[:1]
            out.append(PartitionRegistration(
                replicas=tuple(replicas), directories=tuple(self.default_dir(r) for r in replicas), isr=tuple(isr),
                leader=isr[0] if self._acceptable(isr[0]) else NO_LEADER).to_record(topic_id, p, version))
        return out

    async def _delete_topics(self, request: Any) -> Any:
        """ReplicationControlManager.deleteTopics: a RemoveTopicRecord per topic; unknown ones
        UNKNOWN_TOPIC_OR_PARTITION (UNKNOWN_TOPIC_ID by id)."""
        from protocol.metadata_records import RemoveTopicRecord

        Resp = response_class(ApiKey.DELETE_TOPICS)
        v = request.API_VERSION
        wanted = [(t.name, t.topic_id) for t in request.topics] if v >= 6 else [(n, None) for n in request.topic_names]
        out, records = [], []
        for name, topic_id in wanted:
            by_id = topic_id is not None and topic_id.int != 0 and name is None
            topic = self.image.topics.get_topic(topic_id if by_id else name)
            fields: dict[str, Any] = {"name": name if not by_id else (topic.name if topic else None)}
            if v >= 6:
                fields["topic_id"] = topic.topic_id if topic else (topic_id or uuid.UUID(int=0))
            if not self.is_leader:
                fields["error_code"] = ErrorCode.NOT_CONTROLLER
            elif topic is None:
                fields["error_code"] = ErrorCode.UNKNOWN_TOPIC_ID if by_id else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            else:
                fields["error_code"] = 0
                records.append(RemoveTopicRecord(topic_id=topic.topic_id, version=0))
            out.append(Resp.DeletableTopicResult(**fields))
        if records:
            self.append(records)
        return self._response(request, throttle_time_ms=0, responses=out)

    async def _create_partitions(self, request: Any) -> Any:
        """ReplicationControlManager.createPartitions: Kafka's INVALID_PARTITIONS and INVALID_REPLICA_ASSIGNMENT
        messages; new partitions striped over the unfenced brokers with the topic's replication factor."""
        Resp = response_class(ApiKey.CREATE_PARTITIONS)
        out = []
        for t in request.topics:
            topic = self.image.topics.get_topic(t.name)
            error, message = ErrorCode.NONE, None
            if not self.is_leader:
                error = ErrorCode.NOT_CONTROLLER
            elif topic is None:
                error, message = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "This server does not host this topic-partition."
            elif t.count == len(topic.partitions):
                error, message = ErrorCode.INVALID_PARTITIONS, f"Topic already has {t.count} partition(s)."
            elif t.count < len(topic.partitions):
                error, message = ErrorCode.INVALID_PARTITIONS, (
                    f"The topic {t.name} currently has {len(topic.partitions)} partition(s); {t.count} would not "
                    "be an increase.")
            elif t.assignments is not None and len(t.assignments) != t.count - len(topic.partitions):
                error, message = ErrorCode.INVALID_REPLICA_ASSIGNMENT, (
                    f"Attempted to add {t.count - len(topic.partitions)} additional partition(s), but only "
                    f"{len(t.assignments)} assignment(s) were specified.")
            if error == ErrorCode.NONE and topic is not None and not request.validate_only:
                start = len(topic.partitions)
                rf = len(next(iter(topic.partitions.values())).replicas)
                placeable = self._placeable_brokers()
                if t.assignments is not None:
                    assignment = {start + i: list(a.broker_ids) for i, a in enumerate(t.assignments)}
                elif message := _placement_refusal(rf, len(placeable)):
                    error = ErrorCode.INVALID_REPLICATION_FACTOR
                else:
                    assignment = {p: [placeable[(p + i) % len(placeable)] for i in range(rf)]
                                  for p in range(start, t.count)}
                if error == ErrorCode.NONE:
                    self.append(self._partition_records(topic.topic_id, assignment))
            out.append(Resp.CreatePartitionsTopicResult(name=t.name, error_code=error, error_message=message))
        return self._response(request, throttle_time_ms=0, results=out)

    async def _incremental_alter_configs(self, request: Any) -> Any:
        """ConfigurationControlManager.incrementalAlterConfigs for topics and brokers (dynamic broker configs:
        "" the cluster default, else a broker id): SET and DELETE as ConfigRecords (a null value deletes); an
        unknown topic UNKNOWN_TOPIC_OR_PARTITION, a broker name not an integer INVALID_REQUEST."""
        Resp = response_class(ApiKey.INCREMENTAL_ALTER_CONFIGS)
        out, records = [], []
        for r in request.resources:
            error, message = ErrorCode.NONE, None
            if not self.is_leader:
                error = ErrorCode.NOT_CONTROLLER
            elif r.resource_type == 4 and r.resource_name and not r.resource_name.lstrip("-").isdigit():
                error, message = ErrorCode.INVALID_REQUEST, f"Node id must be an integer, but it is: {r.resource_name}"
            elif r.resource_type not in (2, 4):
                error, message = ErrorCode.INVALID_REQUEST, "only topic and broker configs are altered here"
            elif r.resource_type == 2 and self.image.topics.get_topic(r.resource_name) is None:
                error, message = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"Topic {r.resource_name} does not exist"
            elif not request.validate_only:
                for c in r.configs:
                    value = None if c.config_operation == 1 else c.value
                    records.append(ConfigRecord(resource_type=r.resource_type, resource_name=r.resource_name,
                                                name=c.name, value=value, version=0))
            out.append(Resp.AlterConfigsResourceResponse(error_code=error, error_message=message,
                                                         resource_type=r.resource_type,
                                                         resource_name=r.resource_name))
        if records:
            self.append(records)
        return self._response(request, throttle_time_ms=0, responses=out)

    async def _elect_leaders(self, request: Any) -> Any:
        """ReplicationControlManager.electLeaders: PREFERRED moves leadership to the first replica when it is in
        the ISR and acceptable (ELECTION_NOT_NEEDED when it leads, PREFERRED_LEADER_NOT_AVAILABLE otherwise);
        UNCLEAN elects only a leaderless partition, from the ISR first, else any acceptable replica (ISR = it,
        leader recovery state RECOVERING), ELIGIBLE_LEADERS_NOT_AVAILABLE when none is."""
        Resp = response_class(ApiKey.ELECT_LEADERS)
        R = Resp.ReplicaElectionResult
        unclean = request.API_VERSION >= 1 and request.election_type == 1
        version = partition_record_version(self.level)
        results, records = [], []
        for t in request.topic_partitions or []:
            topic = self.image.topics.get_topic(t.topic)
            out = []
            for pid in t.partitions:
                p = topic.partitions.get(pid) if topic is not None else None
                error, change = ErrorCode.NONE, None
                if not self.is_leader:
                    error = ErrorCode.NOT_CONTROLLER
                elif p is None:
                    error = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                elif not unclean:
                    preferred = p.replicas[0]
                    if p.leader == preferred:
                        error = ErrorCode.ELECTION_NOT_NEEDED
                    elif preferred not in p.isr or not self._acceptable(preferred):
                        error = ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE
                    else:
                        change = {"leader": preferred}
                elif p.leader != NO_LEADER:
                    error = ErrorCode.ELECTION_NOT_NEEDED
                else:
                    clean = next((r for r in p.replicas if r in p.isr and self._acceptable(r)), None)
                    dirty = next((r for r in p.replicas if self._acceptable(r)), None)
                    if clean is not None:
                        change = {"leader": clean}
                    elif dirty is not None:
                        change = {"leader": dirty, "isr": [dirty], "leader_recovery_state": 1}
                    else:
                        error = ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE
                if change is not None:
                    assert topic is not None
                    records.append(PartitionChangeRecord(partition_id=pid, topic_id=topic.topic_id, **change,
                                                         version=version))
                out.append(R.PartitionResult(partition_id=pid, error_code=error, error_message=None))
            results.append(R(topic=t.topic, partition_result=out))
        if records:
            self.append(records)
        fields: dict[str, Any] = dict(throttle_time_ms=0, replica_election_results=results)
        if request.API_VERSION >= 1:
            fields["error_code"] = 0
        return self._response(request, **fields)

    # ------------------------------------------------------------------ AlterPartition
    async def _alter_partition(self, request: Any) -> Any:
        Resp = response_class(ApiKey.ALTER_PARTITION)
        v = request.API_VERSION
        if not self.is_leader:
            return self._response(request, throttle_time_ms=0, error_code=ErrorCode.NOT_CONTROLLER, topics=[])
        error = self._check_broker_epoch(request.broker_id, request.broker_epoch)
        if error:
            return self._response(request, throttle_time_ms=0, error_code=error, topics=[])
        out_topics = []
        records: list[MetadataRecord] = []
        for t in request.topics:
            topic = self.image.topics.get_topic(t.topic_id if v >= 2 else t.topic_name)
            out = []
            for pd in t.partitions:
                def part(error: int, p: PartitionRegistration | None = None, index: int = pd.partition_index) -> Any:
                    fields: dict[str, Any] = dict(partition_index=index, error_code=error)
                    if p is not None:
                        fields.update(leader_id=p.leader, leader_epoch=p.leader_epoch, isr=list(p.isr),
                                      partition_epoch=p.partition_epoch,
                                      leader_recovery_state=int(p.leader_recovery_state))
                    return Resp.TopicData.PartitionData(**fields)
                if topic is None:
                    out.append(part(ErrorCode.UNKNOWN_TOPIC_ID if v >= 2 else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION))
                    continue
                p = topic.partitions.get(pd.partition_index)
                brokers = [(s.broker_id, s.broker_epoch) for s in pd.new_isr_with_epochs] if v >= 3 else \
                    [(b, -1) for b in pd.new_isr]
                error = self._validate_alter(request.broker_id, p, pd, brokers, v)
                if error:
                    out.append(part(error))
                    continue
                assert p is not None
                record = self.partition_change(topic.topic_id, pd.partition_index, p,
                                               isr=[b for b, _ in brokers],
                                               leader_recovery_state=pd.leader_recovery_state)
                if record is not None:
                    records.append(record)
                    p = p.merge(record)
                    if record.leader not in (NO_LEADER_CHANGE, request.broker_id):
                        # The ISR completed a reassignment that moved leadership away from the sender.
                        out.append(part(ErrorCode.NEW_LEADER_ELECTED if v > 1 else ErrorCode.FENCED_LEADER_EPOCH))
                        continue
                out.append(part(ErrorCode.NONE, p))
            out_topics.append(Resp.TopicData(topic_name=t.topic_name if v < 2 else None,
                                             topic_id=topic.topic_id if topic is not None and v >= 2 else t.topic_id,
                                             partitions=out))
        if records:
            self.append(records)
        return self._response(request, throttle_time_ms=0, error_code=0, topics=out_topics)

    def _validate_alter(self, broker_id: int, p: PartitionRegistration | None, pd: Any,
                        brokers: list[tuple[int, int]], version: int) -> int:
        if p is None:
            return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        if pd.leader_epoch > p.leader_epoch or pd.partition_epoch > p.partition_epoch:
            return ErrorCode.NOT_CONTROLLER
        if pd.leader_epoch < p.leader_epoch:
            return ErrorCode.FENCED_LEADER_EPOCH
        if broker_id != p.leader:
            return ErrorCode.INVALID_REQUEST
        if pd.partition_epoch < p.partition_epoch:
            return ErrorCode.INVALID_UPDATE_VERSION
        isr = [b for b, _ in brokers]
        if not set(isr) <= set(p.replicas) or len(set(isr)) != len(isr) or p.leader not in isr:
            return ErrorCode.INVALID_REQUEST
        if pd.leader_recovery_state == 1 and len(isr) > 1:
            return ErrorCode.INVALID_REQUEST
        if int(p.leader_recovery_state) == 0 and pd.leader_recovery_state == 1:
            return ErrorCode.INVALID_REQUEST
        for b, epoch in brokers:
            reg = self.image.cluster.broker(b)
            if reg is None or reg.in_controlled_shutdown or reg.fenced or (epoch != -1 and reg.epoch != epoch):
                return ErrorCode.INELIGIBLE_REPLICA if version > 1 else ErrorCode.OPERATION_NOT_ATTEMPTED
        return ErrorCode.NONE

    # ------------------------------------------------------------------ producer ids
    async def _allocate_producer_ids(self, request: Any) -> Any:
        if not self.is_leader:
            return self._controller_error(request, ErrorCode.NOT_CONTROLLER, producer_id_start=-1, producer_id_len=0)
        error = self._check_broker_epoch(request.broker_id, request.broker_epoch)
        if error:
            return self._controller_error(request, error, producer_id_start=-1, producer_id_len=0)
        # ProducerIdControlManager: the next block starts where the last ProducerIdsRecord replayed left off.
        start = max(self.image.producer_ids.next_producer_id, 0)
        self.append([ProducerIdsRecord(broker_id=request.broker_id, broker_epoch=request.broker_epoch,
                                       next_producer_id=start + PRODUCER_ID_BLOCK, version=0)])
        return self._controller_error(request, ErrorCode.NONE, producer_id_start=start,
                                      producer_id_len=PRODUCER_ID_BLOCK)

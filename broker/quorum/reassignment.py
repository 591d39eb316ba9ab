"""Partition reassignment rules of the quorum controller: Kafka 3.9's
ReplicationControlManager.alterPartitionReassignments / listPartitionReassignments, PartitionReassignmentReplicas,
PartitionReassignmentRevert and PartitionChangeBuilder's completion of a reassignment. A mixin of the
quorum controller (broker/quorum/controller.py) and of the test controller (tests/kraft_controller.py).

The stages, as Kafka's controller runs them:
1. AlterPartitionReassignments writes one PartitionChangeRecord: Replicas = target + the current replicas not in
   it (in that order), AddingReplicas = target - current, RemovingReplicas = current - target (each sorted).
2. The adding replicas fetch from the leader, catch up and are added to the ISR by the leader's AlterPartition.
3. The change that makes the ISR (less the removing replicas) hold every remaining replica completes the
   reassignment in the same record: Replicas and ISR without the removing replicas, Adding/Removing emptied. A
   change that drops replicas bumps the leader epoch (the leader is named again); a leader no longer in the
   replicas is replaced by the first acceptable one in the new ISR, and the AlterPartition that did it is
   answered NEW_LEADER_ELECTED (v2+; FENCED_LEADER_EPOCH below).
Fencing a broker (or its controlled shutdown) shrinks ISRs through the same builder, as Kafka's
generateLeaderAndIsrUpdates does (an ISR shrink never completes a reassignment on its own). Stage 1 can complete at
once (a reordering, or a target the ISR already holds). Cancelling (replicas null) reverts: Replicas and ISR without
the adding replicas (an ISR left empty takes the first remaining replica, an unclean election Kafka allows only with
unclean.leader.election.enable, else INVALID_REPLICA_ASSIGNMENT). Validation (validateManualPartitionAssignment): an
empty list, a broker not registered, or a broker named twice is INVALID_REPLICA_ASSIGNMENT with Kafka's messages; an
unknown topic or partition UNKNOWN_TOPIC_OR_PARTITION; cancelling a partition not being reassigned
NO_REASSIGNMENT_IN_PROGRESS.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from broker.kraft.image import NO_LEADER, PartitionRegistration
from broker.kraft.snapshot import partition_record_version
from protocol import ApiKey, response_class
from protocol.errors import ErrorCode
from protocol.metadata_records import PartitionChangeRecord

NO_LEADER_CHANGE = -2
IBP_3_6_IV0 = 12


class ReassignmentError(Exception):
    def __init__(self, error: ErrorCode, message: str | None) -> None:
        super().__init__(message)
        self.error, self.message = error, message


class ReassignmentRules:
    """What the rules need from the controller they are mixed into (QuorumRules provides it)."""

    level: int
    image: Any
    is_leader: bool
    default_dir: Callable[[int], Any]  # broker/quorum/jbod.py

    def append(self, messages: list[Any]) -> int:
        raise NotImplementedError

    def _acceptable(self, broker_id: int) -> bool:
        raise NotImplementedError

    # ------------------------------------------------------------------ the change builder
    def partition_change(self, topic_id: Any, pid: int, p: PartitionRegistration, *, isr: list[int] | None = None,
                         replicas: list[int] | None = None, adding: list[int] | None = None,
                         removing: list[int] | None = None, leader_recovery_state: int | None = None,
                         acceptable: Callable[[int], bool] | None = None) -> PartitionChangeRecord | None:
        """PartitionChangeBuilder.build for the targets given (None: unchanged): completes a reassignment the
        target ISR allows, elects a leader when the current one is no longer acceptable, bumps the leader epoch
        when replicas go (and, before metadata.version 3.6-IV0, when the ISR shrinks); None when nothing
        changes. `acceptable` decides which replicas may lead (default: unfenced and not shutting down)."""
        ok = acceptable or self._acceptable
        t_isr = list(p.isr) if isr is None else isr
        t_replicas = list(p.replicas) if replicas is None else replicas
        t_adding = list(p.adding_replicas) if adding is None else adding
        t_removing = list(p.removing_replicas) if removing is None else removing
        if t_adding or t_removing:  # PartitionReassignmentReplicas.maybeCompleteReassignment
            new_isr = [r for r in t_isr if r not in t_removing]
            new_replicas = [r for r in t_replicas if r not in t_removing]
            if new_isr and new_replicas and set(new_replicas) <= set(new_isr):
                t_isr, t_replicas, t_adding, t_removing = new_isr, new_replicas, [], []
        fields: dict[str, Any] = {}
        if not (p.leader in t_replicas and p.leader in t_isr and ok(p.leader)):
            leader = next((r for r in t_replicas if r in t_isr and ok(r)), NO_LEADER)
            if leader != p.leader:
                fields["leader"] = leader
        if "leader" not in fields and not set(p.replicas) <= set(t_replicas):
            fields["leader"] = p.leader  # replicas removed: a new leader epoch
        if t_isr and t_isr != list(p.isr):
            fields["isr"] = t_isr
            if self.level < IBP_3_6_IV0 and "leader" not in fields and not set(p.isr) <= set(t_isr):
                fields["leader"] = p.leader  # KAFKA-15021: an ISR shrink bumped the leader epoch before 3.6-IV0
        if t_replicas != list(p.replicas):
            fields["replicas"] = t_replicas
            if partition_record_version(self.level) >= 1:
                # Replicas staying keep their directories; new ones get the broker's default directory
                # (PartitionChangeBuilder with ClusterControlManager.defaultDir).
                fields["directories"] = [p.directory(r) if r in p.replicas else self.default_dir(r)
                                         for r in t_replicas]
        if t_removing != list(p.removing_replicas):
            fields["removing_replicas"] = t_removing
        if t_adding != list(p.adding_replicas):
            fields["adding_replicas"] = t_adding
        if leader_recovery_state is not None and leader_recovery_state != int(p.leader_recovery_state):
            fields["leader_recovery_state"] = leader_recovery_state
        if not fields:
            return None
        return PartitionChangeRecord(partition_id=pid, topic_id=topic_id, **fields,
                                     version=partition_record_version(self.level))

    # ------------------------------------------------------------------ AlterPartitionReassignments
    def _validate_assignment(self, replicas: list[int]) -> None:
        if not replicas:
            raise ReassignmentError(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                                    "The manual partition assignment includes an empty replica list.")
        previous = None
        for b in sorted(replicas):
            if self.image.cluster.broker(b) is None:
                raise ReassignmentError(ErrorCode.INVALID_REPLICA_ASSIGNMENT, (
                    f"The manual partition assignment includes broker {b}, but no such broker is registered."))
            if b == previous:
                raise ReassignmentError(ErrorCode.INVALID_REPLICA_ASSIGNMENT, (
                    f"The manual partition assignment includes the broker {b} more than once."))
            previous = b

    def _reassign(self, topic_name: str, pid: int, target: list[int] | None) -> PartitionChangeRecord | None:
        topic = self.image.topics.get_topic(topic_name)
        if topic is None:
            raise ReassignmentError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                                    f"Unable to find a topic named {topic_name}.")
        p = topic.partitions.get(pid)
        if p is None:
            raise ReassignmentError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                                    f"Unable to find partition {topic_name}:{pid}.")
        if target is None:  # cancel: PartitionReassignmentRevert
            if not p.is_reassigning():
                raise ReassignmentError(ErrorCode.NO_REASSIGNMENT_IN_PROGRESS,
                                        "No partition reassignment is in progress for this topic or partition.")
            replicas = [r for r in p.replicas if r not in p.adding_replicas]
            isr = [r for r in p.isr if r not in p.adding_replicas]
            if not isr:
                if self.image.configs.topic_config(topic_name).get("unclean.leader.election.enable") != "true":
                    raise ReassignmentError(ErrorCode.INVALID_REPLICA_ASSIGNMENT, (
                        f"Unable to revert partition assignment for {topic_name}:{pid} because it would require "
                        "an unclean leader election."))
                isr = replicas[:1]
            return self.partition_change(topic.topic_id, pid, p, isr=isr, replicas=replicas, adding=[],
                                         removing=[])
        self._validate_assignment(target)
        current = list(p.replicas)
        removing = sorted(set(current) - set(target))
        adding = sorted(set(target) - set(current))
        return self.partition_change(topic.topic_id, pid, p, replicas=list(target) + removing, adding=adding,
                                     removing=removing)

    async def _alter_partition_reassignments(self, request: Any) -> Any:
        Resp = response_class(ApiKey.ALTER_PARTITION_REASSIGNMENTS)
        T = Resp.ReassignableTopicResponse
        if not self.is_leader:
            return self._response(request, throttle_time_ms=0, error_code=ErrorCode.NOT_CONTROLLER,
                                  error_message=None, responses=[])
        records, out = [], []
        for t in request.topics:
            parts = []
            for rp in t.partitions:
                error, message = ErrorCode.NONE, None
                try:
                    record = self._reassign(t.name, rp.partition_index,
                                            None if rp.replicas is None else list(rp.replicas))
                    if record is not None:
                        records.append(record)
                except ReassignmentError as e:
                    error, message = e.error, e.message
                parts.append(T.ReassignablePartitionResponse(partition_index=rp.partition_index, error_code=error,
                                                              error_message=message))
            out.append(T(name=t.name, partitions=parts))
        if records:
            self.append(records)
        return self._response(request, throttle_time_ms=0, error_code=0, error_message=None, responses=out)

    async def _list_partition_reassignments(self, request: Any) -> Any:
        Resp = response_class(ApiKey.LIST_PARTITION_REASSIGNMENTS)
        T = Resp.OngoingTopicReassignment
        if not self.is_leader:
            return self._response(request, throttle_time_ms=0, error_code=ErrorCode.NOT_CONTROLLER,
                                  error_message=None, topics=[])
        wanted = None if request.topics is None else {t.name: list(t.partition_indexes) for t in request.topics}
        out = []
        for topic in self.image.topics.by_id.values():
            if wanted is not None and topic.name not in wanted:
                continue
            pids = wanted[topic.name] if wanted is not None else sorted(topic.partitions)
            parts = [T.OngoingPartitionReassignment(
                partition_index=pid, replicas=list(p.replicas), adding_replicas=list(p.adding_replicas),
                removing_replicas=list(p.removing_replicas))
                for pid in pids if (p := topic.partitions.get(pid)) is not None and p.is_reassigning()]
            if parts:
                out.append(T(name=topic.name, partitions=parts))
        return self._response(request, throttle_time_ms=0, error_code=0, error_message=None, topics=out)

    @staticmethod
    def _response(request: Any, **fields: Any) -> Any:
        return response_class(request.API_KEY)[request.API_VERSION](**fields)

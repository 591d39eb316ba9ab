"""JBOD (KIP-858) at the quorum controller: the log directory of each replica. A mixin of the
quorum controller (broker/quorum/controller.py) and of the test controller (tests/kraft_controller.py).

Rules (Kafka 3.9's ReplicationControlManager and ClusterControlManager):
- A new partition's replicas get ClusterControlManager.defaultDir from metadata.version 3.7-IV2: the broker's one
  registered directory, MIGRATING when it registered none, else UNASSIGNED (the broker assigns it).
- AssignReplicasToDirs (handleAssignReplicasToDirs): UNSUPPORTED_VERSION before 3.7-IV2; STALE_BROKER_EPOCH for
  an unregistered broker or another epoch; per partition UNKNOWN_TOPIC_ID, UNKNOWN_TOPIC_OR_PARTITION, or
  NOT_LEADER_OR_FOLLOWER when the broker holds no replica; otherwise a PartitionChangeRecord setting the
  broker's directory when it changes, and, for a directory the broker does not have online, the broker moved out
  of the partition's ISR and leadership (generateLeaderAndIsrUpdates).
- BrokerHeartbeat v1 OfflineLogDirs (handleDirectoriesOffline): for directories the registration still lists,
  the partitions whose replica on the broker is there lose it from their ISR and leadership, and a
  BrokerRegistrationChangeRecord (v2) leaves the registration with its remaining directories.
- `assignment_error`, when a test sets it, answers every AssignReplicasToDirs with that top-level error.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

from broker.kraft.image import MIGRATING, UNASSIGNED, PartitionRegistration
from protocol import ApiKey, response_class
from protocol.errors import ErrorCode
from protocol.metadata_records import BrokerRegistrationChangeRecord, MetadataRecord, PartitionChangeRecord

IBP_3_7_IV2 = 17


class JbodRules:
    image: Any
    level: int
    assignment_error: ErrorCode | None = None  # set by a test: every AssignReplicasToDirs answered with it

    # From KRaftController and QuorumRules (annotations only: a stub here would shadow them).
    append: Callable[[list[MetadataRecord]], int]
    _check_broker_epoch: Callable[[int, int], ErrorCode]
    _leader_and_isr_updates: Callable[..., list[MetadataRecord]]

    def default_dir(self, broker_id: int) -> uuid.UUID:
        if self.level < IBP_3_7_IV2:
            return MIGRATING
        reg = self.image.cluster.broker(broker_id)
        dirs = list(reg.directories) if reg is not None else []
        if not dirs:
            return MIGRATING
        return dirs[0] if len(dirs) == 1 else UNASSIGNED

    def _online_dirs(self, broker_id: int) -> list[uuid.UUID]:
        reg = self.image.cluster.broker(broker_id)
        return list(reg.directories) if reg is not None else []

    def _partitions_in(self, broker_id: int, dirs: set[uuid.UUID]) -> set[tuple[uuid.UUID, int]]:
        return {(t.topic_id, pid) for t in self.image.topics.by_id.values() for pid, p in t.partitions.items()
                if broker_id in p.replicas and p.directory(broker_id) in dirs}

    async def _assign_replicas_to_dirs(self, request: Any) -> Any:
        Resp = response_class(ApiKey.ASSIGN_REPLICAS_TO_DIRS)[request.API_VERSION]

        def answer(error: ErrorCode, directories: list[Any] | None = None) -> Any:
            return Resp(throttle_time_ms=0, error_code=error, directories=directories or [])
        if self.level < IBP_3_7_IV2:
            return answer(ErrorCode.UNSUPPORTED_VERSION)
        if self.assignment_error is not None:
            return answer(self.assignment_error)
        broker_id = request.broker_id
        error = self._check_broker_epoch(broker_id, request.broker_epoch)
        if error:
            return answer(error)
        online = set(self._online_dirs(broker_id))
        records: list[MetadataRecord] = []
        offline_moves: set[tuple[uuid.UUID, int]] = set()
        out = []
        for d in request.directories:
            topics = []
            for t in d.topics:
                topic = self.image.topics.by_id.get(t.topic_id)
                parts = []
                for p in t.partitions:
                    reg: PartitionRegistration | None = (topic.partitions.get(p.partition_index)
                                                         if topic is not None else None)
                    if topic is None:
                        code = ErrorCode.UNKNOWN_TOPIC_ID
                    elif reg is None:
                        code = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                    elif broker_id not in reg.replicas:
                        code = ErrorCode.NOT_LEADER_OR_FOLLOWER
                    else:
                        code = ErrorCode.NONE
                        if reg.directory(broker_id) != d.id:
                            dirs = [d.id if r == broker_id else reg.directory(r) for r in reg.replicas]
                            records.append(PartitionChangeRecord(
                                partition_id=p.partition_index, topic_id=t.topic_id, directories=dirs,
                                version=1 if self.level < 23 else 2))
                        if d.id not in online:
                            offline_moves.add((t.topic_id, p.partition_index))
                    parts.append(Resp.DirectoryData.TopicData.PartitionData(partition_index=p.partition_index,
                                                                            error_code=code))
                topics.append(Resp.DirectoryData.TopicData(topic_id=t.topic_id, partitions=parts))
            out.append(Resp.DirectoryData(id=d.id, topics=topics))
        if records:
            self.append(records)
        if offline_moves:
            moves = self._leader_and_isr_updates(remove=broker_id, only=offline_moves)
            if moves:
                self.append(moves)
        return answer(ErrorCode.NONE, out)

    def _directories_offline(self, broker_id: int, epoch: int, offline: list[uuid.UUID]) -> None:
        online = self._online_dirs(broker_id)
        newly = {d for d in offline if d in online}
        if not newly:
            return
        moves = self._leader_and_isr_updates(remove=broker_id, only=self._partitions_in(broker_id, newly))
        self.append([*moves, BrokerRegistrationChangeRecord(
            broker_id=broker_id, broker_epoch=epoch, log_dirs=[d for d in online if d not in newly], version=2)])

    def _directories_cordoned(self, broker_id: int, epoch: int, cordoned: list[uuid.UUID]) -> None:
        """A heartbeat's cordoned directories (KIP-1066, metadata.version 4.3-IV0+): recorded when they differ from
        the registration's, as Kafka's handleDirectoriesCordoned; they take no new replicas (placement skips a
        broker whose directories are all cordoned) and keep the ones they have."""
        registration = self.image.cluster.broker(broker_id)
        if registration is not None and registration.cordoned_changed(cordoned):
            self.append([BrokerRegistrationChangeRecord(broker_id=broker_id, broker_epoch=epoch,
                                                        cordoned_log_dirs=cordoned, version=3)])

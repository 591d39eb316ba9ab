"""A test KRaft controller: one active controller of a KRaft quorum, speaking Kafka's controller protocol over a
real socket, for our KRaft brokers to register with and follow. A test fixture, not product code.

What it serves (its ApiVersions lists exactly these): ApiVersions 0-3; Fetch 13-17 of `__cluster_metadata-0`
(topic id AAAAAAAAAAAAAAAAAAAAAQ) as Kafka's raft leader answers observers; FetchSnapshot 0-1; BrokerRegistration 0-4;
BrokerHeartbeat 0-1; CreateTopics 2-7; DeleteTopics 0-6; CreatePartitions 0-3; IncrementalAlterConfigs 0-1;
ElectLeaders 0-2; AlterPartition 0-3; AllocateProducerIds 0.

The metadata log is kept in memory as real v2 record batches (`records.build_batch`) of metadata record frames
(`protocol.metadata_records`): a LeaderChange control batch opens each epoch, then one data batch per controller
operation (Kafka's controller also commits one operation's records as one batch). The fixture's own view of the
metadata is that log replayed through `broker.kraft.loader.MetadataLoader` (the broker's image code, whose merge
rules are pinned against Kafka's by tests/broker/kraft/).

Kafka 3.9 QuorumController rules implemented (metadata/src/main/java/org/apache/kafka/controller/):
- ClusterControlManager.registerBroker: cluster id must match (INCONSISTENT_CLUSTER_ID); the broker must support
  the finalized metadata.version (UNSUPPORTED_VERSION; a broker that lists no metadata.version range is refused
  too); a live registration (heartbeat within the session timeout) with another incarnation id is
  DUPLICATE_BROKER_REGISTRATION; otherwise a RegisterBrokerRecord (version by metadata.version, fenced) whose
  offset is the broker epoch.
- ClusterControlManager.checkBrokerEpoch: AllocateProducerIds, AlterPartition and BrokerHeartbeat from an
  unregistered broker or with another epoch get STALE_BROKER_EPOCH.
- BrokerHeartbeatManager: caught up = the heartbeat's metadata offset >= the registration's offset; a fenced,
  caught-up broker not asking to stay fenced is unfenced (and leaderless partitions it is in the ISR of get it as
  leader); WantShutDown from a fenced broker: ShouldShutDown at once; from an unfenced one: controlled shutdown
  (in_controlled_shutdown, then out of every ISR, leadership moved), ShouldShutDown once every active broker's
  last heartbeat offset has passed that change, when it is fenced too; no heartbeat for
  broker.session.timeout.ms: fenced (out of every ISR, leaders moved). Fencing and unfencing are
  BrokerRegistrationChangeRecords from metadata.version 3.3-IV2 (level 6), Fence/UnfenceBrokerRecords before.
- ReplicationControlManager.generateLeaderAndIsrUpdates / PartitionChangeBuilder (clean elections only, no ELR,
  no reassignment): target ISR without the removed broker, unless that empties it (the ISR then keeps its last
  member); the current leader stays if it is still in the target ISR and acceptable, else the first replica in
  it that is acceptable (unfenced, not shutting down), else no leader (-1).
- ReplicationControlManager.createTopics: TOPIC_ALREADY_EXISTS, INVALID_PARTITIONS, INVALID_REPLICATION_FACTOR
  ("... only N broker(s) are registered"), manual assignments; replicas striped over the unfenced brokers
  (ours round-robin from the partition index, Kafka's StripedReplicaPlacer starts at a random broker); leader the
  first replica; TopicRecord, ConfigRecords, PartitionRecords in one batch.
- ReplicationControlManager.alterPartition / validateAlterPartitionData: UNKNOWN_TOPIC_ID (v2+) or
  UNKNOWN_TOPIC_OR_PARTITION, NOT_CONTROLLER for epochs ahead of ours, FENCED_LEADER_EPOCH, INVALID_REQUEST (not
  the leader, an ISR outside the replicas or without the leader), INVALID_UPDATE_VERSION (stale partition epoch),
  INELIGIBLE_REPLICA (v2+; OPERATION_NOT_ATTEMPTED below: a fenced, shutting-down, unregistered replica or a
  broker epoch mismatch in v3); a PartitionChangeRecord only when the ISR changes; the ISR shrink bumps the leader
  epoch only before metadata.version 3.6-IV0 (KAFKA-15021).
- ProducerIdControlManager: blocks of 1000 ids, a ProducerIdsRecord per block.
- deleteTopics (RemoveTopicRecord), createPartitions (Kafka's messages; the topic's replication factor, striped),
  incrementalAlterConfigs of topics (ConfigRecords; DELETE writes a null value), electLeaders (preferred and
  unclean, see `_elect_leaders`).
- The raft leader's Fetch (KafkaRaftClient.handleFetchRequest): cluster id check; FENCED_LEADER_EPOCH or
  UNKNOWN_LEADER_EPOCH against the request's current leader epoch, with CurrentLeader; DivergingEpoch when the
  last fetched epoch does not end at or after the fetch offset in our log; records from the fetch offset to the
  log end, the high watermark beside them; a fetch with nothing to return waits up to max_wait_ms; from Fetch
  v16 the leader's endpoint in NodeEndpoints (KIP-853).
- Snapshots (`take_snapshot()`): the committed image as a .checkpoint, the log before it deleted; a Fetch below
  the log start answers the SnapshotId; FetchSnapshot (KafkaRaftClient.handleFetchSnapshotRequest) serves its
  bytes from a position (SNAPSHOT_NOT_FOUND, POSITION_OUT_OF_RANGE, leader epoch checks as Fetch's).
Not implemented: a real quorum (one voter; `resign()` only makes the fixture answer NOT_LEADER_OR_FOLLOWER /
NOT_CONTROLLER pointing elsewhere), ELR, reassignments, automatic unclean elections (unclean.leader.election
.enable), broker configs, DescribeQuorum.
"""

from __future__ import annotations

import asyncio
import logging
import struct
import time
import uuid
from dataclasses import dataclass
from typing import Any

from broker.kraft.image import MIGRATING, NO_LEADER, PartitionRegistration
from broker.kraft.loader import MetadataLoader
from broker.kraft.snapshot import partition_record_version, register_broker_record_version
from protocol import ApiKey, decode_request, encode_response_parts, response_class
from protocol.errors import ErrorCode
from protocol.metadata_records import (
    BrokerRegistrationChangeRecord,
    ConfigRecord,
    FeatureLevelRecord,
    FenceBrokerRecord,
    LeaderChangeMessage,
    MetadataRecord,
    PartitionChangeRecord,
    ProducerIdsRecord,
    RegisterBrokerRecord,
    TopicRecord,
    UnfenceBrokerRecord,
    encode_control_record,
    encode_metadata_record,
)
from records import build_batch

log = logging.getLogger("tests.kraft_controller")

METADATA_TOPIC_ID = uuid.UUID(int=1)  # Kafka's Uuid(0, 1): AAAAAAAAAAAAAAAAAAAAAQ
PRODUCER_ID_BLOCK = 1000
SERVED = {ApiKey.API_VERSIONS: (0, 3), ApiKey.FETCH: (13, 17), ApiKey.BROKER_REGISTRATION: (0, 4),
          ApiKey.BROKER_HEARTBEAT: (0, 1), ApiKey.CREATE_TOPICS: (2, 7), ApiKey.ALTER_PARTITION: (0, 3),
          ApiKey.ALLOCATE_PRODUCER_IDS: (0, 0), ApiKey.FETCH_SNAPSHOT: (0, 1), ApiKey.DELETE_TOPICS: (0, 6),
          ApiKey.CREATE_PARTITIONS: (0, 3), ApiKey.INCREMENTAL_ALTER_CONFIGS: (0, 1), ApiKey.ELECT_LEADERS: (0, 2)}
IBP_3_3_IV2, IBP_3_3_IV3, IBP_3_6_IV0 = 6, 7, 12


@dataclass
class BrokerState:
    epoch: int
    incarnation_id: uuid.UUID
    last_heartbeat: float
    metadata_offset: int = -1
    shutdown_offset: int | None = None  # the log end after its controlled shutdown's records


class KRaftController:
    def __init__(self, *, node_id: int = 3000, cluster_id: str = "q1Sh-9_ISia_zwGINzRvyQ", metadata_version: int = 19,
                 session_timeout_ms: int = 9000, default_partitions: int = 1, default_replication_factor: int = 1,
                 epoch: int = 1) -> None:
        self.node_id = node_id
        self.cluster_id = cluster_id
        self.level = metadata_version
        self.session_timeout_s = session_timeout_ms / 1000
        self.default_partitions = default_partitions
        self.default_replication_factor = default_replication_factor
        self.epoch = epoch
        self.leader_id = node_id  # another id after resign()
        self.peer_endpoints: dict[int, tuple[str, int]] = {}  # other voters' endpoints, named in NodeEndpoints
        self.batches: list[tuple[int, int, bytes]] = []  # (base offset, next offset, bytes)
        self.epochs: list[tuple[int, int]] = []  # (epoch, start offset)
        self.end_offset = 0
        self.log_start_offset = 0  # moves to a snapshot's end offset when take_snapshot() drops the log before it
        self.snapshot: tuple[int, int, bytes] | None = None  # (end offset, epoch, the .checkpoint file's bytes)
        self.snapshot_chunk = 1000  # bytes per FetchSnapshot answer, so a snapshot takes several
        self.high_watermark = 0
        self.auto_commit = True  # False: appended records stay above the high watermark until commit()
        self.loader = MetadataLoader(fault_handler=self._fault)
        self.brokers: dict[int, BrokerState] = {}
        self.requests: list[tuple[int, Any]] = []  # (api key, request) of every request, for tests to inspect
        self._appended = asyncio.Condition()
        self._server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task] = set()
        self._next_producer_id = 0
        self._new_epoch()
        self.append([FeatureLevelRecord(name="metadata.version", feature_level=metadata_version, version=0)])

    @staticmethod
    def _fault(message: str, error: BaseException) -> None:
        raise AssertionError(f"{message}: {error}")

    # ------------------------------------------------------------------ the metadata log
    @property
    def image(self) -> Any:
        return self.loader.image

    def _new_epoch(self) -> None:
        self.epochs.append((self.epoch, self.end_offset))
        change = LeaderChangeMessage(record_version=0, leader_id=self.node_id,
                                     voters=[LeaderChangeMessage.Voter(voter_id=self.node_id)],
                                     granting_voters=[LeaderChangeMessage.Voter(voter_id=self.node_id)])
        data = build_batch([(*encode_control_record(change), (), int(time.time() * 1000))], is_control=True,
                           base_offset=self.end_offset, partition_leader_epoch=self.epoch)
        self._add_batch(data, 1, [])

    def _add_batch(self, data: bytes, count: int, messages: list[MetadataRecord]) -> None:
        base = self.end_offset
        self.batches.append((base, base + count, data))
        self.end_offset = base + count
        self.loader.load_batch(base, self.epoch, int(time.time() * 1000), messages, base + count - 1)
        self.loader.flush()
        if self.auto_commit:
            self.high_watermark = self.end_offset

    def append(self, messages: list[MetadataRecord]) -> int:
        """One batch of records at the current epoch; returns the offset of its first record."""
        base = self.end_offset
        now = int(time.time() * 1000)
        data = build_batch([(None, encode_metadata_record(m), (), now) for m in messages], base_offset=base,
                           partition_leader_epoch=self.epoch)
        self._add_batch(data, len(messages), messages)
        self._wake()
        return base

    def take_snapshot(self) -> int:
        """Kafka's controller snapshot: the committed image written as a .checkpoint (broker/kraft/snapshot.py),
        then the log before it deleted, so a fetch from below it is pointed to the snapshot. Returns its end."""
        import tempfile
        from pathlib import Path

        from broker.kraft.snapshot import image_records, write_snapshot
        from storage.snapshot_file import SnapshotId

        assert self.high_watermark == self.end_offset, "snapshot of committed records only"
        end, epoch = self.end_offset, self.epochs[-1][0]
        now = int(time.time() * 1000)
        with tempfile.TemporaryDirectory() as d:
            path = write_snapshot(Path(d), SnapshotId(end, epoch), image_records(self.image),
                                  last_contained_log_timestamp=now, timestamp_ms=now)
            self.snapshot = (end, epoch, path.read_bytes())
        self.batches = [b for b in self.batches if b[0] >= end]
        self.log_start_offset = end
        return end

    def commit(self) -> None:
        self.high_watermark = self.end_offset
        self._wake()

    def diverge(self, keep_until: int, new_epoch: int | None = None) -> None:
        """Drop the log from `keep_until` (uncommitted records a new leader did not have) and start a new epoch,
        as after a leader change: followers past it must truncate (DivergingEpoch)."""
        assert keep_until >= self.high_watermark, "committed records cannot diverge"
        self.batches = [b for b in self.batches if b[1] <= keep_until]
        assert not self.batches or self.batches[-1][1] == keep_until, "cut at a batch boundary"
        self.end_offset = keep_until
        self.epochs = [(e, s) for e, s in self.epochs if s < keep_until]
        loader = MetadataLoader(fault_handler=self._fault)
        from protocol.metadata_records import decode_metadata_batches
        for _, _, data in self.batches:
            for batch in decode_metadata_batches(data):
                loader.load_metadata_batch(batch)
        loader.flush()
        self.loader = loader
        self.epoch = new_epoch if new_epoch is not None else self.epoch + 1
        self._new_epoch()
        self._wake()

    def resign(self, leader_id: int, leader_epoch: int, endpoint: tuple[str, int] | None = None) -> None:
        """Another voter leads now: Fetch answers NOT_LEADER_OR_FOLLOWER (naming it, with its endpoint when
        given) and controller requests NOT_CONTROLLER."""
        self.leader_id, self.epoch = leader_id, leader_epoch
        if endpoint is not None:
            self.peer_endpoints[leader_id] = endpoint
        self._wake()

    def _wake(self) -> None:
        async def notify() -> None:
            async with self._appended:
                self._appended.notify_all()
        try:
            asyncio.get_running_loop().create_task(notify())
        except RuntimeError:
            pass

    def epoch_end(self, epoch: int) -> tuple[int, int]:
        """Kafka's endOffsetForEpoch: the largest epoch <= `epoch` and where it ends (-1, -1: none)."""
        found = (-1, -1)
        for i, (e, _start) in enumerate(self.epochs):
            if e <= epoch:
                end = self.epochs[i + 1][1] if i + 1 < len(self.epochs) else self.end_offset
                found = (e, end)
        return found

    def read(self, offset: int) -> bytes:
        return b"".join(data for base, end, data in self.batches if end > offset)

    # ------------------------------------------------------------------ server
    async def start(self, host: str = "127.0.0.1", port: int = 0) -> None:
        self._server = await asyncio.start_server(self._serve, host, port)
        self.host, self.port = self._server.sockets[0].getsockname()[:2]
        self._spawn(self._expire_sessions())

    @property
    def voters(self) -> str:
        return f"{self.node_id}@{self.host}:{self.port}"

    def _spawn(self, coro: Any) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        if self._server is not None:
            await self._server.wait_closed()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        if task is not None:
            self._tasks.add(task)
        try:
            while True:
                size = struct.unpack(">i", await reader.readexactly(4))[0]
                frame = await reader.readexactly(size)
                request = decode_request(bytearray(frame))
                api_key = request.header.request_api_key
                self.requests.append((api_key, request))
                response = await getattr(self, f"_{ApiKey(api_key).name.lower()}")(request)
                response.with_header(correlation_id=request.header.correlation_id)
                size, parts = encode_response_parts(response)
                writer.write(struct.pack(">i", size) + b"".join(bytes(p) for p in parts))
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError, asyncio.CancelledError):
            pass
        finally:
            writer.close()
            if task is not None:
                self._tasks.discard(task)

    @staticmethod
    def _response(request: Any, **fields: Any) -> Any:
        return response_class(request.API_KEY)[request.API_VERSION](**fields)

    @property
    def is_leader(self) -> bool:
        return self.leader_id == self.node_id

    # ------------------------------------------------------------------ ApiVersions
    async def _api_versions(self, request: Any) -> Any:
        Resp = response_class(ApiKey.API_VERSIONS)
        keys = [Resp.ApiVersion(api_key=k, min_version=lo, max_version=hi) for k, (lo, hi) in sorted(SERVED.items())]
        return self._response(request, error_code=0, api_keys=keys, throttle_time_ms=0)

    # ------------------------------------------------------------------ Fetch of the metadata log (raft leader)
    async def _fetch(self, request: Any, waited: bool = False) -> Any:
        Resp = response_class(ApiKey.FETCH)
        topic = request.topics[0]
        part = topic.partitions[0]

        def answer(error: int = 0, **fields: Any) -> Any:
            leader = Resp.FetchableTopicResponse.PartitionData.LeaderIdAndEpoch(
                leader_id=self.leader_id, leader_epoch=self.epoch)
            data = Resp.FetchableTopicResponse.PartitionData(
                partition_index=0, error_code=error, high_watermark=fields.pop("high_watermark", -1),
                last_stable_offset=-1, log_start_offset=0, aborted_transactions=None, preferred_read_replica=-1,
                current_leader=leader, records=fields.pop("records", b""), **fields)
            extra: dict[str, Any] = {}
            endpoint = self.peer_endpoints.get(self.leader_id) or (
                (self.host, self.port) if self.is_leader else None)
            if request.API_VERSION >= 16 and endpoint is not None:
                # KIP-853: the current leader's endpoint, so an observer bootstrapped without voters can reach it.
                extra["node_endpoints"] = [Resp.NodeEndpoint(node_id=self.leader_id, host=endpoint[0],
                                                             port=endpoint[1], rack=None)]
            return self._response(request, throttle_time_ms=0, error_code=0, session_id=0, responses=[
                Resp.FetchableTopicResponse(topic_id=METADATA_TOPIC_ID, partitions=[data])], **extra)

        if request.cluster_id not in (None, self.cluster_id):
            return self._response(request, throttle_time_ms=0, error_code=ErrorCode.INCONSISTENT_CLUSTER_ID,
                                  session_id=0, responses=[])
        if topic.topic_id != METADATA_TOPIC_ID or part.partition != 0:
            return answer(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
        if not self.is_leader:
            return answer(ErrorCode.NOT_LEADER_OR_FOLLOWER)
        if part.current_leader_epoch < self.epoch:
            return answer(ErrorCode.FENCED_LEADER_EPOCH)
        if part.current_leader_epoch > self.epoch:
            return answer(ErrorCode.UNKNOWN_LEADER_EPOCH)
        if part.fetch_offset < self.log_start_offset and self.snapshot is not None:
            snapshot = Resp.FetchableTopicResponse.PartitionData.SnapshotId(end_offset=self.snapshot[0],
                                                                           epoch=self.snapshot[1])
            return answer(high_watermark=self.high_watermark, snapshot_id=snapshot)
        if part.fetch_offset > 0:
            epoch, end = self.epoch_end(part.last_fetched_epoch)
            if epoch != part.last_fetched_epoch or end < part.fetch_offset:
                diverging = Resp.FetchableTopicResponse.PartitionData.EpochEndOffset(
                    epoch=max(epoch, 0), end_offset=max(end, 0))
                return answer(high_watermark=self.high_watermark, diverging_epoch=diverging)
        if part.fetch_offset > self.end_offset:
            return answer(ErrorCode.OFFSET_OUT_OF_RANGE, high_watermark=self.high_watermark)
        if part.fetch_offset >= self.end_offset and request.max_wait_ms > 0 and not waited:
            # Long poll: park until something is appended (or the high watermark moves) or max_wait_ms passes,
            # then judge the request again (the log may have diverged meanwhile).
            hw, end, epoch = self.high_watermark, self.end_offset, self.epoch
            try:
                async with asyncio.timeout(request.max_wait_ms / 1000), self._appended:
                    await self._appended.wait_for(lambda: (self.end_offset, self.high_watermark, self.epoch)
                                                  != (end, hw, epoch) or not self.is_leader)
            except TimeoutError:
                pass
            return await self._fetch(request, waited=True)
        return answer(high_watermark=self.high_watermark, records=self.read(part.fetch_offset))

    async def _fetch_snapshot(self, request: Any) -> Any:
        """KafkaRaftClient.handleFetchSnapshotRequest: the snapshot's bytes from `position`, in chunks."""
        Resp = response_class(ApiKey.FETCH_SNAPSHOT)
        part = request.topics[0].partitions[0]
        P = Resp.TopicSnapshot.PartitionSnapshot

        def answer(error: int = 0, **fields: Any) -> Any:
            fields.setdefault("snapshot_id", P.SnapshotId(end_offset=-1, epoch=-1))
            data = P(index=0, error_code=error, current_leader=P.LeaderIdAndEpoch(
                leader_id=self.leader_id, leader_epoch=self.epoch), size=fields.pop("size", -1),
                position=fields.pop("position", -1), unaligned_records=fields.pop("records", b""), **fields)
            return self._response(request, throttle_time_ms=0, error_code=0, topics=[
                Resp.TopicSnapshot(name="__cluster_metadata", partitions=[data])])

        if request.cluster_id not in (None, self.cluster_id):
            return self._response(request, throttle_time_ms=0, error_code=ErrorCode.INCONSISTENT_CLUSTER_ID,
                                  topics=[])
        if not self.is_leader:
            return answer(ErrorCode.NOT_LEADER_OR_FOLLOWER)
        if part.current_leader_epoch != self.epoch:
            return answer(ErrorCode.FENCED_LEADER_EPOCH if part.current_leader_epoch < self.epoch
                          else ErrorCode.UNKNOWN_LEADER_EPOCH)
        if self.snapshot is None or (part.snapshot_id.end_offset, part.snapshot_id.epoch) != self.snapshot[:2]:
            return answer(ErrorCode.SNAPSHOT_NOT_FOUND)
        end, epoch, data = self.snapshot
        if not 0 <= part.position < len(data):
            return answer(ErrorCode.POSITION_OUT_OF_RANGE)
        chunk = data[part.position:part.position + min(self.snapshot_chunk, max(request.max_bytes, 1))]
        return answer(snapshot_id=P.SnapshotId(end_offset=end, epoch=epoch), size=len(data),
                      position=part.position, records=chunk)

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

    def _acceptable(self, broker_id: int) -> bool:
        reg = self.image.cluster.broker(broker_id)
        return reg is not None and not reg.fenced and not reg.in_controlled_shutdown

    def _leader_and_isr_updates(self, remove: int = NO_LEADER, add: int = NO_LEADER) -> list[MetadataRecord]:
        """generateLeaderAndIsrUpdates for the partitions with `remove` in their ISR (or, when adding, every
        partition without a leader that has `add` in its ISR)."""
        out: list[MetadataRecord] = []
        version = partition_record_version(self.level)
        for topic in self.image.topics.by_id.values():
            for pid, p in sorted(topic.partitions.items()):
                if remove != NO_LEADER and remove not in p.isr:
                    continue
                if add != NO_LEADER and (add not in p.isr or p.leader != NO_LEADER):
                    continue
                target = [r for r in p.isr if r != remove] or list(p.isr)

                def ok(r: int, target: list[int] = target) -> bool:
                    return r != remove and (r == add or self._acceptable(r)) and r in target
                leader = p.leader if ok(p.leader) else next((r for r in p.replicas if ok(r)), NO_LEADER)
                change: dict[str, Any] = {}
                if leader != p.leader:
                    change["leader"] = leader
                if target != list(p.isr):
                    change["isr"] = target
                    if self.level < IBP_3_6_IV0 and "leader" not in change:
                        change["leader"] = p.leader
                if change:
                    out.append(PartitionChangeRecord(partition_id=pid, topic_id=topic.topic_id, **change,
                                                     version=version))
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
                    log.info("fixture controller: broker %d session expired: fencing it", broker_id)
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
            unfenced = sorted(b.id for b in self.image.cluster.unfenced_brokers())
            if t.assignments:
                assignment = {a.partition_index: list(a.broker_ids) for a in t.assignments}
            else:
                partitions = self.default_partitions if t.num_partitions == -1 else t.num_partitions
                rf = self.default_replication_factor if t.replication_factor == -1 else t.replication_factor
                if partitions <= 0:
                    results.append(result(ErrorCode.INVALID_PARTITIONS,
                                          "Number of partitions was set to an invalid non-positive value."))
                    continue
                if rf <= 0 or rf > len(unfenced):
                    results.append(result(ErrorCode.INVALID_REPLICATION_FACTOR, (
                        f"Unable to replicate the partition {rf} time(s): The target replication factor of {rf} "
                        f"cannot be reached because only {len(unfenced)} broker(s) are registered.")
                        if rf > 0 else "Replication factor must be larger than 0."))
                    continue
                assignment = {p: [unfenced[(p + i) % len(unfenced)] for i in range(rf)] for p in range(partitions)}
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
                replicas=tuple(replicas), directories=(MIGRATING,) * len(replicas), isr=tuple(isr),
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
                unfenced = sorted(b.id for b in self.image.cluster.unfenced_brokers())
                if t.assignments is not None:
                    assignment = {start + i: list(a.broker_ids) for i, a in enumerate(t.assignments)}
                else:
                    assignment = {p: [unfenced[(p + i) % len(unfenced)] for i in range(rf)]
                                  for p in range(start, t.count)}
                self.append(self._partition_records(topic.topic_id, assignment))
            out.append(Resp.CreatePartitionsTopicResult(name=t.name, error_code=error, error_message=message))
        return self._response(request, throttle_time_ms=0, results=out)

    async def _incremental_alter_configs(self, request: Any) -> Any:
        """ConfigurationControlManager.incrementalAlterConfigs for topics: SET and DELETE as ConfigRecords (a
        null value deletes); an unknown topic UNKNOWN_TOPIC_OR_PARTITION."""
        Resp = response_class(ApiKey.INCREMENTAL_ALTER_CONFIGS)
        out, records = [], []
        for r in request.resources:
            error, message = ErrorCode.NONE, None
            if not self.is_leader:
                error = ErrorCode.NOT_CONTROLLER
            elif r.resource_type != 2:
                error, message = ErrorCode.INVALID_REQUEST, "the test controller alters topic configs only"
            elif self.image.topics.get_topic(r.resource_name) is None:
                error, message = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"Topic {r.resource_name} does not exist"
            elif not request.validate_only:
                for c in r.configs:
                    value = None if c.config_operation == 1 else c.value
                    records.append(ConfigRecord(resource_type=2, resource_name=r.resource_name, name=c.name,
                                                value=value, version=0))
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
                new_isr = [b for b, _ in brokers]
                if new_isr != list(p.isr) or pd.leader_recovery_state != int(p.leader_recovery_state):
                    change: dict[str, Any] = {"isr": new_isr}
                    if pd.leader_recovery_state != int(p.leader_recovery_state):
                        change["leader_recovery_state"] = pd.leader_recovery_state
                    if self.level < IBP_3_6_IV0 and not set(p.isr) <= set(new_isr):
                        change["leader"] = p.leader
                    record = PartitionChangeRecord(partition_id=pd.partition_index, topic_id=topic.topic_id,
                                                   **change, version=partition_record_version(self.level))
                    records.append(record)
                    p = p.merge(record)
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
        start = self._next_producer_id
        self._next_producer_id += PRODUCER_ID_BLOCK
        self.append([ProducerIdsRecord(broker_id=request.broker_id, broker_epoch=request.broker_epoch,
                                       next_producer_id=self._next_producer_id, version=0)])
        return self._controller_error(request, ErrorCode.NONE, producer_id_start=start,
                                      producer_id_len=PRODUCER_ID_BLOCK)


class ControllerThread:
    """The fixture controller on its own event loop thread, for tests whose brokers run in other threads."""

    def __init__(self, **kwargs: Any) -> None:
        self.kwargs = kwargs
        self.controller: KRaftController | None = None
        self.loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._thread: Any = None

    def start(self) -> ControllerThread:
        import threading

        ready = threading.Event()

        async def main() -> None:
            self.loop = asyncio.get_running_loop()
            self._stop = asyncio.Event()
            self.controller = KRaftController(**self.kwargs)
            await self.controller.start()
            ready.set()
            await self._stop.wait()
            await self.controller.stop()

        self._thread = threading.Thread(target=lambda: asyncio.run(main()), name="kraft-controller", daemon=True)
        self._thread.start()
        assert ready.wait(10), "fixture controller did not start"
        return self

    @property
    def voters(self) -> str:
        assert self.controller is not None
        return self.controller.voters

    def call(self, fn: Any, *args: Any) -> Any:
        """Run fn(controller, *args) on the controller's loop; returns its result."""
        assert self.loop is not None

        async def run() -> Any:
            return fn(self.controller, *args)
        return asyncio.run_coroutine_threadsafe(run(), self.loop).result(10)

    def stop(self) -> None:
        if self.loop is not None and self._stop is not None:
            self.loop.call_soon_threadsafe(self._stop.set)
            self._thread.join(10)

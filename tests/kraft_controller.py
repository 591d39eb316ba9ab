"""A test KRaft controller: one active controller of a KRaft quorum, speaking Kafka's controller protocol over a
real socket, for our KRaft brokers to register with and follow. A test fixture, not product code.

What it serves (its ApiVersions lists exactly these): ApiVersions 0-3; Fetch 13-17 of `__cluster_metadata-0`
(topic id AAAAAAAAAAAAAAAAAAAAAQ) as Kafka's raft leader answers observers; FetchSnapshot 0-1; BrokerRegistration 0-4;
BrokerHeartbeat 0-1; CreateTopics 2-7; DeleteTopics 0-6; CreatePartitions 0-3; IncrementalAlterConfigs 0-1;
ElectLeaders 0-2; AlterPartition 0-3; AllocateProducerIds 0; AlterPartitionReassignments 0;
ListPartitionReassignments 0; SaslHandshake 1 and SaslAuthenticate 0-2 (PLAIN, SCRAM-SHA-256/512) when it has users;
AlterClientQuotas 0-1; AlterUserScramCredentials 0; CreateAcls 0-3;
DeleteAcls 0-3; Envelope 0 (broker/quorum/envelope.py says its rules); AssignReplicasToDirs 0 and
BrokerHeartbeat's OfflineLogDirs (broker/quorum/jbod.py).

The metadata log is kept in memory as real v2 record batches (`records.build_batch`) of metadata record frames
(`protocol.metadata_records`): a LeaderChange control batch opens each epoch, then one data batch per controller
operation (Kafka's controller also commits one operation's records as one batch). The fixture's own view of the
metadata is that log replayed through `broker.kraft.loader.MetadataLoader` (the broker's image code, whose merge
rules are pinned against Kafka's by tests/broker/kraft/).

Kafka 3.9 QuorumController rules implemented (metadata/src/main/java/org/apache/kafka/controller/; the code is in
broker/quorum/rules.py, mixed into `KRaftController`):
- ClusterControlManager.registerBroker: cluster id must match (INCONSISTENT_CLUSTER_ID); the broker must support
  the finalized metadata.version (UNSUPPORTED_VERSION; a broker that lists no metadata.version range is refused
  too) and every other finalized feature (one it does not list counts as supported at level 0 only); a live
  registration (heartbeat within the session timeout) with another incarnation id is
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
- ReplicationControlManager.generateLeaderAndIsrUpdates / PartitionChangeBuilder (clean elections only, no ELR;
  the change completes a reassignment the new ISR allows): target ISR without the removed broker, unless that empties it
  (the ISR then keeps its last member); the current leader stays if it is still in the target ISR and
  acceptable, else the first replica in it that is acceptable (unfenced, not shutting down), else no leader (-1).
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
- Partition reassignments (ReplicationControlManager.alterPartitionReassignments / listPartitionReassignments,
  PartitionChangeBuilder completing them from AlterPartition): broker/quorum/reassignment.py says which.
- Client quotas, SCRAM credentials and ACLs (ClientQuotaControlManager, ScramControlManager,
  AclControlManager): broker/quorum/security.py says which.
- ProducerIdControlManager: blocks of 1000 ids, a ProducerIdsRecord per block.
- deleteTopics (RemoveTopicRecord), createPartitions (Kafka's messages; the topic's replication factor, striped),
  incrementalAlterConfigs of topics and brokers (ConfigRecords; DELETE writes a null value), electLeaders (preferred and
  unclean, see `_elect_leaders`).
- The raft leader's Fetch (KafkaRaftClient.handleFetchRequest): cluster id check; INVALID_REQUEST for a topic or
  partition other than `__cluster_metadata-0` (top level) and for a negative max wait, fetch offset or last
  fetched epoch, or a last fetched epoch above the current leader epoch (the partition's error: what real Kafka
  3.7-4.4 controllers refused our broker's first fetches with, last fetched epoch -1); FENCED_LEADER_EPOCH or
  UNKNOWN_LEADER_EPOCH against the request's current leader epoch, with CurrentLeader; DivergingEpoch when the
  last fetched epoch does not end at or after the fetch offset in our log; records from the fetch offset to the
  log end, the high watermark beside them; a fetch with nothing to return waits up to max_wait_ms; from Fetch
  v16 the leader's endpoint in NodeEndpoints (KIP-853).
- Snapshots (`take_snapshot()`): the committed image as a .checkpoint, the log before it deleted; a Fetch below
  the log start answers the SnapshotId; FetchSnapshot (KafkaRaftClient.handleFetchSnapshotRequest) serves its
  bytes from a position (SNAPSHOT_NOT_FOUND, POSITION_OUT_OF_RANGE, leader epoch checks as Fetch's).
Not implemented: a real quorum (one voter; `resign()` only makes the fixture answer NOT_LEADER_OR_FOLLOWER /
NOT_CONTROLLER pointing elsewhere), ELR, automatic unclean elections (unclean.leader.election
.enable), DescribeQuorum.
"""

from __future__ import annotations

import asyncio
import logging
import struct
import time
import uuid
from typing import Any

from broker.kraft.loader import MetadataLoader
from broker.quorum.controller import CONTROLLER_APIS
from broker.quorum.envelope import EnvelopeRules
from broker.quorum.jbod import JbodRules
from broker.quorum.rules import BrokerState, QuorumRules
from broker.quorum.security import SecurityRules
from protocol import ApiKey, decode_request, encode_response_parts, response_class
from protocol.errors import ErrorCode
from protocol.metadata_records import (
    FeatureLevelRecord,
    KRaftVersionRecord,
    LeaderChangeMessage,
    MetadataRecord,
    VotersRecord,
    encode_control_record,
    encode_metadata_record,
)
from records import build_batch

log = logging.getLogger("tests.kraft_controller")

METADATA_TOPIC_ID = uuid.UUID(int=1)  # Kafka's Uuid(0, 1): AAAAAAAAAAAAAAAAAAAAAQ
# The quorum controller's APIs (but DescribeQuorum), and what this stand-in adds: snapshots and SASL.
SERVED = {**{k: v for k, v in CONTROLLER_APIS.items() if k != ApiKey.DESCRIBE_QUORUM},
          ApiKey.API_VERSIONS: (0, 3), ApiKey.FETCH: (13, 17), ApiKey.FETCH_SNAPSHOT: (0, 1),
          ApiKey.SASL_HANDSHAKE: (0, 1), ApiKey.SASL_AUTHENTICATE: (0, 2)}


class KRaftController(JbodRules, QuorumRules, SecurityRules, EnvelopeRules):
    def __init__(self, *, node_id: int = 3000, cluster_id: str = "q1Sh-9_ISia_zwGINzRvyQ", metadata_version: int = 19,
                 session_timeout_ms: int = 9000, default_partitions: int = 1, default_replication_factor: int = 1,
                 epoch: int = 1, ssl_context: Any = None, sasl_users: dict[str, str] | None = None,
                 features: dict[str, int] | None = None, kraft_version: int = 0,
                 admin_principals: set[str] | None = None) -> None:
        self.node_id = node_id
        # The controller listener's security: TLS with `ssl_context` (SSL; SASL_SSL with users too), SASL PLAIN,
        # SCRAM-SHA-256 or SCRAM-SHA-512 (KIP-152 handshake v1 then SaslAuthenticate) with `sasl_users`, user ->
        # password (SASL_PLAINTEXT / SASL_SSL).
        self.ssl_context = ssl_context
        self.sasl_users = sasl_users
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
        self.fetch_delay_s = 0.0  # how long each Fetch answer carrying records is held back (a slow metadata log)
        self.loader = MetadataLoader(fault_handler=self._fault)
        self.brokers: dict[int, BrokerState] = {}
        self.requests: list[tuple[int, Any]] = []  # (api key, request) of every request, for tests to inspect
        self._appended = asyncio.Condition()
        self._server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task] = set()
        self.kraft_version = kraft_version
        self.admin_principals = admin_principals  # who may do forwarded admin requests (None: everyone)
        self.forwarded: list[tuple[int, str, str, str | None]] = []  # (api key, principal, address, client id)
        self._new_epoch()
        # The bootstrap records, as `kafka-storage.sh format` leaves them: metadata.version, then the other
        # finalized features (`--feature name=level`, or Kafka 4.x's defaults for the release).
        self.append([FeatureLevelRecord(name="metadata.version", feature_level=metadata_version, version=0)]
                    + [FeatureLevelRecord(name=n, feature_level=v, version=0)
                       for n, v in sorted((features or {}).items())])

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
        self._server = await asyncio.start_server(self._serve, host, port, ssl=self.ssl_context)
        self.host, self.port = self._server.sockets[0].getsockname()[:2]
        if self.kraft_version >= 1:
            self._append_voters()
        self._spawn(self._expire_sessions())

    def _append_voters(self) -> None:
        """kraft.version 1 (KIP-853): the KRaftVersion and Voters control records of a dynamic quorum (one voter,
        this controller, with its endpoint) in one control batch, as a `--standalone` formatted quorum writes."""
        voter = VotersRecord.Voter(voter_id=self.node_id, voter_directory_id=uuid.UUID(int=0x5EED), endpoints=[
            VotersRecord.Voter.Endpoint(name="CONTROLLER", host=self.host, port=self.port)],
            k_raft_version_feature=VotersRecord.Voter.KRaftVersionFeature(min_supported_version=0,
                                                                           max_supported_version=1))
        records = [KRaftVersionRecord(record_version=0, k_raft_version=self.kraft_version),
                   VotersRecord(record_version=0, voters=[voter])]
        now = int(time.time() * 1000)
        data = build_batch([(*encode_control_record(r), (), now) for r in records], is_control=True,
                           base_offset=self.end_offset, partition_leader_epoch=self.epoch)
        self._add_batch(data, len(records), [])

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
        authenticated = self.sasl_users is None
        sasl: dict[str, Any] = {}  # this connection's mechanism and SCRAM exchange
        try:
            while True:
                size = struct.unpack(">i", await reader.readexactly(4))[0]
                frame = await reader.readexactly(size)
                request = decode_request(bytearray(frame))
                api_key = request.header.request_api_key
                self.requests.append((api_key, request))
                if api_key in (ApiKey.SASL_HANDSHAKE, ApiKey.SASL_AUTHENTICATE):
                    response, authenticated = await self._sasl(request, sasl)
                elif not authenticated and api_key != ApiKey.API_VERSIONS:
                    break  # Kafka's authenticator closes a connection that skips SASL
                else:
                    response = await self._dispatch(request)
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

    async def _dispatch(self, request: Any) -> Any:
        return await getattr(self, f"_{ApiKey(request.API_KEY).name.lower()}")(request)

    async def _sasl(self, request: Any, state: dict[str, Any]) -> tuple[Any, bool]:
        """SASL on the controller listener: (the answer, whether the connection is now authenticated)."""
        from broker.security import scram

        mechanisms = ["PLAIN", *scram.MECHANISMS] if self.sasl_users is not None else []
        if request.API_KEY == ApiKey.SASL_HANDSHAKE:
            ok = request.mechanism in mechanisms
            if ok:
                state["mechanism"] = request.mechanism
            return self._response(request, error_code=0 if ok else ErrorCode.UNSUPPORTED_SASL_MECHANISM,
                                  mechanisms=mechanisms), False
        users, mechanism, token = self.sasl_users or {}, state.get("mechanism"), bytes(request.auth_bytes)
        done, reply = False, b""
        try:
            if mechanism == "PLAIN":
                _, user, password = token.decode().split("\0")
                if users.get(user) != password:
                    raise scram.ScramError("bad password")
                done = True
            elif mechanism in scram.MECHANISMS:
                async def lookup(user: str, mech: str) -> Any:
                    password = users.get(user)
                    return None if password is None else scram.credential_from_password(mech, password, 4096)
                server = state.setdefault("scram", scram.ScramServer(mechanism, lookup))
                reply = await server.evaluate(token)
                done = server.complete
            else:
                raise scram.ScramError("no handshake")
            error, message = ErrorCode.NONE, None
        except (scram.ScramError, ValueError):
            error, message = ErrorCode.SASL_AUTHENTICATION_FAILED, "Authentication failed: Invalid username or password"
        fields: dict[str, Any] = dict(error_code=error, error_message=message, auth_bytes=reply)
        if request.API_VERSION >= 1:
            fields["session_lifetime_ms"] = 0
        return self._response(request, **fields), done

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
        if len(request.topics) != 1 or len(topic.partitions) != 1 or topic.topic_id != METADATA_TOPIC_ID \
                or part.partition != 0:
            return self._response(request, throttle_time_ms=0, error_code=ErrorCode.INVALID_REQUEST, session_id=0,
                                  responses=[])
        if request.max_wait_ms < 0 or part.fetch_offset < 0 or part.last_fetched_epoch < 0 \
                or part.last_fetched_epoch > part.current_leader_epoch:
            return answer(ErrorCode.INVALID_REQUEST)
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
        records = self.read(part.fetch_offset)
        if records and self.fetch_delay_s:
            await asyncio.sleep(self.fetch_delay_s)
        return answer(high_watermark=self.high_watermark, records=records)

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

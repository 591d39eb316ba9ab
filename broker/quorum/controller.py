"""The quorum controller (Kafka's QuorumController): the active controller of a KRaft quorum, on our Raft layer.

Contract:
- One per controller node, over a `broker.raft.driver.RaftDriver` whose listener it is. Its state is the
  metadata image of `broker/kraft/` ("one metadata model"): committed batches are replayed by the same
  `MetadataLoader` the broker uses. The rules that turn a request into records are the mixins of this room
  (rules.py, reassignment.py, jbod.py, security.py, envelope.py: Kafka's ClusterControlManager,
  ReplicationControlManager, ConfigurationControlManager, ProducerIdControlManager, the security managers).
- Active: this node leads the Raft epoch and everything before the epoch's LeaderChange record is committed and
  replayed (Kafka claims leadership once its listener has caught up with the epoch start). Until then, and on
  every node that does not lead, the controller APIs answer NOT_CONTROLLER (the rules check `is_leader`).
- A fresh quorum's first active controller appends the bootstrap records (`bootstrap.checkpoint` of the formatted
  metadata log dir: FeatureLevelRecords, metadata.version first) before serving, as Kafka's
  QuorumController.maybeBootstrap does for an empty log.
- `append(records)` (what the rules call) writes one batch through the Raft client and replays it into the
  image at once, as Kafka's controller replays its own records before they commit, so the next operation sees
  them. `handle(request)` answers once everything the operation appended is committed (Kafka's
  ControllerWriteEvent completes at the high watermark); if leadership is lost first, the connection is closed
  and the sender retries elsewhere.
- Leadership lost with records replayed but not committed: the image is rebuilt from the committed log (Kafka
  reverts to its last committed snapshot of the timeline).
- Heartbeat state (BrokerState) is in memory on the active controller; a new active controller starts every
  registered broker's session at its claim time (Kafka's BrokerHeartbeatManager does the same).
- `changed()`: an awaitable set whenever the log end or the high watermark moves or leadership changes (what a
  parked observer Fetch waits on).
Known gaps: no snapshots written or loaded by the controller; no controller registration (RegisterControllerRecord);
no UpdateFeatures; no ELR; placement is round-robin over unfenced brokers, not rack-aware.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections import deque
from typing import Any

from broker.kraft.loader import MetadataLoader
from broker.quorum.envelope import EnvelopeRules
from broker.quorum.jbod import JbodRules
from broker.quorum.rules import BrokerState, QuorumRules
from broker.quorum.security import SecurityRules
from broker.raft.client import CommittedBatch, LeaderAndEpoch, NotLeaderError, committed_batch
from broker.raft.driver import RaftDriver
from broker.raft.messages import METADATA_TOPIC
from broker.raft.states import LeaderState
from protocol import ApiKey, response_class
from protocol.errors import ErrorCode
from protocol.metadata_records import MetadataRecord, decode_metadata_record, encode_metadata_record
from records import iter_batches

log = logging.getLogger("broker.quorum")

# What the controller listener serves (besides the Raft APIs) and the versions the rules were checked at against
# Kafka's (tests/interop/test_kraft_controller_double.py; Kafka 4.1 and 4.4 brokers send these).
CONTROLLER_APIS: dict[int, tuple[int, int]] = {
    ApiKey.BROKER_REGISTRATION: (0, 4), ApiKey.BROKER_HEARTBEAT: (0, 2), ApiKey.CREATE_TOPICS: (2, 7),
    ApiKey.ALTER_PARTITION: (0, 3), ApiKey.ALLOCATE_PRODUCER_IDS: (0, 0), ApiKey.DELETE_TOPICS: (0, 6),
    ApiKey.CREATE_PARTITIONS: (0, 3), ApiKey.INCREMENTAL_ALTER_CONFIGS: (0, 1), ApiKey.ELECT_LEADERS: (0, 2),
    ApiKey.ALTER_PARTITION_REASSIGNMENTS: (0, 0), ApiKey.LIST_PARTITION_REASSIGNMENTS: (0, 0),
    ApiKey.ALTER_CLIENT_QUOTAS: (0, 1), ApiKey.ALTER_USER_SCRAM_CREDENTIALS: (0, 0), ApiKey.CREATE_ACLS: (0, 3),
    ApiKey.DELETE_ACLS: (0, 3), ApiKey.ENVELOPE: (0, 0), ApiKey.ASSIGN_REPLICAS_TO_DIRS: (0, 0),
    ApiKey.DESCRIBE_QUORUM: (0, 2)}
_READ_BYTES = 1024 * 1024


class LeadershipLost(Exception):
    """The operation's records may never commit: this node stopped leading before they did."""


class QuorumController(JbodRules, QuorumRules, SecurityRules, EnvelopeRules):
    def __init__(self, driver: RaftDriver, *, cluster_id: str, bootstrap: list[MetadataRecord],
                 voter_endpoints: dict[int, tuple[str, int]] | None = None, session_timeout_ms: int = 9000,
                 default_partitions: int = 1, default_replication_factor: int = 1) -> None:
        self.driver = driver
        self.raft = driver.client
        self.node_id = self.raft.node_id
        self.cluster_id = cluster_id
        self.bootstrap = bootstrap
        self.voter_endpoints = voter_endpoints or {}
        # observer id -> (its last fetch offset, when in wall-clock ms), kept by the listener (server.py)
        self.observers: dict[int, tuple[int, int]] = {}
        self.session_timeout_s = session_timeout_ms / 1000
        self.default_partitions = default_partitions
        self.default_replication_factor = default_replication_factor
        self.admin_principals: set[str] | None = None
        # What EnvelopeRules records of each forwarded request; kept short (they are for diagnosis).
        self.forwarded: deque[tuple[int, str, str, str | None]] = deque(maxlen=100)  # type: ignore[assignment]
        self.requests: deque[tuple[int, Any]] = deque(maxlen=100)  # type: ignore[assignment]
        self.brokers: dict[int, BrokerState] = {}
        self.loader = MetadataLoader()
        self._committed_end = 0  # next offset to be delivered by the Raft client
        self._replayed_end = 0  # the image holds every record below this (uncommitted ones on the active one)
        self._leader = LeaderAndEpoch(-1, 0)
        self._active = False
        self._waiters: list[tuple[int, asyncio.Future[None]]] = []
        self._changed = asyncio.Event()
        self._tasks: set[asyncio.Task[None]] = set()

    # ---- what the rules read
    @property
    def image(self) -> Any:
        return self.loader.image

    @property
    def level(self) -> int:
        return self.image.features.metadata_version or 0

    @property
    def end_offset(self) -> int:
        return self.raft.log.end_offset

    @property
    def is_leader(self) -> bool:
        return self._active

    @property
    def leader(self) -> LeaderAndEpoch:
        return self._leader

    # ---- lifecycle
    def start(self) -> None:
        self.driver.register(self)
        task = asyncio.get_running_loop().create_task(self._expire_sessions(), name="controller-sessions")
        self._tasks.add(task)

    async def stop(self) -> None:
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self._fail_waiters()

    # ---- the Raft listener
    def handle_commit(self, batches: list[CommittedBatch]) -> None:
        for batch in batches:
            if batch.last_offset >= self._replayed_end:  # not replayed when appended (another leader's, or ours
                self._replay(batch)                        # before a restart)
            self._committed_end = batch.last_offset + 1
        self.loader.flush()
        self._replayed_end = max(self._replayed_end, self._committed_end)
        self._maybe_activate()
        done = [(o, f) for o, f in self._waiters if o <= self._committed_end]
        self._waiters = [(o, f) for o, f in self._waiters if o > self._committed_end]
        for _, fut in done:
            if not fut.done():
                fut.set_result(None)
        self._signal()

    def handle_leader_change(self, leader: LeaderAndEpoch) -> None:
        was_active = self._active
        self._leader = leader
        if leader.leader_id != self.node_id:
            self._active = False
            if was_active:
                log.info("controller %d: no longer active (leader %d, epoch %d)", self.node_id, leader.leader_id,
                         leader.epoch)
            self._fail_waiters()
            if self._replayed_end > self._committed_end:
                self._reload()
        else:
            self._maybe_activate()
        self._signal()

    def _replay(self, batch: CommittedBatch) -> None:
        if batch.is_control:
            self.loader.load_control_records(batch.control_records)
            self.loader.load_batch(batch.base_offset, batch.epoch, batch.append_timestamp, [], batch.last_offset)
            return
        messages = [decode_metadata_record(value).message for value in batch.records]
        self.loader.load_batch(batch.base_offset, batch.epoch, batch.append_timestamp, messages, batch.last_offset)

    def _reload(self) -> None:
        """The image again from the committed log alone (what this node replayed beyond it may never commit)."""
        log.info("controller %d: dropping records %d-%d that did not commit; replaying the committed log",
                 self.node_id, self._committed_end, self._replayed_end - 1)
        self.loader = MetadataLoader()
        raft_log, position = self.raft.log, self.raft.log.start_offset
        while position < self._committed_end:
            data = raft_log.read(position, _READ_BYTES, max_offset=self._committed_end)
            raws = [raw for raw in iter_batches(data) if raw.last_offset < self._committed_end]
            if not raws:
                break
            for raw in raws:
                self._replay(committed_batch(raw))
            position = raws[-1].last_offset + 1
        self.loader.flush()
        self._replayed_end = self._committed_end

    def _maybe_activate(self) -> None:
        state = self.raft.state
        if self._active or not isinstance(state, LeaderState) or self._leader.leader_id != self.node_id:
            return
        if self._committed_end <= state.epoch_start_offset:
            return  # the previous epochs' records are not all replayed yet
        self._active = True
        now = time.monotonic()
        # Every registered broker gets a full session from now (its heartbeats went to the old controller).
        self.brokers = {reg.id: BrokerState(reg.epoch, reg.incarnation_id, now)
                        for reg in self.image.cluster.brokers.values()}
        log.info("controller %d: active in epoch %d (metadata offset %d)", self.node_id, state.epoch,
                 self._committed_end - 1)
        if self.image.features.metadata_version is None and self.bootstrap:
            log.info("controller %d: a fresh metadata log: appending %d bootstrap records", self.node_id,
                     len(self.bootstrap))
            self.append(list(self.bootstrap))

    # ---- appends
    def append(self, messages: list[MetadataRecord]) -> int:
        """One batch through the Raft client, replayed into the image at once; the offset of its first record."""
        if not messages:
            raise ValueError("no records to append")
        base = self.raft.log.end_offset
        before = self._replayed_end
        # Set first: with a single voter the batch commits inside the append, and must not be replayed twice.
        self._replayed_end = base + len(messages)
        try:
            self.driver.append([encode_metadata_record(m) for m in messages])
        except NotLeaderError:
            self._replayed_end = before
            raise
        self.loader.load_batch(base, self.raft.epoch, int(time.time() * 1000), messages, base + len(messages) - 1)
        self.loader.flush()
        self._signal()
        return base

    async def wait_committed(self, end: int) -> None:
        """Until every record below `end` is committed; LeadershipLost if this node stops leading first."""
        if end <= self._committed_end:
            return
        if not self._active:
            raise LeadershipLost()
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiters.append((end, fut))
        await fut

    def _fail_waiters(self) -> None:
        waiters, self._waiters = self._waiters, []
        for _, fut in waiters:
            if not fut.done():
                fut.set_exception(LeadershipLost())

    def _signal(self) -> None:
        self._changed.set()
        self._changed = asyncio.Event()

    def changed(self) -> asyncio.Event:
        return self._changed

    # ---- requests
    async def handle(self, request: Any) -> Any:
        """The answer to a controller API request (CONTROLLER_APIS), once what it appended has committed."""
        before = self._replayed_end
        try:
            response = await self._dispatch(request)
        except NotLeaderError as e:
            raise LeadershipLost() from e
        if self._replayed_end > before:
            await self.wait_committed(self._replayed_end)
        return response

    async def _dispatch(self, request: Any) -> Any:
        return await getattr(self, f"_{ApiKey(request.API_KEY).name.lower()}")(request)

    # ---- DescribeQuorum (Kafka's KafkaRaftClient.handleDescribeQuorumRequest, answered by the Raft leader)
    async def _describe_quorum(self, request: Any) -> Any:
        Resp = response_class(ApiKey.DESCRIBE_QUORUM)
        P = Resp.TopicData.PartitionData
        v = request.API_VERSION
        state = self.raft.state

        def partition(error: int = ErrorCode.NONE, **fields: Any) -> Any:
            out = Resp[v](error_code=0, topics=[Resp.TopicData(topic_name=METADATA_TOPIC, partitions=[
                P(partition_index=0, error_code=error, **fields)])])
            if v >= 2:
                out.error_message = None
                out.nodes = [Resp.Node(node_id=i, listeners=[Resp.Node.Listener(
                    name="CONTROLLER", host=host, port=port)]) for i, (host, port) in sorted(
                    self.voter_endpoints.items())] if error == ErrorCode.NONE else []
            return out

        if not isinstance(state, LeaderState):
            return partition(ErrorCode.NOT_LEADER_OR_FOLLOWER, leader_id=self.raft.leader_id,
                             leader_epoch=self.raft.epoch, high_watermark=-1, current_voters=[], observers=[])
        now_wall, now_mono = int(time.time() * 1000), int(time.monotonic() * 1000)

        def replica(replica_id: int, end: int, fetched: int) -> Any:
            fields: dict[str, Any] = dict(replica_id=replica_id, log_end_offset=end)
            if v >= 1:
                fields.update(last_fetch_timestamp=fetched, last_caught_up_timestamp=fetched)
            if v >= 2:
                fields["replica_directory_id"] = uuid.UUID(int=0)
            return P.ReplicaState(**fields)

        voters = []
        for voter in sorted(self.raft.voters):
            if voter == self.node_id:
                voters.append(replica(voter, self.raft.log.end_offset, now_wall))
                continue
            seen = state.last_fetch.get(voter)
            voters.append(replica(voter, state.end_offsets.get(voter, -1),
                                  -1 if seen is None else now_wall - (now_mono - seen)))
        observers = [replica(i, offset, at) for i, (offset, at) in sorted(self.observers.items())]
        return partition(leader_id=self.node_id, leader_epoch=state.epoch, high_watermark=self.raft.high_watermark,
                         current_voters=voters, observers=observers)

"""The Raft client of `__cluster_metadata-0`, sans-I/O (Kafka's KafkaRaftClient and QuorumState, KIP-595 and the
pre-vote of KIP-996), for a voter of a static quorum (`controller.quorum.voters`).

Contract:
- No sockets, no clock, no tasks: every call takes `now_ms`. `poll(now_ms)` runs the timers and returns the
  requests to send (`RaftRequest`: destination node, API key, a builder taking the version the connection
  negotiated); whoever sends them hands back `handle_response(now_ms, request, response)` or
  `handle_failure(now_ms, request)` (no answer, a refused connection, a request timeout). A request from another
  node is answered by `handle_request(now_ms, request)`, at once, at the request's version. `next_poll_ms()` is when
  a timer next needs `poll`. So a test drives a whole quorum with a fake clock and an in-memory network, and
  `driver.py` drives it over sockets.
- States and transitions: `states.py`. Start-up reads `quorum-state` (Kafka's QuorumState.initialize): an epoch
  below the log's last epoch starts Unattached at the log's; our own leadership starts Resigned; our own vote starts
  Prospective (only a prospective becomes a candidate); another vote starts Unattached with it; a known leader
  starts Follower; no file starts Unattached at the log's last epoch (0 when empty). Every change of epoch, vote or
  leader is written to `quorum-state` before anything that depends on it is answered or sent (so a restarted voter
  never votes twice in one epoch).
- Vote (v0-2): Kafka's checks in Kafka's order (cluster id: INCONSISTENT_CLUSTER_ID; not our one partition:
  INVALID_REQUEST; a negative last offset or epoch, or a last epoch above the candidate's (at or above for a
  standard vote): INVALID_REQUEST; an older epoch: FENCED_LEADER_EPOCH; a voter id that is not ours:
  INVALID_VOTER_KEY). A standard vote of a newer epoch moves us to Unattached in it first; a pre-vote never
  changes our state. The log is up to date when (last epoch, last offset) >= ours.
- BeginQuorumEpoch / EndQuorumEpoch: an older epoch is FENCED_LEADER_EPOCH; otherwise we follow the named
  leader (a newer epoch, or the same epoch with no leader known). EndQuorumEpoch makes the resigning leader's
  followers start an election after Kafka's strict exponential backoff by their place in the preferred
  successors (the first at once), and lets them grant pre-votes again.
- Fetch (KIP-595, Kafka's handleFetchRequest): INVALID_REQUEST for a negative max wait, fetch offset or last
  fetched epoch, or a last fetched epoch above the request's current leader epoch; then FENCED_LEADER_EPOCH
  for an older current leader epoch, UNKNOWN_LEADER_EPOCH for a newer one, NOT_LEADER_OR_FOLLOWER when we do
  not lead this epoch (each with CurrentLeader set to what we know). A fetch whose (offset, last fetched epoch)
  our log contradicts is answered with DivergingEpoch (the largest epoch <= it we hold, and where it ends) and
  no records, and does not count as the replica's position; otherwise records from the fetch offset, and a
  voter's fetch offset is its log end offset for the high watermark.
- The leader appends a LeaderChangeMessage control record (leader, voters, granting voters) at the start of
  its epoch; its high watermark is the offset a majority of voters (itself included) have reached, moved only
  forward and only past that record (Kafka's maybeUpdateHighWatermark: never on a record of an older epoch
  alone). A follower's high watermark is min(leader's, its log end). A follower truncates on a DivergingEpoch
  (`RaftLog.truncate_to_end_offset`) and fetches again.
- Listeners (`RaftListener`, Kafka's RaftClient.Listener): `handle_commit(batches)` gets every batch below the
  high watermark once, in order, from the log start (control batches too, decoded); `handle_leader_change`
  each new (leader, epoch). `append(values)` on the leader writes one batch at once and returns its last offset.
- Known gaps (issue 32): a fetch is answered at once, never parked (Kafka's leader holds an empty fetch up to
  its max wait; our follower pauses `FETCH_IDLE_MS` after an empty answer instead); no append linger or
  batching across calls; no snapshots (FetchSnapshot, log start past 0); no observers' state kept on the leader;
  no dynamic voters (kraft.version 1: AddRaftVoter, VotersRecord), directory ids are sent as zero. A voter
  without Vote v2 cannot be asked for a pre-vote: `handle_pre_vote_unsupported` counts it as granted (our reading
  of KIP-996's compatibility section, not checked against Kafka's code).
"""

from __future__ import annotations

import logging
import random
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Protocol

from broker.raft import messages as msg
from broker.raft.config import QuorumConfig
from broker.raft.quorum_state import ElectionState
from broker.raft.raft_log import RaftLog
from broker.raft.states import (
    NO_ID,
    CandidateState,
    EpochState,
    FollowerState,
    LeaderState,
    ProspectiveState,
    ResignedState,
    UnattachedState,
)
from protocol import ApiKey
from protocol.errors import ErrorCode
from protocol.metadata_records import (
    LeaderChangeMessage,
    MetadataParseError,
    decode_control_record,
    encode_control_record,
)
from records import iter_batches

log = logging.getLogger("broker.raft")

RETRY_BACKOFF_BASE_MS = 100  # Kafka's KafkaRaftClient.RETRY_BACKOFF_BASE_MS (lost elections)
CHECK_QUORUM_TIMEOUT_FACTOR = 1.5  # Kafka's LeaderState.CHECK_QUORUM_TIMEOUT_FACTOR
FETCH_IDLE_MS = 50  # our pause after an empty fetch answer (Kafka parks the fetch on the leader instead)
_READ_BYTES = 1024 * 1024
_LEADER_ERRORS = (ErrorCode.FENCED_LEADER_EPOCH, ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.UNKNOWN_LEADER_EPOCH)


class NotLeaderError(Exception):
    pass


class QuorumStateStore(Protocol):
    def read(self) -> ElectionState | None: ...

    def write(self, state: ElectionState) -> None: ...


@dataclass(frozen=True)
class LeaderAndEpoch:
    leader_id: int  # -1: none known
    epoch: int


@dataclass
class CommittedBatch:
    """A committed batch (Kafka's Batch): data records' values, or a control batch's decoded records."""

    base_offset: int
    last_offset: int
    epoch: int
    append_timestamp: int
    records: list[bytes]
    control_records: list[tuple[int, Any]]

    @property
    def is_control(self) -> bool:
        return bool(self.control_records)


class RaftListener(Protocol):
    def handle_commit(self, batches: list[CommittedBatch]) -> None: ...

    def handle_leader_change(self, leader: LeaderAndEpoch) -> None: ...


@dataclass
class RaftRequest:
    destination: int
    api_key: int
    build: Callable[[int], Any]  # version -> the request
    serial: int  # the state it was sent from: answers to an earlier state only teach epochs and leaders
    pre_vote: bool = False


class RaftClient:
    def __init__(self, node_id: int, voters: Iterable[int], log_: RaftLog, store: QuorumStateStore, *,
                 now_ms: int, config: QuorumConfig | None = None, cluster_id: str | None = None,
                 rng: random.Random | None = None) -> None:
        self.node_id = node_id
        self.voters = frozenset(voters)
        if node_id not in self.voters:
            raise ValueError(f"node {node_id} is not one of the voters {sorted(self.voters)}")
        self.log = log_
        self.store = store
        self.config = config or QuorumConfig()
        self.cluster_id = cluster_id
        self.rng = rng or random.Random()
        self.listeners: list[tuple[RaftListener, list[int]]] = []  # with the next offset each is given
        self._serial = 0
        self._in_flight: dict[int, int] = {}  # destination -> when its request is given up (request timeout)
        self._retry_at: dict[int, int] = {}  # destination -> not before
        self._election_retries = 0
        self._written: ElectionState | None = None
        self._fired: LeaderAndEpoch | None = None
        self.state: EpochState = self._initial_state(now_ms)

    # ---- what others read ----------
    @property
    def epoch(self) -> int:
        return self.state.epoch

    @property
    def leader_id(self) -> int:
        return self.state.leader_id

    @property
    def is_leader(self) -> bool:
        return isinstance(self.state, LeaderState)

    @property
    def high_watermark(self) -> int:
        return self.log.high_watermark

    def leader_and_epoch(self) -> LeaderAndEpoch:
        return LeaderAndEpoch(self._known_leader(), self.state.epoch)

    def _known_leader(self) -> int:
        """The leader we name to others: a prospective keeps its old leader only to refuse standard votes, and
        names none (it stopped hearing from it; naming it would send other prospectives back to following)."""
        return NO_ID if isinstance(self.state, ProspectiveState) else self.state.leader_id

    @property
    def majority(self) -> int:
        return len(self.voters) // 2 + 1

    # ---- start-up -----------------------------------------------------------------------------------------------
    def _initial_state(self, now: int) -> EpochState:
        stored = self.store.read()
        self._written = stored
        log_epoch = self.log.last_fetched_epoch
        if stored is None:
            state: EpochState = UnattachedState(log_epoch, election_deadline=self._election_deadline(now))
        elif stored.epoch < log_epoch:
            log.warning("node %d: quorum-state epoch %d is below the log's last epoch %d", self.node_id,
                        stored.epoch, log_epoch)
            state = UnattachedState(log_epoch, election_deadline=self._election_deadline(now))
        elif stored.leader_id == self.node_id:
            # We led this epoch before a restart: we cannot know what we acknowledged, so we give it up.
            state = ResignedState(stored.epoch, leader_id=self.node_id, voted_id=stored.voted_id,
                                  election_deadline=self._election_deadline(now),
                                  unacknowledged=set(self.voters - {self.node_id}))
        elif stored.voted_id == self.node_id and stored.leader_id < 0:
            # We were a candidate of this epoch. Only a prospective becomes a candidate (KIP-996), so the
            # election starts over with a pre-vote; the vote for ourselves in this epoch stays spent.
            state = ProspectiveState(stored.epoch, voted_id=self.node_id, granted={self.node_id},
                                     election_deadline=self._election_deadline(now))
        elif stored.leader_id >= 0 and stored.leader_id in self.voters:
            state = FollowerState(stored.epoch, leader_id=stored.leader_id, voted_id=stored.voted_id,
                                  fetch_deadline=now + self.config.fetch_timeout_ms)
        else:
            state = UnattachedState(stored.epoch, voted_id=stored.voted_id,
                                    election_deadline=self._election_deadline(now))
        log.info("node %d: starting %s in epoch %d (log end %d, last epoch %d)", self.node_id, state.name,
                 state.epoch, self.log.end_offset, log_epoch)
        return state

    # ---- timers ----------
    def _election_deadline(self, now: int) -> int:
        timeout = self.config.election_timeout_ms
        return now + timeout + self.rng.randrange(max(1, timeout))

    def _binary_backoff_ms(self) -> int:
        retries = max(1, self._election_retries)
        return min(RETRY_BACKOFF_BASE_MS * self.rng.randrange(2 << min(20, retries - 1)),
                   self.config.election_backoff_max_ms)

    def _strict_backoff_ms(self, position: int, total: int) -> int:
        if position == 0:
            return 0
        if position < 0 or position >= total:
            return self.config.election_backoff_max_ms
        base = self.config.election_backoff_max_ms >> (total - 1)
        return min(self.config.election_backoff_max_ms, base << (position - 1))

    def next_poll_ms(self, now: int) -> int:
        """When `poll`, called at `now`, next has something to do on its own (a timer, a retry, a request to give
        up): the earliest such time after `now`."""
        s = self.state
        times = [t for t in self._retry_at.values()] + list(self._in_flight.values())
        if isinstance(s, (UnattachedState, ProspectiveState, ResignedState)):
            times.append(s.election_deadline)
        elif isinstance(s, CandidateState):
            times.append(s.election_deadline if s.backoff_until is None else s.backoff_until)
        elif isinstance(s, FollowerState):
            times += [s.fetch_deadline, s.next_fetch_at]
        elif isinstance(s, LeaderState) and len(self.voters) > 1:
            times.append(s.check_quorum_deadline)
        return min((t for t in times if t > now), default=now + 60000)

    # ---- transitions ----------
    def _set_state(self, state: EpochState) -> None:
        election = ElectionState(state.epoch, state.leader_id, state.voted_id)
        if election != self._written:
            self.store.write(election)  # before anything of the new state is sent or answered
            self._written = election
        log.info("node %d: %s -> %s in epoch %d (leader %d, voted %d)", self.node_id, self.state.name
                 if hasattr(self, "state") else "-", state.name, state.epoch, state.leader_id, state.voted_id)
        self.state = state
        # Kafka's resetConnections: what was in flight belongs to the old state.
        self._serial += 1
        self._in_flight.clear()
        self._retry_at.clear()
        self._fire_leader_change()

    def _to_unattached(self, now: int, epoch: int, voted_id: int = NO_ID, *, deadline: int | None = None) -> None:
        self._set_state(UnattachedState(epoch, voted_id=voted_id, election_deadline=deadline
                                        if deadline is not None else self._election_deadline(now)))

    def _to_follower(self, now: int, epoch: int, leader_id: int) -> None:
        voted = self.state.voted_id if epoch == self.state.epoch else NO_ID
        self._election_retries = 0
        self._set_state(FollowerState(epoch, leader_id=leader_id, voted_id=voted,
                                      fetch_deadline=now + self.config.fetch_timeout_ms, next_fetch_at=now))

    def _to_prospective(self, now: int) -> None:
        s = self.state
        self._election_retries += 1
        self._set_state(ProspectiveState(s.epoch, leader_id=s.leader_id if isinstance(s, FollowerState) else NO_ID,
                                         voted_id=s.voted_id, granted={self.node_id},
                                         election_deadline=self._election_deadline(now)))
        self._maybe_win_pre_vote(now)

    def _maybe_win_pre_vote(self, now: int) -> None:
        s = self.state
        if isinstance(s, ProspectiveState) and len(s.granted) >= self.majority:
            self._set_state(CandidateState(s.epoch + 1, voted_id=self.node_id, granted={self.node_id},
                                           election_deadline=self._election_deadline(now)))
            self._maybe_win_vote(now)

    def _maybe_win_vote(self, now: int) -> None:
        s = self.state
        if isinstance(s, CandidateState) and len(s.granted) >= self.majority:
            self._become_leader(now, s)

    def _become_leader(self, now: int, candidate: CandidateState) -> None:
        start = self.log.end_offset
        state = LeaderState(candidate.epoch, leader_id=self.node_id, voted_id=self.node_id, epoch_start_offset=start,
                            end_offsets={v: -1 for v in self.voters}, acknowledged={self.node_id},
                            check_quorum_deadline=now + self._check_quorum_ms())
        self._election_retries = 0
        self._set_state(state)
        # The HW may only pass records of this epoch: start it with a record at once (Kafka does the same).
        message = LeaderChangeMessage(record_version=0, leader_id=self.node_id,
                                      voters=[LeaderChangeMessage.Voter(voter_id=v) for v in sorted(self.voters)],
                                      granting_voters=[LeaderChangeMessage.Voter(voter_id=v)
                                                       for v in sorted(candidate.granted)])
        key, value = encode_control_record(message)
        self.log.append_control(key, value, state.epoch)  # record timestamps are wall-clock time, not `now`
        self._leader_appended()

    def _to_resigned(self, now: int, preferred: list[int]) -> None:
        s = self.state
        self._set_state(ResignedState(s.epoch, leader_id=self.node_id, voted_id=s.voted_id,
                                      election_deadline=self._election_deadline(now),
                                      preferred_successors=preferred,
                                      unacknowledged=set(self.voters - {self.node_id})))

    def _check_quorum_ms(self) -> int:
        return int(self.config.fetch_timeout_ms * CHECK_QUORUM_TIMEOUT_FACTOR)

    def _maybe_transition(self, now: int, leader_id: int, epoch: int) -> bool:
        """What a request or answer teaches about the epoch and its leader (Kafka's maybeTransition); whether
        we changed state because of it."""
        if epoch > self.state.epoch:
            if leader_id >= 0 and leader_id != self.node_id and leader_id in self.voters:
                self._to_follower(now, epoch, leader_id)
            else:
                self._to_unattached(now, epoch)
            return True
        # The same epoch: whoever did not know its leader follows it now. A prospective that knew it keeps asking:
        # voters told by EndQuorumEpoch that the leader resigned still name it until the next epoch.
        s = self.state
        if epoch == s.epoch and leader_id >= 0 and leader_id != self.node_id and leader_id in self.voters \
                and isinstance(s, (UnattachedState, ProspectiveState, CandidateState)) and s.leader_id < 0:
            self._to_follower(now, epoch, leader_id)
            return True
        return False

    # ---- the listener interface ----------
    def register(self, listener: RaftListener) -> None:
        """Deliver every committed batch from the log start to `listener`, then what commits after."""
        self.listeners.append((listener, [self.log.start_offset]))
        self._fired = self.leader_and_epoch()
        listener.handle_leader_change(self._fired)
        self._deliver()

    def _fire_leader_change(self) -> None:
        current = self.leader_and_epoch()
        if current != self._fired:
            self._fired = current
            for listener, _ in self.listeners:
                listener.handle_leader_change(current)

    def _deliver(self) -> None:
        hw = self.log.high_watermark
        for listener, position in self.listeners:
            while position[0] < hw:
                data = self.log.read(position[0], _READ_BYTES, max_offset=hw)
                batches = []
                for raw in iter_batches(data):
                    if raw.last_offset >= hw:
                        break
                    batches.append(committed_batch(raw))
                if not batches:
                    break
                position[0] = batches[-1].last_offset + 1
                listener.handle_commit(batches)

    # ---- the leader's appends ----------
    def append(self, values: list[bytes], now_ms: int) -> int:
        """Append one batch of record values in the current epoch; the offset of its last record. Raises
        NotLeaderError unless we lead. (`now_ms` is the client's clock, kept for the sans-I/O calling
        convention; the records' timestamps are wall-clock time.)"""
        if not isinstance(self.state, LeaderState):
            raise NotLeaderError(f"node {self.node_id} is {self.state.name} in epoch {self.state.epoch}, "
                                 f"leader {self.state.leader_id}")
        _, last = self.log.append_as_leader(values, self.state.epoch)
        self._leader_appended()
        return last

    def _leader_appended(self) -> None:
        s = self.state
        assert isinstance(s, LeaderState)
        s.end_offsets[self.node_id] = self.log.end_offset
        self._maybe_advance_leader_hw()

    def _maybe_advance_leader_hw(self) -> None:
        s = self.state
        assert isinstance(s, LeaderState)
        offsets = sorted((s.end_offsets.get(v, -1) for v in self.voters), reverse=True)
        reached = offsets[len(self.voters) // 2]
        # Strictly past the epoch's first record: a majority holding only older epochs' records proves nothing.
        if reached > s.epoch_start_offset and self.log.update_high_watermark(reached):
            self._deliver()

    def resign(self, now_ms: int) -> None:
        """Give up leadership (a graceful shutdown): Resigned, telling the voters with EndQuorumEpoch."""
        s = self.state
        if isinstance(s, LeaderState):
            self._to_resigned(now_ms, self._successors(s))

    def _successors(self, s: LeaderState) -> list[int]:
        others = [v for v in self.voters if v != self.node_id]
        return sorted(others, key=lambda v: (-s.end_offsets.get(v, -1), v))

    # ---- poll: timers and requests to send ----------
    def poll(self, now: int) -> list[RaftRequest]:
        for dest, deadline in list(self._in_flight.items()):
            if now >= deadline:  # never answered: the sender gave up too (Kafka's request timeout)
                del self._in_flight[dest]
        s = self.state
        if isinstance(s, UnattachedState) and now >= s.election_deadline:
            self._to_prospective(now)
        elif isinstance(s, ProspectiveState) and now >= s.election_deadline:
            self._lost_pre_vote(now)
        elif isinstance(s, CandidateState):
            if s.backoff_until is not None and now >= s.backoff_until or now >= s.election_deadline:
                self._to_prospective(now)
        elif isinstance(s, FollowerState) and now >= s.fetch_deadline:
            log.info("node %d: no fetch from leader %d for %d ms", self.node_id, s.leader_id,
                     self.config.fetch_timeout_ms)
            self._to_prospective(now)
        elif isinstance(s, LeaderState) and len(self.voters) > 1 and now >= s.check_quorum_deadline:
            log.info("node %d: a majority of voters did not fetch for %d ms: resigning", self.node_id,
                     self._check_quorum_ms())
            self._to_resigned(now, self._successors(s))
        elif isinstance(s, ResignedState) and now >= s.election_deadline:
            self._to_prospective(now)
        return self._requests(now)

    def _lost_pre_vote(self, now: int) -> None:
        """Back to following the leader it knew (a fresh fetch timeout), else Unattached after a backoff."""
        s = self.state
        if s.leader_id >= 0:
            self._to_follower(now, s.epoch, s.leader_id)
        else:
            self._to_unattached(now, s.epoch, s.voted_id, deadline=now + self._binary_backoff_ms())

    def _ready(self, dest: int, now: int) -> bool:
        return dest not in self._in_flight and self._retry_at.get(dest, 0) <= now

    def _send(self, out: list[RaftRequest], now: int, dest: int, api_key: int, build: Callable[[int], Any],
              pre_vote: bool = False) -> None:
        self._in_flight[dest] = now + self.config.request_timeout_ms
        out.append(RaftRequest(dest, api_key, build, self._serial, pre_vote))

    def _requests(self, now: int) -> list[RaftRequest]:
        out: list[RaftRequest] = []
        s = self.state
        others = sorted(self.voters - {self.node_id})
        if isinstance(s, (ProspectiveState, CandidateState)):
            if isinstance(s, CandidateState) and s.backoff_until is not None:
                return out
            pre_vote = isinstance(s, ProspectiveState)
            last_epoch, last_offset = self.log.last_fetched_epoch, self.log.end_offset
            for v in others:
                if v not in s.granted and v not in s.rejected and self._ready(v, now):
                    self._send(out, now, v, ApiKey.VOTE, _bind(
                        msg.vote_request, self.cluster_id, epoch=s.epoch, candidate_id=self.node_id, voter_id=v,
                        last_epoch=last_epoch, last_offset=last_offset, pre_vote=pre_vote), pre_vote)
        elif isinstance(s, LeaderState):
            for v in others:
                if v not in s.acknowledged and self._ready(v, now):
                    self._send(out, now, v, ApiKey.BEGIN_QUORUM_EPOCH, _bind(
                        msg.begin_quorum_epoch_request, self.cluster_id, epoch=s.epoch, leader_id=self.node_id,
                        voter_id=v))
        elif isinstance(s, FollowerState):
            if now >= s.next_fetch_at and self._ready(s.leader_id, now):
                self._send(out, now, s.leader_id, ApiKey.FETCH, _bind(
                    msg.fetch_request, self.cluster_id, replica_id=self.node_id, epoch=s.epoch,
                    fetch_offset=self.log.end_offset, last_fetched_epoch=self.log.last_fetched_epoch))
        elif isinstance(s, ResignedState):
            for v in others:
                if v in s.unacknowledged and self._ready(v, now):
                    self._send(out, now, v, ApiKey.END_QUORUM_EPOCH, _bind(
                        msg.end_quorum_epoch_request, self.cluster_id, epoch=s.epoch, leader_id=self.node_id,
                        preferred=list(s.preferred_successors)))
        return out

    # ---- answers to our requests ----------
    def handle_failure(self, now: int, request: RaftRequest) -> None:
        if request.serial != self._serial:
            return
        self._in_flight.pop(request.destination, None)
        self._retry_at[request.destination] = now + self.config.retry_backoff_ms

    def handle_pre_vote_unsupported(self, now: int, request: RaftRequest) -> None:
        """The voter serves no Vote v2, so it cannot be asked for a pre-vote: KIP-996 counts it as granted (such
        a voter would not have refused a real election either)."""
        s = self.state
        if request.serial != self._serial or not isinstance(s, ProspectiveState):
            return
        self._in_flight.pop(request.destination, None)
        s.granted.add(request.destination)
        self._maybe_win_pre_vote(now)

    def _back_off(self, now: int, request: RaftRequest) -> None:
        self._retry_at[request.destination] = now + self.config.retry_backoff_ms

    def handle_response(self, now: int, request: RaftRequest, response: Any) -> None:
        current = request.serial == self._serial
        if current:
            self._in_flight.pop(request.destination, None)
        if response.error_code != ErrorCode.NONE:
            if current:
                self._back_off(now, request)
            return
        partition = msg.single_response_partition(response)
        if partition is None:
            if current:
                self._back_off(now, request)
            return
        if request.api_key == ApiKey.FETCH:
            self._handle_fetch_response(now, request, partition, current)
        elif request.api_key == ApiKey.VOTE:
            self._handle_vote_response(now, request, partition, current)
        else:
            self._handle_epoch_response(now, request, partition, current)
        self._deliver()

    def _answer_settled(self, now: int, request: RaftRequest, p: Any, current: bool) -> bool:
        """What a Vote, BeginQuorumEpoch and EndQuorumEpoch answer have in common: one naming a newer leader or
        epoch moves this node there, a stale one is dropped, an error backs off. True when nothing is left to do."""
        error = p.error_code
        if error in (ErrorCode.NONE, *_LEADER_ERRORS) and self._maybe_transition(now, p.leader_id, p.leader_epoch):
            return True
        if not current:
            return True
        if error != ErrorCode.NONE:
            self._back_off(now, request)
            return True
        return False

    def _handle_vote_response(self, now: int, request: RaftRequest, p: Any, current: bool) -> None:
        if self._answer_settled(now, request, p, current):
            return
        s = self.state
        if not isinstance(s, (ProspectiveState, CandidateState)) or p.leader_epoch != s.epoch \
                or request.pre_vote != isinstance(s, ProspectiveState):
            return
        if p.vote_granted:
            s.granted.add(request.destination)
            if isinstance(s, ProspectiveState):
                self._maybe_win_pre_vote(now)
            else:
                self._maybe_win_vote(now)
            return
        s.rejected.add(request.destination)
        if len(self.voters) - len(s.rejected) < self.majority:
            if isinstance(s, ProspectiveState):
                log.info("node %d: pre-vote refused by %s", self.node_id, sorted(s.rejected))
                self._lost_pre_vote(now)
            elif s.backoff_until is None:
                # Refused by too many: wait a random backoff rather than the whole election timeout.
                s.backoff_until = now + self._binary_backoff_ms()
                log.info("node %d: vote refused by %s; backing off until %d", self.node_id, sorted(s.rejected),
                         s.backoff_until)

    def _handle_epoch_response(self, now: int, request: RaftRequest, p: Any, current: bool) -> None:
        if self._answer_settled(now, request, p, current):
            return
        s = self.state
        if request.api_key == ApiKey.BEGIN_QUORUM_EPOCH and isinstance(s, LeaderState):
            s.acknowledged.add(request.destination)
        elif request.api_key == ApiKey.END_QUORUM_EPOCH and isinstance(s, ResignedState):
            s.unacknowledged.discard(request.destination)

    def _handle_fetch_response(self, now: int, request: RaftRequest, p: Any, current: bool) -> None:
        error = p.error_code
        leader = p.current_leader
        if error in (ErrorCode.NONE, *_LEADER_ERRORS) and leader is not None \
                and self._maybe_transition(now, leader.leader_id, leader.leader_epoch):
            return
        if not current:
            return
        s = self.state
        if not isinstance(s, FollowerState):
            return
        if error != ErrorCode.NONE:
            log.debug("node %d: fetch from %d: %s", self.node_id, request.destination, ErrorCode(error).name)
            s.next_fetch_at = now + self.config.retry_backoff_ms
            return
        s.fetch_deadline = now + self.config.fetch_timeout_ms
        s.has_fetched_from_leader = True
        diverging = p.diverging_epoch
        if diverging is not None and diverging.epoch >= 0 and diverging.end_offset >= 0:
            before = self.log.end_offset
            try:
                target = self.log.truncate_to_end_offset(diverging.epoch, diverging.end_offset)
            except ValueError as e:
                log.error("node %d: refusing the leader's divergence: %s", self.node_id, e)
                s.next_fetch_at = now + self.config.retry_backoff_ms
                return
            log.info("node %d: log diverged at epoch %d (ends at %d): truncated from %d to %d", self.node_id,
                     diverging.epoch, diverging.end_offset, before, target)
            s.next_fetch_at = now
            return
        appended = 0
        if p.records:
            appended = self.log.append_as_follower(p.records)
        if p.high_watermark >= 0:
            self.log.update_high_watermark(p.high_watermark)
        s.next_fetch_at = now if appended else now + FETCH_IDLE_MS

    # ---- requests from others ----------
    def handle_request(self, now: int, request: Any) -> Any:
        """The answer to a Vote, BeginQuorumEpoch, EndQuorumEpoch or Fetch of our partition."""
        key = request.API_KEY
        if key == ApiKey.FETCH:
            response = self._handle_fetch(now, request)
        elif key == ApiKey.VOTE:
            response = self._handle_vote(now, request)
        elif key == ApiKey.BEGIN_QUORUM_EPOCH:
            response = self._handle_begin_quorum_epoch(now, request)
        elif key == ApiKey.END_QUORUM_EPOCH:
            response = self._handle_end_quorum_epoch(now, request)
        else:
            raise ValueError(f"API {key} is not a Raft request")
        self._deliver()
        return response

    def _valid_cluster(self, request: Any) -> bool:
        return request.cluster_id is None or self.cluster_id is None or request.cluster_id == self.cluster_id

    def _handle_vote(self, now: int, request: Any) -> Any:
        v = request.API_VERSION
        if not self._valid_cluster(request):
            return msg.vote_response(v, ErrorCode.INCONSISTENT_CLUSTER_ID, with_partition=False)
        p = msg.single_partition(request)
        if p is None:
            return msg.vote_response(v, ErrorCode.INVALID_REQUEST, with_partition=False)
        candidate, epoch = p.replica_id, p.replica_epoch
        pre_vote = v >= 2 and bool(p.pre_vote)

        def answer(error: int = ErrorCode.NONE, granted: bool = False) -> Any:
            return msg.vote_response(v, ErrorCode.NONE, partition_error=error, epoch=self.state.epoch,
                                     leader_id=self._known_leader(), granted=granted)

        if p.last_offset < 0 or p.last_offset_epoch < 0 or p.last_offset_epoch > epoch \
                or (not pre_vote and p.last_offset_epoch == epoch):
            return answer(ErrorCode.INVALID_REQUEST)
        if epoch < self.state.epoch:
            return answer(ErrorCode.FENCED_LEADER_EPOCH)
        if candidate < 0:
            return answer(ErrorCode.INVALID_REQUEST)
        if not pre_vote and epoch > self.state.epoch:
            self._to_unattached(now, epoch)
        if v >= 1 and request.voter_id >= 0 and request.voter_id != self.node_id:
            return answer(ErrorCode.INVALID_VOTER_KEY)
        up_to_date = (p.last_offset_epoch, p.last_offset) >= (self.log.last_fetched_epoch, self.log.end_offset)
        granted = candidate in self.voters and self.state.can_grant_vote(candidate, up_to_date, pre_vote)
        s = self.state
        if granted and not pre_vote and isinstance(s, (UnattachedState, ProspectiveState)) and s.voted_id < 0:
            # Persisted before the answer leaves: the vote of this epoch is spent.
            self._to_unattached(now, s.epoch, candidate)
        log.info("node %d: %s of %d in epoch %d %s", self.node_id, "pre-vote" if pre_vote else "vote", candidate,
                 epoch, "granted" if granted else "refused")
        return answer(granted=granted)

    def _epoch_answer(self, key: int, v: int, error: int = ErrorCode.NONE) -> Any:
        return msg.epoch_response(key, v, ErrorCode.NONE, partition_error=error, epoch=self.state.epoch,
                                  leader_id=self._known_leader())

    def _epoch_request_refusal(self, request: Any) -> Any:
        """The answer refusing a BeginQuorumEpoch or EndQuorumEpoch (Kafka checks both alike), or None."""
        key, v = request.API_KEY, request.API_VERSION
        if not self._valid_cluster(request):
            return msg.epoch_response(key, v, ErrorCode.INCONSISTENT_CLUSTER_ID, with_partition=False)
        p = msg.single_partition(request)
        if p is None:
            return msg.epoch_response(key, v, ErrorCode.INVALID_REQUEST, with_partition=False)
        if p.leader_epoch < self.state.epoch:
            return self._epoch_answer(key, v, ErrorCode.FENCED_LEADER_EPOCH)
        if p.leader_id < 0 or p.leader_id not in self.voters:
            return self._epoch_answer(key, v, ErrorCode.INVALID_REQUEST)
        return None

    def _handle_begin_quorum_epoch(self, now: int, request: Any) -> Any:
        if (refusal := self._epoch_request_refusal(request)) is not None:
            return refusal
        key, v = request.API_KEY, request.API_VERSION
        p = msg.single_partition(request)
        if v >= 1 and request.voter_id >= 0 and request.voter_id != self.node_id:
            return self._epoch_answer(key, v, ErrorCode.INVALID_VOTER_KEY)
        self._maybe_transition(now, p.leader_id, p.leader_epoch)
        return self._epoch_answer(key, v)

    def _handle_end_quorum_epoch(self, now: int, request: Any) -> Any:
        if (refusal := self._epoch_request_refusal(request)) is not None:
            return refusal
        key, v = request.API_KEY, request.API_VERSION
        p = msg.single_partition(request)
        self._maybe_transition(now, p.leader_id, p.leader_epoch)
        s = self.state
        if isinstance(s, FollowerState) and s.leader_id == p.leader_id and s.epoch == p.leader_epoch:
            preferred = msg.preferred_successors(p, v)
            position = preferred.index(self.node_id) if self.node_id in preferred else -1
            s.fetch_deadline = now + self._strict_backoff_ms(position, len(preferred))
            # The leader said it is gone: a pre-vote may be granted now (KIP-996).
            s.has_fetched_from_leader = False
        return self._epoch_answer(key, v)

    def _handle_fetch(self, now: int, request: Any) -> Any:
        v = request.API_VERSION
        if not self._valid_cluster(request):
            return msg.fetch_response(v, ErrorCode.INCONSISTENT_CLUSTER_ID, with_partition=False)
        p = msg.single_partition(request)
        if p is None:
            return msg.fetch_response(v, ErrorCode.INVALID_REQUEST, with_partition=False)
        s = self.state

        def answer(error: int = ErrorCode.NONE, **fields: Any) -> Any:
            return msg.fetch_response(v, ErrorCode.NONE, partition_error=error, leader_id=self._known_leader(),
                                      epoch=self.state.epoch, log_start_offset=self.log.start_offset, **fields)

        if request.max_wait_ms < 0 or p.fetch_offset < 0 or p.last_fetched_epoch < 0 \
                or p.last_fetched_epoch > p.current_leader_epoch:
            return answer(ErrorCode.INVALID_REQUEST)
        if p.current_leader_epoch < s.epoch:
            return answer(ErrorCode.FENCED_LEADER_EPOCH)
        if p.current_leader_epoch > s.epoch:
            return answer(ErrorCode.UNKNOWN_LEADER_EPOCH)
        if not isinstance(s, LeaderState):
            return answer(ErrorCode.NOT_LEADER_OR_FOLLOWER)
        replica = msg.fetch_replica_id(request)
        diverging = self.log.validate_offset_and_epoch(p.fetch_offset, p.last_fetched_epoch)
        if diverging is not None:
            return answer(high_watermark=self.log.high_watermark, diverging=diverging)
        if p.fetch_offset > self.log.end_offset:
            return answer(ErrorCode.OFFSET_OUT_OF_RANGE, high_watermark=self.log.high_watermark)
        if replica in self.voters and replica != self.node_id:
            s.end_offsets[replica] = p.fetch_offset
            s.acknowledged.add(replica)
            s.last_fetch[replica] = now
            self._check_quorum_heard(now, s)
            self._maybe_advance_leader_hw()
        records = self.log.read(p.fetch_offset, min(msg.MAX_FETCH_BYTES, max(p.partition_max_bytes, 1)))
        return answer(high_watermark=self.log.high_watermark, records=records)

    def _check_quorum_heard(self, now: int, s: LeaderState) -> None:
        """Kafka's check-quorum timer restarts once a majority (the leader included) fetched since its last
        start."""
        window_start = s.check_quorum_deadline - self._check_quorum_ms()
        heard = 1 + sum(1 for v, t in s.last_fetch.items() if t >= window_start)
        if heard >= self.majority:
            s.check_quorum_deadline = now + self._check_quorum_ms()


def _bind(builder: Callable[..., Any], cluster_id: str | None, **fields: Any) -> Callable[[int], Any]:
    return lambda version: builder(version, cluster_id, **fields)


def committed_batch(raw: Any) -> CommittedBatch:
    """A batch of the log as `RaftListener.handle_commit` gets it."""
    values: list[bytes] = []
    controls: list[tuple[int, Any]] = []
    for record in raw.records():
        if raw.is_control:
            try:
                controls.append(decode_control_record(record.key, record.value))
            except MetadataParseError as e:
                log.warning("committed control record at %d not understood: %s", record.offset, e)
        else:
            values.append(bytes(record.value) if record.value is not None else b"")
    return CommittedBatch(raw.base_offset, raw.last_offset, raw.partition_leader_epoch, raw.max_timestamp,
                          values, controls)

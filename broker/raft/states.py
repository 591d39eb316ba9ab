"""The epoch states of a Raft voter (Kafka's EpochState and its six implementations) and whom each grants a vote.

Contract:
- Unattached: an epoch without a known leader, maybe with the vote we cast in it; its election timer expiring starts
  a pre-vote. Prospective (KIP-996): asking for pre-votes at the current epoch, nothing bumped, nothing persisted
  but what the previous state held; a majority of grants makes a Candidate, a majority of refusals or the election
  timer sends it back to following the leader it knew (else to Unattached after a backoff), and learning of a leader
  in its epoch that it did not know makes it follow that leader. Candidate: epoch + 1, voted for itself; a majority
  of votes makes a Leader, a majority of refusals backs off and goes back to Prospective, and so does its election
  timer. Leader: appends, counts its voters' fetch offsets for the high watermark, resigns when a majority has not
  fetched for 1.5 x fetch timeout (check quorum). Follower: fetches from its leader, starts a pre-vote when no fetch
  succeeded for fetch timeout. Resigned: a leader that gave up its epoch (check quorum, `resign()`, or a start-up
  from a `quorum-state` naming ourselves leader), telling the voters with EndQuorumEpoch; its election timer starts
  a pre-vote.
- `can_grant_vote(candidate, log_up_to_date, pre_vote)` is Kafka 4.0's per state: Unattached grants a pre-vote to
  an up-to-date log, a vote only to the candidate it already voted for or, not having voted, to an up-to-date
  log; Prospective the same, except that a standard vote is refused while it knows a leader in the epoch;
  Candidate grants pre-votes to up-to-date logs and a vote only to itself; Follower grants a pre-vote only when
  it has not fetched successfully from its leader in this state (so a rejoining partitioned voter cannot disturb a
  working leader) and never a vote; Resigned grants pre-votes to up-to-date logs and no vote; Leader grants
  nothing.
"""

from __future__ import annotations

from dataclasses import dataclass, field

NO_ID = -1


@dataclass
class EpochState:
    epoch: int
    leader_id: int = NO_ID
    voted_id: int = NO_ID

    name = "EpochState"

    def can_grant_vote(self, candidate: int, log_up_to_date: bool, pre_vote: bool) -> bool:
        return False


@dataclass
class UnattachedState(EpochState):
    election_deadline: int = 0
    name = "Unattached"

    def can_grant_vote(self, candidate: int, log_up_to_date: bool, pre_vote: bool) -> bool:
        if pre_vote:
            return log_up_to_date
        if self.voted_id >= 0:
            return self.voted_id == candidate
        return log_up_to_date


@dataclass
class ProspectiveState(EpochState):
    election_deadline: int = 0
    granted: set[int] = field(default_factory=set)
    rejected: set[int] = field(default_factory=set)
    name = "Prospective"

    def can_grant_vote(self, candidate: int, log_up_to_date: bool, pre_vote: bool) -> bool:
        if pre_vote:
            return log_up_to_date
        if self.voted_id >= 0:
            return self.voted_id == candidate
        if self.leader_id >= 0:
            return False
        return log_up_to_date


@dataclass
class CandidateState(EpochState):
    election_deadline: int = 0
    granted: set[int] = field(default_factory=set)
    rejected: set[int] = field(default_factory=set)
    backoff_until: int | None = None  # set once a majority refused: then back to Prospective
    name = "Candidate"

    def can_grant_vote(self, candidate: int, log_up_to_date: bool, pre_vote: bool) -> bool:
        if pre_vote:
            return log_up_to_date
        return candidate == self.voted_id


@dataclass
class LeaderState(EpochState):
    epoch_start_offset: int = 0  # where this epoch's LeaderChangeMessage is: the HW must pass it
    end_offsets: dict[int, int] = field(default_factory=dict)  # voter -> its log end offset (-1: unknown)
    last_fetch: dict[int, int] = field(default_factory=dict)  # voter -> when it last fetched (ms)
    acknowledged: set[int] = field(default_factory=set)  # voters that know of this epoch (no BeginQuorumEpoch)
    check_quorum_deadline: int = 0
    name = "Leader"


@dataclass
class FollowerState(EpochState):
    fetch_deadline: int = 0
    has_fetched_from_leader: bool = False
    next_fetch_at: int = 0
    name = "Follower"

    def can_grant_vote(self, candidate: int, log_up_to_date: bool, pre_vote: bool) -> bool:
        return pre_vote and not self.has_fetched_from_leader and log_up_to_date


@dataclass
class ResignedState(EpochState):
    election_deadline: int = 0
    preferred_successors: list[int] = field(default_factory=list)
    unacknowledged: set[int] = field(default_factory=set)  # voters still to be told (EndQuorumEpoch)
    name = "Resigned"

    def can_grant_vote(self, candidate: int, log_up_to_date: bool, pre_vote: bool) -> bool:
        return pre_vote and log_up_to_date

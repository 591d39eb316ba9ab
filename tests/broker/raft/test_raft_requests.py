"""One `RaftClient` answering requests built by hand (through the codec): Fetch validation and divergence, the
leader's high watermark rule, votes and `quorum-state` across restarts."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest

from broker.raft import messages as msg
from broker.raft.client import RaftClient, RaftRequest
from broker.raft.config import QuorumConfig
from broker.raft.quorum_state import QUORUM_STATE_FILE, ElectionState, FileQuorumStateStore, QuorumStateError
from broker.raft.raft_log import RaftLog
from broker.raft.states import FollowerState, LeaderState
from protocol import ApiKey, decode_request, decode_response, encode_request, encode_response
from protocol.errors import ErrorCode
from records import build_batch

VOTERS = (1, 2, 3)
CLUSTER = "test-cluster"


def _codec(request: Any) -> Any:
    request.with_header(correlation_id=7, client_id="t")
    return decode_request(bytearray(encode_request(request)))


def _answer(client: RaftClient, now: int, request: Any) -> Any:
    response = client.handle_request(now, _codec(request))
    response.with_header(correlation_id=7)
    return decode_response(encode_response(response), request.API_KEY, request.API_VERSION)


def _client(directory: Path, node_id: int = 1, now: int = 0) -> RaftClient:
    store = FileQuorumStateStore(directory / QUORUM_STATE_FILE, voters=frozenset(VOTERS))
    return RaftClient(node_id, VOTERS, RaftLog(directory), store, now_ms=now, config=QuorumConfig(),
                      cluster_id=CLUSTER, rng=random.Random(0))


def _grant(client: RaftClient, now: int, request: RaftRequest) -> None:
    response = msg.vote_response(2, 0, epoch=client.epoch, leader_id=-1, granted=True)
    client.handle_response(now, request, response)


def _make_leader(client: RaftClient, now: int) -> int:
    """Through a pre-vote and a vote, each granted by voter 2; the time reached."""
    now = client.next_poll_ms(now)
    while not isinstance(client.state, LeaderState):
        requests = client.poll(now)
        to_2 = [r for r in requests if r.destination == 2 and r.api_key == ApiKey.VOTE]
        if to_2:
            _grant(client, now, to_2[0])
        else:
            now = client.next_poll_ms(now)
    return now


def _fetch(client: RaftClient, now: int, *, replica: int = 2, epoch: int | None = None, offset: int = 0,
           last_epoch: int = 0, version: int = 17, cluster: str | None = CLUSTER) -> Any:
    request = msg.fetch_request(version, cluster, replica_id=replica,
                                epoch=client.epoch if epoch is None else epoch, fetch_offset=offset,
                                last_fetched_epoch=last_epoch)
    return _answer(client, now, request)


def _partition(response: Any) -> Any:
    return response.responses[0].partitions[0]


# ---- Fetch -------------------------------------------------------------------------------------------------------
@pytest.fixture
def leader(tmp_path: Path) -> tuple[RaftClient, int]:
    client = _client(tmp_path)
    now = _make_leader(client, 0)
    assert client.epoch == 1 and client.log.end_offset == 1  # the LeaderChangeMessage
    return client, now


@pytest.mark.parametrize("version", [12, 13, 16, 17, 18])
def test_fetch_validation_errors(leader: tuple[RaftClient, int], version: int) -> None:
    client, now = leader

    def error(**kw: Any) -> int:
        p = _partition(_fetch(client, now, version=version, **kw))
        assert p.current_leader.leader_id == 1 and p.current_leader.leader_epoch == 1
        assert bool(p.records) == (p.error_code == ErrorCode.NONE)  # records only with no error
        return p.error_code

    assert error(last_epoch=-1) == ErrorCode.INVALID_REQUEST
    assert error(offset=-1) == ErrorCode.INVALID_REQUEST
    assert error(epoch=1, last_epoch=2) == ErrorCode.INVALID_REQUEST  # last fetched epoch above the current
    assert error(epoch=0) == ErrorCode.FENCED_LEADER_EPOCH
    assert error(epoch=2, last_epoch=1) == ErrorCode.UNKNOWN_LEADER_EPOCH
    assert error() == ErrorCode.NONE
    other = _fetch(client, now, version=version, cluster="another-cluster")
    assert other.error_code == ErrorCode.INCONSISTENT_CLUSTER_ID and not other.responses


def test_fetch_of_another_partition_is_an_invalid_request(leader: tuple[RaftClient, int]) -> None:
    client, now = leader
    request = msg.fetch_request(17, CLUSTER, replica_id=2, epoch=1, fetch_offset=0, last_fetched_epoch=0)
    request.topics[0].topic_id = msg.ZERO_UUID
    assert _answer(client, now, request).error_code == ErrorCode.INVALID_REQUEST


def test_a_follower_answers_not_leader_with_its_leader(tmp_path: Path, leader: tuple[RaftClient, int]) -> None:
    client, now = leader
    follower = _client(tmp_path / "f", node_id=3)
    begin = msg.begin_quorum_epoch_request(1, CLUSTER, epoch=1, leader_id=1, voter_id=3)
    assert _answer(follower, now, begin).topics[0].partitions[0].error_code == ErrorCode.NONE
    assert isinstance(follower.state, FollowerState) and follower.leader_id == 1
    p = _partition(_fetch(follower, now, replica=2, epoch=1))
    assert p.error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER
    assert (p.current_leader.leader_id, p.current_leader.leader_epoch) == (1, 1)


def test_fetch_records_diverging_epoch_and_the_high_watermark(leader: tuple[RaftClient, int]) -> None:
    client, now = leader
    last = client.append([b"r1", b"r2"], now)  # offsets 1, 2
    assert last == 2 and client.high_watermark == 0  # nobody else has them yet
    p = _partition(_fetch(client, now, offset=0, last_epoch=0))
    assert p.error_code == 0 and p.records and p.high_watermark == 0
    # Voter 2 now holds everything: with the leader that is a majority of three.
    p = _partition(_fetch(client, now, offset=3, last_epoch=1))
    assert p.error_code == 0 and not p.records and p.high_watermark == 3
    # A log that says it has epoch 0 records up to offset 2: we never had epoch 0 records there.
    p = _partition(_fetch(client, now, replica=3, offset=2, last_epoch=0))
    assert (p.diverging_epoch.epoch, p.diverging_epoch.end_offset) == (0, 0) and not p.records
    # Past our end in our own epoch: diverges at our end.
    p = _partition(_fetch(client, now, replica=3, offset=9, last_epoch=1))
    assert (p.diverging_epoch.epoch, p.diverging_epoch.end_offset) == (1, 3)
    # A diverging fetch is not the replica's position: voter 3 still counts as nothing.
    assert client.state.end_offsets[3] == -1


def test_the_high_watermark_waits_for_a_record_of_the_current_epoch(tmp_path: Path) -> None:
    # Node 1 holds five records of epoch 1 that it got as a follower, none known to be committed.
    log = RaftLog(tmp_path)
    log.append_as_follower(build_batch([(None, b"old%d" % i, (), 0) for i in range(5)], partition_leader_epoch=1))
    log.close()
    FileQuorumStateStore(tmp_path / QUORUM_STATE_FILE).write(ElectionState(1, leader_id=2))
    client = _client(tmp_path)
    assert isinstance(client.state, FollowerState)
    now = _make_leader(client, 0)
    assert client.epoch == 2 and client.state.epoch_start_offset == 5 and client.log.end_offset == 6
    # Voter 2 holds the same five old records: a majority holds offsets 0-4, but they are of an older epoch.
    p = _partition(_fetch(client, now, offset=5, last_epoch=1))
    assert p.error_code == 0 and p.high_watermark == 0 and client.high_watermark == 0
    # Once voter 2 holds the epoch's LeaderChangeMessage too, everything up to it commits.
    p = _partition(_fetch(client, now, offset=6, last_epoch=2))
    assert p.high_watermark == 6 and client.high_watermark == 6


# ---- votes and quorum-state ---------------------------------------------------------------------------------------
def _vote(client: RaftClient, now: int, candidate: int, epoch: int, *, pre_vote: bool = False,
          last_epoch: int = 0, last_offset: int = 0, version: int = 2) -> Any:
    request = msg.vote_request(version, CLUSTER, epoch=epoch, candidate_id=candidate, voter_id=client.node_id,
                               last_epoch=last_epoch, last_offset=last_offset, pre_vote=pre_vote)
    return _answer(client, now, request).topics[0].partitions[0]


def test_a_voter_never_votes_twice_in_one_epoch_across_restarts(tmp_path: Path) -> None:
    client = _client(tmp_path)
    p = _vote(client, 0, candidate=2, epoch=5)
    assert p.error_code == 0 and p.vote_granted and p.leader_epoch == 5
    state = json.loads((tmp_path / QUORUM_STATE_FILE).read_text())
    assert state == {"clusterId": "", "leaderId": -1, "leaderEpoch": 5, "votedId": 2, "appliedOffset": 0,
                     "currentVoters": [{"voterId": 1}, {"voterId": 2}, {"voterId": 3}], "data_version": 0}
    client.log.close()
    restarted = _client(tmp_path)
    assert restarted.epoch == 5 and restarted.state.voted_id == 2
    assert not _vote(restarted, 0, candidate=3, epoch=5).vote_granted
    assert _vote(restarted, 0, candidate=2, epoch=5).vote_granted  # the same candidate asking again
    # An older epoch is fenced; a newer one is a new vote.
    assert _vote(restarted, 0, candidate=3, epoch=4).error_code == ErrorCode.FENCED_LEADER_EPOCH
    assert _vote(restarted, 0, candidate=3, epoch=6).vote_granted


def test_a_pre_vote_changes_nothing_and_a_stale_log_gets_no_vote(tmp_path: Path) -> None:
    client = _client(tmp_path)
    client.log.append_as_follower(build_batch([(None, b"v", (), 0)] * 3, partition_leader_epoch=2))
    p = _vote(client, 0, candidate=2, epoch=4, pre_vote=True, last_epoch=2, last_offset=3)
    assert p.vote_granted and client.epoch == 0 and client.state.voted_id == -1
    assert not (tmp_path / QUORUM_STATE_FILE).exists()
    # Behind our log (an older last epoch, or the same epoch and a shorter log): refused, pre-vote or not.
    assert not _vote(client, 0, candidate=2, epoch=4, pre_vote=True, last_epoch=1, last_offset=9).vote_granted
    assert not _vote(client, 0, candidate=2, epoch=4, last_epoch=2, last_offset=2).vote_granted
    assert client.epoch == 4 and client.state.voted_id == -1  # the standard vote moved the epoch, not the vote
    # Kafka's request checks: a last epoch at the candidate's epoch only for a pre-vote; negative offsets.
    assert _vote(client, 0, candidate=2, epoch=4, last_epoch=4, last_offset=3).error_code == ErrorCode.INVALID_REQUEST
    assert _vote(client, 0, candidate=2, epoch=5, last_offset=-1).error_code == ErrorCode.INVALID_REQUEST
    assert _vote(client, 0, candidate=2, epoch=4, pre_vote=True, last_epoch=5,
                 last_offset=3).error_code == ErrorCode.INVALID_REQUEST


def test_a_leader_refuses_pre_votes_and_a_fetching_follower_too(leader: tuple[RaftClient, int],
                                                              tmp_path: Path) -> None:
    client, now = leader
    assert not _vote(client, now, candidate=2, epoch=1, pre_vote=True, last_epoch=1, last_offset=1).vote_granted
    follower = _client(tmp_path / "f", node_id=3)
    _answer(follower, now, msg.begin_quorum_epoch_request(1, CLUSTER, epoch=1, leader_id=1, voter_id=3))
    # Not fetched yet: a pre-vote from an up-to-date log is granted (the leader may be gone).
    assert _vote(follower, now, candidate=2, epoch=1, pre_vote=True).vote_granted
    fetch = next(r for r in follower.poll(now) if r.api_key == ApiKey.FETCH)
    response = client.handle_request(now, _codec(fetch.build(17)))
    follower.handle_response(now, fetch, response)
    assert follower.log.end_offset == 1
    assert not _vote(follower, now, candidate=2, epoch=1, pre_vote=True, last_epoch=1, last_offset=1).vote_granted


def test_quorum_state_file_versions(tmp_path: Path) -> None:
    path = tmp_path / QUORUM_STATE_FILE
    FileQuorumStateStore(path, data_version=1).write(ElectionState(3, voted_id=2))
    assert json.loads(path.read_text()) == {"leaderId": -1, "leaderEpoch": 3, "votedId": 2,
                                            "votedDirectoryId": "AAAAAAAAAAAAAAAAAAAAAA", "data_version": 1}
    assert FileQuorumStateStore(path).read() == ElectionState(3, voted_id=2)
    # What Kafka's own example of version 1 holds.
    path.write_text('{"leaderId":-1,"leaderEpoch":2,"votedId":1,"votedDirectoryId":"J8aAPcfLQt2bqs1JT_rMgQ",'
                    '"data_version":1}')
    state = FileQuorumStateStore(path).read()
    assert state is not None and (state.epoch, state.voted_id) == (2, 1) and state.voted_directory_id is not None
    for bad in ('{"leaderId":1,"leaderEpoch":2}', '{"leaderEpoch":2,"data_version":2}', "[]", "not json"):
        path.write_text(bad)
        with pytest.raises(QuorumStateError):
            FileQuorumStateStore(path).read()


def test_begin_and_end_quorum_epoch_and_vote_errors(tmp_path: Path) -> None:
    client = _client(tmp_path, node_id=3)
    begin = msg.begin_quorum_epoch_request(1, CLUSTER, epoch=4, leader_id=1, voter_id=3)
    assert _answer(client, 0, begin).topics[0].partitions[0].error_code == ErrorCode.NONE
    assert (client.state.name, client.epoch, client.leader_id) == ("Follower", 4, 1)
    assert json.loads((tmp_path / QUORUM_STATE_FILE).read_text())["leaderId"] == 1
    old = msg.begin_quorum_epoch_request(0, CLUSTER, epoch=3, leader_id=2, voter_id=3)
    p = _answer(client, 0, old).topics[0].partitions[0]
    assert (p.error_code, p.leader_id, p.leader_epoch) == (ErrorCode.FENCED_LEADER_EPOCH, 1, 4)
    misdirected = msg.begin_quorum_epoch_request(1, CLUSTER, epoch=4, leader_id=1, voter_id=2)
    assert _answer(client, 0, misdirected).topics[0].partitions[0].error_code == ErrorCode.INVALID_VOTER_KEY
    foreign = msg.begin_quorum_epoch_request(1, "other", epoch=4, leader_id=1, voter_id=3)
    assert _answer(client, 0, foreign).error_code == ErrorCode.INCONSISTENT_CLUSTER_ID
    vote = msg.vote_request(2, "other", epoch=9, candidate_id=2, voter_id=3, last_epoch=0, last_offset=0,
                            pre_vote=False)
    assert _answer(client, 0, vote).error_code == ErrorCode.INCONSISTENT_CLUSTER_ID
    assert client.epoch == 4  # nothing of another cluster moves us
    assert _vote(client, 0, candidate=1, epoch=5, version=1).error_code == ErrorCode.NONE
    misdirected_vote = msg.vote_request(1, CLUSTER, epoch=6, candidate_id=2, voter_id=1, last_epoch=0,
                                        last_offset=0, pre_vote=False)
    assert _answer(client, 0, misdirected_vote).topics[0].partitions[0].error_code == ErrorCode.INVALID_VOTER_KEY
    with pytest.raises(msg.PreVoteUnsupported):
        msg.vote_request(1, CLUSTER, epoch=6, candidate_id=2, voter_id=1, last_epoch=0, last_offset=0, pre_vote=True)
    # EndQuorumEpoch from our leader: the first preferred successor starts its election at once.
    client2 = _client(tmp_path / "two", node_id=2)
    _answer(client2, 0, msg.begin_quorum_epoch_request(1, CLUSTER, epoch=7, leader_id=1, voter_id=2))
    end = msg.end_quorum_epoch_request(1, CLUSTER, epoch=7, leader_id=1, preferred=[2, 3])
    assert _answer(client2, 100, end).topics[0].partitions[0].error_code == ErrorCode.NONE
    assert client2.state.fetch_deadline == 100
    client2.poll(100)
    assert client2.state.name == "Prospective" and client2.epoch == 7


def test_a_single_voter_leads_alone(tmp_path: Path) -> None:
    store = FileQuorumStateStore(tmp_path / QUORUM_STATE_FILE, voters=frozenset({1}))
    client = RaftClient(1, [1], RaftLog(tmp_path), store, now_ms=0, rng=random.Random(0))
    assert client.poll(0) == []
    client.poll(client.next_poll_ms(0))
    assert client.is_leader and client.epoch == 1 and client.high_watermark == 1
    assert client.append([b"solo"], 0) == 1 and client.high_watermark == 2
    # No check quorum with one voter: it leads on however long nobody fetches.
    client.poll(10**9)
    assert client.is_leader


def test_quorum_config_from_kafka_keys() -> None:
    config = QuorumConfig.from_props({"controller.quorum.election.timeout.ms": "1500",
                                      "controller.quorum.fetch.timeout.ms": 3000})
    assert (config.election_timeout_ms, config.fetch_timeout_ms, config.election_backoff_max_ms) == (1500, 3000, 1000)
    assert (config.request_timeout_ms, config.retry_backoff_ms) == (2000, 20)


def test_a_voter_without_vote_v2_counts_as_granting_the_pre_vote(tmp_path: Path) -> None:
    client = _client(tmp_path)
    now = client.next_poll_ms(0)
    requests = [r for r in client.poll(now) if r.api_key == ApiKey.VOTE]
    assert client.state.name == "Prospective" and all(r.pre_vote for r in requests)
    to_2 = next(r for r in requests if r.destination == 2)
    with pytest.raises(msg.PreVoteUnsupported):
        to_2.build(1)  # what the driver meets when voter 2 serves Vote v0-1 only
    client.handle_pre_vote_unsupported(now, to_2)
    assert client.state.name == "Candidate" and client.epoch == 1


def test_a_candidate_restarts_as_prospective_with_its_vote_spent(tmp_path: Path) -> None:
    client = _client(tmp_path)
    now = client.next_poll_ms(0)
    pre_votes = [r for r in client.poll(now) if r.api_key == ApiKey.VOTE]
    _grant(client, now, pre_votes[0])
    assert client.state.name == "Candidate" and client.epoch == 1
    assert json.loads((tmp_path / QUORUM_STATE_FILE).read_text())["votedId"] == 1
    client.log.close()
    restarted = _client(tmp_path)
    assert restarted.state.name == "Prospective" and restarted.epoch == 1 and restarted.state.voted_id == 1
    assert not _vote(restarted, now, candidate=2, epoch=1).vote_granted  # its vote of epoch 1 went to itself
    assert all(r.pre_vote for r in restarted.poll(now) if r.api_key == ApiKey.VOTE)

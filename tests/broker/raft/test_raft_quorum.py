"""Whole quorums of `RaftClient`s on the fake clock and in-memory network of `sim.py`: elections, leader loss,
partitions and healing, restarts. Simulated time only: nothing here depends on the machine's speed."""

from __future__ import annotations

from pathlib import Path

import pytest

from broker.raft.states import FollowerState, LeaderState, ProspectiveState, UnattachedState
from records import KRaftControlRecordType
from tests.broker.raft.sim import Sim


def _commit(sim: Sim, values: list[bytes], among: list[int] | None = None) -> int:
    leader = sim.leader(among)
    assert leader is not None, sim.describe()
    last = leader.append(values, sim.now)
    members = among or sim.voters
    sim.run_until(lambda: all(sim.nodes[i].client.high_watermark > last for i in members
                              if sim.nodes[i].client is not None))
    return last


def _same_committed(sim: Sim) -> list[bytes]:
    """Every live node's listener saw the same committed values, in the same order; returns them."""
    seen = [n.recorder.values() for n in sim.nodes.values() if n.alive]
    shortest = min(seen, key=len)
    for values in seen:
        assert values[:len(shortest)] == shortest
    return max(seen, key=len)


@pytest.mark.parametrize("voters", [3, 5])
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_a_leader_is_elected_and_commits(tmp_path: Path, voters: int, seed: int) -> None:
    sim = Sim(tmp_path, voters, seed=seed)
    sim.run_until(lambda: sim.leader() is not None)
    leader = sim.leader()
    assert leader is not None and len(sim.leaders()) == 1
    assert leader.epoch >= 1
    # Every voter wrote the epoch and the leader in quorum-state before following it.
    for node in sim.nodes.values():
        assert node.client.store.read().epoch == leader.epoch
        assert node.client.store.read().leader_id == leader.node_id
    _commit(sim, [b"a", b"b"])
    _commit(sim, [b"c"])
    assert _same_committed(sim) == [b"a", b"b", b"c"]
    for node in sim.nodes.values():
        committed = node.recorder.committed
        # The epoch starts with the leader's LeaderChangeMessage, committed like any record.
        change = committed[0].control_records[0]
        assert change[0] == KRaftControlRecordType.LEADER_CHANGE and change[1].leader_id == leader.node_id
        assert sorted(v.voter_id for v in change[1].voters) == sim.voters
        assert node.recorder.leaders[-1].leader_id == leader.node_id


def test_a_partitioned_leader_is_replaced_and_its_uncommitted_suffix_truncated(tmp_path: Path) -> None:
    sim = Sim(tmp_path, 5, seed=7)
    sim.run_until(lambda: sim.leader() is not None)
    old = sim.leader()
    assert old is not None
    _commit(sim, [b"committed-1", b"committed-2"])
    sim.isolate(old.node_id)
    old.append([b"never-committed"], sim.now)
    uncommitted_end = old.log.end_offset
    rest = [i for i in sim.voters if i != old.node_id]
    sim.run_until(lambda: sim.leader(rest) is not None)
    new = sim.leader(rest)
    assert new is not None and new.epoch > old.epoch
    _commit(sim, [b"after-failover"], among=rest)
    # Check quorum: nobody fetched from the isolated leader for 1.5 x fetch timeout, so it gave up.
    sim.run_until(lambda: not isinstance(old.state, LeaderState))
    assert old.high_watermark < uncommitted_end and old.log.end_offset == uncommitted_end
    sim.heal()
    sim.run_until(lambda: sim.leader() is new and old.log.end_offset == new.log.end_offset
                  and old.high_watermark == new.high_watermark)
    values = _same_committed(sim)
    assert values == [b"committed-1", b"committed-2", b"after-failover"]
    assert b"never-committed" not in sim.nodes[old.node_id].recorder.values()
    assert old.log.read(0, 1 << 20) == new.log.read(0, 1 << 20)  # byte for byte the same log


@pytest.mark.parametrize("victim", ["leader", "follower"])
@pytest.mark.parametrize("voters", [3, 5])
def test_committed_records_survive_any_single_node_loss(tmp_path: Path, victim: str, voters: int) -> None:
    sim = Sim(tmp_path, voters, seed=11)
    sim.run_until(lambda: sim.leader() is not None)
    leader = sim.leader()
    assert leader is not None
    _commit(sim, [b"one", b"two"])
    lost = leader.node_id if victim == "leader" else next(i for i in sim.voters if i != leader.node_id)
    sim.nodes[lost].stop()
    rest = [i for i in sim.voters if i != lost]
    sim.run_until(lambda: sim.leader(rest) is not None)
    survivor = sim.leader(rest)
    assert survivor is not None
    if victim == "leader":
        assert survivor.epoch > leader.epoch
    _commit(sim, [b"three"], among=rest)
    for i in rest:
        assert sim.nodes[i].recorder.values() == [b"one", b"two", b"three"]
    # The lost node comes back from its disk and catches up without losing or repeating anything.
    sim.nodes[lost].start()
    sim.run_until(lambda: sim.leader() is not None and sim.nodes[lost].client.high_watermark
                  == sim.leader().high_watermark)
    assert sim.nodes[lost].recorder.values() == [b"one", b"two", b"three"]


def test_pre_vote_keeps_a_rejoining_partitioned_voter_from_bumping_the_epoch(tmp_path: Path) -> None:
    sim = Sim(tmp_path, 3, seed=5)
    sim.run_until(lambda: sim.leader() is not None)
    leader = sim.leader()
    assert leader is not None
    epoch = leader.epoch
    _commit(sim, [b"x"])
    partitioned = next(i for i in sim.voters if i != leader.node_id)
    sim.isolate(partitioned)
    lonely = sim.nodes[partitioned].client
    # Many fetch and election timeouts: it keeps asking for pre-votes nobody receives, and never bumps its epoch.
    sim.run_for(30000)
    # Between pre-votes it goes back to (trying to) follow the leader it knew, never having fetched from it.
    assert isinstance(lonely.state, (ProspectiveState, UnattachedState)) \
        or isinstance(lonely.state, FollowerState) and not lonely.state.has_fetched_from_leader
    assert lonely.epoch == epoch
    assert lonely.store.read().epoch == epoch
    assert sim.leader([i for i in sim.voters if i != partitioned]) is leader
    sim.heal()
    sim.run_until(lambda: isinstance(lonely.state, FollowerState) and lonely.leader_id == leader.node_id)
    # The working leader was never disturbed: same leader, same epoch, everywhere.
    assert sim.leader() is leader and leader.epoch == epoch
    assert all(c.epoch == epoch for c in sim.clients())
    _commit(sim, [b"y"])
    assert sim.nodes[partitioned].recorder.values() == [b"x", b"y"]


def test_a_whole_quorum_restarts_from_its_disks(tmp_path: Path) -> None:
    sim = Sim(tmp_path, 3, seed=3)
    sim.run_until(lambda: sim.leader() is not None)
    old = sim.leader()
    assert old is not None
    old_epoch, old_leader = old.epoch, old.node_id
    _commit(sim, [b"kept"])
    for node in sim.nodes.values():
        node.stop()
    for node in sim.nodes.values():
        node.start()
    # The old leader cannot know what it acknowledged: it starts Resigned in its epoch, the others follow it.
    assert sim.nodes[old_leader].client.state.name == "Resigned"
    assert all(c.epoch == old_epoch for c in sim.clients())
    sim.run_until(lambda: sim.leader() is not None)
    assert sim.leader().epoch > old_epoch
    _commit(sim, [b"new"])
    assert _same_committed(sim) == [b"kept", b"new"]


def test_a_resigning_leader_hands_over_to_its_most_caught_up_voter(tmp_path: Path) -> None:
    sim = Sim(tmp_path, 3, seed=9)
    sim.run_until(lambda: sim.leader() is not None)
    old = sim.leader()
    assert old is not None
    _commit(sim, [b"a"])
    started = sim.now
    old.resign(sim.now)
    assert old.state.name == "Resigned"
    sim.run_until(lambda: sim.leader() is not None and sim.leader() is not old)
    # EndQuorumEpoch: the first preferred successor starts at once, well before a fetch timeout would have.
    assert sim.now - started < sim.config.fetch_timeout_ms
    _commit(sim, [b"b"])
    assert _same_committed(sim) == [b"a", b"b"]

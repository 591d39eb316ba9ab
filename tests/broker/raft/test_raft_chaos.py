"""Random faults on the simulated quorum (seeded, so each run is the same): voters isolated, healed, stopped and
restarted while the leader appends. Checked all along: at most one leader per epoch, every two voters' committed
records agree, and at the end every record a leader saw committed is committed everywhere, once, in order."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest

from broker.raft.client import NotLeaderError
from broker.raft.states import LeaderState
from tests.broker.raft.sim import Sim

SEEDS = [(3, 21), (3, 22), (5, 23), (5, 24)]


@pytest.mark.parametrize("voters,seed", SEEDS)
def test_safety_under_random_partitions_and_restarts(tmp_path: Path, voters: int, seed: int) -> None:
    sim = Sim(tmp_path, voters, seed=seed)
    rng = random.Random(seed)
    leader_of_epoch: dict[int, int] = {}
    acknowledged: list[tuple[int, bytes]] = []  # (offset, value) once a leader's high watermark passed it
    # (leader client, its epoch, offset, value) not yet known committed: only that leader, still leading that
    # epoch, may say so (a later epoch may put another record at the offset)
    pending: list[tuple[Any, int, int, bytes]] = []
    counter = 0

    def check() -> None:
        for client in sim.clients():
            if isinstance(client.state, LeaderState):
                assert leader_of_epoch.setdefault(client.epoch, client.node_id) == client.node_id, \
                    f"two leaders in epoch {client.epoch}"
        seen = [n.recorder.values() for n in sim.nodes.values() if n.alive]
        for a in seen:
            for b in seen:
                shorter = min(len(a), len(b))
                assert a[:shorter] == b[:shorter], "two voters committed different records"
        for entry in list(pending):
            client, epoch, offset, value = entry
            if client.is_leader and client.epoch == epoch and client.high_watermark > offset:
                acknowledged.append((offset, value))
                pending.remove(entry)

    for _ in range(60):
        fault = rng.random()
        down = [n for n in sim.nodes.values() if not n.alive]
        if fault < 0.25 and not down and not sim.cut:
            sim.isolate(rng.choice(sim.voters))
        elif fault < 0.45:
            sim.heal()
        elif fault < 0.6 and not down and not sim.cut:
            sim.nodes[rng.choice(sim.voters)].stop()
        elif fault < 0.75 and down:
            down[0].start()
        for _ in range(rng.randrange(1, 4)):
            leader = next((c for c in sim.clients() if c.is_leader), None)
            if leader is not None:
                counter += 1
                value = b"v%d" % counter
                try:
                    pending.append((leader, leader.epoch, leader.append([value], sim.now), value))
                except NotLeaderError:
                    pass
            sim.run_for(rng.randrange(50, 1500))
            check()
    sim.heal()
    for node in sim.nodes.values():
        if not node.alive:
            node.start()
    # An append is only a proposal: a leader may still lose it in an election right after (it is not committed
    # then), so the final record is proposed again until one leader commits it everywhere.
    for _ in range(10):
        sim.run_until(lambda: sim.leader() is not None)
        leader = sim.leader()
        assert leader is not None
        epoch, last = leader.epoch, leader.append([b"final"], sim.now)

        def committed(leader: Any = leader, epoch: int = epoch, last: int = last) -> bool:
            return leader.is_leader and leader.epoch == epoch and all(c.high_watermark > last for c in sim.clients())

        def lost(leader: Any = leader, epoch: int = epoch) -> bool:
            return not leader.is_leader or leader.epoch != epoch

        sim.run_until(lambda: committed() or lost())
        check()
        if committed():
            break
    else:
        raise AssertionError(f"no leader kept its leadership long enough to commit: {sim.describe()}")
    assert len(leader_of_epoch) >= 2, "the faults never changed the leader: the test proved little"
    assert acknowledged, "nothing committed under faults"
    for node in sim.nodes.values():
        values = node.recorder.values()
        assert values[-1] == b"final" and len(values) == len(set(values)) + values.count(b"final") - 1
        positions = [values.index(v) for _, v in sorted(acknowledged)]
        assert positions == sorted(positions), "acknowledged records out of order"

"""A deterministic quorum for the Raft tests: `RaftClient`s on a fake clock, an in-memory network with link cuts,
every message through the codec (encoded and decoded at the highest version both sides serve), logs and
`quorum-state` files on disk so nodes can be stopped and restarted.

Messages take `LATENCY_MS`; a request to a stopped node fails at once (a refused connection); a request or
answer over a cut link is lost (the sender's request timeout gives up on it). Nothing here sleeps.
"""

from __future__ import annotations

import heapq
import itertools
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from broker.raft.client import CommittedBatch, LeaderAndEpoch, RaftClient, RaftRequest
from broker.raft.config import QuorumConfig
from broker.raft.quorum_state import QUORUM_STATE_FILE, FileQuorumStateStore
from broker.raft.raft_log import RaftLog
from broker.raft.states import LeaderState
from protocol import SUPPORTED_VERSIONS, decode_request, decode_response, encode_request, encode_response

LATENCY_MS = 2
CONFIG = QuorumConfig(election_timeout_ms=1000, fetch_timeout_ms=2000, election_backoff_max_ms=1000,
                      request_timeout_ms=2000, retry_backoff_ms=20)


@dataclass
class Recorder:
    """A RaftListener keeping what it was given."""

    committed: list[CommittedBatch] = field(default_factory=list)
    leaders: list[LeaderAndEpoch] = field(default_factory=list)

    def handle_commit(self, batches: list[CommittedBatch]) -> None:
        self.committed.extend(batches)

    def handle_leader_change(self, leader: LeaderAndEpoch) -> None:
        self.leaders.append(leader)

    def values(self) -> list[bytes]:
        return [v for b in self.committed for v in b.records]


def _through_codec_request(request: Any) -> Any:
    request.with_header(correlation_id=1, client_id="sim")
    return decode_request(bytearray(encode_request(request)))


def _through_codec_response(response: Any, api_key: int, version: int) -> Any:
    response.with_header(correlation_id=1)
    return decode_response(encode_response(response), api_key, version)


class Node:
    def __init__(self, sim: Sim, node_id: int) -> None:
        self.sim = sim
        self.id = node_id
        self.dir = sim.root / f"node{node_id}" / "__cluster_metadata-0"
        self.client: RaftClient | None = None
        self.recorder = Recorder()
        self.log: RaftLog | None = None

    def start(self) -> None:
        self.log = RaftLog(self.dir)
        store = FileQuorumStateStore(self.dir / QUORUM_STATE_FILE, voters=frozenset(self.sim.voters))
        self.recorder = Recorder()
        self.client = RaftClient(self.id, self.sim.voters, self.log, store, now_ms=self.sim.now,
                                 config=self.sim.config, cluster_id="sim-cluster",
                                 rng=random.Random(self.sim.rng.random()))
        self.client.register(self.recorder)

    def stop(self) -> None:
        assert self.log is not None
        self.log.close()
        self.client = None
        self.log = None

    @property
    def alive(self) -> bool:
        return self.client is not None


class Sim:
    def __init__(self, root: Path, n: int, *, seed: int = 1, config: QuorumConfig = CONFIG) -> None:
        self.root = root
        self.now = 0
        self.rng = random.Random(seed)
        self.config = config
        self.voters = list(range(1, n + 1))
        self.cut: set[frozenset[int]] = set()
        self._events: list[tuple[int, int, Callable[[], None]]] = []
        self._seq = itertools.count()
        self.nodes = {i: Node(self, i) for i in self.voters}
        for node in self.nodes.values():
            node.start()

    # ---- the network
    def linked(self, a: int, b: int) -> bool:
        return frozenset((a, b)) not in self.cut

    def isolate(self, node_id: int) -> None:
        for other in self.voters:
            if other != node_id:
                self.cut.add(frozenset((node_id, other)))

    def heal(self) -> None:
        self.cut.clear()

    def _at(self, when: int, action: Callable[[], None]) -> None:
        heapq.heappush(self._events, (when, next(self._seq), action))

    def _send(self, source: Node, request: RaftRequest) -> None:
        client = source.client
        assert client is not None
        dest = self.nodes[request.destination]
        version = SUPPORTED_VERSIONS[request.api_key][1]
        if not dest.alive:
            self._at(self.now + LATENCY_MS, lambda: client is source.client and client.handle_failure(self.now,
                                                                                                       request))
            return
        if not self.linked(source.id, dest.id):
            return
        wire = _through_codec_request(request.build(version))

        def arrive() -> None:
            if dest.client is None or not self.linked(source.id, dest.id):
                return
            response = _through_codec_response(dest.client.handle_request(self.now, wire), request.api_key,
                                               version)

            def answer() -> None:
                if client is source.client and self.linked(source.id, dest.id):
                    client.handle_response(self.now, request, response)

            self._at(self.now + LATENCY_MS, answer)

        self._at(self.now + LATENCY_MS, arrive)

    # ---- time
    def _poll_all(self) -> None:
        for node in self.nodes.values():
            if node.client is not None:
                for request in node.client.poll(self.now):
                    self._send(node, request)

    def step(self) -> None:
        """Advance to the next event or timer, run everything due then."""
        times = [c.next_poll_ms(self.now) for c in self.clients()]
        if self._events:
            times.append(self._events[0][0])
        self.now = max(self.now, min(times)) if times else self.now + 1
        while self._events and self._events[0][0] <= self.now:
            _, _, action = heapq.heappop(self._events)
            action()
        self._poll_all()

    def run_for(self, ms: int) -> None:
        end = self.now + ms
        while self.now < end:
            self.step()
            if self.now >= end:
                break

    def run_until(self, condition: Callable[[], bool], max_ms: int = 60000) -> int:
        end = self.now + max_ms
        while not condition():
            if self.now >= end:
                raise AssertionError(f"not reached within {max_ms} ms of simulated time; {self.describe()}")
            self.step()
        return self.now

    # ---- reading the quorum
    def clients(self) -> list[RaftClient]:
        return [n.client for n in self.nodes.values() if n.client is not None]

    def leaders(self) -> list[RaftClient]:
        return [c for c in self.clients() if isinstance(c.state, LeaderState)]

    def leader(self, among: list[int] | None = None) -> RaftClient | None:
        """The leader of the highest epoch among `among` (all live nodes by default) that they all follow."""
        clients = [self.nodes[i].client for i in (among or self.voters) if self.nodes[i].client is not None]
        leaders = [c for c in clients if isinstance(c.state, LeaderState)]
        if not leaders:
            return None
        top = max(leaders, key=lambda c: c.epoch)
        followers = [c for c in clients if c is not top]
        # What each names as its leader (a prospective keeps its old leader to itself: it is not following).
        if all(c.leader_and_epoch() == LeaderAndEpoch(top.node_id, top.epoch) for c in followers):
            return top
        return None

    def describe(self) -> str:
        return ", ".join(f"{n.id}:{n.client.state.name}@{n.client.epoch}(L{n.client.leader_id},"
                         f"end {n.client.log.end_offset},hw {n.client.high_watermark})" if n.client else
                         f"{n.id}:down" for n in self.nodes.values())

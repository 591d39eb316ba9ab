"""Three Raft voters in this process, over real sockets on loopback (`RaftDriver`, the inter-broker client, the
socket server): a leader is elected and records commit on all three. Generous limits, no timing asserts: the
machine may be busy with a whole test run."""

from __future__ import annotations

import asyncio
import random
import time
from pathlib import Path
from typing import Any

from broker.network.socket_server import SocketServer
from broker.raft.client import RaftClient
from broker.raft.config import QuorumConfig
from broker.raft.driver import RaftDriver
from broker.raft.quorum_state import QUORUM_STATE_FILE, FileQuorumStateStore
from broker.raft.raft_log import RaftLog
from broker.raft.states import LeaderState
from tests.broker.raft.sim import Recorder

VOTERS = (1, 2, 3)
# Kafka's defaults stretched: on a machine busy with a whole test run a follower must not time out on a late fetch.
CONFIG = QuorumConfig(election_timeout_ms=2000, fetch_timeout_ms=6000, request_timeout_ms=5000)


async def _eventually(condition: Any, timeout_s: float = 60.0) -> None:
    async with asyncio.timeout(timeout_s):
        while not condition():
            await asyncio.sleep(0.02)


def test_three_voters_over_sockets_elect_a_leader_and_commit(tmp_path: Path) -> None:
    async def main() -> None:
        loop = asyncio.get_running_loop()
        drivers: dict[int, RaftDriver] = {}
        servers = {i: SocketServer(loop, "127.0.0.1", 0,
                                   lambda conn, frame, i=i: drivers[i].frame_handler(conn, frame),
                                   max_request_bytes=100 * 1024 * 1024, idle_timeout_ms=-1) for i in VOTERS}
        endpoints = {i: ("127.0.0.1", s.port) for i, s in servers.items()}
        recorders = {i: Recorder() for i in VOTERS}
        now = int(time.monotonic() * 1000)  # the driver's clock
        for i in VOTERS:
            directory = tmp_path / f"node{i}" / "__cluster_metadata-0"
            client = RaftClient(i, VOTERS, RaftLog(directory),
                                FileQuorumStateStore(directory / QUORUM_STATE_FILE, voters=frozenset(VOTERS)),
                                now_ms=now, config=CONFIG, cluster_id="socket-cluster",
                                rng=random.Random(i))
            drivers[i] = RaftDriver(client, endpoints)
            drivers[i].register(recorders[i])
        for i in VOTERS:
            servers[i].start()
            drivers[i].start()
        try:
            def elected() -> RaftDriver | None:
                leaders = [d for d in drivers.values() if isinstance(d.client.state, LeaderState)]
                if len(leaders) != 1:
                    return None
                top = leaders[0].client
                ok = all(d.client.leader_id == top.node_id and d.client.epoch == top.epoch for d in drivers.values())
                return leaders[0] if ok else None

            await _eventually(lambda: elected() is not None)
            leader = elected()
            assert leader is not None
            last = leader.append([b"over", b"sockets"])
            last = leader.append([b"again"])
            await _eventually(lambda: all(d.client.high_watermark > last for d in drivers.values()))
            for recorder in recorders.values():
                assert recorder.values() == [b"over", b"sockets", b"again"]
                assert recorder.leaders[-1].leader_id == leader.client.node_id
        finally:
            for driver in drivers.values():
                await driver.stop()
            for server in servers.values():
                server.stop_accepting()
                await server.close()

    asyncio.run(main())

"""The Raft client on asyncio: its requests over sockets, the answers back, the timers (Kafka's
KafkaRaftClientDriver and KafkaNetworkChannel).

Contract:
- `RaftDriver(client, voters)` with `voters` the node id -> (host, port) of `controller.quorum.voters`. `start()`
  runs one task on the running loop: `client.poll(now)` whenever a timer is due or something happened, each
  request sent on that voter's `broker.network.inter_broker.BrokerConnection` (versions negotiated by ApiVersions,
  one request at a time per voter, `controller.quorum.request.timeout.ms` as the connection's timeout), and its
  answer or failure handed back to the client. The clock is `time.monotonic()` in ms.
- The API hook: `handle_request(request)` answers a decoded Vote, BeginQuorumEpoch, EndQuorumEpoch or Fetch of
  `__cluster_metadata` (what a server's handlers call), and wakes the task, since an answer may change the state
  (a vote, a new leader). `frame_handler` is a whole `broker.network.socket_server.FrameHandler` serving
  ApiVersions (the codec's table) and the four Raft APIs only, for a node that is nothing but a quorum voter
  (the tests; later a controller's listener adds its own APIs).
- `append(values)` on the leader (`client.NotLeaderError` elsewhere) and `register(listener)` are the client's,
  called on the loop; an append wakes the task.
- `stop()` cancels the task, closes the connections and the log.
- Known gap: the leader answers every fetch at once (see `client.py`); no TLS/SASL configuration is read here (a
  `ClientSecurity` may be passed).
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

from broker.network.inter_broker import BrokerConnection, BrokerUnavailable
from broker.network.socket_server import Connection, Response
from broker.raft.client import RaftClient, RaftListener, RaftRequest
from broker.raft.messages import PreVoteUnsupported
from broker.security.client import PLAINTEXT_CLIENT, ClientSecurity
from protocol import ApiKey, decode_request, encode_response
from protocol.codec import api_versions_response
from protocol.errors import ProtocolError

log = logging.getLogger("broker.raft.driver")

RAFT_APIS = frozenset({ApiKey.VOTE, ApiKey.BEGIN_QUORUM_EPOCH, ApiKey.END_QUORUM_EPOCH, ApiKey.FETCH})


def decode_or_close(conn: Connection, frame: bytearray) -> Any | None:
    """The request a frame holds, or None with the connection closed (an undecodable request, as Kafka's
    SocketServer closes the connection)."""
    try:
        return decode_request(frame)
    except ProtocolError as e:
        conn.close(f"undecodable request: {e}")
        return None


def _now_ms() -> int:
    return int(time.monotonic() * 1000)


class RaftDriver:
    def __init__(self, client: RaftClient, voters: dict[int, tuple[str, int]], *,
                 security: ClientSecurity = PLAINTEXT_CLIENT) -> None:
        self.client = client
        self.voters = voters
        self.security = security
        self._connections: dict[int, BrokerConnection] = {}
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._sends: set[asyncio.Task[None]] = set()

    # ---- lifecycle
    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._run(), name=f"raft-{self.client.node_id}")
        self._task.add_done_callback(self._on_done)

    def _on_done(self, task: asyncio.Task[None]) -> None:
        # The loop only ends by stop(); anything else is a bug or a failed disk, and must not pass silently.
        if not task.cancelled() and task.exception() is not None:
            log.error("node %d: the Raft client stopped: %r", self.client.node_id, task.exception(),
                      exc_info=task.exception())

    async def stop(self) -> None:
        tasks = [t for t in (self._task, *self._sends) if t is not None]
        self._task = None
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        for conn in self._connections.values():
            conn.close()
        self._connections.clear()
        self.client.log.close()

    # ---- what the rest of the node calls
    def handle_request(self, request: Any) -> Any:
        response = self.client.handle_request(_now_ms(), request)
        self._wake.set()
        return response

    def append(self, values: list[bytes]) -> int:
        offset = self.client.append(values, _now_ms())
        self._wake.set()
        return offset

    def register(self, listener: RaftListener) -> None:
        self.client.register(listener)

    def frame_handler(self, conn: Connection, frame: bytearray) -> Response | None:
        request = decode_or_close(conn, frame)
        if request is None:
            return None
        key = request.API_KEY
        if key == ApiKey.API_VERSIONS:
            response = api_versions_response(min(request.API_VERSION, 3), request.header.correlation_id)
        elif key in RAFT_APIS:
            response = self.handle_request(request)
            response.with_header(correlation_id=request.header.correlation_id)
        else:
            conn.close(f"API {key} is not served by a Raft voter")
            return None
        body = encode_response(response)
        return Response(len(body), [body])

    # ---- the loop
    async def _run(self) -> None:
        client = self.client
        while True:
            now = _now_ms()
            for request in client.poll(now):
                task = asyncio.get_running_loop().create_task(self._send(request))
                self._sends.add(task)
                task.add_done_callback(self._sends.discard)
            delay = max(0, client.next_poll_ms(now) - _now_ms()) / 1000
            self._wake.clear()
            try:
                async with asyncio.timeout(delay):
                    await self._wake.wait()
            except TimeoutError:
                pass

    def _connection(self, node_id: int) -> BrokerConnection:
        conn = self._connections.get(node_id)
        if conn is None:
            host, port = self.voters[node_id]
            conn = BrokerConnection(host, port, f"raft-client-{self.client.node_id}",
                                    timeout_s=self.client.config.request_timeout_ms / 1000, security=self.security)
            self._connections[node_id] = conn
        return conn

    async def _send(self, request: RaftRequest) -> None:
        try:
            response = await self._connection(request.destination).send(request.build, request.api_key)
        except PreVoteUnsupported:
            self.client.handle_pre_vote_unsupported(_now_ms(), request)
        except BrokerUnavailable as e:
            log.debug("node %d: %s to %d failed: %s", self.client.node_id, request.api_key, request.destination, e)
            self.client.handle_failure(_now_ms(), request)
        else:
            self.client.handle_response(_now_ms(), request, response)
        self._wake.set()

"""A controller node (Kafka's ControllerServer for `process.roles=controller`): the Raft voter of
`__cluster_metadata`, the quorum controller on top, and the controller listener serving both.

Contract:
- Start-up: the metadata log dir (`metadata.log.dir`, else the first of `log.dirs`) must be formatted
  (`python -m broker format`, or Kafka's `kafka-storage.sh format`): its meta.properties gives the cluster id (and
  must name our node id); its `bootstrap.checkpoint` gives the records a fresh log starts with. The Raft log is
  `__cluster_metadata-0/` there, with `quorum-state` beside it. The quorum is `controller.quorum.voters` (a
  static quorum, kraft.version 0): a dynamic quorum (`controller.quorum.bootstrap.servers` alone, KIP-853) is
  refused. The timings are the `controller.quorum.*` keys (broker/raft/config.py).
- The listener: every `listeners` entry named in `controller.listener.names`, PLAINTEXT only. It serves
  ApiVersions (exactly what is listed below), the Raft APIs (Vote, BeginQuorumEpoch, EndQuorumEpoch, Fetch of
  `__cluster_metadata` from voters and from observers: brokers), DescribeQuorum, and the controller APIs of
  `controller.CONTROLLER_APIS`. Another API closes the connection, as Kafka's ControllerApis does for a key its
  listener does not enable.
- An observer's Fetch (a broker; a combined node's broker fetches as replica -1) that finds nothing new is parked
  up to its max wait until the log end or the high watermark moves (Kafka's leader parks it the same way), unless
  the high watermark moved since the last answer on that connection (the answer tells it). From Fetch v16 the
  answer names the leader's endpoint (NodeEndpoints, KIP-853).
- `started in` is logged once the listener accepts connections; `shutdown()` resigns nothing (the other voters
  elect a new leader after their fetch timeout), stops the listener, the controller and the Raft driver.
"""

from __future__ import annotations

import asyncio
import logging
import time
from pathlib import Path
from typing import Any

from broker.config.kafka_config import ConfigError, KafkaConfig
from broker.kraft.format import formatted_properties
from broker.kraft.snapshot import read_snapshot_records
from broker.network.socket_server import Connection, Response, SocketServer
from broker.quorum.controller import CONTROLLER_APIS, LeadershipLost, QuorumController
from broker.raft import messages as msg
from broker.raft.client import RaftClient
from broker.raft.config import QuorumConfig
from broker.raft.driver import RAFT_APIS, RaftDriver, decode_or_close
from broker.raft.quorum_state import QUORUM_STATE_FILE, FileQuorumStateStore
from broker.raft.raft_log import RaftLog
from protocol import ApiKey, encode_response, response_class
from protocol.codec import SUPPORTED_VERSIONS
from protocol.errors import ErrorCode
from storage.snapshot_file import BOOTSTRAP_FILE

log = logging.getLogger("broker.quorum")

# The Raft APIs at the versions our Raft client speaks (Fetch from 13: the metadata topic by id, as Kafka 4 sends).
SERVED: dict[int, tuple[int, int]] = {
    ApiKey.API_VERSIONS: SUPPORTED_VERSIONS[ApiKey.API_VERSIONS], ApiKey.FETCH: (13, 17),
    **{key: SUPPORTED_VERSIONS[key] for key in (ApiKey.VOTE, ApiKey.BEGIN_QUORUM_EPOCH, ApiKey.END_QUORUM_EPOCH)},
    **CONTROLLER_APIS}


class ControllerStartError(Exception):
    pass


class ControllerServer:
    def __init__(self, config: KafkaConfig) -> None:
        self.config = config
        self.node_id = config.broker_id
        self.controller: QuorumController | None = None
        self.driver: RaftDriver | None = None
        self.servers: list[SocketServer] = []
        self.voters: dict[int, tuple[str, int]] = {}
        # observer id -> (its last fetch offset, when in wall-clock ms), for DescribeQuorum
        self.observers: dict[int, tuple[int, int]] = {}
        self._told: dict[int, int] = {}  # connection id -> the high watermark its last Fetch answer carried

    # ---- start-up
    def _read_meta(self, directory: Path) -> str:
        return formatted_properties(directory, self.node_id, ControllerStartError).get("cluster.id", "")

    def _bootstrap(self, directory: Path) -> list[Any]:
        path = directory / BOOTSTRAP_FILE
        if not path.exists():
            raise ControllerStartError(f"No {BOOTSTRAP_FILE} in {directory}: format the directory first")
        _, records = read_snapshot_records(path)
        return [r.message for r in records]

    async def start(self) -> None:
        started = time.monotonic()
        config = self.config
        self.voters = config.quorum_voters
        if not self.voters:
            raise ConfigError("controller.quorum.voters is required for a controller of ours: a dynamic quorum "
                              "(controller.quorum.bootstrap.servers alone, KIP-853) is not supported yet")
        names = config.controller_listener_names
        endpoints = [ep for ep in config.listeners if ep.listener in names]
        protocols = config.listener_security_protocol_map
        for ep in endpoints:
            if protocols.get(ep.listener, "PLAINTEXT") != "PLAINTEXT":
                raise ConfigError(f"controller listener {ep.listener}: only PLAINTEXT is supported by our controller")
        directory = config.metadata_log_dir
        cluster_id = self._read_meta(directory)
        bootstrap = self._bootstrap(directory)
        partition_dir = directory / "__cluster_metadata-0"
        raft_log = RaftLog(partition_dir)
        store = FileQuorumStateStore(partition_dir / QUORUM_STATE_FILE, voters=frozenset(self.voters))
        client = RaftClient(self.node_id, self.voters, raft_log, store, now_ms=int(time.monotonic() * 1000),
                            config=QuorumConfig.from_props(config), cluster_id=cluster_id)
        self.driver = RaftDriver(client, self.voters)
        self.controller = QuorumController(
            self.driver, cluster_id=cluster_id, bootstrap=bootstrap, voter_endpoints=self.voters,
            session_timeout_ms=config["broker.session.timeout.ms"], default_partitions=config["num.partitions"],
            default_replication_factor=config["default.replication.factor"])
        self.controller.observers = self.observers
        loop = asyncio.get_running_loop()
        for ep in endpoints:
            server = SocketServer(loop, ep.host, ep.port, self.handle_frame,
                                  max_request_bytes=config["socket.request.max.bytes"], idle_timeout_ms=-1,
                                  listener_name=ep.listener)
            self.servers.append(server)
        self.controller.start()
        self.driver.start()
        for server in self.servers:
            server.start()
        log.info("[ControllerServer id=%d] started in %.2f s (cluster %s, voters %s)", self.node_id,
                 time.monotonic() - started, cluster_id, sorted(self.voters))

    async def shutdown(self) -> None:
        for server in self.servers:
            server.stop_accepting()
        if self.controller is not None:
            await self.controller.stop()
        for server in self.servers:
            await server.close()
        if self.driver is not None:
            await self.driver.stop()
        log.info("[ControllerServer id=%d] shut down", self.node_id)

    # ---- requests
    async def handle_frame(self, conn: Connection, frame: bytearray) -> Response | None:
        request = decode_or_close(conn, frame)
        if request is None:
            return None
        key = request.API_KEY
        served = SERVED.get(key)
        if served is None or not served[0] <= request.API_VERSION <= served[1]:
            conn.close(f"API {key} v{request.API_VERSION} is not served by a controller")
            return None
        assert self.controller is not None
        if key == ApiKey.API_VERSIONS:
            response = self._api_versions(request)
        elif key in RAFT_APIS:
            response = await self._raft(conn, request)
        else:
            try:
                response = await self.controller.handle(request)
            except LeadershipLost:
                conn.close("this controller stopped being active before the request's records committed")
                return None
        response.with_header(correlation_id=request.header.correlation_id)
        body = encode_response(response)
        return Response(len(body), [body])

    @staticmethod
    def _api_versions(request: Any) -> Any:
        Resp = response_class(ApiKey.API_VERSIONS)
        keys = [Resp.ApiVersion(api_key=k, min_version=lo, max_version=hi) for k, (lo, hi) in sorted(SERVED.items())]
        return Resp[request.API_VERSION](error_code=0, api_keys=keys, throttle_time_ms=0)

    async def _raft(self, conn: Connection, request: Any) -> Any:
        assert self.driver is not None and self.controller is not None
        response = self.driver.handle_request(request)
        if request.API_KEY != ApiKey.FETCH:
            return response
        replica = msg.fetch_replica_id(request)
        if replica not in self.voters:  # an observer: a broker (or a combined node's broker, replica id -1)
            told = self._told.get(conn.id, -1)
            if _nothing_new(response) and request.max_wait_ms > 0 and told == self.driver.client.high_watermark:
                try:
                    async with asyncio.timeout(request.max_wait_ms / 1000):
                        await self.controller.changed().wait()
                except TimeoutError:
                    pass
                response = self.driver.handle_request(request)
            partition = msg.single_response_partition(response)
            if partition is not None and partition.error_code == ErrorCode.NONE:
                if len(self._told) > 10000:
                    self._told.clear()  # connections come and go; what is forgotten costs one early answer
                self._told[conn.id] = partition.high_watermark
                if replica >= 0:
                    offset = msg.single_partition(request).fetch_offset
                    self.observers[replica] = (offset, int(time.time() * 1000))
        leader = self.driver.client.leader_id
        if request.API_VERSION >= 16 and leader in self.voters:
            host, port = self.voters[leader]
            Resp = response_class(ApiKey.FETCH)
            response.node_endpoints = [Resp.NodeEndpoint(node_id=leader, host=host, port=port, rack=None)]
        return response


def _nothing_new(response: Any) -> bool:
    partition = msg.single_response_partition(response)
    if partition is None or partition.error_code != ErrorCode.NONE or partition.records:
        return False
    diverging = getattr(partition, "diverging_epoch", None)
    return diverging is None or diverging.epoch < 0

"""A broker's requests to the active controller (Kafka's BrokerToControllerChannelManager, ZooKeeper mode).

Contract: `ControllerClient.send(build, api_key)` sends one request (`build(version) -> request`) to the broker
this broker's metadata names as the controller and returns the decoded response; requests go out at the
versions inter.broker.protocol.version allows. The connection follows the controller: it is replaced when
another broker becomes the controller, and dropped after a failure (`reset`). Raises `ControllerUnavailable`
when no controller is known or it cannot be reached; the caller retries. The active controller answers its own
broker's requests directly, without this client.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from broker.common.metadata_version import request_versions
from broker.network.inter_broker import BrokerConnection, BrokerUnavailable

if TYPE_CHECKING:
    from broker.controller.controller import ControllerServer


class ControllerUnavailable(Exception):
    pass


class ControllerClient:
    def __init__(self, server: ControllerServer, purpose: str) -> None:
        self.server = server
        self.client_id = f"broker-{server.broker_id}-{purpose}"
        self._conn: tuple[int, BrokerConnection] | None = None

    async def send(self, build: Any, api_key: int, version_caps: dict[int, int] | None = None) -> Any:
        """`version_caps` lowers the IBP's caps for this one request (e.g. AlterPartition without topic ids)."""
        cache = self.server.metadata_cache
        cid = cache.controller_id
        ep = cache.alive_broker(cid) if cid is not None and cid >= 0 else None
        if ep is None:
            raise ControllerUnavailable("no controller known")
        if self._conn is None or self._conn[0] != cid:
            self.reset()
            config = self.server.config
            self._conn = (cid, BrokerConnection(ep.host, ep.port, self.client_id,
                                                timeout_s=config["request.timeout.ms"] / 1000,
                                                version_caps=request_versions(config.inter_broker_protocol_version),
                                                security=self.server.inter_broker_security))
        conn = self._conn[1]
        saved = conn.version_caps
        conn.version_caps = {**saved, **(version_caps or {})}
        try:
            return await conn.send(build, api_key)
        except BrokerUnavailable as e:
            self.reset()
            raise ControllerUnavailable(str(e)) from None
        finally:
            conn.version_caps = saved

    def reset(self) -> None:
        if self._conn is not None:
            self._conn[1].close()
            self._conn = None

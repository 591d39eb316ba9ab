"""A KRaft broker's life with the controller: registration, heartbeats, fencing, controlled shutdown
(Kafka 3.9's BrokerLifecycleManager, KIP-631), and the channel its requests to the controller go through.

Contract:
- `ControllerChannel.send(build, api_key)` sends one request to the active controller: the quorum leader the
  metadata log follower knows (its `controller.quorum.voters` endpoint), reconnecting when the leader moves.
  Raises `ControllerUnavailable` when none is known or it cannot be reached (callers retry), at once or, with
  `wait_s`, after trying again for that long; with `wait_s` an answer naming NOT_CONTROLLER anywhere is tried
  again too (the last one is returned once the time is up).
- `BrokerLifecycleManager.start()`: BrokerRegistration (v0-4: node id, cluster id, a fresh incarnation id per
  process, our advertised listeners with their security protocols, the features we support, rack, the log
  dirs' directory ids, previous broker epoch -1), retried every `retry_backoff` until accepted; its broker
  epoch is `broker_epoch`. Then a BrokerHeartbeat every `broker.heartbeat.interval.ms` carrying the offset of
  the metadata image we have published, WantFence until `set_ready_to_unfence()`, and WantShutDown once
  `begin_controlled_shutdown()`. Events for the server: `caught_up` (the controller says our metadata
  reached our registration), `unfenced`, `should_shut_down`. Heartbeats v1 carry `offline_log_dirs()`
  (KIP-858); `wake()` sends one at once. STALE_BROKER_EPOCH (the controller lost or replaced our registration)
  registers again; other errors retry at the next interval.
- `registration_failed` carries the error of a registration the controller refused for good
  (INCONSISTENT_CLUSTER_ID, UNSUPPORTED_VERSION); DUPLICATE_BROKER_REGISTRATION is retried (our previous
  session has to expire first).
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

from broker.network.inter_broker import BrokerConnection, BrokerUnavailable
from broker.security.client import ClientSecurity
from protocol import ApiKey, decode_response, encode_request, request_class
from protocol.errors import ErrorCode, ProtocolError

log = logging.getLogger("broker.kraft.lifecycle")

SECURITY_PROTOCOL_IDS = {"PLAINTEXT": 0, "SSL": 1, "SASL_PLAINTEXT": 2, "SASL_SSL": 3}
# metadata.version levels we register with: Kafka 4.x's lowest (3.3-IV3) to 4.4-IV2 (Kafka 4.4's newest production
# level); protocol/metadata_records.py decodes every record a controller writes up to it (ClearElrRecord and the
# ELR fields of PartitionRecord/PartitionChangeRecord v2 from 4.0-IV1; the cordoned log dirs of
# RegisterBrokerRecord v4 / BrokerRegistrationChangeRecord v3 from 4.3-IV0; UnregisterControllerRecord from
# 4.4-IV2). 4.4-IV1's CIDR ACL hosts are matched by the authorizer (broker/security/acl.py).
METADATA_VERSION_RANGE = (7, 33)
# group.version 1: KIP-848 consumer groups; share.version 1: KIP-932 share groups (broker/apis/api_versions.py
# advertises the same levels). transaction.version 1 (KIP-890): __transaction_state values at version 1 (flexible,
# broker/coordinator/transaction/log.py); level 2 (KIP-890 part 2, `kafka-storage.sh format`'s default from Kafka
# 4.0): EndTxn v5 bumps the epoch at every commit/abort, Produce v12 / TxnOffsetCommit v5 add their partitions
# through the leader (AddPartitionsToTxn v4+), the coordinator's own aborts follow the cluster's level.
# kraft.version 1 (KIP-853): an observer finds the quorum leader from Fetch NodeEndpoints and
# controller.quorum.bootstrap.servers and reads the KRaftVersion / Voters control records; it needs no more.
# eligible.leader.replicas.version 1 (KIP-966): the leader holds the high watermark back while the ISR is below
# min.insync.replicas (KAFKA-15583, broker/cluster/partition.py), which is what the controller's ELR elections rest on;
# the ELR fields are read into the image and served by DescribeTopicPartitions.
# Levels a cluster formatted by Kafka 4.4 finalizes and that ask nothing of a broker that does not use them:
# share.version 2 enables share-group dead-letter topics (KIP-1191; not served here, a share group never
# dead-letters a record), streams.version 1 the Streams rebalance protocol (KIP-1071; its APIs are not
# advertised, so Kafka Streams keeps its classic protocol). A broker that refused them could not join a
# default-formatted Kafka 4.4 cluster at all.
SUPPORTED_FEATURES = {"metadata.version": METADATA_VERSION_RANGE, "group.version": (0, 1), "share.version": (0, 2),
                      "transaction.version": (0, 2), "kraft.version": (0, 1),
                      "eligible.leader.replicas.version": (0, 1), "streams.version": (0, 1)}
_FATAL = (ErrorCode.INCONSISTENT_CLUSTER_ID, ErrorCode.UNSUPPORTED_VERSION)


class ControllerUnavailable(Exception):
    pass


class EnvelopeRefused(ControllerUnavailable):
    """The controller answered an Envelope with an error (e.g. PRINCIPAL_DESERIALIZATION_FAILURE)."""

    def __init__(self, error: ErrorCode, message: str | None = None) -> None:
        super().__init__(message or f"the controller refused the envelope: {error.name}")
        self.error = error


def _names_not_controller(message: Any) -> bool:
    """Whether any error code in a response is NOT_CONTROLLER (Kafka's NodeToControllerRequestThread looks at the
    response's error counts): the controller it went to is not the active one."""
    stack = [message]
    while stack:
        item = stack.pop()
        if isinstance(item, (list, tuple)):
            stack.extend(item)
            continue
        fields = getattr(type(item), "__slots__", None)
        if not fields or isinstance(item, (str, bytes, bytearray, memoryview)):
            continue
        for name in fields:
            value = getattr(item, name, None)
            if name == "error_code" and value == ErrorCode.NOT_CONTROLLER:
                return True
            if isinstance(value, (list, tuple)) or getattr(type(value), "__slots__", None):
                stack.append(value)
    return False


class ControllerChannel:
    def __init__(self, leader: Callable[[], tuple[str, int] | None], client_id: str, *,
                 security: ClientSecurity | None = None, timeout_s: float = 30.0) -> None:
        self._leader = leader
        self.client_id = client_id
        self.security = security or ClientSecurity()
        self.timeout_s = timeout_s
        self._conn: tuple[tuple[str, int], BrokerConnection] | None = None

    async def send(self, build: Any, api_key: int, *, wait_s: float = 0.0) -> Any:
        """With `wait_s`, a controller not known yet, not reachable, or answering NOT_CONTROLLER anywhere in its
        response is tried again every 100 ms for up to that long, as Kafka's NodeToControllerChannelManager keeps a
        request queued until the active controller takes it (a quorum electing a new leader takes seconds)."""
        return await self._retrying(lambda: self._send_once(build, api_key), wait_s)

    async def _retrying(self, attempt: Callable[[], Awaitable[Any]], wait_s: float) -> Any:
        deadline = time.monotonic() + wait_s
        while True:
            try:
                response = await attempt()
            except ControllerUnavailable:
                if time.monotonic() >= deadline:
                    raise
            else:
                if wait_s <= 0 or time.monotonic() >= deadline or not _names_not_controller(response):
                    return response
                self.close()  # that controller is no longer active: find the leader again
            await asyncio.sleep(0.1)

    async def _send_once(self, build: Any, api_key: int) -> Any:
        target = self._leader()
        if target is None:
            raise ControllerUnavailable("no active controller known yet")
        if self._conn is None or self._conn[0] != target:
            self.close()
            self._conn = (target, BrokerConnection(target[0], target[1], self.client_id, timeout_s=self.timeout_s,
                                                   security=self.security))
        try:
            return await self._conn[1].send(build, api_key)
        except BrokerUnavailable as e:
            self.close()
            raise ControllerUnavailable(str(e)) from None

    async def send_enveloped(self, build: Any, api_key: int, *, principal: bytes, client_address: bytes,
                             client_id: str | None, correlation_id: int, wait_s: float = 0.0) -> Any:
        """`build(version)` wrapped in an EnvelopeRequest (KIP-590, Kafka's ForwardingManager): the inner request
        at the best version the controller and we share, with the client's header (correlation id, client id),
        the serialized principal and the client's address; returns the inner response. An Envelope the
        controller refuses raises `EnvelopeRefused` (Kafka's broker answers the client UNKNOWN_SERVER_ERROR)."""
        inner: dict[str, int] = {}

        def envelope(v: int) -> Any:
            assert self._conn is not None
            inner["version"] = version = self._conn[1].version_for(api_key)
            request = build(version)
            request.with_header(correlation_id=correlation_id, client_id=client_id)
            return request_class(ApiKey.ENVELOPE)[v](request_data=encode_request(request),
                                                      request_principal=principal, client_host_address=client_address)

        async def once() -> Any:
            resp = await self._send_once(envelope, ApiKey.ENVELOPE)
            if resp.error_code == ErrorCode.NOT_CONTROLLER and wait_s > 0:
                raise ControllerUnavailable("the controller is not active")
            if resp.error_code != ErrorCode.NONE:
                raise EnvelopeRefused(ErrorCode(resp.error_code))
            try:
                return decode_response(bytes(resp.response_data or b""), api_key, inner["version"])
            except ProtocolError as e:
                raise EnvelopeRefused(ErrorCode.UNKNOWN_SERVER_ERROR, f"bad enveloped response: {e}") from None

        return await self._retrying(once, wait_s)

    def close(self) -> None:
        if self._conn is not None:
            self._conn[1].close()
            self._conn = None


class BrokerLifecycleManager:
    def __init__(self, node_id: int, cluster_id: str, channel: ControllerChannel, *,
                 listeners: list[tuple[str, str, int, str]], rack: str | None, log_dir_ids: list[uuid.UUID],
                 metadata_offset: Callable[[], int], heartbeat_interval_ms: int = 2000,
                 retry_backoff_ms: int = 100) -> None:
        self.node_id = node_id
        self.cluster_id = cluster_id
        self.channel = channel
        self.listeners = listeners  # (name, host, port, security protocol)
        self.rack = rack
        self.log_dir_ids = log_dir_ids
        self.metadata_offset = metadata_offset
        self.heartbeat_interval_s = heartbeat_interval_ms / 1000
        self.retry_backoff_s = retry_backoff_ms / 1000
        self.incarnation_id = uuid.uuid4()
        self.broker_epoch = -1
        self.registered = asyncio.Event()
        self.caught_up = asyncio.Event()
        self.unfenced = asyncio.Event()
        self.should_shut_down = asyncio.Event()
        self.registration_failed: ErrorCode | None = None
        self.ready_to_unfence = False
        self.want_shut_down = False
        self.is_fenced = True
        self._wake = asyncio.Event()
        # Failed log directories' ids, sent in every heartbeat from v1 (KIP-858; broker/kraft/assignments.py).
        self.offline_log_dirs: Callable[[], list[uuid.UUID]] = list
        self._task: asyncio.Task | None = None

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._run(), name="kraft-broker-lifecycle")

    async def stop(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
        self.channel.close()

    def wake(self) -> None:
        """Heartbeat now (a log directory went offline)."""
        self._wake.set()

    def set_ready_to_unfence(self) -> None:
        self.ready_to_unfence = True
        self._wake.set()

    def begin_controlled_shutdown(self) -> None:
        self.want_shut_down = True
        self._wake.set()

    # ---- the loop: register, then heartbeat
    async def _run(self) -> None:
        while True:
            if self.broker_epoch < 0:
                await self._register()
                if self.registration_failed is not None:
                    return
                continue
            await self._heartbeat()
            self._wake.clear()
            try:
                async with asyncio.timeout(self.heartbeat_interval_s):
                    await self._wake.wait()
            except TimeoutError:
                pass

    async def _register(self) -> None:
        Req = request_class(ApiKey.BROKER_REGISTRATION)

        def build(v: int) -> Any:
            features = [Req.Feature(name=n, min_supported_version=lo, max_supported_version=hi)
                        for n, (lo, hi) in sorted(SUPPORTED_FEATURES.items()) if v >= 4 or lo > 0]
            listeners = [Req.Listener(name=n, host=h, port=p, security_protocol=SECURITY_PROTOCOL_IDS[sp])
                         for n, h, p, sp in self.listeners]
            fields: dict[str, Any] = dict(broker_id=self.node_id, cluster_id=self.cluster_id,
                                          incarnation_id=self.incarnation_id, listeners=listeners,
                                          features=features, rack=self.rack)
            if v >= 1:
                fields["is_migrating_zk_broker"] = False
            if v >= 2:
                fields["log_dirs"] = list(self.log_dir_ids)
            if v >= 3:
                fields["previous_broker_epoch"] = -1
            return Req[v](**fields)

        try:
            resp = await self.channel.send(build, ApiKey.BROKER_REGISTRATION)
        except ControllerUnavailable as e:
            log.debug("broker registration not sent: %s", e)
            await asyncio.sleep(self.retry_backoff_s)
            return
        error = ErrorCode(resp.error_code)
        if error == ErrorCode.NONE:
            self.broker_epoch = resp.broker_epoch
            log.info("registered with the controller: broker epoch %d, incarnation %s", self.broker_epoch,
                     self.incarnation_id)
            self.registered.set()
            self._wake.set()
            return
        if error in _FATAL:
            log.error("the controller refused our registration: %s", error.name)
            self.registration_failed = error
            self.registered.set()
            return
        log.info("broker registration: %s; retrying", error.name)
        await asyncio.sleep(self.retry_backoff_s if error != ErrorCode.DUPLICATE_BROKER_REGISTRATION
                            else self.heartbeat_interval_s)

    async def _heartbeat(self) -> None:
        Req = request_class(ApiKey.BROKER_HEARTBEAT)
        offset = self.metadata_offset()
        want_fence = not self.ready_to_unfence and not self.want_shut_down
        want_shut_down = self.want_shut_down

        def build(v: int) -> Any:
            fields: dict[str, Any] = dict(broker_id=self.node_id, broker_epoch=self.broker_epoch,
                                          current_metadata_offset=offset, want_fence=want_fence,
                                          want_shut_down=want_shut_down)
            if v >= 1:
                fields["offline_log_dirs"] = list(self.offline_log_dirs())
            return Req[v](**fields)

        try:
            resp = await self.channel.send(build, ApiKey.BROKER_HEARTBEAT)
        except ControllerUnavailable as e:
            log.debug("heartbeat not sent: %s", e)
            return
        error = ErrorCode(resp.error_code)
        if error == ErrorCode.STALE_BROKER_EPOCH:
            log.warning("the controller does not know broker epoch %d: registering again", self.broker_epoch)
            self.broker_epoch = -1
            self.registered.clear()
            return
        if error != ErrorCode.NONE:
            log.info("heartbeat: %s", error.name)
            return
        if resp.is_caught_up and not self.caught_up.is_set():
            log.info("caught up with the metadata log at offset %d", offset)
            self.caught_up.set()
        if self.is_fenced != resp.is_fenced:
            log.info("the controller %s this broker", "fenced" if resp.is_fenced else "unfenced")
        self.is_fenced = resp.is_fenced
        if not resp.is_fenced:
            self.unfenced.set()
        else:
            self.unfenced.clear()
        if resp.should_shut_down:
            self.should_shut_down.set()

"""Broker registration and cluster identity znodes (Kafka's KafkaZkClient: registerBroker, getAllBrokersInCluster,
getClusterId, generateBrokerSequenceId).

Contract:
- /brokers/ids/<id> is ephemeral: it disappears when the session ends (close, crash, expiry); after a ZooKeeper
  session expiry the store re-registers the broker in the new session (`_reregister`, hooked up by engines.py).
- `watch_brokers` is state-style: the whole current set of live broker ids, once at registration and after
  every change (rapid changes may coalesce).
- /cluster/id is created once by whichever broker reads it first; /brokers/seqid's version is the broker
  sequence id of `broker.id.generation.enable`.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Mapping, Sequence

from broker.metadata import znodes
from broker.metadata.store.base import StoreBase, log
from broker.metadata.types import (
    BrokerIdInUseError,
    BrokerInfo,
    MetadataError,
    NodeExistsError,
    NoNodeError,
)


class BrokerZnodes(StoreBase):
    """/brokers/ids, /brokers/seqid and /cluster/id."""

    _registration: tuple[str, bytes] | None = None
    broker_epoch: int = -1  # this broker's own epoch: the czxid of its current registration

    def register_broker(
        self,
        broker_id: int,
        endpoints: Sequence[str],
        rack: str | None = None,
        listener_security_protocol_map: Mapping[str, str] | None = None,
        *,
        wait_for_previous_session_s: float = 0.0,
    ) -> int:
        """Create ephemeral /brokers/ids/<id>; returns the broker epoch (the znode's czxid).

        A broker restarted after kill -9 finds its previous session's node still there until that
        session times out. Kafka fails the startup then (BrokerIdInUseError here); with
        `wait_for_previous_session_s > 0` the store instead waits up to that long for the stale
        node to expire (pass zookeeper.session.timeout.ms plus a margin).
        """
        if broker_id < 0:
            raise MetadataError(f"invalid broker id {broker_id}")
        path = znodes.broker_path(broker_id)
        data = znodes.encode_broker(list(endpoints), rack, listener_security_protocol_map)
        self._registration = (path, data)
        deadline = time.monotonic() + wait_for_previous_session_s
        while True:
            try:
                return self._create_registration(path, data)
            except BrokerIdInUseError:
                if time.monotonic() >= deadline:
                    raise
                time.sleep(0.1)

    def _create_registration(self, path: str, data: bytes) -> int:
        try:
            self._tree.create(path, data, ephemeral=True)
        except NodeExistsError:
            stat = self._tree.stat(path)
            if stat is None or not stat.owned:
                raise BrokerIdInUseError(f"{path} is registered by another live session") from None
            self._tree.set(path, data)
        stat = self._tree.stat(path)
        if stat is None:
            raise NoNodeError(f"{path} vanished right after registration")
        self.broker_epoch = stat.czxid
        return stat.czxid

    def _reregister(self) -> None:
        # The old session's /controller is gone with it: stop fencing with its epoch version.
        self.controller_epoch_zk_version = None
        registration = self._registration
        if registration is None or self._closed:
            return

        def again() -> None:
            try:
                epoch = self._create_registration(*registration)
                log.info("re-registered %s after session expiry, broker epoch %d", registration[0], epoch)
            except MetadataError:
                log.exception("could not re-register %s after session expiry", registration[0])

        self._submit(again)

    def live_brokers(self) -> dict[int, BrokerInfo]:
        """Every registered broker, with its broker epoch (the registration's czxid, Kafka's
        getAllBrokerAndEpochsInCluster)."""
        ids = sorted(int(c) for c in self._tree.children(znodes.BROKER_IDS) or [] if znodes.is_decimal(c))
        nodes = self._tree.get_many([znodes.broker_path(broker_id) for broker_id in ids])
        out = {}
        for broker_id, node in zip(ids, nodes, strict=True):
            stat = self._tree.stat(znodes.broker_path(broker_id)) if node is not None else None
            if node is not None and stat is not None:
                out[broker_id] = dataclasses.replace(znodes.decode_broker(broker_id, node[0]), epoch=stat.czxid)
        return out

    def watch_brokers(self, callback: Callable[[frozenset[int]], None]) -> None:
        def on_children(children: list[str]) -> None:
            self._deliver(callback, frozenset(int(c) for c in children if znodes.is_decimal(c)))

        self._tree.watch_children(znodes.BROKER_IDS, on_children)


    def get_or_create_cluster_id(self) -> str:
        node = self._tree.get(znodes.CLUSTER_ID)
        if node is not None:
            return znodes.decode_cluster_id(node[0])
        try:
            cluster_id = znodes.new_cluster_id()
            self._tree.create(znodes.CLUSTER_ID, znodes.encode_cluster_id(cluster_id), makepath=True)
            return cluster_id
        except NodeExistsError:
            node = self._tree.get(znodes.CLUSTER_ID)
            if node is None:
                raise NoNodeError(f"{znodes.CLUSTER_ID} vanished") from None
            return znodes.decode_cluster_id(node[0])


    def generate_broker_sequence_id(self) -> int:
        """Kafka's generateBrokerSequenceId: bump /brokers/seqid and return its new version
        (broker.id.generation adds reserved.broker.max.id to it)."""
        try:
            return self._tree.set(znodes.BROKER_SEQID, b"")
        except NoNodeError:
            self._tree.ensure_path(znodes.BROKER_SEQID)
            return self._tree.set(znodes.BROKER_SEQID, b"")


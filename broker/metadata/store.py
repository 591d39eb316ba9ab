"""The cluster metadata store: brokers, controller, topics, partition state, configs, notifications.

Contract:
- `MetadataStore` is the interface the controller and brokers use. Two engines implement it with
  the same code over a znode tree (tree.py), so they behave identically:
  `ZkMetadataStore` (a real ZooKeeper through kazoo, Kafka 3.x ZooKeeper-mode layout and JSON, see
  znodes.py, so Kafka's tools can read it) and `LocalMetadataStore` (the embedded default: one
  node, state in `<first log dir>/cluster-metadata.json`, written atomically).
- Every method is synchronous and may block on the network: the broker calls them through
  `asyncio.to_thread`. Failures are `MetadataError` subclasses (types.py).
- Watches: each `watch_*` callback is invoked through the `dispatch` callable given to the store
  (the broker passes `loop.call_soon_threadsafe`), never directly from kazoo's thread. The
  state-style watches (brokers, controller, topics, deletions) fire once at registration with the
  current value and again after changes, with the whole current value (not a delta); rapid
  changes may coalesce into one call, the last call always carries the current state.
  The notification-style watches (config changes, ISR changes) deliver each notification once.
- Fencing: `elect_controller` returns the new controller epoch when this broker won and records the
  /controller_epoch znode version in `controller_epoch_zk_version`. Controller writes pass that
  version as `controller_epoch_zk_version=`; the write is then a transaction that first checks
  /controller_epoch is unchanged, so a controller that was replaced gets ControllerMovedError and
  changes nothing (Kafka's checkControllerEpochZkVersion). Partition state updates are also
  conditional on the state znode version (`expected_version`, Kafka's partition epoch / zkVersion):
  a lost race raises BadVersionError.
- Broker registration is ephemeral: it disappears when the session ends (close, crash, expiry);
  after a ZooKeeper session expiry the store re-registers the broker in the new session.
"""

from __future__ import annotations

import logging
import os
import re
import time
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Protocol, TypeVar

from broker.metadata import znodes
from broker.metadata.local_tree import LocalTree
from broker.metadata.tree import Check, Create, Delete, Op, SetData, TransactionFailed, ZNodeTree
from broker.metadata.types import (
    BadVersionError,
    BrokerIdInUseError,
    BrokerInfo,
    ControllerMovedError,
    InvalidReplicaAssignmentError,
    InvalidTopicError,
    LeaderAndIsr,
    MetadataError,
    NodeExistsError,
    NoNodeError,
    NotEmptyError,
    PartitionStateExistsError,
    TopicExistsError,
    TopicInfo,
    UnknownTopicError,
)
from storage.values import TopicPartition

log = logging.getLogger(__name__)

Dispatch = Callable[[Callable[[], None]], None]
T = TypeVar("T")

LOCAL_STATE_FILE = "cluster-metadata.json"
# Kafka's ZkNodeChangeNotificationListener purges config change notifications after 15 minutes.
CONFIG_CHANGE_EXPIRATION_MS = 15 * 60 * 1000
MAX_TOPIC_NAME_LENGTH = 249
_TOPIC_NAME = re.compile(r"^[a-zA-Z0-9._-]+$")


def validate_topic_name(name: str) -> None:
    """Kafka's Topic.validate: 1..249 chars of [a-zA-Z0-9._-], not "." or ".."."""
    if not name or name in (".", "..") or len(name) > MAX_TOPIC_NAME_LENGTH or not _TOPIC_NAME.match(name):
        raise InvalidTopicError(f"invalid topic name {name[:300]!r}")


def validate_assignment(assignment: Mapping[int, Sequence[int]]) -> None:
    """Partitions 0..n-1, each with a non-empty list of distinct non-negative broker ids."""
    if not assignment:
        raise InvalidReplicaAssignmentError("no partitions")
    if sorted(assignment) != list(range(len(assignment))):
        raise InvalidReplicaAssignmentError(f"partitions must be 0..{len(assignment) - 1}")
    for partition, replicas in assignment.items():
        if not replicas or len(set(replicas)) != len(replicas) or min(replicas) < 0:
            raise InvalidReplicaAssignmentError(f"partition {partition}: bad replicas {list(replicas)}")


class MetadataStore(Protocol):
    """See the module docstring. `controller_epoch_zk_version` is None unless this store won an election."""

    controller_epoch_zk_version: int | None

    def register_broker(
        self,
        broker_id: int,
        endpoints: Sequence[str],
        rack: str | None = None,
        listener_security_protocol_map: Mapping[str, str] | None = None,
        *,
        wait_for_previous_session_s: float = 0.0,
    ) -> int: ...
    def live_brokers(self) -> dict[int, BrokerInfo]: ...
    def watch_brokers(self, callback: Callable[[frozenset[int]], None]) -> None: ...
    def get_or_create_cluster_id(self) -> str: ...
    def elect_controller(self, broker_id: int) -> int | None: ...
    def controller_epoch(self) -> tuple[int, int] | None: ...
    def current_controller(self) -> int | None: ...
    def watch_controller(self, callback: Callable[[int | None], None]) -> None: ...
    def resign_controller(self, broker_id: int) -> bool: ...
    def create_topic(
        self,
        name: str,
        topic_id: uuid.UUID,
        assignment: Mapping[int, Sequence[int]],
        configs: Mapping[str, str] | None = None,
    ) -> None: ...
    def topics(self) -> dict[str, TopicInfo]: ...
    def watch_topics(self, callback: Callable[[frozenset[str]], None]) -> None: ...
    def set_assignment(
        self,
        name: str,
        assignment: Mapping[int, Sequence[int]],
        *,
        adding_replicas: Mapping[int, Sequence[int]] | None = None,
        removing_replicas: Mapping[int, Sequence[int]] | None = None,
        expected_version: int | None = None,
        controller_epoch_zk_version: int | None = None,
    ) -> int: ...
    def partition_state(self, topic: str, partition: int) -> tuple[LeaderAndIsr, int] | None: ...
    def partition_states(self, topic: str) -> dict[int, tuple[LeaderAndIsr, int]]: ...
    def create_partition_state(
        self,
        topic: str,
        partition: int,
        state: LeaderAndIsr,
        *,
        controller_epoch_zk_version: int | None = None,
    ) -> int: ...
    def update_partition_state(
        self,
        topic: str,
        partition: int,
        state: LeaderAndIsr,
        expected_version: int,
        *,
        controller_epoch_zk_version: int | None = None,
    ) -> int: ...
    def mark_topic_for_deletion(self, name: str) -> None: ...
    def topics_pending_deletion(self) -> set[str]: ...
    def watch_deletions(self, callback: Callable[[frozenset[str]], None]) -> None: ...
    def delete_topic(self, name: str, *, controller_epoch_zk_version: int | None = None) -> None: ...
    def topic_configs(self, name: str) -> dict[str, str]: ...
    def set_topic_configs(self, name: str, configs: Mapping[str, str]) -> None: ...
    def watch_config_changes(self, callback: Callable[[list[str]], None]) -> None: ...
    def propagate_isr_change(self, partitions: Iterable[TopicPartition]) -> None: ...
    def watch_isr_changes(self, callback: Callable[[list[TopicPartition]], None]) -> None: ...
    def partition_states_many(
        self, partitions: Iterable[TopicPartition]
    ) -> dict[TopicPartition, tuple[LeaderAndIsr, int] | None]: ...
    def update_partition_states(
        self,
        updates: Mapping[TopicPartition, tuple[LeaderAndIsr, int]],
        *,
        controller_epoch_zk_version: int | None = None,
    ) -> dict[TopicPartition, int | MetadataError]: ...
    def create_partition_states(
        self,
        states: Mapping[TopicPartition, LeaderAndIsr],
        *,
        controller_epoch_zk_version: int | None = None,
    ) -> dict[TopicPartition, int | MetadataError]: ...
    def allocate_producer_id_block(
        self, broker_id: int, block_size: int = ..., max_attempts: int = ...
    ) -> tuple[int, int]: ...
    def generate_broker_sequence_id(self) -> int: ...
    def request_partition_reassignment(self, reassignment: Mapping[TopicPartition, Sequence[int]]) -> None: ...
    def partition_reassignment_request(self) -> dict[TopicPartition, tuple[int, ...]] | None: ...
    def watch_partition_reassignment_request(
        self, callback: Callable[[dict[TopicPartition, tuple[int, ...]] | None], None]
    ) -> None: ...
    def clear_partition_reassignment_request(self) -> None: ...
    def update_partition_reassignment_request(self, remaining: Mapping[TopicPartition, Sequence[int]]) -> None: ...
    def request_preferred_replica_election(self, partitions: Iterable[TopicPartition]) -> None: ...
    def preferred_replica_election_request(self) -> list[TopicPartition] | None: ...
    def watch_preferred_replica_election_request(
        self, callback: Callable[[list[TopicPartition] | None], None]
    ) -> None: ...
    def clear_preferred_replica_election_request(self) -> None: ...
    def watch_session_renewed(self, callback: Callable[[], None]) -> None: ...
    def close(self) -> None: ...


def _direct(fn: Callable[[], None]) -> None:
    fn()


class TreeMetadataStore:
    """The MetadataStore logic over any ZNodeTree; use ZkMetadataStore or LocalMetadataStore."""

    def __init__(self, tree: ZNodeTree, dispatch: Dispatch | None = None) -> None:
        self._tree = tree
        self._dispatch = dispatch or _direct
        # Notification handling reads and deletes znodes: blocking work kept off kazoo's callback thread.
        self._worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="metadata-notifications")
        self._closed = False
        self._registration: tuple[str, bytes] | None = None
        self.controller_epoch_zk_version: int | None = None
        for path in znodes.PERSISTENT_PATHS:
            tree.ensure_path(path)
        tree.on_session_renewed(self._reregister)

    # --- plumbing ------------------------------------------------------------------------------

    def _deliver(self, callback: Callable[[T], None], value: T) -> None:
        if self._closed:
            return

        def run() -> None:
            try:
                callback(value)
            except Exception:
                log.exception("metadata watch callback %r failed", callback)

        try:
            self._dispatch(run)
        except RuntimeError:
            log.debug("dispatch refused a metadata watch callback (event loop closed)")

    def _submit(self, fn: Callable[[], None]) -> None:
        if self._closed:
            return

        def run() -> None:
            try:
                fn()
            except Exception:
                log.exception("metadata notification processing failed")

        try:
            self._worker.submit(run)
        except RuntimeError:
            pass  # worker shut down by close()

    @staticmethod
    def _fenced(ops: list[Op], controller_epoch_zk_version: int | None) -> list[Op]:
        if controller_epoch_zk_version is None:
            return ops
        return [Check(znodes.CONTROLLER_EPOCH, controller_epoch_zk_version), *ops]

    @staticmethod
    def _fence_failed(error: TransactionFailed, fenced: bool) -> bool:
        return fenced and error.index == 0 and isinstance(error.error, BadVersionError | NoNodeError)

    # --- brokers -------------------------------------------------------------------------------

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
        ids = sorted(int(c) for c in self._tree.children(znodes.BROKER_IDS) or [] if znodes.is_decimal(c))
        nodes = self._tree.get_many([znodes.broker_path(broker_id) for broker_id in ids])
        return {
            broker_id: znodes.decode_broker(broker_id, node[0])
            for broker_id, node in zip(ids, nodes, strict=True)
            if node is not None
        }

    def watch_brokers(self, callback: Callable[[frozenset[int]], None]) -> None:
        def on_children(children: list[str]) -> None:
            self._deliver(callback, frozenset(int(c) for c in children if znodes.is_decimal(c)))

        self._tree.watch_children(znodes.BROKER_IDS, on_children)

    # --- cluster id and controller -------------------------------------------------------------

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

    def controller_epoch(self) -> tuple[int, int] | None:
        """(controller epoch, /controller_epoch znode version), or None before the first election."""
        node = self._tree.get(znodes.CONTROLLER_EPOCH)
        return None if node is None else (znodes.decode_controller_epoch(node[0]), node[1])

    def elect_controller(self, broker_id: int) -> int | None:
        """Try to become controller: create ephemeral /controller and bump /controller_epoch atomically.

        Returns the new epoch if this broker won, the current epoch if it already was controller in
        this session, None if another broker is controller.
        """
        stat = self._tree.stat(znodes.CONTROLLER)
        if stat is not None and stat.owned and self.current_controller() == broker_id:
            # Already controller in this session: keep the epoch; no second bump.
            held = self.controller_epoch()
            if held is not None:
                self.controller_epoch_zk_version = held[1]
                return held[0]
        current = self.controller_epoch()
        if current is None:
            try:
                self._tree.create(
                    znodes.CONTROLLER_EPOCH, znodes.encode_controller_epoch(znodes.INITIAL_CONTROLLER_EPOCH)
                )
                current = (znodes.INITIAL_CONTROLLER_EPOCH, 0)
            except NodeExistsError:
                current = self.controller_epoch()
                if current is None:
                    raise NoNodeError(f"{znodes.CONTROLLER_EPOCH} vanished") from None
        epoch, epoch_zk_version = current
        new_epoch = epoch + 1
        try:
            versions = self._tree.commit(
                [
                    Create(znodes.CONTROLLER, znodes.encode_controller(broker_id), ephemeral=True),
                    SetData(znodes.CONTROLLER_EPOCH, znodes.encode_controller_epoch(new_epoch), epoch_zk_version),
                ]
            )
        except TransactionFailed as e:
            if not isinstance(e.error, NodeExistsError | BadVersionError):
                raise e.error from None
            # Kafka's checkControllerAndEpoch: we may have won already (a retried request).
            stat = self._tree.stat(znodes.CONTROLLER)
            after = self.controller_epoch()
            if (
                stat is not None
                and stat.owned
                and self.current_controller() == broker_id
                and after is not None
                and after[0] == new_epoch
            ):
                self.controller_epoch_zk_version = after[1]
                return new_epoch
            return None
        self.controller_epoch_zk_version = versions[1]
        return new_epoch

    def current_controller(self) -> int | None:
        node = self._tree.get(znodes.CONTROLLER)
        return None if node is None else znodes.decode_controller(node[0])

    def watch_controller(self, callback: Callable[[int | None], None]) -> None:
        def on_data(data: bytes | None) -> None:
            try:
                controller = None if data is None else znodes.decode_controller(data)
            except MetadataError:
                log.exception("unreadable %s", znodes.CONTROLLER)
                controller = None
            self._deliver(callback, controller)

        self._tree.watch_data(znodes.CONTROLLER, on_data)

    def resign_controller(self, broker_id: int) -> bool:
        """Delete /controller if this session holds it for `broker_id`; True if it did."""
        stat = self._tree.stat(znodes.CONTROLLER)
        if stat is None or not stat.owned or self.current_controller() != broker_id:
            return False
        try:
            self._tree.delete(znodes.CONTROLLER, stat.version)
        except (NoNodeError, BadVersionError):
            return False
        self.controller_epoch_zk_version = None
        return True

    # --- topics --------------------------------------------------------------------------------

    def create_topic(
        self,
        name: str,
        topic_id: uuid.UUID,
        assignment: Mapping[int, Sequence[int]],
        configs: Mapping[str, str] | None = None,
    ) -> None:
        """Write /config/topics/<name> and /brokers/topics/<name> in one transaction.

        TopicExistsError if the topic exists. The controller sees the new topic through watch_topics
        and creates the partition states.
        """
        validate_topic_name(name)
        validate_assignment(assignment)
        if self._tree.stat(znodes.topic_path(name)) is not None:
            raise TopicExistsError(f"topic {name!r} already exists")
        config_path = znodes.topic_config_path(name)
        config_data = znodes.encode_topic_config(configs or {})
        config_op: Op = (
            SetData(config_path, config_data)
            if self._tree.stat(config_path) is not None
            else Create(config_path, config_data)
        )
        try:
            self._tree.commit([config_op, Create(znodes.topic_path(name), znodes.encode_topic(topic_id, assignment))])
        except TransactionFailed as e:
            if e.index == 1 and isinstance(e.error, NodeExistsError):
                raise TopicExistsError(f"topic {name!r} already exists") from None
            raise e.error from None

    def topic(self, name: str) -> TopicInfo | None:
        node = self._tree.get(znodes.topic_path(name))
        return None if node is None else znodes.decode_topic(name, node[0], node[1])

    def topics(self) -> dict[str, TopicInfo]:
        names = sorted(self._tree.children(znodes.BROKER_TOPICS) or [])
        nodes = self._tree.get_many([znodes.topic_path(name) for name in names])
        return {
            name: znodes.decode_topic(name, node[0], node[1])
            for name, node in zip(names, nodes, strict=True)
            if node is not None
        }

    def watch_topics(self, callback: Callable[[frozenset[str]], None]) -> None:
        self._tree.watch_children(znodes.BROKER_TOPICS, lambda children: self._deliver(callback, frozenset(children)))

    def set_assignment(
        self,
        name: str,
        assignment: Mapping[int, Sequence[int]],
        *,
        adding_replicas: Mapping[int, Sequence[int]] | None = None,
        removing_replicas: Mapping[int, Sequence[int]] | None = None,
        expected_version: int | None = None,
        controller_epoch_zk_version: int | None = None,
    ) -> int:
        """Replace the topic's assignment (CreatePartitions, reassignment), keeping its topic id.

        Conditional on `expected_version` (default: the version read here); returns the new version.
        """
        validate_assignment(assignment)
        node = self._tree.get(znodes.topic_path(name))
        if node is None:
            raise UnknownTopicError(name)
        current = znodes.decode_topic(name, node[0], node[1])
        version = node[1] if expected_version is None else expected_version
        data = znodes.encode_topic(current.topic_id, assignment, adding_replicas, removing_replicas)
        fenced = controller_epoch_zk_version is not None
        try:
            versions = self._tree.commit(
                self._fenced([SetData(znodes.topic_path(name), data, version)], controller_epoch_zk_version)
            )
        except TransactionFailed as e:
            if self._fence_failed(e, fenced):
                raise ControllerMovedError("controller epoch changed") from None
            if isinstance(e.error, NoNodeError):
                raise UnknownTopicError(name) from None
            raise e.error from None
        return versions[-1]

    # --- partition state -----------------------------------------------------------------------

    def partition_state(self, topic: str, partition: int) -> tuple[LeaderAndIsr, int] | None:
        node = self._tree.get(znodes.partition_state_path(topic, partition))
        if node is None:
            return None
        return znodes.decode_partition_state(topic, partition, node[0], node[1]), node[1]

    def partition_states(self, topic: str) -> dict[int, tuple[LeaderAndIsr, int]]:
        partitions = sorted(
            int(c) for c in self._tree.children(znodes.partitions_path(topic)) or [] if znodes.is_decimal(c)
        )
        states = self.partition_states_many([TopicPartition(topic, p) for p in partitions])
        return {tp.partition: state for tp, state in states.items() if state is not None}

    def partition_states_many(
        self, partitions: Iterable[TopicPartition]
    ) -> dict[TopicPartition, tuple[LeaderAndIsr, int] | None]:
        """partition_state for many partitions at once (pipelined on ZooKeeper)."""
        tps = [TopicPartition(*tp) for tp in partitions]
        nodes = self._tree.get_many([znodes.partition_state_path(tp.topic, tp.partition) for tp in tps])
        return {
            tp: None
            if node is None
            else (znodes.decode_partition_state(tp.topic, tp.partition, node[0], node[1]), node[1])
            for tp, node in zip(tps, nodes, strict=True)
        }

    def create_partition_state(
        self,
        topic: str,
        partition: int,
        state: LeaderAndIsr,
        *,
        controller_epoch_zk_version: int | None = None,
    ) -> int:
        """Create the state znode (and its parents); PartitionStateExistsError if present. Returns 0."""
        if self._tree.stat(znodes.topic_path(topic)) is None:
            raise UnknownTopicError(topic)
        self._tree.ensure_path(znodes.partition_path(topic, partition))
        fenced = controller_epoch_zk_version is not None
        try:
            versions = self._tree.commit(
                self._fenced(
                    [
                        Create(
                            znodes.partition_state_path(topic, partition),
                            znodes.encode_partition_state(state),
                        )
                    ],
                    controller_epoch_zk_version,
                )
            )
        except TransactionFailed as e:
            if self._fence_failed(e, fenced):
                raise ControllerMovedError("controller epoch changed") from None
            if isinstance(e.error, NodeExistsError):
                raise PartitionStateExistsError(f"{topic}-{partition}") from None
            raise e.error from None
        return versions[-1]

    def update_partition_state(
        self,
        topic: str,
        partition: int,
        state: LeaderAndIsr,
        expected_version: int,
        *,
        controller_epoch_zk_version: int | None = None,
    ) -> int:
        """Write the state if its znode is still at `expected_version`; returns the new version.

        BadVersionError: someone else updated it first (re-read and retry, as Kafka does).
        ControllerMovedError: `controller_epoch_zk_version` is stale.
        """
        fenced = controller_epoch_zk_version is not None
        path = znodes.partition_state_path(topic, partition)
        try:
            versions = self._tree.commit(
                self._fenced(
                    [SetData(path, znodes.encode_partition_state(state), expected_version)],
                    controller_epoch_zk_version,
                )
            )
        except TransactionFailed as e:
            if self._fence_failed(e, fenced):
                raise ControllerMovedError("controller epoch changed") from None
            raise e.error from None
        return versions[-1]

    def update_partition_states(
        self,
        updates: Mapping[TopicPartition, tuple[LeaderAndIsr, int]],
        *,
        controller_epoch_zk_version: int | None = None,
    ) -> dict[TopicPartition, int | MetadataError]:
        """update_partition_state for many partitions, pipelined: {tp: (state, expected_version)} ->
        {tp: new_version or the error (BadVersionError, NoNodeError, ControllerMovedError)}.

        Each partition is its own conditional write (as Kafka's updateLeaderAndIsr), so some may
        succeed while others lose a race; the caller re-reads and retries those.
        """
        tps = [TopicPartition(*tp) for tp in updates]
        transactions = [
            self._fenced(
                [
                    SetData(
                        znodes.partition_state_path(tp.topic, tp.partition),
                        znodes.encode_partition_state(updates[tp][0]),
                        updates[tp][1],
                    )
                ],
                controller_epoch_zk_version,
            )
            for tp in tps
        ]
        fenced = controller_epoch_zk_version is not None
        result: dict[TopicPartition, int | MetadataError] = {}
        for tp, outcome in zip(tps, self._tree.commit_many(transactions), strict=True):
            if isinstance(outcome, TransactionFailed):
                result[tp] = (
                    ControllerMovedError("controller epoch changed")
                    if self._fence_failed(outcome, fenced)
                    else outcome.error
                )
            else:
                result[tp] = outcome[-1]
        return result

    def create_partition_states(
        self,
        states: Mapping[TopicPartition, LeaderAndIsr],
        *,
        controller_epoch_zk_version: int | None = None,
    ) -> dict[TopicPartition, int | MetadataError]:
        """create_partition_state for many partitions (a new topic's), pipelined; errors in place
        (PartitionStateExistsError, UnknownTopicError, ControllerMovedError)."""
        tps = [TopicPartition(*tp) for tp in states]
        result: dict[TopicPartition, int | MetadataError] = {}
        topics = sorted({tp.topic for tp in tps})
        existing = dict(zip(topics, self._tree.get_many([znodes.topic_path(t) for t in topics]), strict=True))
        parents: list[list[Op]] = []
        for topic in topics:
            if existing[topic] is not None and self._tree.stat(znodes.partitions_path(topic)) is None:
                parents.append([Create(znodes.partitions_path(topic))])
        self._tree.commit_many(parents)  # NodeExists from a concurrent creator is fine
        todo = [tp for tp in tps if existing[tp.topic] is not None]
        for tp in tps:
            if existing[tp.topic] is None:
                result[tp] = UnknownTopicError(tp.topic)
        fenced = controller_epoch_zk_version is not None

        def transaction(tp: TopicPartition, with_parent: bool) -> list[Op]:
            ops: list[Op] = [Create(znodes.partition_path(tp.topic, tp.partition))] if with_parent else []
            ops.append(
                Create(znodes.partition_state_path(tp.topic, tp.partition), znodes.encode_partition_state(states[tp]))
            )
            return self._fenced(ops, controller_epoch_zk_version)

        # One round trip for a new topic (parent and state together); partitions whose parent
        # already exists go again with the state alone.
        outcomes = dict(zip(todo, self._tree.commit_many([transaction(tp, True) for tp in todo]), strict=True))
        again = [
            tp
            for tp, outcome in outcomes.items()
            if isinstance(outcome, TransactionFailed)
            and isinstance(outcome.error, NodeExistsError)
            and outcome.op.path == znodes.partition_path(tp.topic, tp.partition)
        ]
        outcomes.update(zip(again, self._tree.commit_many([transaction(tp, False) for tp in again]), strict=True))
        for tp, outcome in outcomes.items():
            if isinstance(outcome, TransactionFailed):
                if self._fence_failed(outcome, fenced):
                    result[tp] = ControllerMovedError("controller epoch changed")
                elif isinstance(outcome.error, NodeExistsError):
                    result[tp] = PartitionStateExistsError(f"{tp.topic}-{tp.partition}")
                else:
                    result[tp] = outcome.error
            else:
                result[tp] = outcome[-1]
        return {tp: result[tp] for tp in tps}

    # --- topic deletion ------------------------------------------------------------------------

    def mark_topic_for_deletion(self, name: str) -> None:
        """Create /admin/delete_topics/<name> (the controller deletes the topic); idempotent."""
        if self._tree.stat(znodes.topic_path(name)) is None:
            raise UnknownTopicError(name)
        try:
            self._tree.create(znodes.delete_topic_path(name))
        except NodeExistsError:
            pass

    def topics_pending_deletion(self) -> set[str]:
        return set(self._tree.children(znodes.DELETE_TOPICS) or [])

    def watch_deletions(self, callback: Callable[[frozenset[str]], None]) -> None:
        self._tree.watch_children(znodes.DELETE_TOPICS, lambda children: self._deliver(callback, frozenset(children)))

    def delete_topic(self, name: str, *, controller_epoch_zk_version: int | None = None) -> None:
        """Remove the topic's znodes, its config and its deletion marker.

        One transaction (leaves first), so with `controller_epoch_zk_version` a replaced controller
        deletes nothing (ControllerMovedError); a concurrent change to the subtree retries.
        """
        fenced = controller_epoch_zk_version is not None
        for _ in range(10):
            ops: list[Op] = []
            self._collect_deletes(znodes.topic_path(name), ops)
            for path in (znodes.topic_config_path(name), znodes.delete_topic_path(name)):
                if self._tree.stat(path) is not None:
                    ops.append(Delete(path))
            if not ops and not fenced:
                return
            try:
                self._tree.commit(self._fenced(ops, controller_epoch_zk_version))
                return
            except TransactionFailed as e:
                if self._fence_failed(e, fenced):
                    raise ControllerMovedError("controller epoch changed") from None
                if not isinstance(e.error, NoNodeError | NotEmptyError):
                    raise e.error from None
        raise MetadataError(f"topic {name!r} kept changing while being deleted")

    def _collect_deletes(self, path: str, ops: list[Op]) -> None:
        children = self._tree.children(path)
        if children is None:
            return
        for child in children:
            self._collect_deletes(f"{path}/{child}", ops)
        ops.append(Delete(path))

    # --- topic configs -------------------------------------------------------------------------

    def topic_configs(self, name: str) -> dict[str, str]:
        node = self._tree.get(znodes.topic_config_path(name))
        return {} if node is None else znodes.decode_topic_config(name, node[0])

    def set_topic_configs(self, name: str, configs: Mapping[str, str]) -> None:
        """Replace the topic's overrides and announce it with a config change notification."""
        if self._tree.stat(znodes.topic_path(name)) is None:
            raise UnknownTopicError(name)
        path = znodes.topic_config_path(name)
        data = znodes.encode_topic_config(configs)
        try:
            self._tree.set(path, data)
        except NoNodeError:
            self._tree.create(path, data, makepath=True)
        self._tree.create(
            f"{znodes.CONFIG_CHANGES}/{znodes.CONFIG_CHANGE_PREFIX}",
            znodes.encode_config_change(f"topics/{name}"),
            sequential=True,
        )

    def watch_config_changes(self, callback: Callable[[list[str]], None]) -> None:
        """`callback(topic_names)` for each batch of new topic config change notifications.

        As Kafka's listener does, notifications present at registration are processed too, and
        notifications older than 15 minutes are purged.
        """

        last_seen = -1

        def process(children: list[str]) -> None:
            nonlocal last_seen
            topics: list[str] = []
            newest = last_seen
            for child in sorted(children):
                seq = _sequence(child, znodes.CONFIG_CHANGE_PREFIX)
                if seq is None or seq <= last_seen:
                    continue
                newest = max(newest, seq)
                node = self._tree.get(f"{znodes.CONFIG_CHANGES}/{child}")
                if node is None:
                    continue
                try:
                    entity_path = znodes.decode_config_change(node[0])
                except MetadataError:
                    log.warning("ignoring unreadable config change %s", child)
                    continue
                entity_type, _, entity = entity_path.partition("/")
                if entity_type == "topics" and entity and entity not in topics:
                    topics.append(entity)
            last_seen = newest
            self._purge_config_changes(children)
            if topics:
                self._deliver(callback, topics)

        self._tree.watch_children(znodes.CONFIG_CHANGES, lambda children: self._submit(lambda: process(children)))

    def _purge_config_changes(self, children: list[str]) -> None:
        cutoff = time.time() * 1000 - CONFIG_CHANGE_EXPIRATION_MS
        for child in children:
            path = f"{znodes.CONFIG_CHANGES}/{child}"
            stat = self._tree.stat(path)
            if stat is not None and stat.ctime_ms < cutoff:
                try:
                    self._tree.delete(path)
                except NoNodeError:
                    pass

    # --- ISR change notifications --------------------------------------------------------------

    def propagate_isr_change(self, partitions: Iterable[TopicPartition]) -> None:
        """Leader side: announce ISR changes so the controller sends UpdateMetadata."""
        unique = sorted({TopicPartition(*tp) for tp in partitions})
        if unique:
            self._tree.create(
                f"{znodes.ISR_CHANGE_NOTIFICATION}/{znodes.ISR_CHANGE_PREFIX}",
                znodes.encode_partition_list(unique),
                sequential=True,
            )

    def watch_isr_changes(self, callback: Callable[[list[TopicPartition]], None]) -> None:
        """Controller side: `callback(partitions)` per batch; the notifications are deleted once read."""

        def process() -> None:
            partitions: set[TopicPartition] = set()
            for child in sorted(self._tree.children(znodes.ISR_CHANGE_NOTIFICATION) or []):
                path = f"{znodes.ISR_CHANGE_NOTIFICATION}/{child}"
                node = self._tree.get(path)
                if node is not None:
                    try:
                        partitions.update(znodes.decode_partition_list(node[0], path))
                    except MetadataError:
                        log.warning("ignoring unreadable ISR change notification %s", child)
                try:
                    self._tree.delete(path)
                except NoNodeError:
                    pass
            if partitions:
                self._deliver(callback, sorted(partitions))

        self._tree.watch_children(
            znodes.ISR_CHANGE_NOTIFICATION, lambda children: self._submit(process) if children else None
        )

    # --- producer ids, broker ids ---------------------------------------------------------------

    def allocate_producer_id_block(
        self, broker_id: int, block_size: int = znodes.PRODUCER_ID_BLOCK_SIZE, max_attempts: int = 100
    ) -> tuple[int, int]:
        """Claim the next block of producer ids for this broker: (first, last), inclusive.

        As Kafka's ZkProducerIdManager: read /latest_producer_id_block, write the next block
        conditionally on its version, retry if another broker won the race.
        """
        max_producer_id = (1 << 63) - 1
        for _ in range(max_attempts):
            node = self._tree.get(znodes.PRODUCER_ID_BLOCK)
            if node is None:
                try:
                    self._tree.create(znodes.PRODUCER_ID_BLOCK)
                except NodeExistsError:
                    pass
                continue
            current = znodes.decode_producer_id_block(node[0])
            first = 0 if current is None else current[2] + 1
            last = first + block_size - 1
            if last > max_producer_id:
                raise MetadataError("producer ids exhausted")
            try:
                self._tree.set(
                    znodes.PRODUCER_ID_BLOCK, znodes.encode_producer_id_block(broker_id, first, last), node[1]
                )
                return first, last
            except BadVersionError:
                continue
        raise MetadataError(f"could not claim a producer id block in {max_attempts} attempts")

    def generate_broker_sequence_id(self) -> int:
        """Kafka's generateBrokerSequenceId: bump /brokers/seqid and return its new version
        (broker.id.generation adds reserved.broker.max.id to it)."""
        try:
            return self._tree.set(znodes.BROKER_SEQID, b"")
        except NoNodeError:
            self._tree.ensure_path(znodes.BROKER_SEQID)
            return self._tree.set(znodes.BROKER_SEQID, b"")

    # --- admin requests: partition reassignment and preferred replica election (legacy znodes) --

    def request_partition_reassignment(self, reassignment: Mapping[TopicPartition, Sequence[int]]) -> None:
        """Write /admin/reassign_partitions (kafka-reassign-partitions --zookeeper); NodeExistsError
        while a previous request is still pending."""
        self._tree.create(
            znodes.REASSIGN_PARTITIONS,
            znodes.encode_reassignment({TopicPartition(*tp): r for tp, r in reassignment.items()}),
            makepath=True,
        )

    def partition_reassignment_request(self) -> dict[TopicPartition, tuple[int, ...]] | None:
        node = self._tree.get(znodes.REASSIGN_PARTITIONS)
        return None if node is None else znodes.decode_reassignment(node[0])

    def _watch_admin_request(self, path: str, decode: Callable[[bytes], T], callback: Callable[[T | None], None]
                             ) -> None:
        """Deliver the decoded request znode (None once deleted); an unreadable one is logged and skipped."""
        def on_data(data: bytes | None) -> None:
            try:
                value = None if data is None else decode(data)
            except MetadataError:
                log.warning("ignoring unreadable %s", path)
                return
            self._deliver(callback, value)

        self._tree.watch_data(path, on_data)

    def _clear_admin_request(self, path: str) -> None:
        try:
            self._tree.delete(path)
        except NoNodeError:
            pass

    def watch_partition_reassignment_request(
        self, callback: Callable[[dict[TopicPartition, tuple[int, ...]] | None], None]
    ) -> None:
        self._watch_admin_request(znodes.REASSIGN_PARTITIONS, znodes.decode_reassignment, callback)

    def clear_partition_reassignment_request(self) -> None:
        self._clear_admin_request(znodes.REASSIGN_PARTITIONS)

    def update_partition_reassignment_request(self, remaining: Mapping[TopicPartition, Sequence[int]]) -> None:
        """Rewrite the pending request in place with the partitions still moving (the controller removes
        finished ones; a delete-and-create would briefly show `--verify` an empty request)."""
        if not remaining:
            self.clear_partition_reassignment_request()
            return
        self._tree.set(znodes.REASSIGN_PARTITIONS,
                       znodes.encode_reassignment({TopicPartition(*tp): r for tp, r in remaining.items()}))

    def request_preferred_replica_election(self, partitions: Iterable[TopicPartition]) -> None:
        """Write /admin/preferred_replica_election; NodeExistsError while one is pending."""
        self._tree.create(
            znodes.PREFERRED_REPLICA_ELECTION,
            znodes.encode_partition_list(sorted({TopicPartition(*tp) for tp in partitions})),
            makepath=True,
        )

    def preferred_replica_election_request(self) -> list[TopicPartition] | None:
        node = self._tree.get(znodes.PREFERRED_REPLICA_ELECTION)
        if node is None:
            return None
        return znodes.decode_partition_list(node[0], znodes.PREFERRED_REPLICA_ELECTION)

    def watch_preferred_replica_election_request(self, callback: Callable[[list[TopicPartition] | None], None]) -> None:
        self._watch_admin_request(
            znodes.PREFERRED_REPLICA_ELECTION,
            lambda data: znodes.decode_partition_list(data, znodes.PREFERRED_REPLICA_ELECTION), callback)

    def clear_preferred_replica_election_request(self) -> None:
        self._clear_admin_request(znodes.PREFERRED_REPLICA_ELECTION)

    # --- session -------------------------------------------------------------------------------

    def watch_session_renewed(self, callback: Callable[[], None]) -> None:
        """`callback()` after the ZooKeeper session expired and a new one began: ephemeral nodes of
        the old session are gone (the store has already re-registered the broker; /controller is
        not re-created, so a controller must treat this as resignation and run for election again,
        as Kafka's controller does). Never fires on the local engine."""

        def renewed() -> None:
            self._deliver(lambda _: callback(), None)

        self._tree.on_session_renewed(renewed)

    # --- lifecycle -----------------------------------------------------------------------------

    def close(self) -> None:
        """End the session (ephemeral nodes go away) and stop delivering watches."""
        if self._closed:
            return
        self._closed = True
        self._worker.shutdown(wait=False, cancel_futures=True)
        self._tree.close()

    def __enter__(self) -> TreeMetadataStore:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def _sequence(name: str, prefix: str) -> int | None:
    if not name.startswith(prefix):
        return None
    digits = name[len(prefix) :]
    return int(digits) if znodes.is_decimal(digits) else None


class ZkMetadataStore(TreeMetadataStore):
    """The store on ZooKeeper (`zookeeper.connect`, optionally with a chroot: "host:port/kafka")."""

    def __init__(
        self,
        connect: str,
        *,
        session_timeout_ms: int = 18000,
        connection_timeout_ms: int = 18000,
        dispatch: Dispatch | None = None,
    ) -> None:
        from broker.metadata.zk_tree import KazooTree

        tree = KazooTree(connect, session_timeout_ms, connection_timeout_ms)
        try:
            super().__init__(tree, dispatch)
        except BaseException:
            tree.close()
            raise
        self.connect = connect

    @property
    def session_id(self) -> int:
        tree = self._tree
        return int(getattr(tree, "session_id", 0))


class LocalMetadataStore(TreeMetadataStore):
    """The embedded single-node store: state in `<log_dir>/cluster-metadata.json`."""

    def __init__(self, log_dir: str | os.PathLike[str], *, dispatch: Dispatch | None = None) -> None:
        self.state_file = Path(log_dir) / LOCAL_STATE_FILE
        super().__init__(LocalTree(self.state_file), dispatch)


__all__ = [
    "Dispatch",
    "LocalMetadataStore",
    "MetadataStore",
    "TreeMetadataStore",
    "ZkMetadataStore",
    "validate_assignment",
    "validate_topic_name",
]

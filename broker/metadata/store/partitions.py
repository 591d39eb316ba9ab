"""Partition state znodes and ISR change notifications (Kafka's KafkaZkClient: createTopicPartitionStatesRaw,
getTopicPartitionStates, updateLeaderAndIsr, propagateIsrChanges; IsrChangeNotificationHandler).

Contract:
- /brokers/topics/<t>/partitions/<p>/state holds a `LeaderAndIsr`; its znode version is the partition epoch
  (Kafka's zkVersion). Updates are conditional on it (`expected_version`): a lost race raises BadVersionError,
  the caller re-reads and retries. Controller writes may be fenced (`controller_epoch_zk_version`, base.py).
- The `*_many`/plural forms pipeline many partitions in one round of requests and report errors in place, so
  a 1,000-partition topic is one round trip, not 1,000.
- ISR change notifications: a leader announces partitions whose ISR it changed (`propagate_isr_change`); the
  controller's `watch_isr_changes` receives each batch once and deletes the notifications it read.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping

from broker.metadata import znodes
from broker.metadata.store.base import StoreBase, log
from broker.metadata.tree import Create, Op, SetData, TransactionFailed
from broker.metadata.types import (
    ControllerMovedError,
    LeaderAndIsr,
    MetadataError,
    NodeExistsError,
    NoNodeError,
    PartitionStateExistsError,
    UnknownTopicError,
)
from storage.values import TopicPartition


class PartitionStateZnodes(StoreBase):
    """/brokers/topics/<t>/partitions/<p>/state and /isr_change_notification."""

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


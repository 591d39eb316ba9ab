"""Topic znodes (Kafka's KafkaZkClient: createTopicAssignment, getReplicaAssignmentAndTopicIdForTopics,
setTopicAssignment, createDeleteTopicPath, deleteTopicZNode).

Contract:
- `create_topic` writes /config/topics/<name> and /brokers/topics/<name> in one transaction (TopicExistsError if
  the topic exists); the controller sees it through `watch_topics` and creates the partition states.
- `set_assignment` replaces a topic's assignment (CreatePartitions, reassignment with its adding/removing
  replicas), conditional on the topic znode's version; the topic id is kept.
- Deletion: `mark_topic_for_deletion` creates /admin/delete_topics/<name> (idempotent); the controller, told by
  `watch_deletions`, removes the topic with `delete_topic` in one fenced transaction.
- Names and assignments are validated as Kafka does before anything is written.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable, Mapping, Sequence

from broker.metadata import znodes
from broker.metadata.store.base import StoreBase
from broker.metadata.tree import Create, Delete, Op, SetData, TransactionFailed
from broker.metadata.types import (
    ControllerMovedError,
    InvalidReplicaAssignmentError,
    InvalidTopicError,
    MetadataError,
    NodeExistsError,
    NoNodeError,
    NotEmptyError,
    TopicExistsError,
    TopicInfo,
    UnknownTopicError,
)

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


class TopicZnodes(StoreBase):
    """/brokers/topics/<topic> (assignment, topic id) and /admin/delete_topics."""

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


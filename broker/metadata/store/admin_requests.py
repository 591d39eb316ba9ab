"""Admin request znodes of ZooKeeper-mode tools (kafka-reassign-partitions and kafka-preferred-replica-election
with --zookeeper; Kafka's KafkaZkClient: createPartitionReassignment, getPartitionReassignment,
createPreferredReplicaElection).

Contract: `request_*` writes the request znode (NodeExistsError while one is pending); `watch_*` delivers the
decoded request (None once deleted; an unreadable one is logged and skipped); the controller removes what it
finished with `update_partition_reassignment_request` / `clear_*`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TypeVar

from broker.metadata import znodes
from broker.metadata.store.base import StoreBase, log
from broker.metadata.types import (
    MetadataError,
    NoNodeError,
)
from storage.values import TopicPartition

T = TypeVar("T")


class AdminRequestZnodes(StoreBase):
    """/admin/reassign_partitions and /admin/preferred_replica_election."""

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


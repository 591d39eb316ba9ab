"""Partition reassignments on our KRaft brokers (issue 20), over real sockets with kafka-python's admin client:
AlterPartitionReassignments and ListPartitionReassignments sent by our broker on to the test controller
(broker/quorum/reassignment.py), the added replicas following and catching up on our brokers, the leader's
AlterPartition completing the move, and the removed replica's log deleted."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from kafka import KafkaAdminClient
from kafka import TopicPartition as KTopicPartition
from kafka.errors import InvalidReplicationAssignmentError, NoReassignmentInProgressError, UnknownTopicOrPartitionError

from broker.testing import EmbeddedBroker
from protocol import ApiKey
from storage import TopicPartition
from tests.cluster.test_kraft_cluster import (  # noqa: F401  (fixtures)
    controller,
    kraft_broker,
    partition,
    produce_and_consume,
    wait_for,
)
from tests.kraft_controller import ControllerThread

pytestmark = pytest.mark.timeout(120)


def admin_for(b: EmbeddedBroker) -> KafkaAdminClient:
    return KafkaAdminClient(bootstrap_servers=b.bootstrap, request_timeout_ms=20000)


def test_a_partition_moves_to_other_brokers_through_the_controller(
        controller: ControllerThread, kraft_broker: Callable[..., EmbeddedBroker]) -> None:  # noqa: F811
    brokers = {i: kraft_broker(i, **{"controlled.shutdown.enable": "false"}) for i in (1, 2, 3)}
    bootstrap = ",".join(b.bootstrap for b in brokers.values())
    admin = admin_for(brokers[2])
    try:
        from kafka.admin import NewTopic

        admin.create_topics([NewTopic("moving", num_partitions=1, replication_factor=-1,
                                      replica_assignments={0: [1]})])
        wait_for(lambda: partition(controller, "moving") is not None, what="topic moving")
        produce_and_consume(bootstrap, "moving", 30)
        tp = KTopicPartition("moving", 0)
        # [1] -> [2, 3]: adding 2 and 3, removing 1; they follow 1, catch up, join the ISR; 1 leaves.
        assert admin.alter_partition_reassignments({tp: [2, 3]}) == {tp: None}
        done = wait_for(lambda: (p := partition(controller, "moving")).replicas == (2, 3)
                        and not p.is_reassigning() and p, timeout=40, what="reassignment complete")
        assert sorted(done.isr) == [2, 3] and done.leader in (2, 3)
        # The leader (1) added 2 and 3 to the ISR through AlterPartition, which completed the move.
        changes = controller.call(lambda c: [r for k, r in c.requests if k == ApiKey.ALTER_PARTITION])
        assert any(r.broker_id == 1 and {s.broker_id for s in r.topics[0].partitions[0].new_isr_with_epochs}
                   == {1, 2, 3} for r in changes)
        assert admin.list_partition_reassignments() == {}
        # Every record is on the new replicas; the old one's log is deleted.
        ours = TopicPartition("moving", 0)
        for i in (2, 3):
            b = brokers[i]
            wait_for(lambda b=b: b.call(lambda: b.server.replica_manager.partitions[ours].log_end_offset) == 30,
                     what=f"replica on {i} caught up")
        wait_for(lambda: not (brokers[1].data_dir / "moving-0").exists(), what="old replica deleted")
        produce_and_consume(bootstrap, "moving", 10, first=100)
    finally:
        admin.close()


def test_an_ongoing_reassignment_is_listed_and_cancelled(
        controller: ControllerThread, kraft_broker: Callable[..., EmbeddedBroker]) -> None:  # noqa: F811
    brokers = {i: kraft_broker(i, **{"controlled.shutdown.enable": "false"}) for i in (1, 2, 3)}
    brokers[3].stop()  # registered but gone: a replica added on it never catches up
    wait_for(lambda: controller.call(lambda c: c.image.cluster.broker(3).fenced), what="broker 3 fenced")
    admin = admin_for(brokers[1])
    try:
        from kafka.admin import NewTopic

        admin.create_topics([NewTopic("stuck", num_partitions=1, replication_factor=-1,
                                      replica_assignments={0: [1, 2]})])
        wait_for(lambda: partition(controller, "stuck") is not None, what="topic stuck")
        produce_and_consume(brokers[1].bootstrap, "stuck", 5)
        tp = KTopicPartition("stuck", 0)
        # [1, 2] -> [3, 1]: adding 3, removing 2; the replicas are the target then the removed ones.
        assert admin.alter_partition_reassignments({tp: [3, 1]}) == {tp: None}
        listed = admin.list_partition_reassignments()
        assert listed == {tp: {"replicas": [3, 1, 2], "adding_replicas": [3], "removing_replicas": [2]}}
        assert admin.list_partition_reassignments([tp]) == listed
        assert admin.list_partition_reassignments({"other": [0]}) == {}
        # Our brokers took the new replica set from the metadata log at the same leader epoch.
        ours = TopicPartition("stuck", 0)
        leader = partition(controller, "stuck").leader
        b = brokers[leader]
        wait_for(lambda: b.call(lambda: b.server.replica_manager.partitions[ours].assigned_replicas) == [3, 1, 2],
                 what="leader's replicas")
        # The controller's own errors pass through our broker.
        results = admin.alter_partition_reassignments({tp: [1, 1], KTopicPartition("stuck", 7): [1],
                                                       KTopicPartition("nope", 0): [1]})
        assert results == {tp: InvalidReplicationAssignmentError,
                           KTopicPartition("stuck", 7): UnknownTopicOrPartitionError,
                           KTopicPartition("nope", 0): UnknownTopicOrPartitionError}
        assert admin.alter_partition_reassignments({tp: [9]}) == {tp: InvalidReplicationAssignmentError}
        # Cancelling reverts to the original replicas; cancelling again is NO_REASSIGNMENT_IN_PROGRESS.
        assert admin.alter_partition_reassignments({tp: None}) == {tp: None}
        p = partition(controller, "stuck")
        assert p.replicas == (1, 2) and not p.is_reassigning()
        assert admin.list_partition_reassignments() == {}
        assert admin.alter_partition_reassignments({tp: None}) == {tp: NoReassignmentInProgressError}
        wait_for(lambda: b.call(lambda: b.server.replica_manager.partitions[ours].assigned_replicas) == [1, 2],
                 what="leader's replicas reverted")
        produce_and_consume(brokers[1].bootstrap + "," + brokers[2].bootstrap, "stuck", 5, first=100)
    finally:
        admin.close()

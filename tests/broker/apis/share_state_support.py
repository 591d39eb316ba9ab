"""Requests of the share-group state RPCs for the error-path tests, and share coordinator states reached on
brokers of their own (as group_support.py does for the group coordinator).

- `build_*`: one request for one (group, topic id, partition) through our codec.
- `coordinated(b, port)`: FindCoordinator v6 with a share key until the broker answers (it creates
  `__share_group_state` on first use).
- `topic_id(b, topic, port)`: a topic's id from Metadata.
- `not_coordinator(b)`: a broker that never created `__share_group_state`: NOT_COORDINATOR for every key.
- `loading(b, key)`: a broker whose coordinator partition of the key is loading (the runtime's `begin_loading`,
  run on its loop, with no load to end it): COORDINATOR_LOAD_IN_PROGRESS.
- `shut_down(b)`: a broker whose share coordinator has shut down: COORDINATOR_NOT_AVAILABLE.
- `gone_topic(b, group)`: state kept for a topic no longer in the metadata: UNKNOWN_TOPIC_OR_PARTITION.
"""

from __future__ import annotations

import uuid
from typing import Any

from broker.coordinator.share.records import ShareKey
from broker.coordinator.share.state import SHARE_GROUP_STATE_TOPIC
from broker.testing import EmbeddedBroker
from protocol import ApiKey, request_class
from protocol.errors import ErrorCode
from storage import TopicPartition
from tests.e2e.support import wait_until

from .support import Brokers

FIND = request_class(ApiKey.FIND_COORDINATOR)
INIT = request_class(ApiKey.INITIALIZE_SHARE_GROUP_STATE)
READ = request_class(ApiKey.READ_SHARE_GROUP_STATE)
WRITE = request_class(ApiKey.WRITE_SHARE_GROUP_STATE)
DELETE = request_class(ApiKey.DELETE_SHARE_GROUP_STATE)
SUMMARY = request_class(ApiKey.READ_SHARE_GROUP_STATE_SUMMARY)


def build_initialize(group: str, topic_id: uuid.UUID, partition: int, state_epoch: int = 1,
                     start_offset: int = 0) -> Any:
    T = INIT.InitializeStateData
    return INIT[0](group_id=group, topics=[T(topic_id=topic_id, partitions=[T.PartitionData(
        partition=partition, state_epoch=state_epoch, start_offset=start_offset)])])


def build_read(group: str, topic_id: uuid.UUID, partition: int, leader_epoch: int = 0) -> Any:
    T = READ.ReadStateData
    return READ[0](group_id=group, topics=[T(topic_id=topic_id, partitions=[T.PartitionData(
        partition=partition, leader_epoch=leader_epoch)])])


def build_write(group: str, topic_id: uuid.UUID, partition: int, state_epoch: int = 1, leader_epoch: int = 0,
                start_offset: int = -1, batches: tuple[tuple[int, int, int, int], ...] = ()) -> Any:
    T = WRITE.WriteStateData
    P = T.PartitionData
    return WRITE[0](group_id=group, topics=[T(topic_id=topic_id, partitions=[P(
        partition=partition, state_epoch=state_epoch, leader_epoch=leader_epoch, start_offset=start_offset,
        state_batches=[P.StateBatch(first_offset=f, last_offset=la, delivery_state=s, delivery_count=c)
                       for f, la, s, c in batches])])])


def build_delete(group: str, topic_id: uuid.UUID, partition: int) -> Any:
    T = DELETE.DeleteStateData
    return DELETE[0](group_id=group, topics=[T(topic_id=topic_id, partitions=[T.PartitionData(
        partition=partition)])])


def build_summary(group: str, topic_id: uuid.UUID, partition: int, leader_epoch: int = 0) -> Any:
    T = SUMMARY.ReadStateSummaryData
    return SUMMARY[0](group_id=group, topics=[T(topic_id=topic_id, partitions=[T.PartitionData(
        partition=partition, leader_epoch=leader_epoch)])])


def code(response: Any) -> ErrorCode:
    return ErrorCode(response.results[0].partitions[0].error_code)


def coordinated(b: Brokers, port: int, key: str = "any:AAAAAAAAAAAAAAAAAAAAAA:0") -> int:
    """The node id FindCoordinator v6 names for a share key, once there is one."""
    answers: list[Any] = []
    wait_until(lambda: answers.append(b.call(FIND[6](key_type=2, coordinator_keys=[key]), port))
               or answers[-1].coordinators[0].error_code == ErrorCode.NONE, 30, "the share coordinator")
    return answers[-1].coordinators[0].node_id


def topic_id(b: Brokers, topic: str, port: int | None = None) -> uuid.UUID:
    meta = request_class(ApiKey.METADATA)
    resp = b.call(meta[12](topics=[meta.MetadataRequestTopic(name=topic)], allow_auto_topic_creation=False,
                           include_topic_authorized_operations=False), port)
    return resp.topics[0].topic_id


def not_coordinator(b: Brokers) -> int:
    return b.other(broker_id="41").port


def loading(b: Brokers, key: ShareKey) -> int:
    other: EmbeddedBroker = b.other(broker_id="42")
    coordinated(b, other.port)
    service = other.server.share_coordinator
    other.call(service.state.begin_loading, service.partition_for(key))
    return other.port


def shut_down(b: Brokers) -> int:
    other: EmbeddedBroker = b.other(broker_id="43")
    coordinated(b, other.port)
    other.call(other.server.share_coordinator.state.shutdown)
    return other.port


ANY_TOPIC = uuid.UUID(int=0x5EED)


def single_ready(b: Brokers) -> int:
    coordinated(b, b.single.port)
    return b.single.port


def gone_topic(b: Brokers, group: str) -> tuple[int, uuid.UUID]:
    """(port, topic id) of a broker of its own holding the state of partition 0 of a topic deleted while that
    state's `__share_group_state` partition was not led there (so nothing removed it): initialized, the
    coordinator partition resigned, the topic deleted (DeleteTopics), the partition loaded again."""
    other: EmbeddedBroker = b.other(broker_id="44")
    port = other.port
    coordinated(b, port)
    name = b.topic(f"share-gone-{group}", port=port)
    tid = topic_id(b, name, port)
    assert code(b.call(build_initialize(group, tid, 0), port)) == ErrorCode.NONE
    service = other.server.share_coordinator
    pid = service.partition_for(ShareKey(group, tid, 0))
    other.call(service.on_resignation, pid)
    delete = request_class(ApiKey.DELETE_TOPICS)
    resp = b.call(delete[4](topic_names=[name], timeout_ms=30000), port)
    assert resp.responses[0].error_code == ErrorCode.NONE, resp
    wait_until(lambda: name not in other.server.metadata_cache.topics, 30, f"{name} to be deleted")
    partition = other.server.replica_manager.get_partition(TopicPartition(SHARE_GROUP_STATE_TOPIC, pid))
    other.call(service.runtime.on_leadership_change, [partition], [])
    wait_until(lambda: pid in service.state.owned_partitions(), 30, "the share coordinator partition to load")
    return port, tid


def on_gone_topic(b: Brokers, group: str, build: Any) -> Any:
    port, tid = gone_topic(b, group)
    return b.call(build(group, tid, 0), port)


def live_topic(b: Brokers, name: str) -> uuid.UUID:
    single_ready(b)
    return topic_id(b, b.topic(name))


def common_producers(build: Any, group: str) -> dict[ErrorCode, Any]:
    """The codes every state RPC answers alike; `build(group, topic_id, partition)` makes its request."""
    from .acl_support import denied

    return {
        ErrorCode.NOT_COORDINATOR: lambda b: b.call(build(group, ANY_TOPIC, 0), not_coordinator(b)),
        ErrorCode.COORDINATOR_LOAD_IN_PROGRESS: lambda b: b.call(
            build(group, ANY_TOPIC, 0), loading(b, ShareKey(group, ANY_TOPIC, 0))),
        ErrorCode.COORDINATOR_NOT_AVAILABLE: lambda b: b.call(build(group, ANY_TOPIC, 0), shut_down(b)),
        ErrorCode.INVALID_REQUEST: lambda b: b.call(build(group, live_topic(b, "share-any"), -1), single_ready(b)),
        ErrorCode.CLUSTER_AUTHORIZATION_FAILED: lambda b: b.call(build(group, ANY_TOPIC, 0), denied(b)),
    }

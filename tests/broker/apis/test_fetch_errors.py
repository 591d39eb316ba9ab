"""Fetch: every code of `broker.apis.fetch.ERRORS`, over a real socket with our codec."""

from __future__ import annotations

import uuid
from typing import Any

from broker.apis import fetch
from protocol import ApiKey, request_class
from protocol.errors import ErrorCode

from .acl_support import denied
from .support import LED_BY_2, Brokers, Producer, error_path_test

Req = request_class(ApiKey.FETCH)
OWN = 8  # broker.id of the broker of its own that INCONSISTENT_TOPIC_ID is produced on
Topic = Req.FetchTopic


def send(b: Brokers, topic: str, *, version: int = 12, offset: int = 0, epoch: int = -1, session_id: int = 0,
         session_epoch: int = -1, topic_id: uuid.UUID | None = None, port: int | None = None) -> Any:
    return b.call(Req[version](
        replica_id=-1, max_wait_ms=0, min_bytes=0, max_bytes=1 << 20, isolation_level=0, session_id=session_id,
        session_epoch=session_epoch, forgotten_topics_data=[], rack_id="",
        topics=[Topic(topic=topic, topic_id=topic_id or uuid.UUID(int=0), partitions=[Topic.FetchPartition(
            partition=0, current_leader_epoch=epoch, fetch_offset=offset, last_fetched_epoch=-1,
            log_start_offset=-1, partition_max_bytes=1 << 20)])]), port)


def leader_epoch(b: Brokers, topic: str) -> int:
    meta = request_class(ApiKey.METADATA)
    return int(b.call(meta[9](topics=[meta.MetadataRequestTopic(name=topic)], allow_auto_topic_creation=False))
               .topics[0].partitions[0].leader_epoch)


PRODUCERS: dict[ErrorCode, Producer] = {
    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION: lambda b: send(b, "fetch-missing"),
    ErrorCode.UNKNOWN_TOPIC_ID: lambda b: send(b, "", version=13, topic_id=uuid.uuid4()),
    ErrorCode.NOT_LEADER_OR_FOLLOWER: lambda b: send(b, b.led_by_other("fetch-on-1"), port=b.cluster.ports[0]),
    ErrorCode.FENCED_LEADER_EPOCH: lambda b: send(b, LED_BY_2, epoch=b.fenced_epoch(), port=b.cluster.ports[0]),
    ErrorCode.UNKNOWN_LEADER_EPOCH: lambda b: send(
        b, b.topic("fetch-plain"), epoch=leader_epoch(b, "fetch-plain") + 1),
    ErrorCode.OFFSET_OUT_OF_RANGE: lambda b: send(b, b.topic("fetch-plain"), offset=1000),
    ErrorCode.FETCH_SESSION_ID_NOT_FOUND: lambda b: send(b, b.topic("fetch-plain"), session_id=123456,
                                                         session_epoch=1),
    ErrorCode.INVALID_FETCH_SESSION_EPOCH: lambda b: send(
        b, "fetch-plain", session_id=send(b, b.topic("fetch-plain"), session_epoch=0).session_id, session_epoch=5),
}

def inconsistent_topic_id(b: Brokers) -> Any:
    """A broker of its own leads `fetch-recreated` with a log of one topic id (LeaderAndIsr), while its metadata
    (UpdateMetadata) names the topic by another, as after a deletion and re-creation it has not caught up with:
    a fetch by the new id must not be served the old topic's records."""
    broker = b.other(broker_id=str(OWN))
    topic, old_id, new_id = "fetch-recreated", uuid.uuid4(), uuid.uuid4()
    LAI = request_class(ApiKey.LEADER_AND_ISR)
    state = LAI.LeaderAndIsrTopicState.LeaderAndIsrPartitionState(
        partition_index=0, controller_epoch=1000, leader=OWN, leader_epoch=0, isr=[OWN], partition_epoch=0,
        replicas=[OWN], adding_replicas=[], removing_replicas=[], is_new=True)
    lai = b.call(LAI[7](controller_id=OWN, controller_epoch=1000, broker_epoch=-1, topic_states=[
        LAI.LeaderAndIsrTopicState(topic_name=topic, topic_id=old_id, partition_states=[state])],
        live_leaders=[LAI.LeaderAndIsrLiveLeader(broker_id=OWN, host_name="127.0.0.1", port=broker.port)]),
        broker.port)
    assert lai.topics[0].partition_errors[0].error_code == ErrorCode.NONE
    UM = request_class(ApiKey.UPDATE_METADATA)
    B = UM.UpdateMetadataBroker
    um = b.call(UM[8](controller_id=OWN, controller_epoch=1000, broker_epoch=-1, topic_states=[
        UM.UpdateMetadataTopicState(topic_name=topic, topic_id=new_id, partition_states=[
            UM.UpdateMetadataPartitionState(topic_name=topic, partition_index=0, controller_epoch=1000, leader=OWN,
                                            leader_epoch=0, isr=[OWN], zk_version=0, replicas=[OWN],
                                            offline_replicas=[])])],
        live_brokers=[B(id=OWN, rack=None, endpoints=[B.UpdateMetadataEndpoint(
            host="127.0.0.1", port=broker.port, listener="PLAINTEXT", security_protocol=0)])]), broker.port)
    assert um.error_code == ErrorCode.NONE
    answer = send(b, "", version=13, topic_id=new_id, port=broker.port)
    assert send(b, "", version=13, topic_id=old_id, port=broker.port).responses[0].partitions[0].error_code == \
        ErrorCode.UNKNOWN_TOPIC_ID  # the metadata no longer knows the old id
    return answer


PRODUCERS.update({
    ErrorCode.TOPIC_AUTHORIZATION_FAILED: lambda b: send(b, "fetch-denied", port=denied(b)),
    # a session opened by name (v12) continued by topic id (v13)
    ErrorCode.FETCH_SESSION_TOPIC_ID_ERROR: lambda b: send(
        b, "", version=13, topic_id=uuid.uuid4(), session_id=send(b, b.topic("fetch-plain"), session_epoch=0)
        .session_id, session_epoch=1),
    ErrorCode.INCONSISTENT_TOPIC_ID: inconsistent_topic_id,
})

test_errors = error_path_test(fetch, PRODUCERS)

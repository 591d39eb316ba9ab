"""The four Raft RPCs of one partition, built and read with the codec's classes (Kafka's RaftUtil).

Contract:
- Vote v0-2 (v2: PreVote, KIP-996), BeginQuorumEpoch v0-1, EndQuorumEpoch v0-1 and Fetch v0-18 (the topic by
  name below v13, by the metadata topic id `AAAAAAAAAAAAAAAAAAAAAQ` from v13, as Kafka's raft sends it; the
  replica id in ReplicaState from v15) of `__cluster_metadata` partition 0, one topic and one partition each, as
  Kafka's singleton* builders do. Every builder takes the version the connection negotiated.
- `single_partition(request)` returns the one partition a request names, or None when it names another topic,
  several, or none (Kafka answers such a request INVALID_REQUEST: it serves one Raft partition).
- Only the fields of the version are set; v1+ endpoint lists are sent empty (the voters' endpoints come from
  `controller.quorum.voters`).
"""

from __future__ import annotations

import uuid
from typing import Any

from protocol import ApiKey, request_class, response_class

METADATA_TOPIC = "__cluster_metadata"
METADATA_TOPIC_ID = uuid.UUID(int=1)  # Kafka's Uuid.METADATA_TOPIC_ID
MAX_FETCH_BYTES = 8 * 1024 * 1024  # Kafka's KafkaRaftClient.MAX_FETCH_SIZE_BYTES
ZERO_UUID = uuid.UUID(int=0)


class PreVoteUnsupported(Exception):
    """A pre-vote cannot be sent below Vote v2 (KIP-996)."""


def single_partition(request: Any) -> Any | None:
    topics = request.topics
    if len(topics) != 1 or len(topics[0].partitions) != 1:
        return None
    topic = topics[0]
    if request.API_KEY == ApiKey.FETCH and request.API_VERSION >= 13:
        if topic.topic_id != METADATA_TOPIC_ID:
            return None
        partition = topic.partitions[0]
        return partition if partition.partition == 0 else None
    name = topic.topic if request.API_KEY == ApiKey.FETCH else topic.topic_name
    partition = topic.partitions[0]
    index = partition.partition if request.API_KEY == ApiKey.FETCH else partition.partition_index
    return partition if name == METADATA_TOPIC and index == 0 else None


def single_response_partition(response: Any) -> Any | None:
    if response.API_KEY == ApiKey.FETCH:
        topics = response.responses
    else:
        topics = response.topics
    if len(topics) != 1 or len(topics[0].partitions) != 1:
        return None
    return topics[0].partitions[0]


# ---- Vote ----------------------------------------------------------------------------------------------------
def vote_request(version: int, cluster_id: str | None, *, epoch: int, candidate_id: int, voter_id: int,
                 last_epoch: int, last_offset: int, pre_vote: bool) -> Any:
    if pre_vote and version < 2:
        raise PreVoteUnsupported(f"Vote v{version} has no PreVote field")
    Req = request_class(ApiKey.VOTE)
    part = Req.TopicData.PartitionData(partition_index=0, replica_epoch=epoch, replica_id=candidate_id,
                                       last_offset_epoch=last_epoch, last_offset=last_offset)
    if version >= 1:
        part.replica_directory_id = ZERO_UUID
        part.voter_directory_id = ZERO_UUID
    if version >= 2:
        part.pre_vote = pre_vote
    fields: dict[str, Any] = dict(cluster_id=cluster_id,
                                  topics=[Req.TopicData(topic_name=METADATA_TOPIC, partitions=[part])])
    if version >= 1:
        fields["voter_id"] = voter_id
    return Req[version](**fields)


def vote_response(version: int, error: int, *, partition_error: int = 0, epoch: int = -1, leader_id: int = -1,
                  granted: bool = False, with_partition: bool = True) -> Any:
    Resp = response_class(ApiKey.VOTE)
    topics = []
    if with_partition:
        topics = [Resp.TopicData(topic_name=METADATA_TOPIC, partitions=[Resp.TopicData.PartitionData(
            partition_index=0, error_code=partition_error, leader_id=leader_id, leader_epoch=epoch,
            vote_granted=granted)])]
    return Resp[version](error_code=error, topics=topics)


# ---- BeginQuorumEpoch ----------------------------------------------------------------------------------------
def begin_quorum_epoch_request(version: int, cluster_id: str | None, *, epoch: int, leader_id: int,
                               voter_id: int) -> Any:
    Req = request_class(ApiKey.BEGIN_QUORUM_EPOCH)
    part = Req.TopicData.PartitionData(partition_index=0, leader_id=leader_id, leader_epoch=epoch)
    fields: dict[str, Any] = dict(cluster_id=cluster_id)
    if version >= 1:
        part.voter_directory_id = ZERO_UUID
        fields.update(voter_id=voter_id, leader_endpoints=[])
    fields["topics"] = [Req.TopicData(topic_name=METADATA_TOPIC, partitions=[part])]
    return Req[version](**fields)


def epoch_response(api_key: int, version: int, error: int, *, partition_error: int = 0, epoch: int = -1,
                   leader_id: int = -1, with_partition: bool = True) -> Any:
    """A BeginQuorumEpoch or EndQuorumEpoch response (their layouts are the same)."""
    Resp = response_class(api_key)
    topics = []
    if with_partition:
        topics = [Resp.TopicData(topic_name=METADATA_TOPIC, partitions=[Resp.TopicData.PartitionData(
            partition_index=0, error_code=partition_error, leader_id=leader_id, leader_epoch=epoch)])]
    return Resp[version](error_code=error, topics=topics)


# ---- EndQuorumEpoch ------------------------------------------------------------------------------------------
def end_quorum_epoch_request(version: int, cluster_id: str | None, *, epoch: int, leader_id: int,
                             preferred: list[int]) -> Any:
    Req = request_class(ApiKey.END_QUORUM_EPOCH)
    part = Req.TopicData.PartitionData(partition_index=0, leader_id=leader_id, leader_epoch=epoch)
    fields: dict[str, Any] = dict(cluster_id=cluster_id)
    if version >= 1:
        part.preferred_candidates = [Req.TopicData.PartitionData.ReplicaInfo(
            candidate_id=c, candidate_directory_id=ZERO_UUID) for c in preferred]
        fields["leader_endpoints"] = []
    else:
        part.preferred_successors = list(preferred)
    fields["topics"] = [Req.TopicData(topic_name=METADATA_TOPIC, partitions=[part])]
    return Req[version](**fields)


def preferred_successors(partition: Any, version: int) -> list[int]:
    if version >= 1:
        return [c.candidate_id for c in partition.preferred_candidates or ()]
    return list(partition.preferred_successors or ())


# ---- Fetch ---------------------------------------------------------------------------------------------------
def fetch_request(version: int, cluster_id: str | None, *, replica_id: int, epoch: int, fetch_offset: int,
                  last_fetched_epoch: int, max_wait_ms: int = 0) -> Any:
    Req = request_class(ApiKey.FETCH)
    part = Req.FetchTopic.FetchPartition(partition=0, current_leader_epoch=epoch, fetch_offset=fetch_offset,
                                         last_fetched_epoch=last_fetched_epoch, log_start_offset=-1,
                                         partition_max_bytes=MAX_FETCH_BYTES)
    if version >= 17:
        part.replica_directory_id = ZERO_UUID
    topic = Req.FetchTopic(topic_id=METADATA_TOPIC_ID, partitions=[part]) if version >= 13 \
        else Req.FetchTopic(topic=METADATA_TOPIC, partitions=[part])
    fields: dict[str, Any] = dict(max_wait_ms=max_wait_ms, min_bytes=0, max_bytes=MAX_FETCH_BYTES,
                                  isolation_level=0, session_id=0, session_epoch=-1, topics=[topic],
                                  forgotten_topics_data=[], rack_id="", cluster_id=cluster_id)
    if version >= 15:
        fields.update(replica_id=-1, replica_state=Req.ReplicaState(replica_id=replica_id, replica_epoch=-1))
    else:
        fields["replica_id"] = replica_id
    return Req[version](**fields)


def fetch_replica_id(request: Any) -> int:
    if request.API_VERSION >= 15:
        return request.replica_state.replica_id
    return request.replica_id


def fetch_response(version: int, error: int, *, partition_error: int = 0, leader_id: int = -1, epoch: int = -1,
                   high_watermark: int = -1, log_start_offset: int = 0, records: bytes = b"",
                   diverging: tuple[int, int] | None = None, with_partition: bool = True) -> Any:
    Resp = response_class(ApiKey.FETCH)
    P = Resp.FetchableTopicResponse.PartitionData
    responses = []
    if with_partition:
        fields: dict[str, Any] = dict(
            partition_index=0, error_code=partition_error, high_watermark=high_watermark, last_stable_offset=-1,
            log_start_offset=log_start_offset, aborted_transactions=None, preferred_read_replica=-1,
            records=records)
        if version >= 12:
            fields["current_leader"] = P.LeaderIdAndEpoch(leader_id=leader_id, leader_epoch=epoch)
            if diverging is not None:
                fields["diverging_epoch"] = P.EpochEndOffset(epoch=diverging[0], end_offset=diverging[1])
        topic = Resp.FetchableTopicResponse(topic_id=METADATA_TOPIC_ID, partitions=[P(**fields)]) \
            if version >= 13 else Resp.FetchableTopicResponse(topic=METADATA_TOPIC, partitions=[P(**fields)])
        responses = [topic]
    return Resp[version](throttle_time_ms=0, error_code=error, session_id=0, responses=responses)

"""DescribeProducers (key 61), version 0.

The producer state this broker's replica of each partition holds (Kafka's handleDescribeProducersRequest and
Partition.activeProducerState; what `kafka-transactions.sh describe-producers` and the admin clients'
describeProducers show): per producer id its epoch, last sequence, last timestamp, coordinator epoch and the
first offset of its ongoing transaction (-1: none). Any replica answers, leader or follower, as in Kafka
(the admin client asks the leader unless told a broker).
Errors, per partition: an invalid topic name INVALID_TOPIC_EXCEPTION with Kafka's message; a topic the
metadata does not know UNKNOWN_TOPIC_OR_PARTITION; a partition this broker does not host
NOT_LEADER_OR_FOLLOWER when the metadata knows it, else UNKNOWN_TOPIC_OR_PARTITION. Kafka's
KAFKA_STORAGE_ERROR for a replica on an offline log dir is not answered: the replica manager keeps no offline
partitions.
With an authorizer (Kafka): READ on each topic, else TOPIC_AUTHORIZATION_FAILED.
"""

from __future__ import annotations

from typing import Any

from broker.apis.base import RequestContext, response_for, response_type
from broker.common.errors import KafkaApiError
from broker.config.topics import topic_name_error
from broker.security.acl import AclOperation, ResourceType
from protocol.errors import ErrorCode
from storage import TopicPartition

API_KEY = 61
MIN_VERSION = 0
MAX_VERSION = 0
ERRORS: tuple[ErrorCode, ...] = (
    ErrorCode.INVALID_TOPIC_EXCEPTION, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode.NOT_LEADER_OR_FOLLOWER,
    ErrorCode.TOPIC_AUTHORIZATION_FAILED,
)


def handle(ctx: RequestContext, request: Any) -> Any:
    TopicResp = response_type(request).TopicResponse
    PartResp = TopicResp.PartitionResponse
    State = PartResp.ProducerState
    cache = ctx.server.metadata_cache
    rm = ctx.server.replica_manager
    topics = []
    for topic in request.topics or []:
        error: tuple[ErrorCode, str | None] | None = None
        invalid = topic_name_error(topic.name)
        if invalid is not None:
            error = (ErrorCode.INVALID_TOPIC_EXCEPTION, invalid)
        elif not ctx.authorize(AclOperation.READ, ResourceType.TOPIC, topic.name):
            error = (ErrorCode.TOPIC_AUTHORIZATION_FAILED, None)
        elif topic.name not in cache.topics:
            error = (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, None)
        partitions = []
        for index in topic.partition_indexes or []:
            if error is not None:
                partitions.append(PartResp(partition_index=index, error_code=error[0], error_message=error[1]))
                continue
            try:
                log_ = rm.get_partition_or_error(TopicPartition(topic.name, index)).log
            except KafkaApiError as e:
                partitions.append(PartResp(partition_index=index, error_code=e.code))
                continue
            producers = [] if log_ is None else [
                State(producer_id=pid, producer_epoch=e.producer_epoch, last_sequence=e.last_seq,
                      last_timestamp=e.last_timestamp, coordinator_epoch=e.coordinator_epoch,
                      current_txn_start_offset=e.current_txn_first_offset)
                for pid, e in list(log_.producer_state.producers.items())]
            partitions.append(PartResp(partition_index=index, error_code=ErrorCode.NONE, active_producers=producers))
        topics.append(TopicResp(name=topic.name, partitions=partitions))
    return response_for(request, throttle_time_ms=0, topics=topics)

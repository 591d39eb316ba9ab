"""The typed messages: one request class and one response class per API key we serve.

Contract:
- Every message class is a kafka-python 3.0 `ApiMessage` (built from Kafka's JSON message specs, with
  compiled flat codecs, snake_case attributes, `unknown_tags` preserved). We do not define messages any
  other way.
- The APIs kafka-python lacks (LeaderAndIsr, StopReplica, UpdateMetadata, ControlledShutdown,
  AlterPartition, ConsumerGroupHeartbeat) are defined here from our own specs in `protocol/schemas/`,
  loaded through the same machinery (`load_json=`). Kafka's field `Type` of LeaderAndIsr (v5+) and
  UpdateMetadata (v8+) is named `RequestType` there (attribute `request_type`): a field named `type`
  would shadow kafka-python's `ApiMessage.type` class property.
- `request_class(api_key)` / `response_class(api_key)` return the unversioned class; index it with a
  version (`cls[v]`) for a versioned one. Unknown keys raise `UnknownApiKey`.
"""

from __future__ import annotations

import weakref

from kafka.protocol.admin.cluster import DescribeClusterRequest, DescribeClusterResponse
from kafka.protocol.admin.configs import (
    AlterConfigsRequest,
    AlterConfigsResponse,
    DescribeConfigsRequest,
    DescribeConfigsResponse,
    IncrementalAlterConfigsRequest,
    IncrementalAlterConfigsResponse,
)
from kafka.protocol.admin.groups import (
    DeleteGroupsRequest,
    DeleteGroupsResponse,
    DescribeGroupsRequest,
    DescribeGroupsResponse,
    ListGroupsRequest,
    ListGroupsResponse,
)
from kafka.protocol.admin.topics import (
    CreatePartitionsRequest,
    CreatePartitionsResponse,
    CreateTopicsRequest,
    CreateTopicsResponse,
    DeleteRecordsRequest,
    DeleteRecordsResponse,
    DeleteTopicsRequest,
    DeleteTopicsResponse,
    DescribeTopicPartitionsRequest,
    DescribeTopicPartitionsResponse,
)
from kafka.protocol.admin.transactions import DescribeProducersRequest, DescribeProducersResponse
from kafka.protocol.api_header import ResponseClassRegistry
from kafka.protocol.api_message import ApiMessage
from kafka.protocol.consumer.fetch import FetchRequest
from kafka.protocol.consumer.fetch import FetchResponse as _KafkaPythonFetchResponse
from kafka.protocol.consumer.group import (
    HeartbeatRequest,
    HeartbeatResponse,
    JoinGroupRequest,
    JoinGroupResponse,
    LeaveGroupRequest,
    LeaveGroupResponse,
    OffsetCommitRequest,
    OffsetCommitResponse,
    OffsetDeleteRequest,
    OffsetDeleteResponse,
    OffsetFetchRequest,
    OffsetFetchResponse,
    SyncGroupRequest,
    SyncGroupResponse,
)
from kafka.protocol.consumer.offsets import (
    ListOffsetsRequest,
    ListOffsetsResponse,
    OffsetForLeaderEpochRequest,
    OffsetForLeaderEpochResponse,
)
from kafka.protocol.metadata.api_versions import ApiVersionsRequest, ApiVersionsResponse
from kafka.protocol.metadata.find_coordinator import FindCoordinatorRequest, FindCoordinatorResponse
from kafka.protocol.metadata.metadata import MetadataRequest, MetadataResponse
from kafka.protocol.producer.produce import ProduceResponse
from kafka.protocol.producer.transaction import (
    AddOffsetsToTxnRequest,
    AddOffsetsToTxnResponse,
    AddPartitionsToTxnRequest,
    AddPartitionsToTxnResponse,
    EndTxnRequest,
    EndTxnResponse,
    InitProducerIdRequest,
    InitProducerIdResponse,
    TxnOffsetCommitRequest,
    TxnOffsetCommitResponse,
    WriteTxnMarkersRequest,
    WriteTxnMarkersResponse,
)
from kafka.protocol.sasl import (
    SaslAuthenticateRequest,
    SaslAuthenticateResponse,
    SaslHandshakeRequest,
    SaslHandshakeResponse,
)

from protocol import kafka_python_ext
from protocol.api_keys import ApiKey
from protocol.errors import UnknownApiKey

_SCHEMAS = 'protocol.schemas'


# --- the two messages that carry record batches: records decode as zero-copy memoryviews -------------

class ProduceRequest(ApiMessage):
    json_patch = classmethod(lambda cls, json: kafka_python_ext.records_view_patch(json))

    def expect_response(self) -> bool:
        # acks=0: Kafka sends no response at all.
        return self.acks != 0


class FetchResponse(ApiMessage):
    json_patch = classmethod(lambda cls, json: kafka_python_ext.records_view_patch(json))


# Defining FetchResponse registered it in kafka-python's response registry; give kafka-python clients
# running in this process their own class back, so their consumers keep receiving bytes.
ResponseClassRegistry.register_response_class(weakref.proxy(_KafkaPythonFetchResponse))


# --- the ZooKeeper-era inter-broker APIs and the others kafka-python does not ship ---------------------

class LeaderAndIsrRequest(ApiMessage, load_json=_SCHEMAS):
    pass


class LeaderAndIsrResponse(ApiMessage, load_json=_SCHEMAS):
    pass


class StopReplicaRequest(ApiMessage, load_json=_SCHEMAS):
    pass


class StopReplicaResponse(ApiMessage, load_json=_SCHEMAS):
    pass


class UpdateMetadataRequest(ApiMessage, load_json=_SCHEMAS):
    pass


class UpdateMetadataResponse(ApiMessage, load_json=_SCHEMAS):
    pass


class ControlledShutdownRequest(ApiMessage, load_json=_SCHEMAS):
    pass


class ControlledShutdownResponse(ApiMessage, load_json=_SCHEMAS):
    pass


class AlterPartitionRequest(ApiMessage, load_json=_SCHEMAS):
    pass


class AlterPartitionResponse(ApiMessage, load_json=_SCHEMAS):
    pass


class ConsumerGroupHeartbeatRequest(ApiMessage, load_json=_SCHEMAS):
    pass


class ConsumerGroupHeartbeatResponse(ApiMessage, load_json=_SCHEMAS):
    pass


_PAIRS: dict[int, tuple[type[ApiMessage], type[ApiMessage]]] = {
    ApiKey.PRODUCE: (ProduceRequest, ProduceResponse),
    ApiKey.FETCH: (FetchRequest, FetchResponse),
    ApiKey.LIST_OFFSETS: (ListOffsetsRequest, ListOffsetsResponse),
    ApiKey.METADATA: (MetadataRequest, MetadataResponse),
    ApiKey.LEADER_AND_ISR: (LeaderAndIsrRequest, LeaderAndIsrResponse),
    ApiKey.STOP_REPLICA: (StopReplicaRequest, StopReplicaResponse),
    ApiKey.UPDATE_METADATA: (UpdateMetadataRequest, UpdateMetadataResponse),
    ApiKey.CONTROLLED_SHUTDOWN: (ControlledShutdownRequest, ControlledShutdownResponse),
    ApiKey.OFFSET_COMMIT: (OffsetCommitRequest, OffsetCommitResponse),
    ApiKey.OFFSET_FETCH: (OffsetFetchRequest, OffsetFetchResponse),
    ApiKey.FIND_COORDINATOR: (FindCoordinatorRequest, FindCoordinatorResponse),
    ApiKey.JOIN_GROUP: (JoinGroupRequest, JoinGroupResponse),
    ApiKey.HEARTBEAT: (HeartbeatRequest, HeartbeatResponse),
    ApiKey.LEAVE_GROUP: (LeaveGroupRequest, LeaveGroupResponse),
    ApiKey.SYNC_GROUP: (SyncGroupRequest, SyncGroupResponse),
    ApiKey.DESCRIBE_GROUPS: (DescribeGroupsRequest, DescribeGroupsResponse),
    ApiKey.LIST_GROUPS: (ListGroupsRequest, ListGroupsResponse),
    ApiKey.SASL_HANDSHAKE: (SaslHandshakeRequest, SaslHandshakeResponse),
    ApiKey.API_VERSIONS: (ApiVersionsRequest, ApiVersionsResponse),
    ApiKey.CREATE_TOPICS: (CreateTopicsRequest, CreateTopicsResponse),
    ApiKey.DELETE_TOPICS: (DeleteTopicsRequest, DeleteTopicsResponse),
    ApiKey.DELETE_RECORDS: (DeleteRecordsRequest, DeleteRecordsResponse),
    ApiKey.INIT_PRODUCER_ID: (InitProducerIdRequest, InitProducerIdResponse),
    ApiKey.OFFSET_FOR_LEADER_EPOCH: (OffsetForLeaderEpochRequest, OffsetForLeaderEpochResponse),
    ApiKey.ADD_PARTITIONS_TO_TXN: (AddPartitionsToTxnRequest, AddPartitionsToTxnResponse),
    ApiKey.ADD_OFFSETS_TO_TXN: (AddOffsetsToTxnRequest, AddOffsetsToTxnResponse),
    ApiKey.END_TXN: (EndTxnRequest, EndTxnResponse),
    ApiKey.WRITE_TXN_MARKERS: (WriteTxnMarkersRequest, WriteTxnMarkersResponse),
    ApiKey.TXN_OFFSET_COMMIT: (TxnOffsetCommitRequest, TxnOffsetCommitResponse),
    ApiKey.DESCRIBE_CONFIGS: (DescribeConfigsRequest, DescribeConfigsResponse),
    ApiKey.ALTER_CONFIGS: (AlterConfigsRequest, AlterConfigsResponse),
    ApiKey.SASL_AUTHENTICATE: (SaslAuthenticateRequest, SaslAuthenticateResponse),
    ApiKey.CREATE_PARTITIONS: (CreatePartitionsRequest, CreatePartitionsResponse),
    ApiKey.DELETE_GROUPS: (DeleteGroupsRequest, DeleteGroupsResponse),
    ApiKey.INCREMENTAL_ALTER_CONFIGS: (IncrementalAlterConfigsRequest, IncrementalAlterConfigsResponse),
    ApiKey.OFFSET_DELETE: (OffsetDeleteRequest, OffsetDeleteResponse),
    ApiKey.DESCRIBE_CLUSTER: (DescribeClusterRequest, DescribeClusterResponse),
    ApiKey.DESCRIBE_PRODUCERS: (DescribeProducersRequest, DescribeProducersResponse),
    ApiKey.ALTER_PARTITION: (AlterPartitionRequest, AlterPartitionResponse),
    ApiKey.CONSUMER_GROUP_HEARTBEAT: (ConsumerGroupHeartbeatRequest, ConsumerGroupHeartbeatResponse),
    ApiKey.DESCRIBE_TOPIC_PARTITIONS: (DescribeTopicPartitionsRequest, DescribeTopicPartitionsResponse),
}


def request_class(api_key: int) -> type[ApiMessage]:
    try:
        return _PAIRS[api_key][0]
    except KeyError:
        raise UnknownApiKey(f'unknown api key {api_key}') from None


def response_class(api_key: int) -> type[ApiMessage]:
    try:
        return _PAIRS[api_key][1]
    except KeyError:
        raise UnknownApiKey(f'unknown api key {api_key}') from None

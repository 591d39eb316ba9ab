"""The typed messages: one request class and one response class per API key we serve.

Contract:
- Every message class is a kafka-python 3.0 `ApiMessage` (built from Kafka's JSON message specs, with
  compiled flat codecs, snake_case attributes, `unknown_tags` preserved). We do not define messages any
  other way.
- The APIs kafka-python lacks (LeaderAndIsr, StopReplica, UpdateMetadata, ControlledShutdown,
  AlterPartition, AllocateProducerIds, ConsumerGroupHeartbeat, ConsumerGroupDescribe, BrokerRegistration,
  BrokerHeartbeat, FetchSnapshot, the share-group state RPCs) are defined in `inter_broker_messages.py`
  from our own specs in `protocol/schemas/`, loaded through the same machinery (`load_json=`). Kafka's field
  `Type` of LeaderAndIsr (v5+) and UpdateMetadata (v8+) is named `RequestType` there (attribute
  `request_type`): a field named `type` would shadow kafka-python's `ApiMessage.type` class property.
- `request_class(api_key)` / `response_class(api_key)` return the unversioned class; index it with a
  version (`cls[v]`) for a versioned one. Unknown keys raise `UnknownApiKey`. Each API's classes are
  imported on its first use (`from protocol.messages import X` works for every class in the table).
"""

from __future__ import annotations

import importlib
import sys
import weakref
from typing import Any

from kafka.protocol.api_header import ResponseClassRegistry
from kafka.protocol.api_message import ApiMessage

from protocol import kafka_python_ext
from protocol.api_keys import ApiKey
from protocol.errors import UnknownApiKey

# --- the two messages that carry record batches: records decode as zero-copy memoryviews -------------

class ProduceRequest(ApiMessage):
    json_patch = classmethod(lambda cls, json: kafka_python_ext.records_view_patch(json))

    def expect_response(self) -> bool:
        # acks=0: Kafka sends no response at all.
        return self.acks != 0


class FetchResponse(ApiMessage):
    json_patch = classmethod(lambda cls, json: kafka_python_ext.records_view_patch(json))


# Defining FetchResponse registered it in kafka-python's response registry; give kafka-python clients
# running in this process their own class back, so their consumers keep receiving bytes. If kafka-python's fetch
# module is not loaded yet, defining its FetchResponse when it is will register that class over ours by itself:
# importing it here only for this cost broker start-up ~10 ms (kafka.protocol.consumer loads four APIs' schemas).
_kafka_python_fetch = sys.modules.get("kafka.protocol.consumer.fetch")
if _kafka_python_fetch is not None:
    ResponseClassRegistry.register_response_class(weakref.proxy(_kafka_python_fetch.FetchResponse))


# --- where every API's classes live; each is imported on first use ------------------------------------
# Importing all of them (kafka-python's admin and SASL messages, our inter-broker specs) costs ~35 ms that
# broker start-up (issue 7: 0.3 s to the first ApiVersions answer) does not need.

_KAFKA = "kafka.protocol."
_OURS = "protocol.inter_broker_messages"


def _pair_in(module: str, api: str) -> tuple[str, str]:
    return f"{module}:{api}Request", f"{module}:{api}Response"


_SOURCES: dict[int, tuple[str, str]] = {  # "module:Class" of the request and of the response
    ApiKey.PRODUCE: (__name__ + ":ProduceRequest", _KAFKA + "producer.produce:ProduceResponse"),
    ApiKey.FETCH: (_KAFKA + "consumer.fetch:FetchRequest", __name__ + ":FetchResponse"),
    ApiKey.LIST_OFFSETS: _pair_in(_KAFKA + "consumer.offsets", "ListOffsets"),
    ApiKey.METADATA: _pair_in(_KAFKA + "metadata.metadata", "Metadata"),
    ApiKey.LEADER_AND_ISR: _pair_in(_OURS, "LeaderAndIsr"),
    ApiKey.STOP_REPLICA: _pair_in(_OURS, "StopReplica"),
    ApiKey.UPDATE_METADATA: _pair_in(_OURS, "UpdateMetadata"),
    ApiKey.CONTROLLED_SHUTDOWN: _pair_in(_OURS, "ControlledShutdown"),
    ApiKey.OFFSET_COMMIT: _pair_in(_KAFKA + "consumer.group", "OffsetCommit"),
    ApiKey.OFFSET_FETCH: _pair_in(_KAFKA + "consumer.group", "OffsetFetch"),
    ApiKey.FIND_COORDINATOR: _pair_in(_KAFKA + "metadata.find_coordinator", "FindCoordinator"),
    ApiKey.JOIN_GROUP: _pair_in(_KAFKA + "consumer.group", "JoinGroup"),
    ApiKey.HEARTBEAT: _pair_in(_KAFKA + "consumer.group", "Heartbeat"),
    ApiKey.LEAVE_GROUP: _pair_in(_KAFKA + "consumer.group", "LeaveGroup"),
    ApiKey.SYNC_GROUP: _pair_in(_KAFKA + "consumer.group", "SyncGroup"),
    ApiKey.DESCRIBE_GROUPS: _pair_in(_KAFKA + "admin.groups", "DescribeGroups"),
    ApiKey.LIST_GROUPS: _pair_in(_KAFKA + "admin.groups", "ListGroups"),
    ApiKey.SASL_HANDSHAKE: _pair_in(_KAFKA + "sasl", "SaslHandshake"),
    ApiKey.API_VERSIONS: _pair_in("protocol.api_versions_messages", "ApiVersions"),  # v5: KIP-1242
    ApiKey.CREATE_TOPICS: _pair_in(_KAFKA + "admin.topics", "CreateTopics"),
    ApiKey.DELETE_TOPICS: _pair_in(_KAFKA + "admin.topics", "DeleteTopics"),
    ApiKey.DELETE_RECORDS: _pair_in(_KAFKA + "admin.topics", "DeleteRecords"),
    ApiKey.INIT_PRODUCER_ID: _pair_in(_KAFKA + "producer.transaction", "InitProducerId"),
    ApiKey.OFFSET_FOR_LEADER_EPOCH: _pair_in(_KAFKA + "consumer.offsets", "OffsetForLeaderEpoch"),
    ApiKey.ADD_PARTITIONS_TO_TXN: _pair_in(_KAFKA + "producer.transaction", "AddPartitionsToTxn"),
    ApiKey.ADD_OFFSETS_TO_TXN: _pair_in(_KAFKA + "producer.transaction", "AddOffsetsToTxn"),
    ApiKey.END_TXN: _pair_in(_KAFKA + "producer.transaction", "EndTxn"),
    ApiKey.WRITE_TXN_MARKERS: _pair_in(_KAFKA + "producer.transaction", "WriteTxnMarkers"),
    ApiKey.TXN_OFFSET_COMMIT: _pair_in(_KAFKA + "producer.transaction", "TxnOffsetCommit"),
    ApiKey.DESCRIBE_CONFIGS: _pair_in(_KAFKA + "admin.configs", "DescribeConfigs"),
    ApiKey.ALTER_CONFIGS: _pair_in(_KAFKA + "admin.configs", "AlterConfigs"),
    ApiKey.ALTER_REPLICA_LOG_DIRS: _pair_in(_KAFKA + "admin.cluster", "AlterReplicaLogDirs"),
    ApiKey.DESCRIBE_LOG_DIRS: _pair_in(_KAFKA + "admin.cluster", "DescribeLogDirs"),
    ApiKey.SASL_AUTHENTICATE: _pair_in(_KAFKA + "sasl", "SaslAuthenticate"),
    ApiKey.CREATE_PARTITIONS: _pair_in(_KAFKA + "admin.topics", "CreatePartitions"),
    ApiKey.DELETE_GROUPS: _pair_in(_KAFKA + "admin.groups", "DeleteGroups"),
    ApiKey.INCREMENTAL_ALTER_CONFIGS: _pair_in(_KAFKA + "admin.configs", "IncrementalAlterConfigs"),
    ApiKey.ALTER_PARTITION_REASSIGNMENTS: _pair_in(_KAFKA + "admin.topics", "AlterPartitionReassignments"),
    ApiKey.LIST_PARTITION_REASSIGNMENTS: _pair_in(_KAFKA + "admin.topics", "ListPartitionReassignments"),
    ApiKey.OFFSET_DELETE: _pair_in(_KAFKA + "consumer.group", "OffsetDelete"),
    ApiKey.DESCRIBE_CLUSTER: _pair_in(_KAFKA + "admin.cluster", "DescribeCluster"),
    ApiKey.DESCRIBE_QUORUM: _pair_in(_KAFKA + "admin.cluster", "DescribeQuorum"),
    ApiKey.DESCRIBE_ACLS: _pair_in("protocol.acl_messages", "DescribeAcls"),
    ApiKey.CREATE_ACLS: _pair_in("protocol.acl_messages", "CreateAcls"),
    ApiKey.DELETE_ACLS: _pair_in("protocol.acl_messages", "DeleteAcls"),
    ApiKey.DESCRIBE_PRODUCERS: _pair_in(_KAFKA + "admin.transactions", "DescribeProducers"),
    ApiKey.DESCRIBE_TRANSACTIONS: _pair_in(_KAFKA + "admin.transactions", "DescribeTransactions"),
    ApiKey.LIST_TRANSACTIONS: _pair_in(_KAFKA + "admin.transactions", "ListTransactions"),
    ApiKey.ALTER_PARTITION: _pair_in(_OURS, "AlterPartition"),
    ApiKey.CONSUMER_GROUP_HEARTBEAT: _pair_in(_OURS, "ConsumerGroupHeartbeat"),
    ApiKey.CONSUMER_GROUP_DESCRIBE: _pair_in(_OURS, "ConsumerGroupDescribe"),
    ApiKey.DESCRIBE_TOPIC_PARTITIONS: _pair_in(_KAFKA + "admin.topics", "DescribeTopicPartitions"),
    # --- share groups, KIP-932 (issue 19) ---
    ApiKey.SHARE_GROUP_HEARTBEAT: _pair_in(_OURS, "ShareGroupHeartbeat"),
    ApiKey.SHARE_GROUP_DESCRIBE: _pair_in(_OURS, "ShareGroupDescribe"),
    ApiKey.SHARE_FETCH: _pair_in(_OURS, "ShareFetch"),
    ApiKey.SHARE_ACKNOWLEDGE: _pair_in(_OURS, "ShareAcknowledge"),
    ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS: _pair_in(_OURS, "DescribeShareGroupOffsets"),
    ApiKey.ALTER_SHARE_GROUP_OFFSETS: _pair_in(_OURS, "AlterShareGroupOffsets"),
    ApiKey.DELETE_SHARE_GROUP_OFFSETS: _pair_in(_OURS, "DeleteShareGroupOffsets"),
    # --- controller protocol (issue 14) ---
    ApiKey.ALLOCATE_PRODUCER_IDS: _pair_in(_OURS, "AllocateProducerIds"),
    ApiKey.ELECT_LEADERS: _pair_in(_KAFKA + "admin.topics", "ElectLeaders"),
    # --- a KRaft broker's requests to the controller (issue 20) ---
    ApiKey.BROKER_REGISTRATION: _pair_in(_OURS, "BrokerRegistration"),
    ApiKey.BROKER_HEARTBEAT: _pair_in(_OURS, "BrokerHeartbeat"),
    ApiKey.FETCH_SNAPSHOT: _pair_in(_OURS, "FetchSnapshot"),
    ApiKey.ENVELOPE: _pair_in(_OURS, "Envelope"),
    ApiKey.ASSIGN_REPLICAS_TO_DIRS: _pair_in(_OURS, "AssignReplicasToDirs"),
    # --- client quotas (issue 15) ---
    ApiKey.DESCRIBE_CLIENT_QUOTAS: _pair_in(_KAFKA + "admin.client_quotas", "DescribeClientQuotas"),
    ApiKey.ALTER_CLIENT_QUOTAS: _pair_in(_KAFKA + "admin.client_quotas", "AlterClientQuotas"),
    # --- SCRAM credentials (issue 15) ---
    ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS: _pair_in(_KAFKA + "admin.users", "DescribeUserScramCredentials"),
    ApiKey.ALTER_USER_SCRAM_CREDENTIALS: _pair_in(_KAFKA + "admin.users", "AlterUserScramCredentials"),
    # --- share-group state, broker to share coordinator (issue 19) ---
    ApiKey.INITIALIZE_SHARE_GROUP_STATE: _pair_in(_OURS, "InitializeShareGroupState"),
    ApiKey.READ_SHARE_GROUP_STATE: _pair_in(_OURS, "ReadShareGroupState"),
    ApiKey.WRITE_SHARE_GROUP_STATE: _pair_in(_OURS, "WriteShareGroupState"),
    ApiKey.DELETE_SHARE_GROUP_STATE: _pair_in(_OURS, "DeleteShareGroupState"),
    ApiKey.READ_SHARE_GROUP_STATE_SUMMARY: _pair_in(_OURS, "ReadShareGroupStateSummary"),
    # --- the KRaft quorum and controller registration (issue 32) ---
    ApiKey.VOTE: _pair_in(_OURS, "Vote"),
    ApiKey.BEGIN_QUORUM_EPOCH: _pair_in(_OURS, "BeginQuorumEpoch"),
    ApiKey.END_QUORUM_EPOCH: _pair_in(_OURS, "EndQuorumEpoch"),
    ApiKey.ADD_RAFT_VOTER: _pair_in(_OURS, "AddRaftVoter"),
    ApiKey.REMOVE_RAFT_VOTER: _pair_in(_OURS, "RemoveRaftVoter"),
    ApiKey.UPDATE_RAFT_VOTER: _pair_in(_OURS, "UpdateRaftVoter"),
    ApiKey.CONTROLLER_REGISTRATION: _pair_in(_OURS, "ControllerRegistration"),
    ApiKey.UNREGISTER_BROKER: _pair_in(_OURS, "UnregisterBroker"),
    ApiKey.UNREGISTER_CONTROLLER: _pair_in(_OURS, "UnregisterController"),
    # --- KIP-714 client telemetry (issue 33) ---
    ApiKey.GET_TELEMETRY_SUBSCRIPTIONS: _pair_in(_OURS, "GetTelemetrySubscriptions"),
    ApiKey.PUSH_TELEMETRY: _pair_in(_OURS, "PushTelemetry"),
    ApiKey.LIST_CLIENT_METRICS_RESOURCES: _pair_in(_OURS, "ListConfigResources"),
}

_LOADED: dict[int, tuple[type[ApiMessage], type[ApiMessage]]] = {}
_BY_NAME = {ref.rpartition(":")[2]: ref for pair in _SOURCES.values() for ref in pair}


def _load(ref: str) -> Any:
    module, _, name = ref.partition(":")
    return getattr(importlib.import_module(module), name)


def _pair(api_key: int) -> tuple[type[ApiMessage], type[ApiMessage]]:
    pair = _LOADED.get(api_key)
    if pair is None:
        try:
            request_ref, response_ref = _SOURCES[api_key]
        except KeyError:
            raise UnknownApiKey(f'unknown api key {api_key}') from None
        pair = _LOADED[api_key] = (_load(request_ref), _load(response_ref))
    return pair


def request_class(api_key: int) -> type[ApiMessage]:
    return _pair(api_key)[0]


def response_class(api_key: int) -> type[ApiMessage]:
    return _pair(api_key)[1]


def __getattr__(name: str) -> Any:
    """`from protocol.messages import LeaderAndIsrRequest` (any class named above) imports it then."""
    ref = _BY_NAME.get(name)
    if ref is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return _load(ref)

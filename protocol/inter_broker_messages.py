"""Message classes for the APIs kafka-python does not ship, from our own specs in `protocol/schemas/`.

The ZooKeeper-era inter-broker APIs (LeaderAndIsr, StopReplica, UpdateMetadata, ControlledShutdown),
AlterPartition, AllocateProducerIds, ConsumerGroupHeartbeat, ConsumerGroupDescribe, the share-group APIs
(ShareGroupHeartbeat, ShareGroupDescribe, ShareFetch, ShareAcknowledge, DescribeShareGroupOffsets,
AlterShareGroupOffsets, DeleteShareGroupOffsets), BrokerRegistration, BrokerHeartbeat, FetchSnapshot, Envelope
(KIP-590), AssignReplicasToDirs (KIP-858), the share-group state RPCs (Initialize/Read/Write/Delete
ShareGroupState, ReadShareGroupStateSummary), the KRaft quorum's RPCs (Vote, BeginQuorumEpoch, EndQuorumEpoch,
AddRaftVoter, RemoveRaftVoter, UpdateRaftVoter) and ControllerRegistration, UnregisterBroker, UnregisterController,
loaded through kafka-python's machinery (`load_json=`) so they
behave like every other message. Reach them through `protocol.messages` (`request_class(key)`), which imports
this module on first use.
"""

from __future__ import annotations

from kafka.protocol.api_message import ApiMessage

_SCHEMAS = 'protocol.schemas'


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


class ConsumerGroupDescribeRequest(ApiMessage, load_json=_SCHEMAS):
    pass


class ConsumerGroupDescribeResponse(ApiMessage, load_json=_SCHEMAS):
    pass


# --- controller RPCs of KIP-730 (issue 14): AllocateProducerIds ---------------------------------------
class AllocateProducerIdsRequest(ApiMessage, load_json=_SCHEMAS):
    pass


class AllocateProducerIdsResponse(ApiMessage, load_json=_SCHEMAS):
    pass


# --- a KRaft broker's requests to the controller (KIP-631; issue 20) -----------------------------------
class BrokerRegistrationRequest(ApiMessage, load_json=_SCHEMAS):
    pass


class BrokerRegistrationResponse(ApiMessage, load_json=_SCHEMAS):
    pass


class BrokerHeartbeatRequest(ApiMessage, load_json=_SCHEMAS):
    pass


class BrokerHeartbeatResponse(ApiMessage, load_json=_SCHEMAS):
    pass


class AssignReplicasToDirsRequest(ApiMessage, load_json=_SCHEMAS):
    pass


class AssignReplicasToDirsResponse(ApiMessage, load_json=_SCHEMAS):
    pass


class EnvelopeRequest(ApiMessage, load_json=_SCHEMAS):
    pass


class EnvelopeResponse(ApiMessage, load_json=_SCHEMAS):
    pass


class FetchSnapshotRequest(ApiMessage, load_json=_SCHEMAS):
    pass


class FetchSnapshotResponse(ApiMessage, load_json=_SCHEMAS):
    pass


class InitializeShareGroupStateRequest(ApiMessage, load_json=_SCHEMAS):
    pass


class InitializeShareGroupStateResponse(ApiMessage, load_json=_SCHEMAS):
    pass


class ReadShareGroupStateRequest(ApiMessage, load_json=_SCHEMAS):
    pass


class ReadShareGroupStateResponse(ApiMessage, load_json=_SCHEMAS):
    pass


class WriteShareGroupStateRequest(ApiMessage, load_json=_SCHEMAS):
    pass


class WriteShareGroupStateResponse(ApiMessage, load_json=_SCHEMAS):
    pass


class DeleteShareGroupStateRequest(ApiMessage, load_json=_SCHEMAS):
    pass


class DeleteShareGroupStateResponse(ApiMessage, load_json=_SCHEMAS):
    pass


class ReadShareGroupStateSummaryRequest(ApiMessage, load_json=_SCHEMAS):
    pass


class ReadShareGroupStateSummaryResponse(ApiMessage, load_json=_SCHEMAS):
    pass


# --- share groups, KIP-932 (issue 19): Kafka 4.1's first stable versions (v1) -----------------------------
class ShareGroupHeartbeatRequest(ApiMessage, load_json=_SCHEMAS):
    pass


class ShareGroupHeartbeatResponse(ApiMessage, load_json=_SCHEMAS):
    pass


class ShareGroupDescribeRequest(ApiMessage, load_json=_SCHEMAS):
    pass


class ShareGroupDescribeResponse(ApiMessage, load_json=_SCHEMAS):
    pass


class ShareFetchRequest(ApiMessage, load_json=_SCHEMAS):
    pass


class ShareFetchResponse(ApiMessage, load_json=_SCHEMAS):
    pass


class ShareAcknowledgeRequest(ApiMessage, load_json=_SCHEMAS):
    pass


class ShareAcknowledgeResponse(ApiMessage, load_json=_SCHEMAS):
    pass


class DescribeShareGroupOffsetsRequest(ApiMessage, load_json=_SCHEMAS):
    pass


class DescribeShareGroupOffsetsResponse(ApiMessage, load_json=_SCHEMAS):
    pass


class AlterShareGroupOffsetsRequest(ApiMessage, load_json=_SCHEMAS):
    pass


class AlterShareGroupOffsetsResponse(ApiMessage, load_json=_SCHEMAS):
    pass


class DeleteShareGroupOffsetsRequest(ApiMessage, load_json=_SCHEMAS):
    pass


class DeleteShareGroupOffsetsResponse(ApiMessage, load_json=_SCHEMAS):
    pass


# --- the KRaft quorum (KIP-595, KIP-853, KIP-996) and controller registration (KIP-919): our controller's APIs ---


class VoteRequest(ApiMessage, load_json=_SCHEMAS):
    pass


class VoteResponse(ApiMessage, load_json=_SCHEMAS):
    pass


class BeginQuorumEpochRequest(ApiMessage, load_json=_SCHEMAS):
    pass


class BeginQuorumEpochResponse(ApiMessage, load_json=_SCHEMAS):
    pass


class EndQuorumEpochRequest(ApiMessage, load_json=_SCHEMAS):
    pass


class EndQuorumEpochResponse(ApiMessage, load_json=_SCHEMAS):
    pass


class AddRaftVoterRequest(ApiMessage, load_json=_SCHEMAS):
    pass


class AddRaftVoterResponse(ApiMessage, load_json=_SCHEMAS):
    pass


class RemoveRaftVoterRequest(ApiMessage, load_json=_SCHEMAS):
    pass


class RemoveRaftVoterResponse(ApiMessage, load_json=_SCHEMAS):
    pass


class UpdateRaftVoterRequest(ApiMessage, load_json=_SCHEMAS):
    pass


class UpdateRaftVoterResponse(ApiMessage, load_json=_SCHEMAS):
    pass


class ControllerRegistrationRequest(ApiMessage, load_json=_SCHEMAS):
    pass


class ControllerRegistrationResponse(ApiMessage, load_json=_SCHEMAS):
    pass


class UnregisterBrokerRequest(ApiMessage, load_json=_SCHEMAS):
    pass


class UnregisterBrokerResponse(ApiMessage, load_json=_SCHEMAS):
    pass


class UnregisterControllerRequest(ApiMessage, load_json=_SCHEMAS):
    pass


class UnregisterControllerResponse(ApiMessage, load_json=_SCHEMAS):
    pass

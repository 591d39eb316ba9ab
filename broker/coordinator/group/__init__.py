"""The classic consumer-group coordinator and its `__consumer_offsets` persistence (Kafka's
kafka.coordinator.group).

Public API: `GroupCoordinator` (coordinator.py, with offset_requests.py and rebalance.py), `GroupMetadataManager`
(metadata_manager.py) and `partition_for` (broker/coordinator/runtime.py), `GroupCoordinatorConfig` (config.py), the
result dataclasses of results.py, `GroupErrorCode`, and the record formats in schema.py. api.py turns kafka-python's
decoded request objects into coordinator calls and responses (one coroutine per API), for handlers that want no
mapping code of their own; loader.py replays a `__consumer_offsets` partition while it loads; service.py
migration.py converts groups between the classic and the KIP-848 protocols
and serves classic members of consumer groups (consumer_protocol.py reads their embedded protocol); service.py
wires the coordinator into a broker (its ReplicaManager, the `__consumer_offsets` topic, the shared runtime
of broker/coordinator/runtime.py).
"""

from broker.coordinator.group.config import GroupCoordinatorConfig
from broker.coordinator.group.coordinator import GroupCoordinator
from broker.coordinator.group.errors import GroupErrorCode
from broker.coordinator.group.metadata import GroupState
from broker.coordinator.group.metadata_manager import GroupMetadataManager
from broker.coordinator.group.results import (
    DescribedGroup,
    DescribedMember,
    FetchedOffset,
    JoinGroupMember,
    JoinGroupResult,
    LeaveGroupResult,
    LeaveMember,
    LeaveMemberResult,
    ListedGroup,
    ListGroupsResult,
    OffsetCommitEntry,
    OffsetDeleteResult,
    OffsetFetchResult,
    SyncGroupResult,
)
from broker.coordinator.runtime import partition_for

__all__ = [
    "DescribedGroup", "DescribedMember", "FetchedOffset", "GroupCoordinator", "GroupCoordinatorConfig",
    "GroupErrorCode", "GroupMetadataManager", "GroupState", "JoinGroupMember", "JoinGroupResult",
    "LeaveGroupResult", "LeaveMember", "LeaveMemberResult", "ListGroupsResult", "ListedGroup", "OffsetCommitEntry",
    "OffsetDeleteResult", "OffsetFetchResult", "SyncGroupResult", "partition_for",
]

"""The classic consumer-group coordinator and its `__consumer_offsets` persistence.

Public API: `GroupCoordinator`, `GroupCoordinatorConfig`, `partition_for`, the result dataclasses of
`broker.group.results`, `GroupErrorCode`, and the record formats in `broker.group.schema`.
`broker.group.api` turns kafka-python's decoded request objects into coordinator calls and responses
(one coroutine per API), for handlers that want no mapping code of their own.
"""

from broker.group.coordinator import GroupCoordinator, GroupCoordinatorConfig, partition_for
from broker.group.errors import GroupErrorCode
from broker.group.metadata import GroupState
from broker.group.results import (
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

__all__ = [
    "DescribedGroup", "DescribedMember", "FetchedOffset", "GroupCoordinator", "GroupCoordinatorConfig",
    "GroupErrorCode", "GroupState", "JoinGroupMember", "JoinGroupResult", "LeaveGroupResult", "LeaveMember",
    "LeaveMemberResult", "ListGroupsResult", "ListedGroup", "OffsetCommitEntry", "OffsetDeleteResult",
    "OffsetFetchResult", "SyncGroupResult", "partition_for",
]

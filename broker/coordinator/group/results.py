"""Plain values the group coordinator takes and returns; API handlers copy them into Kafka messages.

Contract: every result carries Kafka error codes as ints (`GroupErrorCode` values). Field names follow the
response fields of the Kafka message specs, so a handler maps them one to one. Nullable strings are
None; a handler that answers a request version where the field is not nullable writes "" instead.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from broker.coordinator.group.errors import GroupErrorCode
from storage.values import TopicPartition


@dataclass(frozen=True, slots=True)
class JoinGroupMember:
    member_id: str
    group_instance_id: str | None
    metadata: bytes


@dataclass(frozen=True, slots=True)
class JoinGroupResult:
    error_code: int
    member_id: str = ""
    generation_id: int = -1
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader: str = ""
    skip_assignment: bool = False
    members: list[JoinGroupMember] = field(default_factory=list)

    @classmethod
    def failed(cls, error_code: int, member_id: str = "") -> JoinGroupResult:
        return cls(error_code=int(error_code), member_id=member_id)


@dataclass(frozen=True, slots=True)
class SyncGroupResult:
    error_code: int
    protocol_type: str | None = None
    protocol_name: str | None = None
    assignment: bytes = b""


@dataclass(frozen=True, slots=True)
class LeaveMember:
    """One member of a LeaveGroup request (v3+ sends a batch; v0-2 send one member_id)."""
    member_id: str
    group_instance_id: str | None = None


@dataclass(frozen=True, slots=True)
class LeaveMemberResult:
    member_id: str
    group_instance_id: str | None
    error_code: int


@dataclass(frozen=True, slots=True)
class LeaveGroupResult:
    """error_code is the top-level error. For LeaveGroup v0-2 answer members[0].error_code when
    error_code is NONE (the single member's outcome is the request's outcome)."""
    error_code: int
    members: list[LeaveMemberResult] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class OffsetCommitEntry:
    topic: str
    partition: int
    offset: int
    leader_epoch: int = -1
    metadata: str | None = ""


@dataclass(frozen=True, slots=True)
class FetchedOffset:
    topic: str
    partition: int
    offset: int
    leader_epoch: int
    metadata: str
    error_code: int = GroupErrorCode.NONE


@dataclass(frozen=True, slots=True)
class OffsetFetchResult:
    """error_code is the group-level error (OffsetFetch v2+); older versions repeat it per partition."""
    error_code: int
    partitions: list[FetchedOffset] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class OffsetDeleteResult:
    error_code: int
    partitions: dict[TopicPartition, int] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class DescribedMember:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    member_metadata: bytes
    member_assignment: bytes


@dataclass(frozen=True, slots=True)
class DescribedGroup:
    group_id: str
    error_code: int
    group_state: str = "Dead"
    protocol_type: str = ""
    protocol_data: str = ""
    members: list[DescribedMember] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class ListedGroup:
    group_id: str
    protocol_type: str
    group_state: str
    group_type: str = "classic"


@dataclass(frozen=True, slots=True)
class ListGroupsResult:
    error_code: int
    groups: list[ListedGroup] = field(default_factory=list)

"""Test harness for the group coordinator: an in-memory __consumer_offsets and client-side helpers.

`OffsetsLog` keeps every appended (key, value) per partition, so a second coordinator can load them as
a restarted broker would. The helpers speak the classic protocol the way Kafka clients do (JoinGroup
with the MEMBER_ID_REQUIRED retry, SyncGroup, Heartbeat), with ConsumerProtocol subscription bytes.
"""

from __future__ import annotations

import asyncio
import struct
from collections import defaultdict
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from broker.coordinator.group import (
    GroupCoordinator,
    GroupCoordinatorConfig,
    GroupErrorCode,
    JoinGroupResult,
    SyncGroupResult,
)

T = TypeVar("T")

TEST_CONFIG = GroupCoordinatorConfig(
    offsets_topic_num_partitions=50,
    group_initial_rebalance_delay_ms=50,
    group_min_session_timeout_ms=10,
    group_max_session_timeout_ms=60000,
)


class AppendFailed(Exception):
    def __init__(self, code: int) -> None:
        super().__init__(f"append failed with {code}")
        self.code = code


class OffsetsLog:
    def __init__(self) -> None:
        self.partitions: dict[int, list[tuple[bytes, bytes | None]]] = defaultdict(list)
        self.fail_with: BaseException | None = None
        self.append_delay_s = 0.0
        self.appends = 0

    async def append_records(self, partition: int, records: list[tuple[bytes, bytes | None]]) -> int:
        if self.append_delay_s:
            await asyncio.sleep(self.append_delay_s)
        if self.fail_with is not None:
            raise self.fail_with
        for key, value in records:
            if not isinstance(key, bytes) or not (value is None or isinstance(value, bytes)):
                raise TypeError("records must be bytes")
        self.appends += 1
        self.partitions[partition].extend(records)
        return len(self.partitions[partition]) - 1

    def new_coordinator(self, config: GroupCoordinatorConfig = TEST_CONFIG,
                        clock_ms: Callable[[], int] | None = None) -> GroupCoordinator:
        """A coordinator that owns every partition, loaded from what this log holds (call in a loop)."""
        coordinator = GroupCoordinator(self.append_records, config, clock_ms=clock_ms)
        for partition in range(config.offsets_topic_num_partitions):
            coordinator.manager.load_partition(partition, list(self.partitions.get(partition, [])))
            coordinator.manager.on_partition_loaded(partition)
        return coordinator


def run(make: Callable[[], Awaitable[T]], timeout: float = 10.0) -> T:
    """Run one test scenario on a fresh event loop, bounded in time."""
    async def bounded() -> T:
        return await asyncio.wait_for(make(), timeout)
    return asyncio.run(bounded())


def subscription(*topics: str, user_data: bytes | None = None) -> bytes:
    """ConsumerProtocolSubscription version 0: topics and user data."""
    out = [struct.pack(">hi", 0, len(topics))]
    for topic in topics:
        raw = topic.encode()
        out.append(struct.pack(">h", len(raw)) + raw)
    out.append(struct.pack(">i", -1) if user_data is None else struct.pack(">i", len(user_data)) + user_data)
    return b"".join(out)


async def join(coordinator: GroupCoordinator, group_id: str, member_id: str = "", *,
               instance_id: str | None = None, topics: tuple[str, ...] = ("t",),
               protocols: list[tuple[str, bytes]] | None = None, session_ms: int = 10000,
               rebalance_ms: int = 2000, version: int = 5, client_id: str = "client",
               protocol_type: str = "consumer") -> JoinGroupResult:
    return await coordinator.join_group(
        group_id, member_id, instance_id, client_id, "/127.0.0.1", rebalance_ms, session_ms, protocol_type,
        protocols if protocols is not None else [("range", subscription(*topics))], api_version=version)


async def join_fully(coordinator: GroupCoordinator, group_id: str, member_id: str = "",
                     **kw: Any) -> JoinGroupResult:
    """JoinGroup as a v4+ client does it: retry once with the member id from MEMBER_ID_REQUIRED."""
    result = await join(coordinator, group_id, member_id, **kw)
    if result.error_code == GroupErrorCode.MEMBER_ID_REQUIRED:
        result = await join(coordinator, group_id, result.member_id, **kw)
    return result


async def sync(coordinator: GroupCoordinator, group_id: str, joined: JoinGroupResult,
               assignments: dict[str, bytes] | None = None,
               instance_id: str | None = None) -> SyncGroupResult:
    return await coordinator.sync_group(group_id, joined.generation_id, joined.member_id, instance_id,
                                        joined.protocol_type, joined.protocol_name,
                                        list((assignments or {}).items()))


def round_robin(joined: JoinGroupResult) -> dict[str, bytes]:
    """The leader's assignment: member i gets b'assignment-<i>' in member order."""
    return {m.member_id: f"assignment-{i}".encode() for i, m in enumerate(joined.members)}


async def join_and_sync_all(coordinator: GroupCoordinator, group_id: str,
                            member_ids: list[str], **kw: Any) -> tuple[list[JoinGroupResult],
                                                                      list[SyncGroupResult]]:
    """All members (re)join together, the leader assigns round robin, everyone syncs."""
    joins = await asyncio.gather(*(join_fully(coordinator, group_id, mid, **kw) for mid in member_ids))
    leader = [j for j in joins if j.member_id == j.leader]
    assignments = round_robin(leader[0]) if leader else {}
    syncs = await asyncio.gather(*(
        sync(coordinator, group_id, j, assignments if j.member_id == j.leader else None) for j in joins))
    return list(joins), list(syncs)

"""Group coordinator states for the group APIs' error paths, each reached on a broker of its own through real
requests, except the two a test cannot time: a coordinator partition that is loading and a coordinator that
has shut down. Those are entered the way the broker itself enters them (the coordinator runtime's
`begin_loading`, with no load task to end it; the coordinator's `shutdown`), run on the broker's loop.

- `not_coordinator(b)`: a fresh broker that has no `__consumer_offsets` yet: NOT_COORDINATOR for every group.
- `loading(b, group)`: a broker whose coordinator partition of `group` is loading: COORDINATOR_LOAD_IN_PROGRESS.
- `shut_down(b)`: a broker whose coordinator has shut down: COORDINATOR_NOT_AVAILABLE.
- `small_offsets_topic(b)`: a broker whose `__consumer_offsets` takes no record over 1000 bytes.
- `Member.join(...)`: a member joined (and synced) through JoinGroup/SyncGroup on the session's broker.
"""

from __future__ import annotations

import socket
import struct
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from broker.testing import EmbeddedBroker
from protocol import ApiKey, request_class
from protocol.errors import ErrorCode
from tests.broker.wire import send
from tests.e2e.support import wait_until

from .support import Brokers

FIND = request_class(ApiKey.FIND_COORDINATOR)
JOIN = request_class(ApiKey.JOIN_GROUP)
SYNC = request_class(ApiKey.SYNC_GROUP)


def coordinator_ready(b: Brokers, port: int, group: str = "any") -> None:
    """FindCoordinator until the broker answers for `group` (it creates `__consumer_offsets` on first use)."""
    wait_until(lambda: b.call(FIND[3](key=group, key_type=0), port).error_code == ErrorCode.NONE, 30,
               "the group coordinator")


def not_coordinator(b: Brokers) -> int:
    return b.other(broker_id="21").port


def loading(b: Brokers, group: str) -> int:
    other: EmbeddedBroker = b.other(broker_id="22")
    coordinator_ready(b, other.port)
    service = other.server.group_coordinator
    other.call(service.coordinator.manager.begin_loading, service.partition_for(group))
    return other.port


def shut_down(b: Brokers) -> int:
    other: EmbeddedBroker = b.other(broker_id="23")
    coordinator_ready(b, other.port)
    other.call(other.server.group_coordinator.coordinator.shutdown)
    return other.port


def small_offsets_topic(b: Brokers) -> int:
    other: EmbeddedBroker = b.other(broker_id="24")
    coordinator_ready(b, other.port)
    alter = request_class(ApiKey.INCREMENTAL_ALTER_CONFIGS)
    R = alter.AlterConfigsResource
    resp = b.call(alter[1](resources=[R(resource_type=2, resource_name="__consumer_offsets", configs=[
        R.AlterableConfig(name="max.message.bytes", config_operation=0, value="1000")])], validate_only=False),
        other.port)
    assert resp.responses[0].error_code == ErrorCode.NONE, resp
    return other.port


@dataclass
class Member:
    group: str
    member_id: str
    generation: int
    instance: str | None = None

    @staticmethod
    def join(b: Brokers, group: str, instance: str | None = None, sync: bool = True,
             protocol_type: str = "consumer", metadata: bytes = b"", port: int | None = None) -> Member:
        """A member of `group` (its leader when first), through JoinGroup v5 (MEMBER_ID_REQUIRED first for a
        dynamic member) and, with `sync`, SyncGroup v3 with an empty assignment."""
        coordinator_ready(b, port or b.single.port, group)
        member_id = ""
        while True:
            resp = b.call(join_request(group, member_id, instance, protocol_type=protocol_type, metadata=metadata),
                          port)
            if resp.error_code == ErrorCode.MEMBER_ID_REQUIRED:
                member_id = resp.member_id
                continue
            assert resp.error_code == ErrorCode.NONE, resp
            break
        member = Member(group, resp.member_id, resp.generation_id, instance)
        if sync:
            synced = b.call(SYNC[3](group_id=group, generation_id=member.generation, member_id=member.member_id,
                                    group_instance_id=instance, assignments=[SYNC.SyncGroupRequestAssignment(
                                        member_id=member.member_id, assignment=b"")]), port)
            assert synced.error_code == ErrorCode.NONE, synced
        return member

    def rebalance_started(self, b: Brokers) -> socket.socket:
        """Another member asks to join (its JoinGroup is left waiting on the returned socket): the group
        prepares a rebalance."""
        s = socket.create_connection(("127.0.0.1", b.single.port), timeout=30)
        send(s, join_request(self.group, "", "joiner"), 99)
        return s


def during_rebalance(b: Brokers, group: str, request: Callable[[Member], Any]) -> Any:
    """`request(member)`'s answer once another member's JoinGroup has made `group` prepare a rebalance, polled
    until it says REBALANCE_IN_PROGRESS (the two requests go on different connections)."""
    member = Member.join(b, group)
    joiner = member.rebalance_started(b)
    try:
        answers: list[Any] = []
        wait_until(lambda: answers.append(request(member))
                   or answers[-1].error_code == ErrorCode.REBALANCE_IN_PROGRESS, 30, "the rebalance to start")
        return answers[-1]
    finally:
        joiner.close()


def join_request(group: str, member_id: str, instance: str | None = None, session_timeout_ms: int = 30000,
                 protocol_type: str = "consumer", metadata: bytes = b"", version: int = 5) -> Any:
    return JOIN[version](group_id=group, session_timeout_ms=session_timeout_ms, rebalance_timeout_ms=30000,
                   member_id=member_id, group_instance_id=instance, protocol_type=protocol_type,
                   protocols=[JOIN.JoinGroupRequestProtocol(name="range", metadata=metadata)])


def subscription(*topics: str) -> bytes:
    """A consumer's subscription (ConsumerProtocolSubscription v0: topics, no user data)."""
    out = struct.pack(">hi", 0, len(topics))
    for t in topics:
        out += struct.pack(">h", len(t)) + t.encode()
    return out + struct.pack(">i", -1)


CG_HEARTBEAT = request_class(ApiKey.CONSUMER_GROUP_HEARTBEAT)


@dataclass
class ConsumerMember:
    """A member of a KIP-848 consumer group, joined through ConsumerGroupHeartbeat v1 (its own member id)."""
    group: str
    member_id: str
    epoch: int
    instance: str | None = None

    @staticmethod
    def join(b: Brokers, group: str, member_id: str = "member-1", instance: str | None = None,
             topics: tuple[str, ...] = ("some-topic",), port: int | None = None) -> ConsumerMember:
        coordinator_ready(b, port or b.single.port, group)
        resp = b.call(CG_HEARTBEAT[1](group_id=group, member_id=member_id, member_epoch=0, instance_id=instance,
                                      rebalance_timeout_ms=30000, subscribed_topic_names=list(topics),
                                      topic_partitions=[]), port)
        assert resp.error_code == ErrorCode.NONE, resp
        return ConsumerMember(group, member_id, resp.member_epoch, instance)

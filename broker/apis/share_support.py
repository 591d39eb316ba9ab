"""What ShareFetch and ShareAcknowledge share: resolving topic ids, the share session of a request, the
per-partition answer parts (current leader hints with node endpoints), and the acknowledgements."""

from __future__ import annotations

import uuid
from typing import Any

from broker.apis.base import RequestContext, current_leader
from broker.security.acl import AclOperation, ResourceType
from broker.share.manager import SharePartitionManager
from protocol.errors import ErrorCode
from storage import TopicPartition

LEADER_HINT_ERRORS = (ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.FENCED_LEADER_EPOCH)


def resolve(ctx: RequestContext, topics: Any
            ) -> tuple[dict[TopicPartition, uuid.UUID], dict[tuple[uuid.UUID, int], int]]:
    """The request's partitions by name (with their topic ids), and those refused: (topic id, partition) ->
    UNKNOWN_TOPIC_ID or TOPIC_AUTHORIZATION_FAILED (READ on the topic, with an authorizer)."""
    cache = ctx.server.metadata_cache
    known: dict[TopicPartition, uuid.UUID] = {}
    refused: dict[tuple[uuid.UUID, int], int] = {}
    names = {t.topic_id: cache.topic_name(t.topic_id) for t in topics or []}
    allowed = ctx.filter_authorized(AclOperation.READ, ResourceType.TOPIC, (n for n in names.values() if n))
    for topic in topics or []:
        name = names[topic.topic_id]
        for p in topic.partitions or []:
            index = p if isinstance(p, int) else p.partition_index
            if name is None:
                refused[(topic.topic_id, index)] = ErrorCode.UNKNOWN_TOPIC_ID
            elif name not in allowed:
                refused[(topic.topic_id, index)] = ErrorCode.TOPIC_AUTHORIZATION_FAILED
            else:
                known[TopicPartition(name, index)] = topic.topic_id
    return known, refused


def acknowledgements(topics: Any, known: dict[TopicPartition, uuid.UUID]
                     ) -> dict[TopicPartition, list[tuple[int, int, list[int]]]]:
    by_id = {(tid, tp.partition): tp for tp, tid in known.items()}
    out: dict[TopicPartition, list[tuple[int, int, list[int]]]] = {}
    for topic in topics or []:
        for p in topic.partitions or []:
            tp = by_id.get((topic.topic_id, p.partition_index))
            if tp is not None and p.acknowledgement_batches:
                out[tp] = [(b.first_offset, b.last_offset, list(b.acknowledge_types or []))
                           for b in p.acknowledgement_batches]
    return out


def has_acknowledgements(topics: Any) -> bool:
    return any(p.acknowledgement_batches for t in topics or [] for p in t.partitions or [])


async def acknowledge(manager: SharePartitionManager, group_id: str, member_id: str,
                      acks: dict[TopicPartition, list[tuple[int, int, list[int]]]],
                      known: dict[TopicPartition, uuid.UUID], renew: bool = False) -> dict[TopicPartition, int]:
    """Per partition the acknowledgement error; `renew` (Kafka 4.2's IsRenewAck) allows type 4, Renew."""
    return {tp: await manager.acknowledge(group_id, member_id, tp, known[tp], batches, renew)
            for tp, batches in acks.items()}


def leader_hint(ctx: RequestContext, tp: TopicPartition | None, error: int, part_cls: Any,
                endpoints: dict[int, Any], endpoint_cls: Any) -> Any:
    """The CurrentLeader of a partition answer: the leader on NOT_LEADER_OR_FOLLOWER (with its endpoint
    added to `endpoints`), else unknown (-1, -1)."""
    if tp is None or error not in LEADER_HINT_ERRORS:
        return part_cls.LeaderIdAndEpoch(leader_id=-1, leader_epoch=-1)
    leader_id, leader_epoch, leader = current_leader(ctx, tp)
    if leader is not None:
        endpoints[leader_id] = endpoint_cls(node_id=leader_id, host=leader.host, port=leader.port, rack=leader.rack)
    return part_cls.LeaderIdAndEpoch(leader_id=leader_id, leader_epoch=leader_epoch)

"""What the five share-group state RPCs share (InitializeShareGroupState, ReadShareGroupState,
WriteShareGroupState, DeleteShareGroupState, ReadShareGroupStateSummary; Kafka's ShareCoordinatorService and
KafkaApis handlers).

- Only brokers send them: without CLUSTER_ACTION on the cluster every partition answers
  CLUSTER_AUTHORIZATION_FAILED (`refused`).
- A request with no topics, a topic with no partitions, or an empty group id is answered with no results at all,
  as Kafka answers it.
- Every (group, topic id, partition) is served by this broker's share coordinator on its own, all of them at
  once; each answers its error code (with Kafka's message where Kafka has one) or its value; an unexpected
  failure is logged and answered UNKNOWN_SERVER_ERROR for that partition (not in the handlers' ERRORS).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from broker.apis.base import RequestContext, response_for, response_type
from broker.coordinator.share.records import ShareKey
from broker.coordinator.share.state import ShareStateError
from broker.security.acl import AclOperation
from protocol.errors import ErrorCode

log = logging.getLogger("broker.apis.share_state")

Outcome = tuple[ErrorCode, str | None, Any]  # error, message, the operation's value when NONE

# The codes every state RPC can answer; each handler adds its fencing codes.
ERRORS: tuple[ErrorCode, ...] = (
    ErrorCode.NOT_COORDINATOR, ErrorCode.COORDINATOR_NOT_AVAILABLE, ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
    ErrorCode.INVALID_REQUEST, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
)


def serve(ctx: RequestContext, request: Any, answer: Callable[[Any, Any], Awaitable[Any]]) -> Any:
    """A handler's body: the refusal without CLUSTER_ACTION, else `answer(server, request)`."""
    refusal = refused(ctx, request)
    return refusal if refusal is not None else answer(ctx.server, request)


def refused(ctx: RequestContext, request: Any) -> Any | None:
    """The whole answer when the principal may not act as a broker, else None."""
    if ctx.authorize_cluster(AclOperation.CLUSTER_ACTION):
        return None
    return build(request, [(t.topic_id, [(p.partition, (ErrorCode.CLUSTER_AUTHORIZATION_FAILED, None, None))
                                         for p in t.partitions]) for t in request.topics], lambda value: {})


def malformed(request: Any) -> bool:
    return not request.topics or any(not t.partitions for t in request.topics) or not request.group_id


async def each_partition(request: Any, op: Callable[[ShareKey, Any], Awaitable[Any]]
                         ) -> list[tuple[Any, list[tuple[int, Outcome]]]]:
    async def one(key: ShareKey, data: Any) -> Outcome:
        try:
            return ErrorCode.NONE, None, await op(key, data)
        except ShareStateError as e:
            return e.code, e.message, None
        except Exception:  # as Kafka's handleOperationException: logged, UNKNOWN_SERVER_ERROR for this partition
            log.exception("%s for %s failed", type(request).__name__, key)
            return ErrorCode.UNKNOWN_SERVER_ERROR, None, None

    pending = [(t.topic_id, [(p.partition, asyncio.ensure_future(one(ShareKey(request.group_id, t.topic_id,
                                                                              p.partition), p)))
                             for p in t.partitions]) for t in request.topics]
    await asyncio.gather(*(f for _, parts in pending for _, f in parts))
    return [(topic_id, [(partition, f.result()) for partition, f in parts]) for topic_id, parts in pending]


def build(request: Any, results: list[tuple[Any, list[tuple[int, Outcome]]]],
          fields: Callable[[Any], dict[str, Any]]) -> Any:
    """The response: `fields(value)` gives a partition's own fields (its value is None on an error)."""
    Resp = response_type(request)
    Topic = next(getattr(Resp, n) for n in dir(Resp) if n.endswith("Result"))
    return response_for(request, results=[Topic(topic_id=topic_id, partitions=[Topic.PartitionResult(
        partition=partition, error_code=code, error_message=message, **fields(value))
        for partition, (code, message, value) in parts]) for topic_id, parts in results])

"""CreatePartitions (key 37), versions 0–3.

Adds partitions to a topic (never removes: INVALID_PARTITIONS), placing replicas as Kafka does
(continuing the topic's round robin) or as given (INVALID_REPLICA_ASSIGNMENT when the assignment
is wrong), `validate_only` supported; waits up to `timeout_ms` for the new partitions' leaders
(REQUEST_TIMED_OUT after it; at once for 0, the partitions created all the same).
As Kafka's ZooKeeper mode: served by the active controller only (NOT_CONTROLLER for every topic elsewhere:
clients send it to the controller); a topic named twice INVALID_REQUEST; a topic queued for deletion
INVALID_TOPIC_EXCEPTION; a topic with a partition reassignment in progress (adding or removing replicas in its
assignment) REASSIGNMENT_IN_PROGRESS; an unknown topic UNKNOWN_TOPIC_OR_PARTITION; more replicas per partition
than live brokers INVALID_REPLICATION_FACTOR. A topic being deleted is one only for the moment the controller
takes to delete it, so no test holds it there: INVALID_TOPIC_EXCEPTION is not in `ERRORS`.
A client's `controller_mutation_rate` (KIP-599) is taken per new partition: from v3 a topic met with the quota
used up is refused THROTTLING_QUOTA_EXCEEDED, below v3 it grows and the answer is only throttled.
With an authorizer (Kafka): ALTER on each topic, else TOPIC_AUTHORIZATION_FAILED.
The new partitions of one request count against Kafka's controller bound of 10,000 records per operation
(`broker.controller.limits`), topic after topic: the topic that would pass it is answered UNKNOWN_SERVER_ERROR with
no message, as Kafka's controller answers its BoundedListTooLongException, before any placement is computed (Kafka
also keeps the records it added for that topic before the overflow; we add none).
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from broker.apis.base import RequestContext, response_for, response_type
from broker.apis.create_topics import THROTTLED
from broker.controller.limits import MAX_RECORDS_PER_USER_OP
from broker.security.acl import AclOperation, ResourceType
from protocol.errors import ErrorCode

API_KEY = 37
MIN_VERSION = 0
MAX_VERSION = 3
ERRORS: tuple[ErrorCode, ...] = (
    ErrorCode.NOT_CONTROLLER, ErrorCode.THROTTLING_QUOTA_EXCEEDED, ErrorCode.INVALID_REQUEST,
    ErrorCode.REASSIGNMENT_IN_PROGRESS,
    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode.INVALID_PARTITIONS, ErrorCode.INVALID_REPLICA_ASSIGNMENT,
    ErrorCode.INVALID_REPLICATION_FACTOR, ErrorCode.REQUEST_TIMED_OUT,
    ErrorCode.TOPIC_AUTHORIZATION_FAILED, ErrorCode.UNKNOWN_SERVER_ERROR,
)


async def handle(ctx: RequestContext, request: Any) -> Any:
    controller = ctx.server.controller
    Resp = response_type(request)
    counts = Counter(t.name for t in request.topics)
    quota = ctx.mutation_quota(strict_since=3)  # KIP-599: each new partition is a mutation
    out = []
    budget = MAX_RECORDS_PER_USER_OP  # new partitions the request may still add (Kafka's controller bound)
    for t in request.topics:
        if counts[t.name] > 1 and any(r.name == t.name for r in out):
            continue  # Kafka answers per topic name: a duplicate once
        if controller is None or not controller.active:
            err, msg = ErrorCode.NOT_CONTROLLER, None
        elif counts[t.name] > 1:
            err, msg = ErrorCode.INVALID_REQUEST, "Duplicate topic in request."
        elif not ctx.authorize(AclOperation.ALTER, ResourceType.TOPIC, t.name):
            err, msg = ErrorCode.TOPIC_AUTHORIZATION_FAILED, "The topic authorization is failed."
        elif not request.validate_only and not quota.admits():
            err, msg = ErrorCode.THROTTLING_QUOTA_EXCEEDED, THROTTLED
        else:
            known = ctx.server.metadata_cache.topics.get(t.name)
            before = len(known.partitions) if known is not None else 0
            assignment = [list(a.broker_ids) for a in t.assignments] if t.assignments else None
            err, msg = await controller.admin.create_partitions(t.name, t.count, assignment, request.validate_only,
                                                                request.timeout_ms, max_new=budget)
            if err in (ErrorCode.NONE, ErrorCode.REQUEST_TIMED_OUT):
                budget -= max(0, t.count - before)
            if not request.validate_only and err in (ErrorCode.NONE, ErrorCode.REQUEST_TIMED_OUT):
                quota.record(max(0, t.count - before))
        out.append(Resp.CreatePartitionsTopicResult(name=t.name, error_code=err, error_message=msg))
    return ctx.throttled(quota, response_for(request, throttle_time_ms=0, results=out))

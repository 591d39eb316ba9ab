"""DeleteTopics (key 20), versions 0–6.

Marks each topic for deletion in the metadata store (Kafka: /admin/delete_topics); the controller
stops and deletes the replicas and removes the topic. The answer waits up to `timeout_ms` for the
topic to leave this broker's metadata (else REQUEST_TIMED_OUT). Unknown topics:
UNKNOWN_TOPIC_OR_PARTITION; v6 may name topics by id (UNKNOWN_TOPIC_ID when unknown);
`delete.topic.enable=false`: TOPIC_DELETION_DISABLED. `timeout_ms` <= 0: marked for deletion and answered
REQUEST_TIMED_OUT at once (Kafka's ZkAdminManager). As Kafka's ZooKeeper mode, only the active controller
deletes: any other broker answers NOT_CONTROLLER for every topic. A client's `controller_mutation_rate`
(KIP-599) is taken per deleted partition: from v5 a topic met with the quota used up is refused
THROTTLING_QUOTA_EXCEEDED, below v5 it is deleted and the answer only throttled.
With an authorizer (Kafka): DELETE on each topic, else TOPIC_AUTHORIZATION_FAILED (a topic named by id
the principal may not DESCRIBE is answered without its name).
"""

from __future__ import annotations

import uuid
from typing import Any

from broker.apis.base import RequestContext, response_for, response_type
from broker.apis.create_topics import THROTTLED
from broker.security.acl import AclOperation, ResourceType
from protocol.errors import ErrorCode

API_KEY = 20
MIN_VERSION = 0
MAX_VERSION = 6
ERRORS: tuple[ErrorCode, ...] = (
    ErrorCode.NOT_CONTROLLER, ErrorCode.THROTTLING_QUOTA_EXCEEDED, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
    ErrorCode.UNKNOWN_TOPIC_ID,
    ErrorCode.TOPIC_DELETION_DISABLED, ErrorCode.REQUEST_TIMED_OUT, ErrorCode.TOPIC_AUTHORIZATION_FAILED,
)

ZERO_UUID = uuid.UUID(int=0)


async def handle(ctx: RequestContext, request: Any) -> Any:
    server = ctx.server
    if server.controller is None or not server.controller.active:
        Resp = response_type(request)
        named = ([(t.name, t.topic_id) for t in request.topics] if request.API_VERSION >= 6
                 else [(n, None) for n in request.topic_names])
        return response_for(request, throttle_time_ms=0, responses=[
            Resp.DeletableTopicResult(name=name, topic_id=tid or ZERO_UUID, error_code=ErrorCode.NOT_CONTROLLER,
                                      error_message=None) for name, tid in named])
    cache = server.metadata_cache
    entries: list[tuple[str | None, uuid.UUID | None]] = []
    if request.API_VERSION >= 6:
        for t in request.topics:
            if t.name is None and t.topic_id is not None and t.topic_id != ZERO_UUID:
                entries.append((cache.topic_name(t.topic_id), t.topic_id))
            else:
                entries.append((t.name, None))
    else:
        entries = [(n, None) for n in request.topic_names]
    names = [n for n, _ in entries if n is not None]
    refused: dict[str, ErrorCode] = {}
    if server.authorizer is not None:
        deletable = ctx.filter_authorized(AclOperation.DELETE, ResourceType.TOPIC, names)
        refused = {n: ErrorCode.TOPIC_AUTHORIZATION_FAILED for n in names if n not in deletable}
        names = [n for n in names if n in deletable]
    quota = ctx.mutation_quota(strict_since=5)
    admin = server.controller.admin
    if quota.active:
        # KIP-599: topic by topic, each deletion's partitions taken from the client's mutation quota.
        results = {}
        for name in names:
            if not quota.admits():
                results[name] = (ErrorCode.THROTTLING_QUOTA_EXCEEDED, THROTTLED)
                continue
            known = cache.topics.get(name)
            partitions = len(known.partitions) if known is not None else 0
            results.update(await admin.delete_topics([name], request.timeout_ms))
            if results[name][0] in (ErrorCode.NONE, ErrorCode.REQUEST_TIMED_OUT):
                quota.record(partitions)
    else:
        results = await admin.delete_topics(names, request.timeout_ms) if names else {}
    results.update((n, (code, None)) for n, code in refused.items())
    Resp = response_type(request)
    out = []
    for name, tid in entries:
        if name is None:
            out.append(Resp.DeletableTopicResult(name=None, topic_id=tid or ZERO_UUID,
                                                 error_code=ErrorCode.UNKNOWN_TOPIC_ID, error_message=None))
            continue
        err, msg = results[name]
        if tid is not None and name in refused and \
                not ctx.authorize(AclOperation.DESCRIBE, ResourceType.TOPIC, name):
            name = None  # named by id and not describable: Kafka does not disclose the name
        out.append(Resp.DeletableTopicResult(name=name, topic_id=tid or ZERO_UUID, error_code=err,
                                             error_message=msg))
    return ctx.throttled(quota, response_for(request, throttle_time_ms=0, responses=out))

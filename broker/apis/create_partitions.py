"""CreatePartitions (key 37), versions 0–3.

Adds partitions to a topic (never removes: INVALID_PARTITIONS), placing replicas as Kafka does
(continuing the topic's round robin) or as given (INVALID_REPLICA_ASSIGNMENT when the assignment
is wrong), `validate_only` supported; waits up to `timeout_ms` for the new partitions' leaders.
Duplicate topics in one request: INVALID_REQUEST.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from broker.apis.base import RequestContext, response_for, response_type
from protocol.errors import ErrorCode

API_KEY = 37
MIN_VERSION = 0
MAX_VERSION = 3


async def handle(ctx: RequestContext, request: Any) -> Any:
    controller = ctx.server.controller
    assert controller is not None
    Resp = response_type(request)
    counts = Counter(t.name for t in request.topics)
    out = []
    for t in request.topics:
        if counts[t.name] > 1:
            err, msg = ErrorCode.INVALID_REQUEST, "Duplicate topic in request."
        else:
            assignment = [list(a.broker_ids) for a in t.assignments] if t.assignments else None
            err, msg = await controller.admin.create_partitions(t.name, t.count, assignment, request.validate_only,
                                                                request.timeout_ms)
        out.append(Resp.CreatePartitionsTopicResult(name=t.name, error_code=err, error_message=msg))
    return response_for(request, throttle_time_ms=0, results=out)
